// Several reports on one timeline: ATTACHed exports scanned together through trace_events' hidden `schema`
// column keep their processes and correlation ids apart, are aligned on the first report's session start and name
// their processes by report.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

class MultiReport : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"rank0", "rank1"}) {
      testdb::Db make(dir + "/" + name + ".sqlite", false, true);
      make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    }
    {  // rank1's session started 5 s after rank0's: the same events happened 5 s later.
      testdb::Db edit(dir + "/rank1.sqlite", false, true);
      edit.exec("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + 5000000000");
    }
    db = std::make_unique<testdb::Db>(dir + "/rank0.sqlite");
    db->exec("attach 'file:" + dir + "/rank1.sqlite?mode=ro' as rank1");
  }
  testdb::TempDir tmp{"nsystrace_multi"};  // declared first: removed after db has closed its files
  const std::string dir = tmp.path();
  std::unique_ptr<testdb::Db> db;
};

TEST_F(MultiReport, WithoutASchemaConstraintOnlyMainIsRead) {
  // A query that never names `schema` reads main only; one that reads it without fixing it reads every report.
  int64_t main_rows = db->integer("select count(*) from trace_events where schema = 'main'");
  EXPECT_EQ(db->integer("select count(*) from trace_events"), main_rows);
  EXPECT_EQ(db->integer("select count(distinct schema) from trace_events"), 2);
  EXPECT_EQ(db->text("select group_concat(distinct schema) from trace_events"), "main,rank1");
}

TEST_F(MultiReport, OperatorsTheScanDoesNotApplyOnSchemaGetSqlitesAnswer) {
  int64_t rank1 = db->integer("select count(*) from trace_events where schema = 'rank1'");
  ASSERT_GT(rank1, 0);
  // Each returned 0 rows before: the scan read main only and SQLite filtered it.
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema like 'r%'"), rank1);
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema != 'main'"), rank1);
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema > 'main'"), rank1);
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema is not 'main'"), rank1);
}

TEST_F(MultiReport, ReportsKeepTheirRowsProcessesAndClocksApart) {
  int64_t single = db->integer("select count(*) from trace_events");
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema in ('main', 'rank1')"), 2 * single);
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema = 'rank1'"), single);
  // Same events, rank1 on a clock 5 s later, pids shifted by 2^25, names say the report.
  EXPECT_EQ(db->integer("select (select min(ts) from trace_events where schema = 'rank1') - "
                        "(select min(ts) from trace_events where schema in ('main', 'rank1'))"),
            5000000000);
  // Shown on main's clock whatever reports the query names.
  EXPECT_EQ(db->integer("select (select min(ts) from trace_events where schema = 'rank1') - "
                        "(select min(ts) from trace_events)"),
            5000000000);
  EXPECT_EQ(db->rows("select distinct pid, process_name from trace_events where schema in ('main', 'rank1') "
                     "and kind = 'cuda_api' order by pid"),
            (std::vector<std::vector<std::string>>{{"4101", "[main] python3"},
                                                   {"4102", "[main] python3"},
                                                   {"33558533", "[rank1] python3"},
                                                   {"33558534", "[rank1] python3"}}));
  EXPECT_EQ(db->integer("select count(distinct rowid) from trace_events where schema in ('main', 'rank1')"), 2 * single);
  EXPECT_NE(db->text("explain query plan select * from trace_events where schema in ('main', 'rank1')").size(), 0u);
}

TEST_F(MultiReport, OneTraceWithFlowsThatNeverCrossReports) {
  auto one = testtrace::check_trace(db->text("select chrome_trace(*) from trace_events"));
  auto both = testtrace::check_trace(db->text("select chrome_trace(*) from trace_events where schema in ('main', 'rank1')"));
  for (const auto& p : both.problems) ADD_FAILURE() << p;
  EXPECT_EQ(both.slices.size(), 2 * one.slices.size());
  // Both reports use the same correlation ids in the same pids: matched across reports there would be more flows.
  EXPECT_EQ(both.flow_starts, 2 * one.flow_starts);
  const testjson::Value* reports = both.root.get("otherData")->get("reports");
  ASSERT_NE(reports, nullptr);
  ASSERT_EQ(reports->items.size(), 2u);
  EXPECT_EQ(reports->items[1].str("clock_offset_ns"), "5000000000");
  EXPECT_EQ(reports->items[1].str("pid_offset"), "33554432");
}

TEST_F(MultiReport, NvtxKernelRangesComparesReports) {
  auto rows = db->rows("select schema, count(*), sum(gpu_ops) from nvtx_kernel_ranges "
                       "where schema in ('main', 'rank1') group by schema order by schema");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][1], rows[1][1]);
  EXPECT_EQ(rows[0][2], rows[1][2]);
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges"), std::stoll(rows[0][1]));
}

TEST_F(MultiReport, AnUnknownSchemaIsAClearError) {
  EXPECT_NE(db->error_of("select count(*) from trace_events where schema = 'rank7'").find("no database named 'rank7'"),
            std::string::npos);
}

}  // namespace

namespace {
// The per-report cache (strings, processes, the NVTX projection) belongs to a file, not to a schema name: DETACH r
// and ATTACH another rank's export as r, and the names are the new file's, even when both exports carry the same
// schema cookies (made alike, as two ranks of one job by one nsys version are).
TEST_F(MultiReport, ReattachingAnotherFileUnderTheSameNameReadsTheNewFile) {
  {
    testdb::Db edit(dir + "/rank2.sqlite", false, true);
    edit.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    edit.exec("update StringIds set value = 'rank2_' || value; delete from NVTX_EVENTS where rowid % 3 = 0");
  }
  int64_t rank2_ranges = testdb::Db(dir + "/rank2.sqlite").integer("select count(*) from nvtx_kernel_ranges");
  auto kernel_names = [&] {
    return db->text("select group_concat(distinct name) from (select name from trace_events "
                    "where schema = 'rank1' and kind = 'kernel' order by name)");
  };
  std::string first = kernel_names();
  ASSERT_EQ(first.find("rank2_"), std::string::npos);
  db->exec("detach rank1");
  db->exec("attach 'file:" + dir + "/rank2.sqlite?mode=ro' as rank1");
  std::string second = kernel_names();
  EXPECT_EQ(second.rfind("rank2_", 0), 0u) << second;
  // The NVTX projection is the new file's too.
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges where schema = 'rank1'"), rank2_ranges);
  EXPECT_NE(rank2_ranges, testdb::Db(dir + "/rank1.sqlite").integer("select count(*) from nvtx_kernel_ranges"));
}
}  // namespace
