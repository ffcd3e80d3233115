#include "src/writers/perfetto/protobuf_writer.h"

namespace nsystrace {

void ProtoWriter::end() {
  size_t at = open_.back();
  open_.pop_back();
  size_t body = buf_.size() - at - kReserved;
  char len[kReserved];
  size_t n = 0;
  for (uint64_t v = body; ; ) {
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
