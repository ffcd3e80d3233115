// The protobuf wire format, written directly (no library): varints, length-delimited fields, nested messages. A
// nested message reserves room for its length and is patched when it ends, moving its bytes back when the length
// needs fewer than the reserved five bytes, so every length is in its shortest form (what protoc writes).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace nsystrace {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  void varint_field(uint32_t field, uint64_t v) {
    tag(field, kVarint);
    varint(v);
  }
  void int_field(uint32_t field, int64_t v) { varint_field(field, static_cast<uint64_t>(v)); }  // int32/int64
  void bool_field(uint32_t field, bool v) { varint_field(field, v ? 1 : 0); }
  void fixed64_field(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));  // little-endian
    buf_.append(b, 8);
  }
  void double_field(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    fixed64_field(field, bits);
  }
  void bytes_field(uint32_t field, std::string_view v) {  // string and bytes
    tag(field, kLengthDelimited);
    varint(v.size());
    buf_.append(v.data(), v.size());
  }
  // A nested message: begin(field) ... end(). May nest.
  void begin(uint32_t field) {
    tag(field, kLengthDelimited);
    open_.push_back(buf_.size());
    buf_.append(kReserved, '\0');
  }
  void end();

  const std::string& data() const { return buf_; }
  std::string& data() { return buf_; }
  size_t size() const { return buf_.size(); }
  bool in_message() const { return !open_.empty(); }
  void clear() { buf_.clear(); }

  static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, ++n;
    return n;
  }
  static void append_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }

 private:
  static constexpr size_t kReserved = 5;  // room for a length up to 2^35
  void tag(uint32_t field, WireType type) { varint((static_cast<uint64_t>(field) << 3) | type); }
  void varint(uint64_t v) { append_varint(buf_, v); }

  std::string buf_;
  std::vector<size_t> open_;  // where each open message's reserved length starts
};

}  // namespace nsystrace
