// Interval concurrency per bucket (nsystrace_concurrency, sql/queue_depth.sql): the sweep against a count at every
// ns, the exact bucket arithmetic at the ends of int64, and the SQL aggregate's checks.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <stdexcept>

#include "src/util/concurrency.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

using Rows = std::vector<std::vector<std::string>>;

TEST(Concurrency, DepthAndIntegralPerBucket) {
  ConcurrencyAccumulator a;
  a.add(0, 30);  // with the next: depth 1 on [0, 10), 2 on [10, 30), 1 on [30, 50)
  a.add(10, 50);
  a.add(70, 80);  // after a gap at depth 0, which no bucket counts
  std::vector<ConcurrencyBucket> b = a.buckets(0, 25);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[1].index, 1);
  EXPECT_EQ(b[1].start, 25);
  EXPECT_EQ(b[1].max_depth, 2);
  EXPECT_EQ(static_cast<int64_t>(b[1].depth_ns), 5 * 2 + 20 * 1);  // [25, 30) at 2, [30, 50) at 1
  // [index, start, max_depth, depth_ns, busy_ns]: [0, 25) holds 10 ns at 1 and 15 at 2; [50, 75) and [75, 100) 5 ns
  // each.
  EXPECT_EQ(concurrency_json(b), "[[0,0,2,40,25],[1,25,2,30,25],[2,50,1,5,5],[3,75,1,5,5]]");
}

TEST(Concurrency, EndsBeforeStartsAtEqualTimesAndEmptyIntervals) {
  ConcurrencyAccumulator a;
  a.add(0, 10);
  a.add(10, 20);  // back to back: depth 1 throughout, never 2
  a.add(5, 5);    // empty: no depth of its own
  std::vector<ConcurrencyBucket> b = a.buckets(0, 100);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].max_depth, 1);
  EXPECT_EQ(static_cast<int64_t>(b[0].depth_ns), 20);
  EXPECT_EQ(concurrency_json(b), "[[0,0,1,20,20]]");
  EXPECT_EQ(concurrency_json(ConcurrencyAccumulator().buckets(0, 1)), "[]");
}

TEST(Concurrency, ExactAtTheEndsOfInt64) {
  ConcurrencyAccumulator a;
  const int64_t lo = INT64_MIN, hi = INT64_MAX;
  a.add(lo, lo + 10);
  a.add(hi - 10, hi);
  // The span (2^64 - 1 ns) in 100,000 buckets: 184467440737096 ns each, the last bucket's start exact.
  const int64_t w = 184467440737096;
  std::vector<ConcurrencyBucket> b = a.buckets(lo, w);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].index, 0);
  EXPECT_EQ(b[0].start, lo);
  EXPECT_EQ(b[1].index, 99999);
  EXPECT_EQ(b[1].start, static_cast<int64_t>(lo + static_cast<__int128>(99999) * w));
  EXPECT_EQ(static_cast<int64_t>(b[1].depth_ns), 10);
  // One interval over the whole range, depth 3: its integral exceeds int64 and reads as a real.
  ConcurrencyAccumulator deep;
  for (int i = 0; i < 3; ++i) deep.add(lo, hi);
  std::vector<ConcurrencyBucket> one = deep.buckets(lo, hi);  // widths of 2^63 - 1: buckets 0, 1 and 2
  ASSERT_EQ(one.size(), 3u);
  EXPECT_EQ(concurrency_json(one).substr(0, 30), "[[0,-9223372036854775808,3,2.7");
}

TEST(Concurrency, BucketsBeforeT0HaveNegativeIndexes) {
  ConcurrencyAccumulator a;
  a.add(-15, -5);
  EXPECT_EQ(concurrency_json(a.buckets(0, 10)), "[[-2,-20,1,5,5],[-1,-10,1,5,5]]");
}

TEST(Concurrency, ReversedIntervalLowersTheDepthBetween) {
  // As the SQL sweep counts it: +1 at 20, -1 at 10. With [0, 30) open, depth 1 on [0, 10), 0 on [10, 20), 1 after.
  ConcurrencyAccumulator a;
  a.add(0, 30);
  a.add(20, 10);
  EXPECT_EQ(concurrency_json(a.buckets(0, 100)), "[[0,0,1,20,20]]");
}

TEST(Concurrency, TooManyBucketsIsAnErrorNotAnEndlessLoop) {
  ConcurrencyAccumulator a;
  a.add(INT64_MIN, INT64_MAX);
  EXPECT_THROW(a.buckets(INT64_MAX, 1), std::length_error);  // bucket -(2^64 - 1): past 64 bits
  ConcurrencyAccumulator b;
  b.add(0, 1000);
  EXPECT_THROW(b.buckets(0, 1, 999), std::length_error);
  EXPECT_EQ(b.buckets(0, 1, 1000).size(), 1000u);
  EXPECT_THROW(b.buckets(0, 0), std::invalid_argument);
}

// Against the depth counted at every ns of small random profiles, for random origins and widths.
TEST(Concurrency, MatchesACountAtEveryNs) {
  std::mt19937_64 rng(24);
  for (int round = 0; round < 500; ++round) {
    ConcurrencyAccumulator a;
    std::map<int64_t, int64_t> depth_at;  // ns -> depth over [ns, ns + 1)
    int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      int64_t s = static_cast<int64_t>(rng() % 200) - 50, e = s + static_cast<int64_t>(rng() % 40);
      a.add(s, e);
      for (int64_t t = s; t < e; ++t) ++depth_at[t];
    }
    int64_t t0 = static_cast<int64_t>(rng() % 100) - 60, w = 1 + static_cast<int64_t>(rng() % 30);
    std::map<int64_t, std::array<int64_t, 3>> expected;  // k -> (max, integral, busy)
    for (auto [t, d] : depth_at) {
      if (d == 0) continue;
      int64_t k = (t - t0) >= 0 ? (t - t0) / w : -((t0 - t + w - 1) / w);
      auto& [mx, sum, busy] = expected[k];
      mx = std::max(mx, d);
      sum += d;
      ++busy;
    }
    std::vector<ConcurrencyBucket> got = a.buckets(t0, w);
    ASSERT_EQ(got.size(), expected.size()) << "round " << round;
    size_t i = 0;
    for (auto [k, v] : expected) {
      EXPECT_EQ(got[i].index, k) << "round " << round;
      EXPECT_EQ(got[i].start, t0 + k * w);
      EXPECT_EQ(got[i].max_depth, v[0]) << "round " << round << " bucket " << k;
      EXPECT_EQ(static_cast<int64_t>(got[i].depth_ns), v[1]) << "round " << round << " bucket " << k;
      EXPECT_EQ(got[i].busy_ns, v[2]) << "round " << round << " bucket " << k;
      ++i;
    }
  }
}

TEST(ConcurrencySql, GroupsSkipNullsAndRefuseBadArguments) {
  testdb::Db db;
  EXPECT_EQ(db.rows("with v(g, s, e) as (values (1, 0, 30), (1, 10, 50), (2, 5, 6), (2, null, 9)) "
                    "select g, nsystrace_concurrency(s, e, 0, 25) from v group by g"),
            (Rows{{"1", "[[0,0,2,40,25],[1,25,2,30,25]]"}, {"2", "[[0,0,1,1,1]]"}}));
  EXPECT_EQ(db.rows("select nsystrace_concurrency(1, 2, 0, 10) where 0"), (Rows{{"[]"}}));
  // json_each expands the buckets, as sql/queue_depth.sql does.
  EXPECT_EQ(db.rows("select json_extract(b.value, '$[0]'), json_extract(b.value, '$[3]') "
                    "from (select nsystrace_concurrency(0, 30, 0, 25) as j), json_each(j) b"),
            (Rows{{"0", "25"}, {"1", "5"}}));
  for (const char* bad : {"select nsystrace_concurrency(0, 1, 0, 0)", "select nsystrace_concurrency('a', 1, 0, 10)",
                          "select nsystrace_concurrency(0, 1.5, 0, 10)", "select nsystrace_concurrency(0, 1, null, 10)",
                          "with v(w) as (values (10), (20)) select nsystrace_concurrency(0, 1, 0, w) from v"})
    EXPECT_NE(db.error_of(bad).find("nsystrace_concurrency(start, end, t0, bucket_ns)"), std::string::npos) << bad;
  EXPECT_NE(db.error_of("select nsystrace_concurrency(-9223372036854775808, 0, 9223372036854775807, 1)")
                .find("widen the bucket"),
            std::string::npos);
}

}  // namespace
}  // namespace nsystrace
