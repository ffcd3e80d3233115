// Pushdown, differentially: on the bundled example and every fixture, with and without a covering (start, end)
// index on each event table (tools users run add such indexes, and they change SQLite's plans), every pushable
// column and every distinct value it takes gives the rows SQLite itself selects from the unfiltered scan.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>

#include "tests/support/differential.h"
#include "tests/support/test_db.h"

namespace {

class Differential : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(Differential, PushedDownEqualsFilteredBySqlite) {
  auto [script, covering] = GetParam();
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/" + script);
  if (covering) testdiff::add_covering_indexes(db);
  // Under the sanitizers, fewer values per column (the same shapes): the Release pass takes 40.
  testdiff::Report r = testdiff::check_pushdown(db, std::max<size_t>(2, 40 / testdb::sanitizer_stride()));
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  if (db.integer("select count(*) from trace_events") > 0) {
    EXPECT_GT(r.queries, 0);
  }
  if (!covering) {
    for (const auto& f : testdiff::check_columns_args_carry(db)) ADD_FAILURE() << f;
    for (const auto& f : testdiff::check_call_columns(db)) ADD_FAILURE() << f;
  }
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
  std::string n = std::get<0>(info.param);
  n = n.substr(n.rfind('/') + 1);
  n = n.substr(0, n.size() - 4);
  return n + (std::get<1>(info.param) ? "_with_covering_index" : "");
}

INSTANTIATE_TEST_SUITE_P(Profiles, Differential, ::testing::Combine(::testing::ValuesIn(testdb::fixture_scripts()), ::testing::Bool()),
                         name_of);

}  // namespace

namespace {

// The generated grid of query shapes (see testdiff::check_query_grid), on the example and every fixture, with the
// fixture ATTACHed a second time as another report. Under the sanitizers (slower) a sample of the grid.
class QueryGrid : public ::testing::TestWithParam<std::string> {};

size_t grid_stride() { return testdb::sanitizer_stride(); }

TEST_P(QueryGrid, EveryShapeGivesSqlitesAnswer) {
  testdb::TempDir tmp{"nsystrace_grid"};
  testdb::Db db;
  testdb::open_with_second_report(db, GetParam(), tmp, "r1");
  testdiff::Report r = testdiff::check_query_grid(db, 3, grid_stride());
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  for (const auto& f : testdiff::check_call_columns(db)) ADD_FAILURE() << f;  // of both reports, on one clock
  EXPECT_GT(r.queries, 100 / static_cast<int>(grid_stride()));
}

INSTANTIATE_TEST_SUITE_P(Profiles, QueryGrid, ::testing::ValuesIn(testdb::fixture_scripts()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(info.param.rfind('/') + 1);
                           return n.substr(0, n.size() - 4);
                         });

}  // namespace

namespace {

// chrome_trace(*) / perfetto_trace(*) over generated inputs (testdiff::check_star_forms) on the example and every
// fixture: each draws exactly its input's rows or refuses, naming the reliable form; never another scan's rows.
class StarForms : public ::testing::TestWithParam<std::string> {};

TEST_P(StarForms, DrawTheirInputOrRefuse) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/" + GetParam());
  // Under the sanitizers each fixture takes every other input (its index's parity), so that every input runs on half
  // the fixtures; the Release pass runs every input on every fixture.
  const size_t stride = testdb::sanitizer_stride() > 1 ? 2 : 1;
  testdiff::StarReport r =
      testdiff::check_star_forms(db, stride, testdb::position_in(testdb::fixture_scripts(), GetParam()));
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  if (db.integer("select count(*) from trace_events") > 0) {
    EXPECT_GT(r.accepted, 5 / static_cast<int>(stride));
    EXPECT_GT(r.refused, 3 / static_cast<int>(stride));
  }
  std::printf("%s: %d inputs, %d drawn, %d refused\n", GetParam().c_str(), r.queries, r.accepted, r.refused);
}

INSTANTIATE_TEST_SUITE_P(Profiles, StarForms, ::testing::ValuesIn(testdb::fixture_scripts()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(info.param.rfind('/') + 1);
                           return n.substr(0, n.size() - 4);
                         });

}  // namespace
