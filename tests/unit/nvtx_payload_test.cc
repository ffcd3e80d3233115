// The NVTX extended-payload decoder (src/readers/nvtx_payload.h) on schemas built here: NCCL's all-reduce schema as
// the real export h200_nccl_1rank_gpu_metrics holds it, entries placed by alignment, and every documented fallback.
#include <gtest/gtest.h>

#include <cstring>

#include "src/readers/args.h"
#include "src/readers/nvtx_payload.h"

using namespace nsystrace;

namespace {

constexpr int64_t kDomain = 1;
constexpr uint64_t kAllReduce = 16777221, kRedOp = 16777236;

void put(std::string& s, uint64_t v, size_t size) {
  for (size_t i = 0; i < size; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
// A binaryData blob: the 32-byte header (schema id at 8, payload size at 16), then the payload.
std::string blob(uint64_t schema, const std::string& payload, uint64_t announced) {
  std::string s;
  put(s, kDomain, 8);
  put(s, schema, 8);
  put(s, announced, 8);
  put(s, 32 + announced, 8);
  return s + payload;
}
std::string blob(uint64_t schema, const std::string& payload) { return blob(schema, payload, payload.size()); }

NvtxPayloadEntry entry(uint64_t type, std::string name, std::optional<uint64_t> offset, uint64_t flags = 0,
                       uint64_t detail = 0) {
  NvtxPayloadEntry e;
  e.type = type;
  e.name = std::move(name);
  e.offset = offset;
  e.flags = flags;
  e.array_or_union = detail;
  return e;
}

// NCCL's schemas and enum as the export holds them (the first entry's offset is NULL there).
NvtxPayloadSchemas nccl() {
  NvtxPayloadSchemas s;
  NvtxPayloadSchema all_reduce;
  all_reduce.payload_size = 24;
  all_reduce.entries = {entry(18, "NCCL communicator ID", std::nullopt), entry(22, "Message size [bytes]", 8),
                        entry(kRedOp, "Reduction operation", 16)};
  s.add_schema(kDomain, kAllReduce, all_reduce);
  NvtxPayloadEnum op;
  op.size = 4;
  op.values = {{0, "Sum"}, {1, "Product"}, {2, "Max"}, {3, "Min"}, {4, "Avg"}};
  s.add_enum(kDomain, kRedOp, op);
  return s;
}
std::string all_reduce_payload(uint64_t comm, uint64_t bytes, int32_t op) {
  std::string p;
  put(p, comm, 8);
  put(p, bytes, 8);
  put(p, static_cast<uint32_t>(op), 4);
  put(p, 0, 4);  // the struct's tail padding
  return p;
}

std::string args(const NvtxPayloadSchemas& schemas, std::string_view b, int64_t domain = kDomain) {
  std::string out;
  JsonArgs json(out);
  write_nvtx_payload_args(schemas, domain, b, json);
  json.close();
  return out;
}

}  // namespace

TEST(NvtxPayload, DecodesNcclAllReduceByItsSchema) {
  std::string b = blob(kAllReduce, all_reduce_payload(0xF00DCAFE12345678, 33554432, 2));
  EXPECT_EQ(args(nccl(), b),
            "{\"payload_schema_id\":16777221,\"NCCL communicator ID\":17297704936375867000,"
            "\"Message size [bytes]\":33554432,\"Reduction operation\":\"Max\"}");
  // An enum value the enum does not name stays its number; a negative one too (ncclRedOp_t is a C int).
  EXPECT_EQ(args(nccl(), blob(kAllReduce, all_reduce_payload(5, 8, 7))),
            "{\"payload_schema_id\":16777221,\"NCCL communicator ID\":5,\"Message size [bytes]\":8,"
            "\"Reduction operation\":7}");
  EXPECT_EQ(args(nccl(), blob(kAllReduce, all_reduce_payload(5, 8, -1))),
            "{\"payload_schema_id\":16777221,\"NCCL communicator ID\":5,\"Message size [bytes]\":8,"
            "\"Reduction operation\":-1}");
}

TEST(NvtxPayload, SchemasAreLookedUpByDomainAndId) {
  std::string b = blob(kAllReduce, all_reduce_payload(1, 2, 0));
  EXPECT_EQ(args(nccl(), b, 2),
            "{\"payload_schema_id\":16777221,\"payload_bytes\":56,"
            "\"payload_error\":\"schema 16777221 of domain 2 is not in NVTX_PAYLOAD_SCHEMAS\"}");
}

TEST(NvtxPayload, EntriesWithoutOffsetsAreAlignedAfterThePreviousOne) {
  // struct { uint8_t a; int32_t b; double c; char s[6]; int16_t d; }: offsets 0, 4, 8, 16, 22 (nvToolsExtPayload.h:
  // an offset left 0 is worked out by the type's alignment).
  NvtxPayloadSchemas s;
  NvtxPayloadSchema schema;
  schema.name = "mixed";
  schema.entries = {entry(12, "a", std::nullopt), entry(15, "b", 0), entry(20, "c", std::nullopt),
                    entry(75, "s", std::nullopt, 0, 6), entry(13, "d", std::nullopt)};
  s.add_schema(kDomain, 1u << 24, schema);
  std::string p;
  put(p, 200, 1);
  put(p, 0, 3);
  put(p, static_cast<uint32_t>(-7), 4);
  double c = 2.5;
  uint64_t raw;
  std::memcpy(&raw, &c, 8);
  put(p, raw, 8);
  p += std::string("nccl\0x", 6);
  put(p, static_cast<uint16_t>(-2), 2);
  EXPECT_EQ(args(s, blob(1u << 24, p)),
            "{\"payload_schema_id\":16777216,\"payload_schema\":\"mixed\",\"a\":200,\"b\":-7,\"c\":2.5,\"s\":\"nccl\","
            "\"d\":-2}");
}

TEST(NvtxPayload, NamesNeverCollide) {
  NvtxPayloadSchemas s;
  NvtxPayloadSchema schema;
  schema.entries = {entry(5, "domain", 0), entry(5, "x", 4), entry(5, "x", 8), entry(5, "", 12)};
  s.add_schema(kDomain, 1u << 24, schema);
  std::string p;
  for (uint32_t v : {1, 2, 3, 4}) put(p, v, 4);
  EXPECT_EQ(args(s, blob(1u << 24, p)),
            "{\"payload_schema_id\":16777216,\"payload domain\":1,\"x\":2,\"x [2]\":3,\"entry 3\":4}");
}

TEST(NvtxPayload, ShortOrCutBlobsSayWhatTheyLack) {
  EXPECT_EQ(args(nccl(), ""),
            "{\"payload_bytes\":0,\"payload_error\":\"binaryData of 0 bytes is shorter than its 32-byte header\"}");
  std::string whole = blob(kAllReduce, all_reduce_payload(9, 10, 0));
  EXPECT_EQ(args(nccl(), whole.substr(0, 31)),
            "{\"payload_bytes\":31,\"payload_error\":\"binaryData of 31 bytes is shorter than its 32-byte header\"}");
  // The header announces 24 bytes, 12 are there: the communicator id is, the rest is not.
  EXPECT_EQ(args(nccl(), whole.substr(0, 44)),
            "{\"payload_schema_id\":16777221,\"NCCL communicator ID\":9,\"payload_bytes\":44,"
            "\"payload_error\":\"the header announces 24 payload bytes, binaryData holds 12\"}");
  // The header announces fewer bytes than a field needs: the field lies past the payload.
  EXPECT_EQ(args(nccl(), blob(kAllReduce, all_reduce_payload(9, 10, 0), 16)),
            "{\"payload_schema_id\":16777221,\"NCCL communicator ID\":9,\"Message size [bytes]\":10,"
            "\"payload_bytes\":56,\"payload_error\":\"entry 'Reduction operation' (bytes 16 to 20) lies past the "
            "payload's 16 bytes\"}");
  // Every cut of a whole blob decodes what is there and says the rest is missing.
  for (size_t n = 0; n < whole.size(); ++n)
    EXPECT_NE(args(nccl(), whole.substr(0, n)).find("\"payload_error\""), std::string::npos) << n;
  EXPECT_EQ(args(nccl(), whole).find("payload_error"), std::string::npos);
}

TEST(NvtxPayload, UndecodedEntryTypesAreNamedAndTheRestIsKept) {
  NvtxPayloadSchemas s;
  NvtxPayloadSchema schema;
  // long double (21): no size in the export; a pointer (flag 1 << 1); then an entry with no offset, which cannot be
  // placed after an entry of unknown size; then one with its own offset, which can; one with an offset far past.
  schema.entries = {entry(21, "ld", 0), entry(18, "ptr", 16, 1 << 1), entry(5, "lost", std::nullopt),
                    entry(5, "kept", 28), entry(5, "far", UINT64_MAX - 2)};
  s.add_schema(kDomain, 1u << 24, schema);
  std::string p(28, '\0');
  put(p, 42, 4);
  EXPECT_EQ(args(s, blob(1u << 24, p)),
            "{\"payload_schema_id\":16777216,\"kept\":42,\"payload_bytes\":64,"
            "\"payload_error\":\"entry 'ld': type 21 is not decoded\"}");
  // An entry typed by a nested schema (not an enum) is not decoded either.
  NvtxPayloadSchemas nested = nccl();
  NvtxPayloadSchema outer;
  outer.entries = {entry(kAllReduce, "inner", 0)};
  nested.add_schema(kDomain, (1u << 24) + 99, outer);
  EXPECT_EQ(args(nested, blob((1u << 24) + 99, all_reduce_payload(1, 2, 3))),
            "{\"payload_schema_id\":16777315,\"payload_bytes\":56,"
            "\"payload_error\":\"entry 'inner': type 16777221 is not decoded\"}");
}

TEST(NvtxPayload, AddressesFloatsAndNonFiniteValues) {
  NvtxPayloadSchemas s;
  NvtxPayloadSchema schema;
  schema.entries = {entry(23, "where", 0), entry(19, "f", 8), entry(20, "nan", 16)};
  s.add_schema(kDomain, 1u << 24, schema);
  std::string p;
  put(p, 0x7f00deadbeef, 8);
  float f = -0.5f;
  uint32_t fr;
  std::memcpy(&fr, &f, 4);
  put(p, fr, 4);
  put(p, 0, 4);
  put(p, 0x7FF8000000000000, 8);  // a quiet NaN
  EXPECT_EQ(args(s, blob(1u << 24, p)),
            "{\"payload_schema_id\":16777216,\"where\":\"0x7f00deadbeef\",\"f\":-0.5,\"nan\":\"nan\"}");
}
