// A protobuf wire-format decoder for tests: fields of one message, nested ones decoded on request. Independent of
// the writer under test (ProtoWriter), so a test that decodes what the writer wrote checks the bytes, not itself.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace testproto {

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t varint = 0;      // wire types 0, 1 and 5 (fixed values little-endian)
  std::string_view bytes;   // wire type 2
};

// Every field of a message, in order; throws std::runtime_error on malformed input (truncated, bad wire type).
std::vector<Field> decode(std::string_view message);
// Fields numbered `number`.
std::vector<Field> fields(std::string_view message, uint32_t number);
// The one field numbered `number` (throws when there are none or several).
Field one(std::string_view message, uint32_t number);

}  // namespace testproto
