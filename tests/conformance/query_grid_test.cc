// The generated grid of query shapes (testdiff::check_query_grid) on every real export in ../shared/fixtures/real:
// with n exports, export i runs the shapes whose number is i modulo n, so that together they run every shape of the
// grid once, each on real data of its own, within the suite's time (the fixtures' grids, tests/integration, run
// every shape on every fixture). A heavy export (testdb::work_weight w) runs every w-th of its share. Skipped,
// visibly, without ../shared.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tests/support/differential.h"
#include "tests/support/test_db.h"

namespace {

std::vector<std::string> real_exports() { return testdb::real_exports(); }

TEST(RealExportQueryGrid, ExportsAreThere) {
  if (testdb::shared_fixtures_dir().empty())
    GTEST_SKIP() << "../shared/fixtures/real not found: the query grid over real exports NOT run "
                    "(set NSYSTRACE_SHARED_FIXTURES to its path)";
  EXPECT_FALSE(real_exports().empty());
}

class RealExportQueryGrid : public ::testing::TestWithParam<std::string> {};

TEST_P(RealExportQueryGrid, EveryShapeGivesSqlitesAnswer) {
  auto all = real_exports();
  const size_t exports_per_shape = all.size();
  const size_t phase = testdb::position_in(all, GetParam());
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  // The sanitizer pass samples further: every stride-th of this export's shapes; a heavy export runs a share of them
  // as many times smaller as it is heavy (testdb::work_weight).
  const size_t sample = testdb::sanitizer_stride() * testdb::work_weight(db);
  testdiff::Report r = testdiff::check_query_grid(db, 3, exports_per_shape * sample, phase);
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_GT(r.queries, 30 / static_cast<int>(sample));
  std::printf("%s: %d query shapes compared\n", GetParam().c_str(), r.queries);
}

// chrome_trace(*) / perfetto_trace(*) over generated inputs (testdiff::check_star_forms): each draws exactly its
// input's rows or refuses naming the reliable form. Each export runs every other input (its index's parity), so that
// every input runs on half the exports; our fixtures run them all (Profiles/StarForms).
TEST_P(RealExportQueryGrid, StarFormsDrawTheirInputOrRefuse) {
  // Under the sanitizers and in the host matrix, the star forms run on every fixture of ours (Profiles/StarForms);
  // on a real export they take minutes under ASan (195 s for h200_torch_train_emit_nvtx) for no path the fixtures
  // do not take.
  if (testdb::sanitizer_stride() > 1)
    GTEST_SKIP() << "the star forms on the real exports run in the Release pass; here, on every fixture";
  auto all = real_exports();
  const size_t phase = testdb::position_in(all, GetParam());
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  testdiff::StarReport r = testdiff::check_star_forms(db, 2, phase);
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  std::printf("%s: %d inputs, %d drawn, %d refused\n", GetParam().c_str(), r.queries, r.accepted, r.refused);
  if (db.integer("select count(*) from trace_events") > 0) {
    EXPECT_GT(r.accepted, 3);
    EXPECT_GT(r.refused, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExportQueryGrid, ::testing::ValuesIn(real_exports()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(0, info.param.size() - 7);
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExportQueryGrid);

}  // namespace
