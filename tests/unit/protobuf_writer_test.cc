// The wire format as written by ProtoWriter, read back by an independent decoder (tests/support/proto_decode).
#include "src/writers/perfetto/protobuf_writer.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <random>

#include "tests/support/proto_decode.h"

namespace nsystrace {
namespace {

TEST(ProtoWriter, VarintsAtEveryLengthBoundary) {
  ProtoWriter w;
  std::vector<uint64_t> values = {0, 1, 127, 128, 16383, 16384, (1ull << 35) - 1, 1ull << 35, UINT64_MAX};
  for (uint64_t v : values) w.varint_field(1, v);
  auto fields = testproto::decode(w.data());
  ASSERT_EQ(fields.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(fields[i].number, 1u);
    EXPECT_EQ(fields[i].wire_type, 0u);
    EXPECT_EQ(fields[i].varint, values[i]);
  }
  // The exact bytes protoc writes: 300 is ac 02; a field key of 1 with wire type 0 is 08.
  ProtoWriter small;
  small.varint_field(1, 300);
  EXPECT_EQ(small.data(), std::string("\x08\xac\x02", 3));
}

TEST(ProtoWriter, NegativeIntegersAreTenByteVarints) {
  ProtoWriter w;
  w.int_field(4, -1);
  w.int_field(4, INT64_MIN);
  EXPECT_EQ(w.size(), 2u * (1 + 10));
  auto f = testproto::decode(w.data());
  EXPECT_EQ(static_cast<int64_t>(f[0].varint), -1);
  EXPECT_EQ(static_cast<int64_t>(f[1].varint), INT64_MIN);
}

TEST(ProtoWriter, FixedDoublesAndStrings) {
  ProtoWriter w;
  w.double_field(5, 2.5);
  w.fixed64_field(47, 0x0102030405060708ull);
  w.bytes_field(2, std::string("a\0b", 3));
  w.bytes_field(2, "");
  auto f = testproto::decode(w.data());
  ASSERT_EQ(f.size(), 4u);
  double d;
  std::memcpy(&d, &f[0].varint, 8);
  EXPECT_EQ(f[0].wire_type, 1u);
  EXPECT_EQ(d, 2.5);
  EXPECT_EQ(f[1].number, 47u);
  EXPECT_EQ(f[1].varint, 0x0102030405060708ull);
  EXPECT_EQ(f[2].bytes, std::string_view("a\0b", 3));
  EXPECT_EQ(f[3].bytes, "");
}

// Nested messages get the shortest length prefix whatever their size (1 to 4 bytes here), at any depth.
TEST(ProtoWriter, NestedMessagesOfEverySize) {
  for (size_t body : {size_t{0}, size_t{1}, size_t{125}, size_t{126}, size_t{127}, size_t{128}, size_t{16381},
                      size_t{16382}, size_t{16383}, size_t{16384}, size_t{3000000}}) {
    ProtoWriter w;
    w.begin(1);
    w.begin(2);
    if (body >= 3) w.bytes_field(3, std::string(body - 3 - (body - 3 >= 128) - (body - 3 >= 16384) - (body - 3 >= 2097152), 'x'));
    w.end();
    w.varint_field(4, 7);
    w.end();
    auto outer = testproto::one(w.data(), 1);
    auto inner = testproto::one(outer.bytes, 2);
    EXPECT_EQ(testproto::one(outer.bytes, 4).varint, 7u);
    // Minimal lengths: the whole is key + varint(len) + body exactly.
    EXPECT_EQ(w.size(), 1 + ProtoWriter::varint_size(outer.bytes.size()) + outer.bytes.size()) << body;
    EXPECT_EQ(outer.bytes.size(), 1 + ProtoWriter::varint_size(inner.bytes.size()) + inner.bytes.size() + 2) << body;
    if (body >= 3) {
      EXPECT_EQ(testproto::one(inner.bytes, 3).bytes.find_first_not_of('x'), std::string_view::npos);
    }
  }
}

TEST(ProtoWriter, DeepNestingRoundTrips) {
  ProtoWriter w;
  for (int depth = 0; depth < 50; ++depth) w.begin(static_cast<uint32_t>(depth + 1));
  w.varint_field(99, 12345);
  for (int depth = 0; depth < 50; ++depth) w.end();
  std::string_view cur = w.data();
  for (int depth = 0; depth < 50; ++depth) cur = testproto::one(cur, static_cast<uint32_t>(depth + 1)).bytes;
  EXPECT_EQ(testproto::one(cur, 99).varint, 12345u);
  EXPECT_FALSE(w.in_message());
}

TEST(ProtoWriter, RandomMessagesDecodeToWhatWasWritten) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    ProtoWriter w;
    std::vector<std::pair<uint32_t, uint64_t>> written;
    w.begin(1);
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      uint32_t field = 2 + static_cast<uint32_t>(rng() % 500000);
      uint64_t v = rng() >> (rng() % 64);
      w.varint_field(field, v);
      written.emplace_back(field, v);
    }
    w.end();
    auto inner = testproto::decode(testproto::one(w.data(), 1).bytes);
    ASSERT_EQ(inner.size(), written.size());
    for (size_t i = 0; i < inner.size(); ++i) {
      EXPECT_EQ(inner[i].number, written[i].first);
      EXPECT_EQ(inner[i].varint, written[i].second);
    }
  }
}

}  // namespace
}  // namespace nsystrace
