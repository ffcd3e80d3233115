// The median and sample standard deviation of the nsys stats reports, as accumulators and as SQL aggregates.
#include <gtest/gtest.h>

#include <cmath>

#include "src/util/statistics.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

TEST(Median, MiddleValueOrMeanOfTheTwoMiddleOnes) {
  MedianAccumulator odd, even, none;
  for (int64_t v : {9, 1, 5}) odd.add(v);
  for (int64_t v : {8, 1, 2, 5}) even.add(v);
  EXPECT_EQ(odd.result(), 5.0);
  EXPECT_EQ(even.result(), 3.5);  // (2 + 5) / 2
  EXPECT_FALSE(none.result().has_value());
}

TEST(Median, IntegersStayExactAndRealsMix) {
  MedianAccumulator big, mixed;
  // Two middles near 2^62: their mean is exact only if they are not summed in a double first.
  big.add(int64_t{4611686018427387903});
  big.add(int64_t{4611686018427387905});
  EXPECT_EQ(big.result(), 4611686018427387904.0);
  mixed.add(int64_t{1});
  mixed.add(2.5);
  mixed.add(int64_t{10});
  EXPECT_EQ(mixed.result(), 2.5);
}

TEST(StdDev, SampleDeviationAndZeroForOneValue) {
  StdDevAccumulator one, four, none;
  one.add(42);
  for (int v : {1, 2, 5, 8}) four.add(v);  // mean 4, squares 9 + 4 + 1 + 16 = 30, 30 / 3 = 10
  EXPECT_EQ(one.result(), 0.0);
  EXPECT_DOUBLE_EQ(*four.result(), std::sqrt(10.0));
  EXPECT_FALSE(none.result().has_value());
}

TEST(StdDev, NoCancellationOnLargeValuesWithASmallSpread) {
  // One-second ranges that differ by a few ns: a sum of squares (about 1e24) minus the squared mean in doubles
  // would lose the spread entirely.
  StdDevAccumulator s;
  for (int64_t v : {1000000001, 1000000003, 1000000005, 1000000007}) s.add(static_cast<long double>(v));
  EXPECT_NEAR(*s.result(), std::sqrt(20.0 / 3.0), 1e-9);
}

TEST(StatisticsSql, AggregatesSkipNullsAndRefuseText) {
  testdb::Db db;
  EXPECT_EQ(db.rows("with v(x) as (values (1), (5), (2), (8), (null)) select nsystrace_median(x), "
                    "round(nsystrace_stddev(x), 6) from v"),
            (std::vector<std::vector<std::string>>{{"3.5", "3.162278"}}));
  EXPECT_EQ(db.rows("select nsystrace_median(x), nsystrace_stddev(x) from (select 1 as x where 0)"),
            (std::vector<std::vector<std::string>>{{"NULL", "NULL"}}));
  EXPECT_EQ(db.rows("with v(g, x) as (values (1, 10), (2, 3), (1, 20), (2, 4), (2, 9)) "
                    "select g, nsystrace_median(x) from v group by g"),
            (std::vector<std::vector<std::string>>{{"1", "15.0"}, {"2", "4.0"}}));
  EXPECT_NE(db.error_of("select nsystrace_median('a')").find("nsystrace_median(X): X must be a number"),
            std::string::npos);
  EXPECT_NE(db.error_of("select nsystrace_stddev(x'00')").find("nsystrace_stddev(X): X must be a number"),
            std::string::npos);
}

}  // namespace
}  // namespace nsystrace
