// numeric_affinity() against the SQLite this binary runs on: for every text of a generated set, what the extension
// decides equals what sqlite3_value_numeric_type() makes of the same text as a function argument (where SQLite allows
// the conversion). Run under each host SQLite of the matrix, it checks the rule against every version.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/sqlite/numeric_text.h"

namespace nsystrace {
namespace {

// affinity(x): 'integer:<value>', 'real:<%.17g>' or 'text', as SQLite converts x.
void sqlite_affinity(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int type = sqlite3_value_numeric_type(argv[0]);
  std::string out = "text";
  if (type == SQLITE_INTEGER) out = "integer:" + std::to_string(sqlite3_value_int64(argv[0]));
  if (type == SQLITE_FLOAT) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "real:%.17g", sqlite3_value_double(argv[0]));
    out = buf;
  }
  sqlite3_result_text(ctx, out.c_str(), -1, SQLITE_TRANSIENT);
}

// The same for the extension: the kind from numeric_affinity(), a REAL's value from sqlite3_value_double() as
// filter_value() takes it.
void our_affinity(sqlite3_context* ctx, int, sqlite3_value** argv) {
  std::string text(reinterpret_cast<const char*>(sqlite3_value_text(argv[0])),
                   static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  NumericText n = numeric_affinity(text);
  std::string out = "text";
  if (n.kind == NumericText::Kind::integer) out = "integer:" + std::to_string(n.integer);
  if (n.kind == NumericText::Kind::real) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "real:%.17g", sqlite3_value_double(argv[0]));
    out = buf;
  }
  sqlite3_result_text(ctx, out.c_str(), -1, SQLITE_TRANSIENT);
}

// Texts made of the pieces a number has, each piece also in a malformed variant.
std::vector<std::string> generated_texts() {
  const std::vector<std::string> space = {"", " ", "\t", "\n \r", "\v\f"};
  const std::vector<std::string> sign = {"", "+", "-", "--", "+-"};
  const std::vector<std::string> digits = {"",
                                           "0",
                                           "7",
                                           "007",
                                           "12",
                                           "2251799813685247",
                                           "2251799813685248",
                                           "9007199254740993",
                                           "9223372036854775806",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "9223372036854775809",
                                           "18446744073709551616",
                                           "000000000000000000000000000042",
                                           "123456789012345678901234567890"};
  const std::vector<std::string> fraction = {"", ".", ".0", ".5", ".25000000000000000001", "..5"};
  const std::vector<std::string> exponent = {"", "e", "E+", "e5", "E-3", "e+400", "e-400", "e1x", "ee1"};
  const std::vector<std::string> tail = {"", "x", "0x", " 1", "abc"};
  std::vector<std::string> out;
  for (const auto& d : digits)
    for (const auto& s : sign)
      for (const auto& f : fraction)
        for (const auto& e : exponent) {
          out.push_back(s + d + f + e);
          out.push_back(space[out.size() % space.size()] + s + d + f + e + space[(out.size() / 5) % space.size()]);
        }
  for (const auto& t : tail) {
    out.push_back("12" + t);
    out.push_back(t + "12");
  }
  for (const char* x : {"0x10", "0X1F", "inf", "-inf", "NaN", "1_000", "1,5", "", "   ", "\xc2\xa0" "1", "1e", "+.e1"})
    out.emplace_back(x);
  return out;
}

TEST(NumericAffinity, EqualsTheConversionOfTheSqliteThisRunsOn) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_create_function(db, "sqlite_affinity", 1, SQLITE_UTF8, nullptr, sqlite_affinity, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_create_function(db, "our_affinity", 1, SQLITE_UTF8, nullptr, our_affinity, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "select sqlite_affinity(?1), our_affinity(?1)", -1, &st, nullptr), SQLITE_OK);
  std::vector<std::string> texts = generated_texts();
  int integers = 0, reals = 0, others = 0;
  for (const std::string& text : texts) {
    sqlite3_bind_text(st, 1, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    std::string theirs = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    std::string ours = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    EXPECT_EQ(ours, theirs) << "text '" << text << "' on SQLite " << sqlite3_libversion();
    (theirs.rfind("integer", 0) == 0 ? integers : theirs.rfind("real", 0) == 0 ? reals : others)++;
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  // The set reaches each outcome many times (a generator that made only malformed texts would prove nothing).
  EXPECT_GT(integers, 50);
  EXPECT_GT(reals, 500);
  EXPECT_GT(others, 1000);
  std::printf("[ INFO ] %zu texts on SQLite %s: %d integers, %d reals, %d texts\n", texts.size(), sqlite3_libversion(),
              integers, reals, others);
}

TEST(NumericAffinity, IntegerEdges) {
  EXPECT_EQ(numeric_affinity("-9223372036854775808").integer, INT64_MIN);
  EXPECT_EQ(numeric_affinity(" +9223372036854775807\n").integer, INT64_MAX);
  EXPECT_EQ(numeric_affinity("9223372036854775808").kind, NumericText::Kind::real);
  EXPECT_EQ(numeric_affinity("-0").kind, NumericText::Kind::integer);
  EXPECT_EQ(numeric_affinity("1.").kind, NumericText::Kind::real);
  EXPECT_EQ(numeric_affinity(".").kind, NumericText::Kind::text);
  EXPECT_EQ(numeric_affinity(std::string("12\0", 3)).kind, NumericText::Kind::text);
}

}  // namespace
}  // namespace nsystrace
