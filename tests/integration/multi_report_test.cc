// Several reports on one timeline: ATTACHed exports scanned together through trace_events' hidden `schema`
// column keep their processes and correlation ids apart, share one clock whose time 0 is the earliest session start
// among them, and name their processes by report.
#include <algorithm>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

class MultiReport : public ::testing::Test {
 protected:
  // How much later than rank0's (main's) session rank1's started.
  virtual int64_t rank1_starts_later_by() const { return 5000000000; }
  void SetUp() override {
    for (const char* name : {"rank0", "rank1"}) {
      testdb::Db make(dir + "/" + name + ".sqlite", false, true);
      make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    }
    {  // The same events, recorded by a session that started at another time.
      testdb::Db edit(dir + "/rank1.sqlite", false, true);
      edit.exec("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + " +
                std::to_string(rank1_starts_later_by()));
    }
    db = std::make_unique<testdb::Db>(dir + "/rank0.sqlite");
    db->exec("attach 'file:" + dir + "/rank1.sqlite?mode=ro' as rank1");
  }
  testdb::TempDir tmp{"nsystrace_multi"};  // declared first: removed after db has closed its files
  const std::string dir = tmp.path();
  std::unique_ptr<testdb::Db> db;
};

TEST_F(MultiReport, WithoutASchemaConstraintEveryReportIsRead) {
  // The tables hold every report on the connection, whatever a query selects; a constraint on `schema` only narrows.
  int64_t main_rows = db->integer("select count(*) from trace_events where schema = 'main'");
  int64_t rank1_rows = db->integer("select count(*) from trace_events where schema = 'rank1'");
  ASSERT_GT(main_rows, 0);
  EXPECT_EQ(db->integer("select count(*) from trace_events"), main_rows + rank1_rows);
  EXPECT_EQ(db->text("select group_concat(distinct schema) from trace_events"), "main,rank1");
  EXPECT_EQ(db->rows("select schema, count(*) from trace_events group by 1"),
            (std::vector<std::vector<std::string>>{{"main", std::to_string(main_rows)},
                                                   {"rank1", std::to_string(rank1_rows)}}));
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges"),
            db->integer("select count(*) from nvtx_kernel_ranges where schema in ('main', 'rank1')"));
  EXPECT_EQ(db->integer("select count(distinct schema) from nvtx_kernel_ranges"), 2);
  EXPECT_EQ(db->integer("select count(distinct schema) from event_totals"), 2);
  // A name that is no report names no rows, as any value no row has.
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema = 'rank7'"), 0);
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges where schema = 'rank7'"), 0);
  EXPECT_EQ(db->integer("select count(*) from event_totals where schema in ('rank7', 'temp')"), 0);
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
  int64_t single = db->integer("select count(*) from trace_events where schema = 'main'");
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema in ('main', 'rank1')"), 2 * single);
  EXPECT_EQ(db->integer("select count(*) from trace_events where schema = 'rank1'"), single);
  // Same events, rank1 on a clock 5 s later, pids shifted by 2^25, names say the report.
  EXPECT_EQ(db->integer("select max(ts) - min(ts) from (select min(ts) as ts from trace_events "
                        "where schema in ('main', 'rank1') group by schema)"),
            5000000000);
  EXPECT_EQ(db->integer("select min(ts) from trace_events where schema in ('main', 'rank1')"),
            db->integer("select min(ts) from trace_events where schema = 'main'"));  // main started first
  // A report's times are the same whichever reports a query reads: the connection's clock.
  EXPECT_EQ(db->integer("select min(ts) from trace_events where schema = 'rank1'"),
            db->integer("select min(ts) from trace_events where schema = 'main'") + 5000000000);
  EXPECT_EQ(db->integer("select min(ts) from trace_events where schema = 'rank1'"),
            db->integer("select min(ts) from trace_events where schema in ('main', 'rank1') and pid >= 33554432"));
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
  auto one = testtrace::check_trace(db->text("select chrome_trace(*) from trace_events where schema = 'main'"));
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
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges"), 2 * std::stoll(rows[0][1]));
  // Named without = or IN, `schema` is SQLite's to apply, over every report.
  EXPECT_EQ(db->integer("select count(*) from nvtx_kernel_ranges where schema like 'r%'"), std::stoll(rows[1][1]));
  // A report's rows (rowids, parents) are the same whichever reports a query reads, and match trace_events'.
  const char* rank1 = "select rowid, parent from nvtx_kernel_ranges where schema = 'rank1' order by rowid";
  EXPECT_EQ(db->rows(rank1), db->rows("select rowid, parent from nvtx_kernel_ranges where schema in ('main', 'rank1') "
                                      "and schema = 'rank1' order by rowid"));
  EXPECT_EQ(db->text("select group_concat(distinct rowid >> 56) from nvtx_kernel_ranges where schema = 'rank1'"), "1");
  // children count within the row's report: the same per report, read alone or with the other.
  EXPECT_EQ(db->rows("select sum(children), count(parent) from nvtx_kernel_ranges where schema in ('main', 'rank1') "
                     "group by schema"),
            db->rows("select sum(children), count(parent) from nvtx_kernel_ranges where schema = 'main' union all "
                     "select sum(children), count(parent) from nvtx_kernel_ranges where schema = 'rank1'"));
  EXPECT_EQ(db->text("select group_concat(distinct rowid >> 56) from trace_events where schema = 'rank1'"), "1");
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

namespace {
// rank1 is listed after main but its session started 5 s before main's: the trace's time 0 is rank1's start, main's
// events are 5 s later, and nothing is drawn before 0 (aligned on main, rank1's events would be at -3 s and clamped
// to 0, the whole report collapsed onto one instant).
class MultiReportListedLaterStartedEarlier : public MultiReport {
 protected:
  int64_t rank1_starts_later_by() const override { return -5000000000; }
};

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(MultiReportListedLaterStartedEarlier, TheEarliestSessionStartIsTimeZero) {
  // rank1 started first: its own times, alone or merged; main's are 5 s later in every query.
  int64_t first = db->integer("select min(ts) from trace_events where schema = 'rank1'");
  ASSERT_GT(first, 0);
  EXPECT_EQ(db->integer("select min(ts) from trace_events where schema = 'main'"), first + 5000000000);
  const char* both = " from trace_events where schema in ('main', 'rank1')";
  EXPECT_EQ(db->integer(std::string("select min(ts)") + both + " and pid < 33554432"), first + 5000000000);
  EXPECT_EQ(db->integer(std::string("select min(ts)") + both + " and pid >= 33554432"), first);

  auto trace = testtrace::check_trace(db->text(std::string("select chrome_trace(*)") + both));
  for (const auto& p : trace.problems) ADD_FAILURE() << p;
  const testjson::Value* other = trace.root.get("otherData");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->get("events_clamped_to_zero"), nullptr) << other->str("events_clamped_to_zero");
  // Each row is drawn at its trace_events ts.
  std::vector<int64_t> drawn;
  for (const auto& s : trace.slices) drawn.push_back(s.ts_ns);
  std::vector<int64_t> rows;
  for (const auto& r : db->rows(std::string("select ts") + both)) rows.push_back(std::stoll(r[0]));
  EXPECT_EQ(sorted(drawn), sorted(rows));
  // Each report's offset from the trace's time 0 stays in the metadata.
  const testjson::Value* reports = other->get("reports");
  ASSERT_NE(reports, nullptr);
  ASSERT_EQ(reports->items.size(), 2u);
  EXPECT_EQ(reports->items[0].str("schema"), "main");
  EXPECT_EQ(reports->items[0].str("clock_offset_ns"), "5000000000");
  EXPECT_EQ(reports->items[1].str("clock_offset_ns"), "0");
  EXPECT_EQ(reports->items[1].get("clock_not_aligned"), nullptr);
}

TEST_F(MultiReportListedLaterStartedEarlier, APushedDownWindowSelectsByTheMergedTimes) {
  int64_t first = db->integer("select min(ts) from trace_events where schema = 'rank1'");
  std::string window = " from trace_events where schema in ('main', 'rank1') and ts < " +
                       std::to_string(first + 5000000000);
  EXPECT_EQ(db->integer("select count(*)" + window),
            db->integer("select count(*) from trace_events where schema = 'rank1'"));
  EXPECT_EQ(db->integer("select count(distinct schema)" + window), 1);
  EXPECT_EQ(db->text("select distinct schema" + window), "rank1");
}

// A report without a session start (exports before 2021 have no TARGET_INFO_SESSION_START_TIME) cannot be placed
// beside reports that have one: a clear error naming it, not a guess.
TEST_F(MultiReportListedLaterStartedEarlier, AReportWithoutASessionStartAmongOthersIsAnErrorNamingIt) {
  {
    testdb::Db make(dir + "/nostart.sqlite", false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    make.exec("drop table TARGET_INFO_SESSION_START_TIME");
  }
  db->exec("attach 'file:" + dir + "/nostart.sqlite?mode=ro' as nostart");
  for (const char* sql : {"select count(*) from trace_events where schema in ('main', 'nostart')",
                          "select chrome_trace(*) from trace_events where schema in ('nostart', 'rank1')"}) {
    std::string error = db->error_of(sql);
    EXPECT_NE(error.find("report 'nostart' (" + dir + "/nostart.sqlite) has no session start"), std::string::npos)
        << sql << ": " << error;
  }
  // Alone, it is drawn on its own clock: its recorded times (those of rank1, the same profile, whose start is time 0).
  EXPECT_EQ(db->integer("select min(ts) from trace_events where schema = 'nostart'"),
            db->integer("select min(ts) from trace_events where schema = 'rank1'"));
}

TEST_F(MultiReportListedLaterStartedEarlier, ReportsThatAllLackASessionStartKeepTheirOwnTimes) {
  for (const char* name : {"nostart1", "nostart2"}) {
    {
      testdb::Db make(dir + "/" + name + ".sqlite", false, true);
      make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
      make.exec("delete from TARGET_INFO_SESSION_START_TIME");
    }
    db->exec("attach 'file:" + dir + "/" + name + ".sqlite?mode=ro' as " + name);
  }
  const char* both = " from trace_events where schema in ('nostart1', 'nostart2')";
  EXPECT_EQ(db->integer(std::string("select max(ts) - min(ts) from (select min(ts) as ts") + both + " group by schema)"),
            0);
  auto trace = testtrace::check_trace(db->text(std::string("select chrome_trace(*)") + both));
  const testjson::Value* reports = trace.root.get("otherData")->get("reports");
  ASSERT_NE(reports, nullptr);
  ASSERT_EQ(reports->items.size(), 2u);
  for (const auto& r : reports->items) {
    EXPECT_EQ(r.str("clock_offset_ns"), "0");
    EXPECT_NE(r.get("clock_not_aligned"), nullptr);
  }
}
}  // namespace
