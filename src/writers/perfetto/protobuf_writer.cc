#include "src/writers/perfetto/protobuf_writer.h"

#include <stdexcept>
#include <string>

namespace nsystrace {

void ProtoWriter::end() {
  size_t at = open_.back();
  open_.pop_back();
  size_t body = buf_.size() - at - kReserved;
  // The length was given kReserved bytes of varint (7 bits each): a message of a packet is far below that.
  if (body >> (7 * kReserved) != 0)
    throw std::length_error("nsystrace: perfetto trace: a protobuf message of " + std::to_string(body) +
                            " bytes is longer than its length field holds");
  char len[kReserved];
  size_t n = 0;
  for (uint64_t v = body; n < kReserved; ) {
    if (v < 0x80) {
      len[n++] = static_cast<char>(v);
      break;
    }
    len[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  if (n != kReserved) std::memmove(&buf_[at + n], &buf_[at + kReserved], body);
  std::memcpy(&buf_[at], len, n);
  buf_.resize(at + n + body);
}

}  // namespace nsystrace
