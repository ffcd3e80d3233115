// nvtx_kernel_ranges and the 'nvtx_kernel' rows of trace_events on tests/fixtures/nvtx_projection.sql, one case
// per rule of the definition (the fixture's header lists each expected row, worked out by hand).
#include <gtest/gtest.h>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

using Rows = std::vector<std::vector<std::string>>;

class Projection : public ::testing::Test {
 protected:
  void SetUp() override { db.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql"); }
  Rows row(int64_t rowid) {
    return db.rows("select name, gpu_start, gpu_end, gpu_ops, kernels, memcpys, memsets, devices, depth, parent "
                   "from nvtx_kernel_ranges where rowid = " + std::to_string(rowid));
  }
  testdb::Db db;
};

// children: the rows whose parent is the range ('outer' holds 'inner' and 'registered name'; 'open range' holds
// 'graph'), what a self-join on parent counts.
TEST_F(Projection, ChildrenAreTheRowsWhoseParentIsTheRange) {
  EXPECT_EQ(db.rows("select rowid, children from nvtx_kernel_ranges where children > 0 order by rowid"),
            (Rows{{"2", "2"}, {"10", "1"}}));
  EXPECT_EQ(db.integer("select count(*) from nvtx_kernel_ranges r where children != "
                       "(select count(*) from nvtx_kernel_ranges c where c.parent = r.rowid)"),
            0);
  EXPECT_EQ(db.integer("select sum(children) from nvtx_kernel_ranges"),
            db.integer("select count(parent) from nvtx_kernel_ranges"));
}

TEST_F(Projection, NestedRangesEachCountTheWorkOfTheirCalls) {
  // Memcpys and memsets count as GPU operations; work on two devices gives devices '0,1'.
  EXPECT_EQ(row(2), (Rows{{"outer", "1200", "2600", "4", "2", "1", "1", "0,1", "0", "NULL"}}));
  // An operation belongs to every enclosing range, not only the innermost.
  EXPECT_EQ(row(3), (Rows{{"inner", "1200", "1450", "2", "1", "1", "0", "0", "1", "2"}}));
}

TEST_F(Projection, RegisteredStringInANamedDomain) {
  EXPECT_EQ(db.rows("select name, domain, memsets, parent from nvtx_kernel_ranges where rowid = 4"),
            (Rows{{"registered name", "Layers", "1", "2"}}));
}

TEST_F(Projection, OnlyCallsOnTheRangesOwnThreadCount) {
  EXPECT_EQ(row(5), (Rows{{"worker range", "1520", "1530", "1", "1", "0", "0", "0", "0", "NULL"}}));
}

TEST_F(Projection, BoundariesAreInclusiveAndStraddlingCallsExcluded) {
  EXPECT_EQ(row(6), (Rows{{"exact bounds", "3200", "3300", "1", "1", "0", "0", "0", "0", "NULL"}}));
  EXPECT_TRUE(row(7).empty());  // 'straddle': its only call ends after it
}

TEST_F(Projection, StartEndRangesCountOnlyWhenTheyEndOnTheirThread) {
  EXPECT_EQ(db.rows("select name, gpu_start, gpu_end, range_type from nvtx_kernel_ranges where rowid = 8"),
            (Rows{{"async same thread", "5300", "5400", "start/end"}}));
  EXPECT_TRUE(row(9).empty());
}

TEST_F(Projection, AnOpenRangeExtendsToTheEndOfTheProfile) {
  EXPECT_EQ(db.rows("select end, gpu_start, gpu_end, gpu_ops, kernels, unclosed from nvtx_kernel_ranges where rowid = 10"),
            (Rows{{"7300", "6200", "7300", "2", "4", "1"}}));
}

TEST_F(Projection, AGraphLaunchCountsOnceWithAllItsKernels) {
  EXPECT_EQ(row(11), (Rows{{"graph", "7100", "7300", "1", "3", "0", "0", "0", "1", "10"}}));
}

TEST_F(Projection, CorrelationIdsAreScopedToTheProcess) {
  EXPECT_EQ(db.rows("select name, pid, tid, gpu_start, gpu_end, gpu_ops, devices from nvtx_kernel_ranges where rowid = 12"),
            (Rows{{"rank b", "200", "200", "1150", "1990", "2", "1"}}));
}

// Three honest numbers for one range: the span of its work (NVIDIA's projection), the sum of its operations'
// durations, and the union of their intervals (the time the GPU was busy with them). Added to the fixture here:
// 'overlap' [8000, 8100] on main launches two kernels that run concurrently on two streams, [8100, 8300] and
// [8200, 8400], and one later, [8700, 8750]. Span 8750 - 8100 = 650; sum 200 + 200 + 50 = 450; union
// [8100, 8400] + [8700, 8750] = 300 + 50 = 350.
TEST_F(Projection, SpanSumAndBusyTimeAreThreeNumbers) {
  db.exec("INSERT INTO NVTX_EVENTS VALUES (8000, 8100, 59, NULL, NULL, NULL, 'overlap', 281476654432356, NULL, NULL, 0);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (8010, 8020, 0, 281476654432356, 30, 3, 0),"
          "  (8030, 8040, 0, 281476654432356, 31, 3, 0), (8050, 8060, 0, 281476654432356, 32, 3, 0);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (8100, 8300, 0, 1, 7, 30, 281476654432256, 4, 4),"
          "  (8200, 8400, 0, 1, 8, 31, 281476654432256, 4, 4), (8700, 8750, 0, 1, 7, 32, 281476654432256, 4, 4);");
  EXPECT_EQ(db.rows("select gpu_start, gpu_end, gpu_span, gpu_op_time, gpu_busy_time, gpu_ops from nvtx_kernel_ranges "
                    "where name = 'overlap'"),
            (Rows{{"8100", "8750", "650", "450", "350", "3"}}));
  // 'outer' (see the fixture's header): four operations that never overlap, so the sum is the union, 100 + 50 + 20
  // + 100 = 270, in a span of 1400.
  EXPECT_EQ(db.rows("select gpu_span, gpu_op_time, gpu_busy_time from nvtx_kernel_ranges where name = 'outer'"),
            (Rows{{"1400", "270", "270"}}));
}

TEST_F(Projection, EveryRowIsAccountedFor) {
  EXPECT_EQ(db.rows("select rowid from nvtx_kernel_ranges order by rowid"),
            (Rows{{"2"}, {"3"}, {"4"}, {"5"}, {"6"}, {"8"}, {"10"}, {"11"}, {"12"}}));
}

TEST_F(Projection, TraceEventsShowEachRangeOnEveryGpuItUsed) {
  // 'outer' ran work on both GPUs: one slice per GPU with that GPU's extent.
  EXPECT_EQ(db.rows("select ts, dur, pid, device_id, thread_name from trace_events "
                    "where kind = 'nvtx_kernel' and name = 'outer' and derived = 1 order by device_id"),
            (Rows{{"1200", "520", "16777216", "0", "NVTX (GPU projection): main (tid 100)"},
                  {"2500", "100", "16777217", "1", "NVTX (GPU projection): main (tid 100)"}}));
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'nvtx_kernel' and derived = 1"), 10);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 1"), 10);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind != 'nvtx_kernel' and kind = 'nvtx_kernel' "
                       "and derived = 1"), 0);
  // The table holds both: `derived = 0` is the profile's own events, each once (`name = 'outer'` the NVTX range
  // alone); without a constraint, every row, as the trace a viewer shows.
  EXPECT_EQ(db.integer("select count(*) from trace_events"),
            db.integer("select count(*) from trace_events where derived = 0") + 10);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'nvtx_kernel'"), 10);
  EXPECT_EQ(db.rows("select kind from trace_events where name = 'outer' and derived = 0"), (Rows{{"nvtx"}}));
  EXPECT_EQ(db.rows("select kind from trace_events where name = 'outer' order by kind"),
            (Rows{{"nvtx"}, {"nvtx_kernel"}, {"nvtx_kernel"}}));
  // A value no row has is no row, never an error.
  for (const char* value : {"'yes'", "2", "0.5", "-1"})
    EXPECT_EQ(db.integer(std::string("select count(*) from trace_events where derived = ") + value), 0) << value;
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = null"), 0);
  // derived asked for, of no row (an empty IN list), is an answer: none.
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'nvtx_kernel' and derived in (select 1 where 0)"),
            0);
  auto t = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where derived in (0, 1)"));
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  EXPECT_EQ(t.per_cat["nvtx_kernel"], 10);
  auto without = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where derived = 0"));
  EXPECT_EQ(without.per_cat.count("nvtx_kernel"), 0u);
}

}  // namespace

namespace {
// Exports of about 2022 record two CUPTI_ACTIVITY_KIND_RUNTIME rows for one launch, with the same correlationId
// (cudaLaunchKernel and its versioned twin cudaLaunchKernel_v7000). The launch still counts once per range, and
// its GPU work gets one flow arrow.
TEST_F(Projection, TwoApiRowsOfOneLaunchCountOnce) {
  Rows before = db.rows("select rowid, gpu_start, gpu_end, gpu_ops, kernels, memcpys, memsets, devices "
                        "from nvtx_kernel_ranges order by rowid");
  int64_t flows_before = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events")).flow_starts;
  // A twin for every launch of the main thread: the outer call around the recorded one (so both lie inside the
  // same ranges), plus one twin of corr 1 that starts earlier, in 'outer' but not in 'inner'.
  db.exec("insert into StringIds values (9, 'cudaLaunchKernel');"
          "insert into CUPTI_ACTIVITY_KIND_RUNTIME select start - 1, end + 1, eventClass, globalTid, correlationId, 9, "
          "returnValue from CUPTI_ACTIVITY_KIND_RUNTIME where globalTid = 281476654432356 and start - 1 >= 1000 "
          "and end + 1 <= 7100;"
          "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1050, 1060, 0, 281476654432356, 1, 9, 0);");
  ASSERT_GT(db.integer("select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME where nameId = 9"), 8);
  EXPECT_EQ(db.rows("select rowid, gpu_start, gpu_end, gpu_ops, kernels, memcpys, memsets, devices "
                    "from nvtx_kernel_ranges order by rowid"),
            before);
  auto t = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events"));
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  EXPECT_EQ(t.flow_starts, flows_before) << "one arrow per GPU operation";
  EXPECT_EQ(t.flow_starts, t.flow_ends);
}

TEST_F(Projection, AnUnknownReportHasNoRows) {
  EXPECT_EQ(db.integer("select count(*) from nvtx_kernel_ranges where schema = 'rank9'"), 0);
  EXPECT_EQ(db.integer("select count(*) from nvtx_kernel_ranges where schema in ('rank9', 'main')"),
            db.integer("select count(*) from nvtx_kernel_ranges"));
}
}  // namespace

namespace {
// Several reports in one query (ATTACH, schema in (...)): a row's parent is the rowid of its enclosing range's row
// of the same report, shifted like the rowids of that report (report r: + r << 56).
TEST(ProjectionMerge, ParentsPointAtTheRowsOfTheirOwnReport) {
  testdb::TempDir tmp("nsystrace_projection_merge");
  for (const char* name : {"rank0", "rank1"}) {
    testdb::Db make(tmp.file(std::string(name) + ".sqlite"), false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
  }
  testdb::Db db(tmp.file("rank0.sqlite"));
  db.exec("attach 'file:" + tmp.file("rank1.sqlite") + "?mode=ro' as rank1");
  const std::string both = "select rowid as id, schema, name, parent from nvtx_kernel_ranges "
                           "where schema in ('main', 'rank1')";
  EXPECT_EQ(db.integer("with r as materialized (" + both + ") select count(*) from r where parent is not null"), 6);
  EXPECT_EQ(db.rows("with r as materialized (" + both + ") select c.schema, c.name, p.schema, p.name from r c "
                    "left join r p on p.id = c.parent where c.parent is not null and "
                    "(p.id is null or p.schema != c.schema) order by 1, 2"),
            Rows{});
  // 'inner' (rowid 3) in each report: its parent is 'outer' (rowid 2) of the same report.
  EXPECT_EQ(db.rows("with r as materialized (" + both + ") select c.schema, c.parent - (c.id - 3) from r c "
                    "where c.name = 'inner' order by 1"),
            (Rows{{"main", "2"}, {"rank1", "2"}}));
}

// A GPU operation stored with its end before its start ([1500, 1490]) is drawn as an instant at its start (the
// kernel row: dur 0, args.invalid_end); a range holding only it spans [1500, 1500]: a duration is never negative.
// Work at the very ends of the int64 clock projects exactly.
TEST(ProjectionExtremes, AnOperationEndingBeforeItStartsProjectsToAnInstant) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/projection_extremes.sql");
  EXPECT_EQ(db.rows("select rowid, gpu_start, gpu_end, gpu_span, gpu_op_time, gpu_busy_time, gpu_ops "
                    "from nvtx_kernel_ranges order by rowid"),
            (Rows{{"1", "1500", "1500", "0", "0", "0", "1"},
                  {"2", "-9223372036854775808", "-9223372036854775000", "808", "808", "808", "1"},
                  {"3", "9223372036854775000", "9223372036854775807", "807", "807", "807", "1"}}));
  EXPECT_EQ(db.rows("select name, ts, dur from trace_events where kind = 'nvtx_kernel' and derived = 1 order by ts"),
            (Rows{{"clock start", "-9223372036854775808", "808"},
                  {"backwards op", "1500", "0"},
                  {"clock end", "9223372036854775000", "807"}}));
  EXPECT_EQ(db.rows("select ts, dur, json_extract(args, '$.invalid_end') from trace_events where kind = 'kernel' "
                    "and ts = 1500"),
            (Rows{{"1500", "0", "1490"}}));
  auto t = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where derived in (0, 1)"));
  for (const auto& p : t.problems) ADD_FAILURE() << p;
}

// GPU time beyond int64 nanoseconds is an error naming the range, never a value wrapped around or clipped (and never
// undefined behaviour: the sanitizer build aborts on signed overflow). Before: gpu_span -1.
TEST(ProjectionExtremes, GpuTimeBeyondInt64IsAnErrorNamingTheRange) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/projection_extremes.sql");
  auto expect_error = [&](const std::string& what) {
    for (const char* query : {"select gpu_span from nvtx_kernel_ranges",
                              "select sum(gpu_op_time) from nvtx_kernel_ranges",
                              "select sum(dur) from trace_events where kind = 'nvtx_kernel' and derived = 1"}) {
      std::string error = db.error_of(query);
      EXPECT_NE(error.find("the " + what + " of the NVTX range at NVTX_EVENTS rowid 4 "), std::string::npos)
          << query << ": " << error;
      EXPECT_NE(error.find("is beyond 64-bit nanoseconds"), std::string::npos) << query << ": " << error;
    }
  };
  // Rowid 4, 'whole clock', holds both calls on 'edge': its work spans 2^64 - 1 ns.
  db.exec("insert into NVTX_EVENTS values (-9223372036854775808, 9223372036854775807, 59, 'whole clock', "
          "281476654432357, null, null, 0)");
  expect_error("GPU span");
  // And a call of its own launched a kernel lasting the whole clock: its operation time is beyond int64 too.
  db.exec("insert into CUPTI_ACTIVITY_KIND_RUNTIME values (0, 10, 0, 281476654432357, 4, 3, 0);"
          "insert into CUPTI_ACTIVITY_KIND_KERNEL values (-9223372036854775808, 9223372036854775807, 1, 1, 7, 4, "
          "281476654432256, 4, 4)");
  expect_error("GPU operation time");
}
}  // namespace
