// The union of intervals (nsystrace_union_ns, nsystrace_gaps, nsystrace_covered_ns; sql/gpu_time_breakdown.sql,
// sql/expert_findings.sql, sql/compute_comm_overlap.sql): against coverage counted at every ns of small random sets,
// at the ends of int64, and the SQL aggregates' checks.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "src/util/interval_union.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

using Rows = std::vector<std::vector<std::string>>;

TEST(IntervalUnion, LengthAndGaps) {
  IntervalUnion u;
  u.add(5, 20);
  u.add(0, 10);   // overlaps the first: [0, 20)
  u.add(30, 40);  // after a gap of 10
  u.add(41, 41);  // an instant: covers nothing, but splits the gap [40, 50) in two
  u.add(50, 60);
  u.add(55, 52);  // ends before it starts: the instant at 55, inside [50, 60)
  EXPECT_EQ(static_cast<int64_t>(u.length()), 40);
  EXPECT_EQ(gaps_json(u.gaps(0)), "[[20,30],[40,41],[41,50]]");
  EXPECT_EQ(gaps_json(u.gaps(9)), "[[20,30],[41,50]]");
  EXPECT_EQ(gaps_json(u.gaps(11)), "[]");
  EXPECT_EQ(static_cast<int64_t>(IntervalUnion().length()), 0);
  EXPECT_EQ(gaps_json(IntervalUnion().gaps(0)), "[]");
}

TEST(IntervalUnion, ExactAtTheEndsOfInt64) {
  IntervalUnion u;
  u.add(INT64_MIN, INT64_MIN + 10);
  u.add(INT64_MAX - 10, INT64_MAX);
  EXPECT_EQ(static_cast<int64_t>(u.length()), 20);
  std::vector<Gap> g = u.gaps(INT64_MAX);  // the gap is 2^64 - 21 ns: more than any int64
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].start, INT64_MIN + 10);
  EXPECT_EQ(g[0].end, INT64_MAX - 10);
  IntervalUnion whole;
  whole.add(INT64_MIN, INT64_MAX);
  EXPECT_EQ(whole.length(), static_cast<__int128>(INT64_MAX) - INT64_MIN);
}

// Against coverage counted ns by ns: the union's length is the number of covered ns; the gaps are the maximal runs
// of uncovered ns between the first start and the last end, split where an instant lies in them.
TEST(IntervalUnion, MatchesACountAtEveryNs) {
  std::mt19937_64 rng(27);
  for (int round = 0; round < 1000; ++round) {
    IntervalUnion u;
    std::set<int64_t> covered, starts;
    int n = 1 + static_cast<int>(rng() % 10);
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (int i = 0; i < n; ++i) {
      int64_t s = static_cast<int64_t>(rng() % 200) - 50, e = s + static_cast<int64_t>(rng() % 30) - 3;
      u.add(s, e);  // e < s: the instant at s
      for (int64_t t = s; t < e; ++t) covered.insert(t);
      starts.insert(s);
      first = std::min(first, s);
      last = std::max(last, std::max(s, e));
    }
    EXPECT_EQ(static_cast<int64_t>(u.length()), static_cast<int64_t>(covered.size())) << "round " << round;
    int64_t min_gap = static_cast<int64_t>(rng() % 5);
    std::string expected = "[";
    for (int64_t t = first; t < last;) {
      if (covered.count(t)) {
        ++t;
        continue;
      }
      int64_t end = t + 1;
      while (end < last && !covered.count(end) && !starts.count(end)) ++end;
      if (end - t >= min_gap)
        expected += (expected.size() > 1 ? ",[" : "[") + std::to_string(t) + "," + std::to_string(end) + "]";
      t = end;
    }
    expected += "]";
    EXPECT_EQ(gaps_json(u.gaps(min_gap)), expected) << "round " << round << ", min_gap " << min_gap;
  }
}

// UnionCover against coverage counted ns by ns: the covered time of an interval is the number of its ns that some
// covering interval holds.
TEST(UnionCover, MatchesACountAtEveryNs) {
  std::mt19937_64 rng(24);
  for (int round = 0; round < 1000; ++round) {
    IntervalUnion u;
    std::set<int64_t> covered;
    int n = static_cast<int>(rng() % 8);  // none too: nothing is covered
    for (int i = 0; i < n; ++i) {
      int64_t s = static_cast<int64_t>(rng() % 200) - 50, e = s + static_cast<int64_t>(rng() % 30) - 3;
      u.add(s, e);
      for (int64_t t = s; t < e; ++t) covered.insert(t);
    }
    UnionCover cover(u);
    for (int q = 0; q < 20; ++q) {
      int64_t s = static_cast<int64_t>(rng() % 260) - 80, e = s + static_cast<int64_t>(rng() % 60) - 5;
      int64_t expected = 0;
      for (int64_t t = s; t < e; ++t) expected += static_cast<int64_t>(covered.count(t));
      EXPECT_EQ(static_cast<int64_t>(cover.covered(s, e)), expected) << "round " << round << ", [" << s << ", " << e << ")";
    }
  }
}

TEST(UnionCover, ExactAtTheEndsOfInt64) {
  IntervalUnion u;
  u.add(INT64_MIN, INT64_MIN + 10);
  u.add(INT64_MAX - 10, INT64_MAX);
  UnionCover cover(u);
  EXPECT_EQ(static_cast<int64_t>(cover.covered(INT64_MIN, INT64_MAX)), 20);
  EXPECT_EQ(static_cast<int64_t>(cover.covered(INT64_MIN + 5, INT64_MAX - 5)), 10);
  EXPECT_EQ(static_cast<int64_t>(cover.covered(INT64_MAX, INT64_MIN)), 0);  // ends before it starts
  IntervalUnion whole;
  whole.add(INT64_MIN, INT64_MAX);
  EXPECT_EQ(UnionCover(whole).covered(INT64_MIN, INT64_MAX), static_cast<__int128>(INT64_MAX) - INT64_MIN);
}

TEST(IntervalUnionSql, CoveredNsGroupsSkipsNullsAndRefusesBadArguments) {
  testdb::Db db;
  // Group 1: the union [0, 20) and [30, 40); [8, 35) has 12 + 5 ns in it, [1, 2) 1, [50, 60) none. A NULL start,
  // end or covers skips the row; covers is any non-zero integer.
  EXPECT_EQ(db.rows("with v(g, s, e, c) as (values (1, 0, 10, 1), (1, 5, 20, 7), (1, 30, 40, -1), (1, 8, 35, 0), "
                    "(1, 50, 60, 0), (1, 1, 2, 0), (1, null, 100, 1), (1, 0, 100, null), (2, 0, 5, 0), "
                    "(2, 3, null, 1)) select g, nsystrace_covered_ns(s, e, c) from v group by g"),
            (Rows{{"1", "18"}, {"2", "0"}}));
  EXPECT_EQ(db.rows("select nsystrace_covered_ns(1, 2, 0) where 0"), (Rows{{"0"}}));
  EXPECT_EQ(db.rows("with v(s, e, c) as (values (-9223372036854775808, 9223372036854775807, 1), "
                    "(-9223372036854775808, 9223372036854775807, 0)) select typeof(nsystrace_covered_ns(s, e, c)) "
                    "from v"),
            (Rows{{"real"}}));
  for (const char* bad : {"select nsystrace_covered_ns('a', 1, 0)", "select nsystrace_covered_ns(0, 1.5, 0)",
                          "select nsystrace_covered_ns(0, 1, 'yes')", "select nsystrace_covered_ns(0, 1, 0.5)"})
    EXPECT_NE(db.error_of(bad).find("nsystrace_covered_ns(start, end, covers)"), std::string::npos) << bad;
}

TEST(IntervalUnionSql, GroupsFiltersSkipNullsAndRefuseBadArguments) {
  testdb::Db db;
  EXPECT_EQ(db.rows("with v(g, s, e) as (values (1, 0, 30), (1, 10, 50), (1, 60, 70), (2, 5, 6), (2, null, 9)) "
                    "select g, nsystrace_union_ns(s, e), nsystrace_gaps(s, e, 1), "
                    "nsystrace_union_ns(s, e) filter (where s > 100) from v group by g"),
            (Rows{{"1", "60", "[[50,60]]", "0"}, {"2", "1", "[]", "0"}}));
  EXPECT_EQ(db.rows("select nsystrace_union_ns(1, 2), nsystrace_gaps(1, 2, 0) where 0"), (Rows{{"0", "[]"}}));
  // A union past int64 reads as a real.
  EXPECT_EQ(db.rows("select typeof(nsystrace_union_ns(-9223372036854775808, 9223372036854775807))"),
            (Rows{{"real"}}));
  for (const char* bad : {"select nsystrace_union_ns('a', 1)", "select nsystrace_union_ns(0, 1.5)"})
    EXPECT_NE(db.error_of(bad).find("nsystrace_union_ns(start, end)"), std::string::npos) << bad;
  for (const char* bad : {"select nsystrace_gaps(0, 1, null)", "select nsystrace_gaps(0, 'x', 1)",
                          "with v(m) as (values (10), (20)) select nsystrace_gaps(0, 1, m) from v"})
    EXPECT_NE(db.error_of(bad).find("nsystrace_gaps(start, end, min_gap_ns)"), std::string::npos) << bad;
}

}  // namespace
}  // namespace nsystrace
