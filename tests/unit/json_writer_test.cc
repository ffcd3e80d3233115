#include <gtest/gtest.h>

#include <climits>

#include "src/writers/json_writer.h"

using namespace nsystrace;

namespace {
std::string us(int64_t ns) {
  std::string s;
  append_ns_as_us(s, ns);
  return s;
}
std::string quoted(std::string_view in) {
  std::string s;
  append_json_string(s, in);
  return s;
}
}  // namespace

TEST(NsAsUs, WritesExactDecimalMicroseconds) {
  EXPECT_EQ(us(0), "0");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(10), "0.01");
  EXPECT_EQ(us(1000), "1");
  EXPECT_EQ(us(1234567891), "1234567.891");
  EXPECT_EQ(us(1234567890), "1234567.89");
  EXPECT_EQ(us(1234567800), "1234567.8");
  EXPECT_EQ(us(-1878291120), "-1878291.12");
  EXPECT_EQ(us(-1), "-0.001");
  // Beyond 2^53 ns a double would lose the last digits; we must not.
  EXPECT_EQ(us(9007199254740993123), "9007199254740993.123");
  EXPECT_EQ(us(INT64_MAX), "9223372036854775.807");
  EXPECT_EQ(us(INT64_MIN), "-9223372036854775.808");
}

TEST(JsonString, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(quoted("plain"), "\"plain\"");
  EXPECT_EQ(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quoted("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(quoted(std::string_view("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(quoted(std::string_view("a\0b", 3)), "\"a\\u0000b\"");
}

TEST(JsonString, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(quoted("Größe 核函数 🚀"), "\"Größe 核函数 🚀\"");
  EXPECT_EQ(quoted("\xff"), "\"\\ufffd\"");
  EXPECT_EQ(quoted("a\xc3"), "\"a\\ufffd\"");             // truncated sequence
  EXPECT_EQ(quoted("\xc0\xaf"), "\"\\ufffd\\ufffd\"");    // overlong '/'
  EXPECT_EQ(quoted("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // UTF-16 surrogate
  EXPECT_EQ(quoted("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
}

TEST(JsonObject, BuildsObjectsWithTypedValues) {
  std::string out;
  JsonObject(out).integer("a", -5).string("b", "x\"y").triple("g", 1, 2, 3).boolean("t", true).real("r", 0.5).close();
  EXPECT_EQ(out, "{\"a\":-5,\"b\":\"x\\\"y\",\"g\":[1,2,3],\"t\":true,\"r\":0.5}");
  std::string nan;
  JsonObject(nan).real("n", 0.0 / 0.0).close();
  EXPECT_EQ(nan, "{\"n\":null}");
}

TEST(IsValidJson, AcceptsJsonAndRejectsTheRest) {
  EXPECT_TRUE(is_valid_json("{}"));
  EXPECT_TRUE(is_valid_json("{\"a\":[1,2.5e3,-0.1,true,null,\"\\u00e9\"]}"));
  EXPECT_TRUE(is_valid_json(" {\"a\" : {\"b\":{}}} "));
  EXPECT_FALSE(is_valid_json("{"));
  EXPECT_FALSE(is_valid_json("{\"a\":}"));
  EXPECT_FALSE(is_valid_json("{\"a\":1,}"));
  EXPECT_FALSE(is_valid_json("{\"a\":01}"));
  EXPECT_FALSE(is_valid_json("{} {}"));
  EXPECT_FALSE(is_valid_json("{\"a\":\"\x01\"}"));
  EXPECT_FALSE(is_valid_json(std::string(1000, '[') + std::string(1000, ']')));  // too deep
}

TEST(OutputBuffer, DrainsInChunksAndHandsOverTheRest) {
  OutputBuffer out;
  std::string drained;
  out.set_drain([&](const char* p, size_t n) { drained.append(p, n); }, 8);
  for (int i = 0; i < 10; ++i) {
    out.append("0123");
    out.maybe_drain();
  }
  EXPECT_EQ(out.total_written(), 40u);
  out.drain_now();
  EXPECT_EQ(drained, std::string(40, '0').replace(0, 40, "0123012301230123012301230123012301230123"));
}

TEST(OutputBuffer, RefusesToGrowPastItsLimit) {
  OutputBuffer out;
  out.set_limit(10, "too big");
  out.append("0123456789");
  EXPECT_THROW(out.append("x"), std::exception);
}
