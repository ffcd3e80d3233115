// NVTX extended payloads (NVTX's payload extension, nvToolsExtPayload.h): an NVTX event may carry a binary blob laid
// out by a registered schema, a C struct described entry by entry (type, name, byte offset). nsys exports the
// schemas (NVTX_PAYLOAD_SCHEMAS, NVTX_PAYLOAD_SCHEMA_ENTRIES), the enums their entries may use (NVTX_PAYLOAD_ENUMS,
// NVTX_PAYLOAD_ENUM_ENTRIES) and, per event, the blob (NVTX_EVENTS.binaryData). NCCL 2.28 describes its calls this
// way (communicator id, number of ranks, rank, message size, reduction operation). This decoder turns a blob into
// named args; it reads only inside the blob, and what it cannot decode it says so in args (docs/limits.md).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/readers/args.h"
#include "src/sqlite/sqlite_api.h"

namespace nsystrace {

class ExportSchema;

struct NvtxPayloadEntry {
  uint64_t flags = 0;                // NVTX_PAYLOAD_ENTRY_FLAG_* (arrays, pointers, ...)
  uint64_t type = 0;                 // NVTX_PAYLOAD_ENTRY_TYPE_*, or a registered enum's (or schema's) id
  std::string name;                  // empty: unnamed
  uint64_t array_or_union = 0;       // a fixed-size string's length, an array's length, ...
  std::optional<uint64_t> offset;    // bytes from the payload's start; none: by the type's alignment after the last
};

struct NvtxPayloadSchema {
  std::string name;                  // empty: unnamed (NCCL names none)
  std::optional<uint64_t> payload_size;
  std::vector<NvtxPayloadEntry> entries;  // in idx order
};

struct NvtxPayloadEnum {
  uint64_t size = 4;                                 // bytes of an enum value in a payload
  std::vector<std::pair<int64_t, std::string>> values;  // value -> its name
};

// The schemas and enums of one export, by (domainId, schema id): the export's payload tables carry no process, so
// a domain id names the same domain in every process (true of NCCL, the only producer seen).
class NvtxPayloadSchemas {
 public:
  // Reads the payload tables of `schema` (any may be missing: an export without payload schemas has none).
  static NvtxPayloadSchemas load(sqlite3* db, const ExportSchema& schema);

  void add_schema(int64_t domain, uint64_t id, NvtxPayloadSchema s) { schemas_[{domain, id}] = std::move(s); }
  void add_enum(int64_t domain, uint64_t id, NvtxPayloadEnum e) { enums_[{domain, id}] = std::move(e); }
  const NvtxPayloadSchema* schema(int64_t domain, uint64_t id) const;
  const NvtxPayloadEnum* enumeration(int64_t domain, uint64_t id) const;
  bool empty() const { return schemas_.empty(); }

 private:
  std::map<std::pair<int64_t, uint64_t>, NvtxPayloadSchema> schemas_;
  std::map<std::pair<int64_t, uint64_t>, NvtxPayloadEnum> enums_;
};

// The header nsys puts before the payload bytes in NVTX_EVENTS.binaryData: 32 bytes, little-endian, the schema id
// as a uint64 at byte 8 and the payload's size as a uint64 at byte 16; the payload follows at byte 32. NVIDIA does
// not document this header (the export's column comment says "See docs for format"; no page we found does); the
// layout is the one nsys-ai (github.com/GindaChen/nsys-ai, nccl_payload_breakdown) reads from nsys 2026 exports.
// The payload bytes themselves are laid out as NVIDIA documents (nvToolsExtPayload.h: entry offsets, C types).
constexpr size_t kNvtxPayloadHeaderSize = 32;

// Writes the args of one blob: "payload_schema_id", then one arg per decoded entry named as the schema names it
// (an enum value as its name), or, where the blob cannot be decoded, "payload_bytes" (the blob's length) and
// "payload_error" (why). Never reads outside `blob`.
void write_nvtx_payload_args(const NvtxPayloadSchemas& schemas, int64_t domain, std::string_view blob, ArgsSink& o);

}  // namespace nsystrace
