#include "tests/support/proto_decode.h"

namespace testproto {

namespace {
uint64_t read_varint(std::string_view s, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= s.size()) throw std::runtime_error("truncated varint");
    uint8_t b = static_cast<uint8_t>(s[pos++]);
    if (shift == 63 && b > 1) throw std::runtime_error("varint over 64 bits");
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("varint longer than 10 bytes");
}
}  // namespace

std::vector<Field> decode(std::string_view s) {
  std::vector<Field> out;
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t key = read_varint(s, pos);
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire_type = static_cast<uint32_t>(key & 7);
    if (f.number == 0) throw std::runtime_error("field number 0");
    switch (f.wire_type) {
      case 0: f.varint = read_varint(s, pos); break;
      case 1:
      case 5: {
        size_t n = f.wire_type == 1 ? 8 : 4;
        if (pos + n > s.size()) throw std::runtime_error("truncated fixed value");
        for (size_t i = 0; i < n; ++i) f.varint |= static_cast<uint64_t>(static_cast<uint8_t>(s[pos + i])) << (8 * i);
        pos += n;
        break;
      }
      case 2: {
        uint64_t n = read_varint(s, pos);
        if (n > s.size() - pos) throw std::runtime_error("length past the end");
        f.bytes = s.substr(pos, n);
        pos += n;
        break;
      }
      default: throw std::runtime_error("wire type " + std::to_string(f.wire_type));
    }
    out.push_back(f);
  }
  return out;
}

std::vector<Field> fields(std::string_view s, uint32_t number) {
  std::vector<Field> out;
  for (const Field& f : decode(s))
    if (f.number == number) out.push_back(f);
  return out;
}

Field one(std::string_view s, uint32_t number) {
  auto all = fields(s, number);
  if (all.size() != 1) throw std::runtime_error("field " + std::to_string(number) + ": " + std::to_string(all.size()) + " found");
  return all[0];
}

}  // namespace testproto
