// chrome_trace(*) and the explicit form on a tiny hand-made export whose every value is checked by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

// One process (pid 10, threads 10 and 11) on GPU 0. globalTid = (1 << 48) | (pid << 24) | tid.
// API calls on thread 10: launch (corr 1) [1000, 1500], memcpy (corr 2) [2000, 2600], sync [3000, 9000].
// Kernel (corr 1) [1200, 4200] on stream 7, memcpy HtoD (corr 2) [4300, 4800], 64 bytes, on stream 7.
// NVTX push/pop 'step' [900, 9500] on thread 10, a mark 'here' at 950.
const char* kTinyExport = R"sql(
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1,'cudaLaunchKernel_v7000'),(2,'cudaMemcpyAsync_v3020'),(3,'cudaDeviceSynchronize_v3020'),
  (4,'gemm'),(5,'void gemm<float>(int)'),(6,'main'),(7,'worker');
CREATE TABLE ThreadNames(nameId INTEGER, priority INTEGER, globalTid INTEGER);
INSERT INTO ThreadNames VALUES (6, 0, 281475144482826), (7, 0, 281475144482827);
CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);
INSERT INTO PROCESSES VALUES (281475144482816, 10, 'train.py');
CREATE TABLE TARGET_INFO_GPU(vmId INTEGER, id INTEGER, name TEXT);
INSERT INTO TARGET_INFO_GPU VALUES (281474976710656, 0, 'NVIDIA H100 80GB HBM3');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000,1500,0,281475144482826,1,1,0,NULL),
  (2000,2600,0,281475144482826,2,2,0,NULL), (3000,9000,0,281475144482826,3,3,0,NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
  registersPerThread INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1200,4200,0,1,7,1,281475144482816,5,4,64,1,1,256,1,1,32);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER,
  dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (4300,4800,0,1,7,2,281475144482816,64,1,1,2);
CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER,
  color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES (900,9500,59,NULL,NULL,4278190335,'step',281475144482826,NULL,NULL,0),
  (950,NULL,34,NULL,NULL,NULL,'here',281475144482826,NULL,NULL,0);
)sql";

class ChromeTrace : public ::testing::Test {
 protected:
  void SetUp() override { db.exec(kTinyExport); }
  testdb::Db db;
};

TEST_F(ChromeTrace, RowsCarryTheContractColumns) {
  auto rows = db.rows(
      "select kind, name, ts, dur, pid, tid, process_name, thread_name, device_id, stream_id, correlation_id "
      "from trace_events where derived in (0, 1)");
  std::vector<std::vector<std::string>> expected = {
      {"nvtx", "step", "900", "8600", "10", "10", "train.py", "main", "NULL", "NULL", "NULL"},
      {"nvtx", "here", "950", "NULL", "10", "10", "train.py", "main", "NULL", "NULL", "NULL"},
      {"cuda_api", "cudaLaunchKernel_v7000", "1000", "500", "10", "10", "train.py", "main", "NULL", "NULL", "1"},
      // 'step' projected on GPU 0: the kernel and the memcpy its calls launched, [1200, 4800].
      // (tid: the thread that opened the range)
      {"nvtx_kernel", "step", "1200", "3600", "16777216", "10", "GPU 0 (NVIDIA H100 80GB HBM3)",
       "NVTX (GPU projection): main (tid 10)", "0", "NULL", "NULL"},
      {"kernel", "gemm", "1200", "3000", "16777216", "7", "GPU 0 (NVIDIA H100 80GB HBM3)", "Stream 7", "0", "7", "1"},
      {"cuda_api", "cudaMemcpyAsync_v3020", "2000", "600", "10", "10", "train.py", "main", "NULL", "NULL", "2"},
      {"cuda_api", "cudaDeviceSynchronize_v3020", "3000", "6000", "10", "10", "train.py", "main", "NULL", "NULL", "3"},
      {"memcpy", "Memcpy HtoD", "4300", "500", "16777216", "7", "GPU 0 (NVIDIA H100 80GB HBM3)", "Stream 7", "0", "7", "2"},
  };
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(db.text("select args from trace_events where kind='kernel'"),
            "{\"demangled_name\":\"void gemm<float>(int)\",\"grid\":[64,1,1],\"block\":[256,1,1],"
            "\"registers_per_thread\":32,\"correlation_id\":1,\"context_id\":1}");
  EXPECT_EQ(db.text("select args from trace_events where kind='memcpy'"),
            "{\"bytes\":64,\"copy_kind\":\"Host-to-Device\",\"src_kind\":\"Pinned\",\"dst_kind\":\"Device\","
            "\"correlation_id\":2,\"context_id\":1}");
  EXPECT_EQ(db.text("select args from trace_events where name = 'step' and kind = 'nvtx'"), "{\"color\":\"#FF0000FF\"}");
  EXPECT_EQ(db.text("select args from trace_events where kind = 'nvtx_kernel' and derived = 1"),
            "{\"cpu_start\":900,\"cpu_end\":9500,\"gpu_ops\":2,\"device_ops\":2,\"kernels\":1,\"memcpys\":1,"
            "\"depth\":0,\"nvtx_rowid\":1}");
  EXPECT_EQ(db.integer("select global_tid from trace_events where kind='kernel'"), 281475144482816);
}

TEST_F(ChromeTrace, WritesExactMicrosecondsMetadataAndFlows) {
  std::string json = db.text("select chrome_trace(*) from trace_events where derived in (0, 1)");
  auto t = testtrace::check_trace(json);
  ASSERT_TRUE(t.problems.empty()) << t.problems[0];
  EXPECT_EQ(t.slices.size(), 8u);
  // Without a constraint on `derived`: the same rows; `derived = 0`: the profile's own events, without the NVTX GPU
  // projection.
  EXPECT_EQ(testtrace::check_trace(db.text("select chrome_trace(*) from trace_events")).slices.size(), 8u);
  EXPECT_EQ(testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where derived = 0")).slices.size(),
            7u);
  EXPECT_NE(json.find("{\"name\":\"gemm\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":1.2,\"dur\":3,\"pid\":16777216,"
                      "\"tid\":7,"),
            std::string::npos);
  EXPECT_NE(json.find("{\"name\":\"here\",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\",\"ts\":0.95,\"pid\":10,\"tid\":10"),
            std::string::npos);
  // Two launches, two arrows: API call start -> GPU work start.
  EXPECT_EQ(t.flow_starts, 2);
  EXPECT_EQ(t.flow_ends, 2);
  EXPECT_NE(json.find("{\"ph\":\"s\",\"id\":1,\"cat\":\"cuda_launch\",\"name\":\"launch\",\"pid\":10,\"tid\":10,\"ts\":1}"),
            std::string::npos);
  EXPECT_NE(json.find("{\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"cat\":\"cuda_launch\",\"name\":\"launch\",\"pid\":16777216,"
                      "\"tid\":7,\"ts\":1.2}"),
            std::string::npos);
  EXPECT_EQ(t.process_names.at(10), "train.py");
  EXPECT_EQ(t.process_names.at(16777216), "GPU 0 (NVIDIA H100 80GB HBM3)");
  EXPECT_EQ(t.thread_names.at({16777216, 7}), "Stream 7");
  // CPU process sorts before the GPU.
  EXPECT_NE(json.find("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":10,\"args\":{\"sort_index\":0}}"),
            std::string::npos);
  EXPECT_NE(json.find("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":16777216,\"args\":{\"sort_index\":1}}"),
            std::string::npos);
  const testjson::Value* other = t.root.get("otherData");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->get("event_counts")->str("kernel"), "1");
  EXPECT_EQ(other->get("gpus")->str("0"), "NVIDIA H100 80GB HBM3");
}

TEST_F(ChromeTrace, FiltersComposeAndFlowsNeedBothEnds) {
  auto t = testtrace::check_trace(
      db.text("select chrome_trace(*) from trace_events where kind in ('kernel','nvtx') and ts < 1100"));
  ASSERT_TRUE(t.problems.empty()) << t.problems[0];
  EXPECT_EQ(t.slices.size(), 2u);  // 'step' and 'here': the kernel starts at 1200
  EXPECT_EQ(t.flow_starts, 0);
  auto k = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where kind = 'kernel'"));
  EXPECT_EQ(k.slices.size(), 1u);
  EXPECT_EQ(k.flow_starts, 0);  // the API call is not among the rows
  // A non-pushed-down filter (name LIKE) composes too.
  auto n = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where name like 'cuda%'"));
  EXPECT_EQ(n.slices.size(), 3u);
}

TEST_F(ChromeTrace, EmptySelectionIsAnEmptyValidTrace) {
  auto t = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events where kind = 'memset'"));
  EXPECT_TRUE(t.problems.empty());
  EXPECT_TRUE(t.slices.empty());
}

TEST_F(ChromeTrace, StarFormRefusesRowsItCannotSee) {
  auto expect_error = [&](const std::string& sql, const std::string& fragment) {
    std::string err = db.error_of(sql);
    EXPECT_NE(err.find(fragment), std::string::npos) << sql << " -> " << (err.empty() ? "no error" : err);
  };
  expect_error("select chrome_trace(*) from (select * from trace_events order by ts desc)", "sorted, grouped");
  // (GROUP BY kind: the scan hands its rows over kind by kind, unsorted by SQLite, and the aggregate refuses them)
  expect_error("select kind, chrome_trace(*) from trace_events group by kind", "DISTINCT or GROUP BY");
  expect_error("select name, chrome_trace(*) from trace_events group by name", "sorted, grouped");
  expect_error("select chrome_trace(*) from StringIds", "another table");
  expect_error("select chrome_trace(*) from trace_events a, trace_events b", "chrome_trace(kind, name, ts");
  // Joined with another table, whichever loop SQLite puts trace_events in, the rows repeat: refused (decided from
  // the statement's bytecode, or as the inner loop restarts the scan).
  expect_error("select chrome_trace(*) from StringIds, trace_events", "join");
  expect_error("select chrome_trace(*) from trace_events, StringIds", "join");
  expect_error("select chrome_trace(*) from trace_events cross join StringIds", "join");
  // Every refusal names the exact form.
  expect_error("select chrome_trace(*) from StringIds", "chrome_trace(t.event)");
  expect_error("select chrome_trace(1, 2) from trace_events", "takes *, a trace_events row (t.event), or 6 to 12");
}

// A query that names neither args nor event reads no args-only columns (EXPLAIN shows "no-args"); the (*) form over
// it reopens the scan with args at the row it is on, here the third (SQLite's own filter, +kind, drops the NVTX rows
// before it): the same trace as the row form, which names the rows and so reads their args.
TEST_F(ChromeTrace, TheStarFormOverAQueryWithoutArgsHasTheArgs) {
  const std::string where = " from trace_events where +kind != 'nvtx' and dur >= 0";
  std::string plan;
  for (auto& r : db.rows("explain query plan select count(*)" + where)) plan += r.back();
  EXPECT_NE(plan.find("no-args"), std::string::npos) << plan;
  plan.clear();
  for (auto& r : db.rows("explain query plan select count(args)" + where)) plan += r.back();
  EXPECT_EQ(plan.find("no-args"), std::string::npos) << plan;
  std::string star = db.text("select chrome_trace(*)" + where);
  EXPECT_EQ(star, db.text("select chrome_trace(event)" + where));
  auto t = testtrace::check_trace(star);
  ASSERT_TRUE(t.problems.empty()) << t.problems[0];
  bool kernel_seen = false;
  for (const auto& s : t.slices) {
    if (s.name != "gemm") continue;
    kernel_seen = true;
    EXPECT_EQ(s.args->str("registers_per_thread"), "32");
    EXPECT_EQ(s.args->str("demangled_name"), "void gemm<float>(int)");
  }
  EXPECT_TRUE(kernel_seen);
  EXPECT_EQ(db.text("select hex(perfetto_trace(*))" + where), db.text("select hex(perfetto_trace(event))" + where));
}

TEST_F(ChromeTrace, ExplicitFormBuildsATraceFromAnyQuery) {
  std::string json = db.text(
      "select chrome_trace(kind, name, ts, dur, pid, tid, process_name, thread_name, args, correlation_id, global_tid) "
      "from (select * from trace_events where derived in (0, 1) order by ts desc)");
  auto t = testtrace::check_trace(json);
  ASSERT_TRUE(t.problems.empty()) << t.problems[0];
  EXPECT_EQ(t.slices.size(), 8u);
  // Rows arrive GPU work first here: no arrow can be drawn before its API call is seen.
  std::string made_up = db.text(
      "with v(k, n, ts, dur, a) as (values "
      "('mine', 'a \"quoted\" name', 1000, 5, '{\"x\":1}'), ('mine', 'marker', 2000, NULL, 'not json')) "
      "select chrome_trace(k, n, ts, dur, 1, 2, 'proc', 'thread', a) from v");
  auto m = testtrace::check_trace(made_up);
  ASSERT_TRUE(m.problems.empty()) << m.problems[0];
  ASSERT_EQ(m.slices.size(), 2u);
  EXPECT_EQ(m.slices[0].name, "a \"quoted\" name");
  EXPECT_EQ(m.slices[0].args->str("x"), "1");
  EXPECT_TRUE(m.slices[1].instant);
  EXPECT_EQ(m.slices[1].args->str("value"), "not json");
  EXPECT_NE(db.error_of("select chrome_trace('k','n',1.5,1,1,1)").find("ts must be an integer"), std::string::npos);
  EXPECT_NE(db.error_of("select chrome_trace('k','n',1,1,-1,1)").find("pid must be"), std::string::npos);
}
}  // namespace

namespace {
TEST_F(ChromeTrace, ThroughAViewAndFromATrigger) {
  // A view that is flattened into the query is the scan itself: the (*) form sees its rows.
  db.exec("create view kernels as select * from trace_events where kind = 'kernel'");
  auto t = testtrace::check_trace(db.text("select chrome_trace(*) from kernels"));
  EXPECT_TRUE(t.problems.empty());
  EXPECT_EQ(t.slices.size(), 1u);
  // Inside a trigger (here, storing a trace when a row is inserted): a correct trace or a clear error.
  db.exec("create table traces(t text); create table requests(x);"
          "create trigger keep after insert on requests begin "
          "insert into traces select chrome_trace(*) from trace_events where kind = 'nvtx'; end;"
          "insert into requests values (1);");
  auto stored = testtrace::check_trace(db.text("select t from traces"));
  EXPECT_TRUE(stored.problems.empty());
  EXPECT_EQ(stored.slices.size(), 2u);  // 'step' and the mark 'here'
  // chrome_trace_file() writes files: SQLite refuses it inside a trigger (SQLITE_DIRECTONLY).
  db.exec("create trigger write after insert on requests begin "
          "select chrome_trace_file('/tmp/nsystrace_trigger.json') from trace_events; end;");
  EXPECT_NE(db.error_of("insert into requests values (2)").find("unsafe use of chrome_trace_file"), std::string::npos);
}
}  // namespace

namespace {
// The (*) form hands its text to SQLite without a copy, to be freed when the statement ends. Every way a
// statement can hold on to the value must still read the whole trace (the ASan build checks the memory).
TEST_F(ChromeTrace, TheTextResultLivesAsLongAsTheStatementThatMadeIt) {
  const std::string all = db.text("select chrome_trace(*) from trace_events");
  const std::string kernels = db.text("select chrome_trace(*) from trace_events where kind = 'kernel'");
  const std::string nvtx = db.text("select chrome_trace(*) from trace_events where kind = 'nvtx'");
  ASSERT_TRUE(testtrace::check_trace(all).problems.empty());
  ASSERT_NE(kernels, nvtx);

  // One statement stepped to its end, reset and run again: the same text each time.
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(), "select chrome_trace(*) from trace_events", -1, &stmt, nullptr), SQLITE_OK);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    EXPECT_EQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), all);
    if (run == 1) {  // reset in the middle of the row
      sqlite3_reset(stmt);
      continue;
    }
    EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_reset(stmt);
  }
  sqlite3_finalize(stmt);

  // Two traces from one statement, one row after the other.
  EXPECT_EQ(db.rows("select chrome_trace(*) from trace_events where kind = 'kernel' union all "
                    "select chrome_trace(*) from trace_events where kind = 'nvtx'"),
            (std::vector<std::vector<std::string>>{{kernels}, {nvtx}}));
  // A correlated subquery runs the aggregate once per outer row while max() keeps the best value so far.
  EXPECT_EQ(db.text("select max((select chrome_trace(*) from trace_events e where e.kind = k.kind)) "
                    "from (select 'kernel' as kind union all select 'nvtx' union all select 'memcpy') k"),
            std::max({kernels, nvtx, db.text("select chrome_trace(*) from trace_events where kind = 'memcpy'")}));
  EXPECT_EQ(db.text("select group_concat(length(t)) from (select (select chrome_trace(*) from trace_events e "
                    "where e.kind = k.kind) as t from (select 'kernel' as kind union all select 'nvtx') k)"),
            std::to_string(kernels.size()) + "," + std::to_string(nvtx.size()));
  // Materialized first, copied into a table, compared with itself.
  EXPECT_EQ(db.text("with x as materialized (select chrome_trace(*) as j from trace_events) select j from x"), all);
  db.exec("create temp table kept as select chrome_trace(*) as j from trace_events");
  EXPECT_EQ(db.text("select j from kept"), all);
  EXPECT_EQ(db.integer("select t = t and t || '' = t from (select chrome_trace(*) as t from trace_events)"), 1);
}
}  // namespace

namespace {
// A statement that makes a trace again and again (a subquery evaluated per row) holds one at a time: only its first
// trace is kept to the statement's end (handed over without a copy); the later ones are SQLite's to free. It kept
// every one before (356 MB after 320 traces of a real export).
TEST(ChromeTraceMemory, AStatementMakingManyTracesHoldsOneAtATime) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer keeps freed memory resident (its quarantine): measured in the Release build";
#endif
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  size_t one = db.text("select chrome_trace(*) from trace_events").size();
  ASSERT_GT(one, 500000u);
  auto heap = [] {  // resident memory: the trace texts are mappings of their own (OutputBuffer), not heap blocks
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  };
  ASSERT_GT(heap(), 0u);
  // 40 traces in one step; the statement is not reset until after the heap is measured.
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(),
                               "with recursive n(i) as (select 1 union all select i + 1 from n where i < 40) "
                               "select sum(length((select chrome_trace(*) from trace_events where ts >= n.i))) from n",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  size_t before = heap();
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(stmt, 0), static_cast<int64_t>(40 * one));
  size_t held = heap() > before ? heap() - before : 0;
  sqlite3_finalize(stmt);
  // A few traces' worth stays resident (the allocator keeps freed copies); 40 of them did before.
  EXPECT_LT(held, 10 * one) << "the statement holds " << held / one << " traces of " << one << " bytes";
}
}  // namespace

namespace {
// Every query shape gets the right trace or a clear error saying what to write instead; never a plausible trace of
// other rows. "Right" is checked against the rows the same shape selects when asked for them directly.
class QueryShapes : public ::testing::Test {
 protected:
  void SetUp() override { db.exec_file(testdb::source_dir() + "/examples/example_profile.sql"); }
  // (name, ts in us) of the trace's events other than metadata and flows, in the order written.
  std::vector<std::pair<std::string, std::string>> events(const std::string& sql) {
    auto t = testtrace::check_trace(db.text(sql));
    for (const auto& p : t.problems) ADD_FAILURE() << p;
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : t.root.get("traceEvents")->items) {
      const std::string& ph = e.str("ph");
      // (Not the GPU utilization counter: the writer derives it from the GPU work among the rows.)
      if (e.str("cat") == "gpu_utilization") continue;
      if (ph == "X" || ph == "i" || ph == "C") out.emplace_back(e.str("name"), e.str("ts"));
    }
    return out;
  }
  // The same, from rows selected directly (ts converted to the trace's microseconds).
  std::vector<std::pair<std::string, std::string>> rows(const std::string& select_name_ts) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& r : db.rows(select_name_ts)) {
      std::string us;
      nsystrace_test_ns_to_us(std::stoll(r[1]), us);
      out.emplace_back(r[0], us);
    }
    return out;
  }
  static void nsystrace_test_ns_to_us(int64_t ns, std::string& out) {
    out = std::to_string(ns / 1000);
    int64_t frac = ns % 1000;
    if (frac != 0) {
      std::string f = std::to_string(1000 + frac).substr(1);
      while (f.back() == '0') f.pop_back();
      out += "." + f;
    }
  }
  void expect_error(const std::string& sql, const std::string& fragment) {
    std::string err = db.error_of(sql);
    EXPECT_NE(err.find(fragment), std::string::npos) << sql << " -> " << (err.empty() ? "no error" : err);
  }
  testdb::Db db;
};

TEST_F(QueryShapes, ALimitGivesTheFirstEvents) {
  auto first = rows("select name, ts from trace_events limit 100");
  ASSERT_EQ(first.size(), 100u);
  // A LIMIT inside a subquery hands the rows on through a coroutine, after the scan: the (*) form refuses it, and the
  // first events are named by their rowids instead (the aggregate's own scan, fed straight).
  expect_error("select chrome_trace(*) from (select * from trace_events limit 100)", "chrome_trace(t.event)");
  const std::string first_of = "select chrome_trace(*) from trace_events where rowid in (select rowid from trace_events";
  EXPECT_EQ(events(first_of + " limit 100)"), first);
  EXPECT_EQ(events(first_of + " where kind = 'kernel' limit 7)"),
            rows("select name, ts from trace_events where kind = 'kernel' limit 7"));
  EXPECT_EQ(events("select chrome_trace(e.event) from trace_events e where rowid in (select rowid from trace_events "
                   "limit 10 offset 5)"),
            rows("select name, ts from trace_events limit 10 offset 5"));
  // A filter SQLite applies itself (dur is not pushed down) with a LIMIT: still the rows the query selects. Here the
  // subquery's scan has the outer one's plan (neither is handed a constraint), so the bytecode cannot tell them
  // apart at run time: the (*) form refuses, the row form names its scan.
  const std::string by_dur = " from trace_events e where rowid in (select rowid from trace_events where dur > 100000 "
                             "limit 9)";
  expect_error("select chrome_trace(*)" + by_dur, "chrome_trace(t.event)");
  EXPECT_EQ(events("select chrome_trace(e.event)" + by_dur),
            rows("select name, ts from trace_events where dur > 100000 limit 9"));
  // CTEs and views are flattened into the scan.
  EXPECT_EQ(events("with k as (select * from trace_events where kind = 'kernel') select chrome_trace(*) from k"),
            rows("select name, ts from trace_events where kind = 'kernel'"));
}

TEST_F(QueryShapes, ASubqueryOverTraceEventsInWhere) {
  std::string step5 = std::to_string(db.integer("select ts from trace_events where name = 'step 5' limit 1"));
  auto expected = rows("select name, ts from trace_events where kind = 'kernel' and ts > " + step5);
  ASSERT_FALSE(expected.empty());
  // Scalar subquery (SQLite evaluates it once, first): the events are the outer scan's.
  EXPECT_EQ(events("select chrome_trace(*) from trace_events where kind = 'kernel' and "
                   "ts > (select ts from trace_events where name = 'step 5')"),
            expected);
  // Correlated subquery (evaluated for every row): the events are still the outer scan's.
  EXPECT_EQ(events("select chrome_trace(*) from trace_events where kind = 'kernel' and ts > (select t.ts from "
                   "trace_events t where t.kind = trace_events.kind and t.name = 'no such name') is null"),
            rows("select name, ts from trace_events where kind = 'kernel'"));
  // Correlated, and finding a row each time: SQLite stops it after that row. SQLite before 3.51 does not hand a
  // correlated subquery's LIMIT to the table, so two scans are open at once: refused, never guessed. From 3.51 it
  // does: the subquery's scan is at its limit, set aside, and the trace is the outer rows'.
  const std::string correlated = "from trace_events where kind = 'kernel' and ts >= (select t.ts from trace_events t "
                                 "where t.kind = 'kernel' and t.name = trace_events.name)";
  std::string err = db.error_of("select chrome_trace(*) " + correlated);
  if (err.empty())
    EXPECT_EQ(events("select chrome_trace(*) " + correlated), rows("select name, ts " + correlated));
  else
    EXPECT_NE(err.find("2 trace_events scans at once"), std::string::npos) << err;
}

TEST_F(QueryShapes, ShapesWhereARowIsNotAnEventAreRefused) {
  // DISTINCT and GROUP BY: one row stands for a group (this used to give one event per (kind, name)).
  expect_error("select chrome_trace(*) from (select distinct kind, name from trace_events)", "not straight from it");
  expect_error("select chrome_trace(*) from (select kind, name from trace_events group by 1, 2)", "grouped");
  // Window functions and ORDER BY materialize the rows first.
  expect_error("select chrome_trace(*) from (select *, row_number() over () from trace_events)", "windowed");
  expect_error("select chrome_trace(*) from (select * from trace_events order by dur desc)", "sorted, grouped");
  // A compound SELECT runs one scan after the other.
  expect_error("select chrome_trace(*) from (select * from trace_events where kind = 'kernel' union all "
               "select * from trace_events where kind = 'nvtx')",
               "not straight from it");
  // Joins multiply or mix rows.
  expect_error("select chrome_trace(*) from trace_events a join trace_events b on a.kind = b.kind and "
               "a.kind = 'memset'",
               "join of trace_events with itself");
  // Every refusal says what to write instead.
  expect_error("select chrome_trace(*) from (select distinct kind, name from trace_events)", "chrome_trace(t.event)");
  expect_error("select chrome_trace(*) from (select distinct kind, name from trace_events)",
               "chrome_trace(kind, name, ts, dur, pid, tid");
}

TEST_F(QueryShapes, ALimitedFileHoldsTheFirstEventsAndAStoppedStatementNone) {
  testdb::TempDir dir("nsystrace_shapes");
  std::string path = dir.file("first.json");
  EXPECT_GT(db.integer("select chrome_trace_file('" + path + "') from trace_events where rowid in (select rowid from "
                       "trace_events limit 50)"), 0);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto t = testtrace::check_trace(text);
  EXPECT_EQ(t.root.get("otherData")->get("event_counts")->members.size() > 0, true);
  int64_t total = 0;
  for (const auto& [kind, n] : t.root.get("otherData")->get("event_counts")->members) total += std::stoll(n.text);
  EXPECT_EQ(total, 50);
  // A statement stopped part-way (here: an error raised by a later row) writes no file.
  std::string broken = dir.file("broken.json");
  std::string err = db.error_of("select chrome_trace_file('" + broken + "') from trace_events "
                                "where case when ts > 2050000000 then json('not json') else 1 end");
  EXPECT_FALSE(err.empty());
  std::ifstream gone(broken);
  EXPECT_FALSE(gone.good()) << "a failed statement must leave no file";
}
}  // namespace

namespace {
// Keys come from users (explicit-form kinds become otherData.event_counts keys) and from profiles (export metadata
// names): escaped like values, so the trace stays valid JSON, and a NUL byte cannot cut the result short.
TEST_F(ChromeTrace, KeysAreEscapedLikeValues) {
  for (const char* kind : {"a\"b", "back\\\\slash", "new\nline"}) {
    std::string sql = std::string("select chrome_trace(?1, 'n', 0, 1, 1, 1)");
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    std::string json(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
    sqlite3_finalize(s);
    testjson::Value root = testjson::parse(json);  // throws on invalid JSON
    EXPECT_EQ(root.get("otherData")->get("event_counts")->str(kind), "1") << json;
  }
  db.exec("create table META_DATA_EXPORT(name, value); insert into META_DATA_EXPORT values "
          "('weird\"key', 'v'), (char(0) || 'nul', 'x')");
  std::string json = db.text("select chrome_trace(*) from trace_events");
  auto t = testtrace::check_trace(json);
  EXPECT_TRUE(t.problems.empty());
  EXPECT_EQ(t.root.get("otherData")->get("export")->str("weird\"key"), "v");
  EXPECT_NE(json.find("\"\\u0000nul\""), std::string::npos);
}
}  // namespace

namespace {

// The row forms: trace_events.event names the row an aggregate draws, so the shapes the (*) form must refuse work.
TEST_F(QueryShapes, TheRowFormFollowsTheScanItNames) {
  auto launched = rows(
      "select k.name, k.ts from trace_events k where k.kind = 'kernel' and exists (select 1 from trace_events a "
      "where a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and a.kind = 'cuda_api')");
  ASSERT_FALSE(launched.empty());
  // The (*) form: exact where SQLite keeps the EXISTS a subquery (the subquery's scan has another plan), refused
  // where it turns it into a join (SQLite 3.51 and later); never another scan's rows.
  const std::string star = "select chrome_trace(*) from trace_events k where k.kind = 'kernel' and exists (select 1 "
                           "from trace_events a where a.correlation_id = k.correlation_id and a.global_pid = "
                           "k.global_pid and a.kind = 'cuda_api')";
  if (db.error_of(star).empty()) EXPECT_EQ(events(star), launched);
  else expect_error(star, "chrome_trace(t.event)");
  EXPECT_EQ(events("select chrome_trace(k.event) from trace_events k where k.kind = 'kernel' and exists (select 1 "
                   "from trace_events a where a.correlation_id = k.correlation_id and a.global_pid = k.global_pid "
                   "and a.kind = 'cuda_api')"),
            launched);
  // The outer scan of a join whose inner scan is still reading.
  EXPECT_EQ(events("select chrome_trace(k.event) from trace_events k where k.kind = 'kernel' and k.ts >= (select "
                   "t.ts from trace_events t where t.kind = 'kernel' and t.name = k.name order by t.ts limit 1)"),
            rows("select k.name, k.ts from trace_events k where k.kind = 'kernel' and k.ts >= (select t.ts from "
                 "trace_events t where t.kind = 'kernel' and t.name = k.name order by t.ts limit 1)"));
  // perfetto_trace takes it too (a BLOB of the same events: compare sizes with the (*) form over the same rows).
  EXPECT_EQ(db.integer("select length(perfetto_trace(event)) from trace_events where kind = 'kernel'"),
            db.integer("select length(perfetto_trace(*)) from trace_events where kind = 'kernel'"));
  // Rows SQLite sorted, grouped or materialized lose the pointer: an error that says so, never another row.
  expect_error("select chrome_trace(e) from (select event as e from trace_events order by dur desc)",
               "SQLite drops the row pointer");
  expect_error("select chrome_trace(x) from (select max(event) as x from trace_events)", "trace_events");
  expect_error("select chrome_trace(1) from trace_events", "not a trace_events row");
  // A join that repeats a row: each event is drawn once.
  expect_error("select chrome_trace(k.event) from trace_events k join trace_events a on a.kind = k.kind and "
               "k.kind = 'memset'",
               "same trace_events row twice");
}

TEST_F(QueryShapes, TheFileFunctionsTakeTheRowToo) {
  testdb::TempDir tmp{"nsystrace_rowform"};
  std::string path = tmp.file("launched.json");
  EXPECT_GT(db.integer("select chrome_trace_file('" + path + "', k.event) from trace_events k where k.kind = "
                       "'kernel' and exists (select 1 from trace_events a where a.correlation_id = k.correlation_id "
                       "and a.global_pid = k.global_pid and a.kind = 'cuda_api')"),
            0);
  EXPECT_GT(db.integer("select perfetto_trace_file('" + tmp.file("p.pftrace") + "', 0, event) from trace_events"), 0);
}

// Perfetto's JSON importer turns "ts" and "dur" into nanoseconds as llround(double(text) * 1000), and drops an event
// whose time comes out negative (trace_sorter_negative_timestamp_dropped): near 2^63 ns the double rounds past it
// and wraps. Every event of a trace must come out in [0, 2^63), its end too, whatever the profile's times.
bool perfetto_reads_in_range(const std::string& us_text, double* ns) {
  double v = std::strtod(us_text.c_str(), nullptr) * 1000.0;
  *ns = v;
  return v >= 0 && v < 9223372036854775808.0;  // 2^63
}

TEST(ChromeTraceTimes, EveryEventLandsOnPerfettosClock) {
  for (const char* fixture : {"negative_times", "hostile"}) {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/" + fixture + ".sql");
    std::string json = db.text("select chrome_trace(*) from trace_events");
    testtrace::TraceSummary t = testtrace::check_trace(json);
    for (const auto& p : t.problems) ADD_FAILURE() << fixture << ": " << p;
    int checked = 0;
    for (const testjson::Value& e : t.root.get("traceEvents")->items) {
      const testjson::Value* ts = e.get("ts");
      if (ts == nullptr) continue;  // metadata
      ++checked;
      double start = 0, dur = 0;
      EXPECT_TRUE(perfetto_reads_in_range(ts->text, &start)) << fixture << ": '" << e.str("name") << "' ts " << ts->text;
      if (const testjson::Value* d = e.get("dur")) {
        EXPECT_TRUE(perfetto_reads_in_range(d->text, &dur)) << fixture << ": '" << e.str("name") << "' dur " << d->text;
        EXPECT_LT(start + dur, 9223372036854775808.0) << fixture << ": '" << e.str("name") << "' ends past 2^63 ns";
      }
    }
    EXPECT_GT(checked, 5) << fixture;
  }
  // The mark recorded at INT64_MAX ns is drawn at the latest time a viewer holds, its recorded time in args, and
  // the trace says how many were moved so.
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/negative_times.sql");
  std::string json = db.text("select chrome_trace(*) from trace_events where name = 'int64 max mark'");
  EXPECT_NE(json.find("\"name\":\"int64 max mark\",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\",\"ts\":9223372036854000,"
                      "\"pid\":100,\"tid\":100,\"args\":{\"recorded_ts_ns\":9223372036854775807}"),
            std::string::npos)
      << json;
  // A slice running past it ends there, keeping its recorded start and duration.
  testdb::Db hostile;
  hostile.exec_file(testdb::source_dir() + "/tests/fixtures/hostile.sql");
  json = hostile.text("select chrome_trace(*) from trace_events where ts > 9000000000000000000");
  EXPECT_NE(json.find("\"ts\":9223372036854000,\"dur\":0,\"pid\":16777216,\"tid\":7,\"args\":{\"recorded_ts_ns\":"
                      "9223372036854775000,\"recorded_dur_ns\":807,"),
            std::string::npos)
      << json;
}
}  // namespace
