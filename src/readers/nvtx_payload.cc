#include "src/readers/nvtx_payload.h"

#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "src/model/export_schema.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {

// How an entry type's bytes read. Sizes are those of LP64 Linux (where nsys records NCCL): the NVTX library hands
// the tool the sizes of types 1 to 27 at run time (nvtxPayloadEntryTypeInfo_t), and the export does not keep them.
enum class Form { none, signed_int, unsigned_int, real, address, fixed_string };
struct TypeInfo {
  Form form = Form::none;
  uint8_t size = 0;
};

constexpr uint64_t kStaticSchemaIdStart = uint64_t{1} << 24;  // NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START

TypeInfo type_info(uint64_t type) {
  switch (type) {
    case 1: case 11: return {Form::signed_int, 1};                       // CHAR, INT8
    case 2: case 12: case 25: case 32: return {Form::unsigned_int, 1};   // UCHAR, UINT8, CHAR8, BYTE
    case 3: case 13: return {Form::signed_int, 2};                       // SHORT, INT16
    case 4: case 14: case 26: return {Form::unsigned_int, 2};            // USHORT, UINT16, CHAR16
    case 5: case 15: case 91: return {Form::signed_int, 4};              // INT, INT32, NVTX_COLORTYPE
    case 6: case 16: case 24: case 27: case 90: case 92:                 // UINT, UINT32, WCHAR, CHAR32, category, color
      return {Form::unsigned_int, 4};
    case 7: case 9: case 17: return {Form::signed_int, 8};               // LONG, LONGLONG, INT64
    case 8: case 10: case 18: case 22: case 128:                         // ULONG, ULONGLONG, UINT64, SIZE, TIMESTAMP64
      return {Form::unsigned_int, 8};
    case 19: case 43: return {Form::real, 4};                            // FLOAT, FLOAT32
    case 20: case 44: return {Form::real, 8};                            // DOUBLE, FLOAT64
    case 23: return {Form::address, 8};                                  // ADDRESS
    case 75: case 76: return {Form::fixed_string, 1};                    // CSTRING, CSTRING_UTF8 (embedded, fixed size)
    default: return {};
  }
}

// Flags that make an entry something other than a value in place: a pointer, an offset to elsewhere, an array.
constexpr uint64_t kPointerFlags = (1 << 1) | (1 << 2) | (1 << 3);  // POINTER, OFFSET_FROM_BASE, OFFSET_FROM_HERE
constexpr uint64_t kArrayFlags = 3 << 4;                             // ARRAY_FIXED_SIZE, _ZERO_TERMINATED, _LENGTH_INDEX

uint64_t read_le(const unsigned char* p, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
int64_t sign_extend(uint64_t v, size_t size) {
  if (size >= 8) return static_cast<int64_t>(v);
  uint64_t sign = uint64_t{1} << (8 * size - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

void write_unsigned(ArgsSink& o, std::string_view key, uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) o.integer(key, static_cast<int64_t>(v));
  else o.unsigned_integer(key, v);
}
void write_real(ArgsSink& o, std::string_view key, double v) {
  if (std::isfinite(v)) o.real(key, v);
  else o.string(key, std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");  // JSON has no such numbers
}

// The args an NVTX range writes itself (NvtxSource::write_args): an entry named like one is prefixed, not lost.
bool is_nvtx_arg_key(std::string_view key) {
  static const std::set<std::string_view> keys = {
      "domain", "domain_id", "category", "category_id", "color", "payload", "payload_json", "range", "range_id",
      "end_tid", "unclosed", "last_nvtx_ts", "payload_schema_id", "payload_schema", "payload_bytes", "payload_error"};
  return keys.count(key) != 0;
}

}  // namespace

const NvtxPayloadSchema* NvtxPayloadSchemas::schema(int64_t domain, uint64_t id) const {
  auto it = schemas_.find({domain, id});
  return it == schemas_.end() ? nullptr : &it->second;
}

const NvtxPayloadEnum* NvtxPayloadSchemas::enumeration(int64_t domain, uint64_t id) const {
  auto it = enums_.find({domain, id});
  return it == enums_.end() ? nullptr : &it->second;
}

NvtxPayloadSchemas NvtxPayloadSchemas::load(sqlite3* db, const ExportSchema& schema) {
  NvtxPayloadSchemas out;
  auto u64 = [](const Statement& s, int col) { return static_cast<uint64_t>(s.int64(col)); };
  if (const TableInfo* t = schema.table("NVTX_PAYLOAD_SCHEMAS")) {
    SelectBuilder b(*t);
    int domain = b.column("domainId"), id = b.column("schemaId"), name = b.column("name"), size = b.column("payloadSize");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified(t->name));
    while (s.step()) {
      NvtxPayloadSchema& p = out.schemas_[{s.int64(domain), u64(s, id)}];
      p.name = std::string(s.text(name));
      if (auto v = s.optional_int64(size)) p.payload_size = static_cast<uint64_t>(*v);
    }
  }
  if (const TableInfo* t = schema.table("NVTX_PAYLOAD_SCHEMA_ENTRIES")) {
    SelectBuilder b(*t);
    int domain = b.column("domainId"), id = b.column("schemaId"), idx = b.column("idx"), flags = b.column("flags"),
        type = b.column("type"), name = b.column("name"), detail = b.column("arrayOrUnionDetail"),
        offset = b.column("offset");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified(t->name) + " ORDER BY " +
                        std::to_string(domain + 1) + ", " + std::to_string(id + 1) + ", " + std::to_string(idx + 1));
    while (s.step()) {
      NvtxPayloadEntry e;
      e.flags = u64(s, flags);
      e.type = u64(s, type);
      e.name = std::string(s.text(name));
      e.array_or_union = u64(s, detail);
      if (auto v = s.optional_int64(offset)) e.offset = static_cast<uint64_t>(*v);
      out.schemas_[{s.int64(domain), u64(s, id)}].entries.push_back(std::move(e));
    }
  }
  if (const TableInfo* t = schema.table("NVTX_PAYLOAD_ENUMS")) {
    SelectBuilder b(*t);
    int domain = b.column("domainId"), id = b.column("schemaId"), size = b.column("size");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified(t->name));
    while (s.step())
      if (auto v = s.optional_int64(size)) out.enums_[{s.int64(domain), u64(s, id)}].size = static_cast<uint64_t>(*v);
  }
  if (const TableInfo* t = schema.table("NVTX_PAYLOAD_ENUM_ENTRIES")) {
    SelectBuilder b(*t);
    int domain = b.column("domainId"), id = b.column("schemaId"), idx = b.column("idx"), name = b.column("name"),
        value = b.column("value");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified(t->name) + " ORDER BY " +
                        std::to_string(domain + 1) + ", " + std::to_string(id + 1) + ", " + std::to_string(idx + 1));
    while (s.step())
      out.enums_[{s.int64(domain), u64(s, id)}].values.emplace_back(s.int64(value), std::string(s.text(name)));
  }
  return out;
}

void write_nvtx_payload_args(const NvtxPayloadSchemas& schemas, int64_t domain, std::string_view blob, ArgsSink& o) {
  std::string error;  // the first thing that could not be decoded
  auto fail = [&](std::string why) {
    if (error.empty()) error = std::move(why);
  };
  const auto* bytes = reinterpret_cast<const unsigned char*>(blob.data());
  if (blob.size() < kNvtxPayloadHeaderSize) {
    o.integer("payload_bytes", static_cast<int64_t>(blob.size()));
    o.string("payload_error", fmt::format("binaryData of {} bytes is shorter than its {}-byte header", blob.size(),
                                          kNvtxPayloadHeaderSize));
    return;
  }
  const uint64_t schema_id = read_le(bytes + 8, 8);
  const uint64_t announced = read_le(bytes + 16, 8);
  write_unsigned(o, "payload_schema_id", schema_id);
  const NvtxPayloadSchema* schema = schemas.schema(domain, schema_id);
  if (schema == nullptr) {
    o.integer("payload_bytes", static_cast<int64_t>(blob.size()));
    o.string("payload_error", fmt::format("schema {} of domain {} is not in NVTX_PAYLOAD_SCHEMAS", schema_id, domain));
    return;
  }
  if (!schema->name.empty()) o.string("payload_schema", schema->name);
  uint64_t size = blob.size() - kNvtxPayloadHeaderSize;  // the payload: what the header announces, if all present
  if (announced > size) fail(fmt::format("the header announces {} payload bytes, binaryData holds {}", announced, size));
  else size = announced;
  const unsigned char* payload = bytes + kNvtxPayloadHeaderSize;

  std::set<std::string> used;
  // Where an entry without an offset starts: after the last one, when its size is known (a plain pair, not an
  // optional: GCC 12 warns that an optional's value "may be used uninitialized" here).
  uint64_t next_at = 0;
  bool next_known = true;
  for (size_t i = 0; i < schema->entries.size(); ++i) {
    const NvtxPayloadEntry& e = schema->entries[i];
    std::string key = e.name.empty() ? fmt::format("entry {}", i) : e.name;
    if (is_nvtx_arg_key(key)) key = "payload " + key;
    if (!used.insert(key).second) key = fmt::format("{} [{}]", key, i);
    TypeInfo info = type_info(e.type);
    const NvtxPayloadEnum* enumeration = nullptr;
    if (info.form == Form::none && e.type >= kStaticSchemaIdStart) {
      enumeration = schemas.enumeration(domain, e.type);
      if (enumeration != nullptr && (enumeration->size == 1 || enumeration->size == 2 || enumeration->size == 4 ||
                                     enumeration->size == 8))
        info = {Form::signed_int, static_cast<uint8_t>(enumeration->size)};
      else enumeration = nullptr;
    }
    uint64_t length = info.size;  // bytes of the value
    if (info.form == Form::fixed_string) length = e.array_or_union;
    bool in_place = (e.flags & kPointerFlags) == 0 &&
                    (info.form == Form::fixed_string || (e.flags & kArrayFlags) == 0);
    if (info.form == Form::none || !in_place || length == 0) {
      fail(fmt::format("entry '{}': type {}{} is not decoded", key, e.type,
                       e.flags != 0 ? fmt::format(" with flags {:#x}", e.flags) : std::string()));
      next_known = false;  // its size is unknown: so is where a next entry without an offset starts
      continue;
    }
    // An offset of 0 (or none) on any entry but the first means "not given": NVTX places it after the last one,
    // aligned to its own size (nvtxPayloadSchemaEntry_t::offset).
    uint64_t at;
    if (e.offset && (*e.offset != 0 || i == 0)) {
      at = *e.offset;
    } else if (next_known) {
      uint64_t align = info.form == Form::fixed_string ? 1 : info.size;
      at = (next_at + align - 1) / align * align;
    } else {
      fail(fmt::format("entry '{}': no offset, and the entry before it is not decoded", key));
      continue;
    }
    if (at > size || length > size - at) {
      fail(fmt::format("entry '{}' (bytes {} to {}) lies past the payload's {} bytes", key, at, at + length, size));
      next_known = false;
      continue;
    }
    next_at = at + length;
    next_known = true;
    const unsigned char* p = payload + at;
    switch (info.form) {
      case Form::signed_int: {
        int64_t v = sign_extend(read_le(p, length), length);
        const std::string* label = nullptr;
        if (enumeration != nullptr)
          for (const auto& [value, name] : enumeration->values)
            if (value == v) label = &name;
        if (label != nullptr) o.string(key, *label);
        else o.integer(key, v);
        break;
      }
      case Form::unsigned_int: write_unsigned(o, key, read_le(p, length)); break;
      case Form::real:
        if (length == 4) {
          uint32_t raw = static_cast<uint32_t>(read_le(p, 4));
          float f;
          std::memcpy(&f, &raw, 4);
          write_real(o, key, f);
        } else {
          uint64_t raw = read_le(p, 8);
          double d;
          std::memcpy(&d, &raw, 8);
          write_real(o, key, d);
        }
        break;
      case Form::address: o.string(key, fmt::format("{:#x}", read_le(p, 8))); break;
      case Form::fixed_string: {
        std::string_view s(reinterpret_cast<const char*>(p), length);
        o.string(key, s.substr(0, s.find('\0')));
        break;
      }
      case Form::none: break;
    }
  }
  if (!error.empty()) {
    o.integer("payload_bytes", static_cast<int64_t>(blob.size()));
    o.string("payload_error", error);
  }
}

}  // namespace nsystrace
