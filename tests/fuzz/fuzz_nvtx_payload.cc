// libFuzzer target: the NVTX extended-payload decoder (src/readers/nvtx_payload.h) on a schema and a blob both made
// of the input (tests/fuzz/run_fuzzers.sh): whatever they hold, it reads only inside the blob (ASan) and writes args that are one valid JSON
// object. Input: a count byte n, then n entries of 12 bytes (type selector, flags, a 2-byte offset where 0xFFFF means
// none, a fixed-string length, 7 bytes of a raw type), then an enum size byte, then the blob.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "src/readers/args.h"
#include "src/readers/nvtx_payload.h"
#include "src/writers/json_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nsystrace;
  if (size < 2) return 0;
  size_t n = data[0] % 16, at = 1;
  constexpr uint64_t kEnum = (uint64_t{1} << 24) + 20, kSchema = uint64_t{1} << 24;
  static const uint64_t kTypes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                    24, 25, 26, 27, 32, 43, 44, 75, 76, 80, 90, 91, 92, 128, kEnum, kSchema};
  NvtxPayloadSchema schema;
  for (size_t i = 0; i < n && at + 12 <= size; ++i, at += 12) {
    NvtxPayloadEntry e;
    uint8_t selector = data[at];
    if (selector < sizeof kTypes / sizeof kTypes[0]) {
      e.type = kTypes[selector];
    } else {
      uint64_t raw = 0;
      std::memcpy(&raw, data + at + 5, 7);
      e.type = raw;
    }
    e.flags = data[at + 1];
    uint16_t offset = static_cast<uint16_t>(data[at + 2] | (data[at + 3] << 8));
    if (offset != 0xFFFF) e.offset = offset;
    e.array_or_union = data[at + 4];
    e.name = std::string(1, static_cast<char>('a' + i % 26));
    schema.entries.push_back(e);
  }
  NvtxPayloadSchemas schemas;
  schemas.add_schema(1, kSchema, schema);
  if (at < size) {
    NvtxPayloadEnum e;
    e.size = data[at++] % 10;
    e.values = {{0, "zero"}, {-1, "minus one"}};
    schemas.add_enum(1, kEnum, e);
  }
  // The blob on the heap, exactly its size (no small-string buffer around it): a read past it is ASan's to catch.
  // Unless the count byte's top bit is set, its header names the fuzzed schema (else any id: mostly unknown ones).
  size_t length = size - at;
  std::unique_ptr<char[]> blob(new char[length == 0 ? 1 : length]);
  std::memcpy(blob.get(), data + at, length);
  if (!(data[0] & 0x80) && length >= 16)
    for (int i = 0; i < 8; ++i) blob[8 + i] = static_cast<char>((kSchema >> (8 * i)) & 0xFF);
  std::string out;
  JsonArgs json(out);
  write_nvtx_payload_args(schemas, 1, std::string_view(blob.get(), length), json);
  json.close();
  if (!is_valid_json(out)) __builtin_trap();
  return 0;
}
