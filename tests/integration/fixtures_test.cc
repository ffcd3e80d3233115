// trace_events and chrome_trace(*) on the hand-made exports in tests/fixtures/*.sql. Each fixture's header
// comment lists the values checked here; they were worked out by hand from the rows it inserts.
#include <gtest/gtest.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/support/differential.h"
#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

using Rows = std::vector<std::vector<std::string>>;

// correlation_reuse's tables grown by hand: a CUDA API call of a thread (its globalTid) and correlation id (nameId 2
// is 'cudaLaunchKernel_v7000'), and a copy of one of its kernels (rowid 1: kernel_A of pid 100; 4: kernel_X of pid
// 200) at `start`, 5 ns long, with another correlation id.
void insert_call(testdb::Db& db, int64_t start, int64_t end, const std::string& thread, int corr, int name_id = 2) {
  db.exec("insert into CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
          "returnValue) values (" + std::to_string(start) + ", " + std::to_string(end) + ", 0, " + thread + ", " +
          std::to_string(corr) + ", " + std::to_string(name_id) + ", 0)");
}
void copy_kernel(testdb::Db& db, int rowid, int64_t start, int corr) {
  db.exec("insert into CUPTI_ACTIVITY_KIND_KERNEL select * from CUPTI_ACTIVITY_KIND_KERNEL where rowid = " +
          std::to_string(rowid));
  db.exec("update CUPTI_ACTIVITY_KIND_KERNEL set start = " + std::to_string(start) + ", end = " +
          std::to_string(start + 5) + ", correlationId = " + std::to_string(corr) +
          " where rowid = last_insert_rowid()");
}

class Fixture : public ::testing::Test {
 protected:
  void load(const std::string& name) { db.exec_file(testdb::source_dir() + "/tests/fixtures/" + name + ".sql"); }
  testtrace::TraceSummary trace(const std::string& where = "") {
    auto t = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events " + where));
    for (const auto& p : t.problems) ADD_FAILURE() << p;
    return t;
  }
  int64_t count(const std::string& kind) {
    return db.integer("select count(*) from trace_events where kind = '" + kind + "'");
  }
  testdb::Db db;
};

TEST_F(Fixture, NvtxStringsDomainsCategoriesColorsPayloads) {
  load("nvtx_strings");
  EXPECT_EQ(db.rows("select name, ts, dur from trace_events order by ts"),
            (Rows{{"inline range", "100", "800"},
                  {"registered range", "200", "100"},
                  {"dom5 registered", "400", "100"},
                  {"dom5 inline", "510", "90"},
                  {"dom6 range", "610", "90"},
                  {"[missing string 999]", "710", "90"},
                  {"payload mark", "850", "NULL"}}));
  EXPECT_EQ(db.text("select args from trace_events where name = 'inline range'"),
            "{\"category\":\"IO\",\"category_id\":7,\"color\":\"#FF00FF00\",\"payload\":-42}");
  EXPECT_EQ(db.text("select args from trace_events where name = 'registered range'"),
            "{\"category_id\":8,\"payload\":3.25}");
  EXPECT_EQ(db.text("select args from trace_events where name = 'dom5 registered'"),
            "{\"domain\":\"MyDomain\",\"domain_id\":5,\"color\":\"#FFFF0000\",\"payload\":12345}");
  EXPECT_EQ(db.text("select args from trace_events where name = 'dom6 range'"), "{\"domain_id\":6}");
  EXPECT_EQ(db.text("select args from trace_events where name = 'payload mark'"), "{\"payload\":-7}");
  auto t = trace();
  EXPECT_EQ(t.per_cat["nvtx"], 7);
}

TEST_F(Fixture, CorrelationIdsAreScopedToTheirProcess) {
  load("correlation_reuse");
  auto t = trace();
  EXPECT_EQ(t.flow_starts, 6);
  // Every arrow goes from the launching process's thread to that process's GPU (pid 100 -> GPU 0, 200 -> GPU 1).
  std::map<int64_t, std::pair<const testjson::Value*, const testjson::Value*>> flows;
  for (const auto& e : t.root.get("traceEvents")->items) {
    if (e.str("ph") == "s") flows[e.integer("id")].first = &e;
    if (e.str("ph") == "f") flows[e.integer("id")].second = &e;
  }
  std::map<std::pair<int64_t, int64_t>, int> pairs;
  for (const auto& [id, f] : flows) pairs[{f.first->integer("pid"), f.second->integer("pid")}]++;
  EXPECT_EQ(pairs, (std::map<std::pair<int64_t, int64_t>, int>{{{100, 16777216}, 3}, {{200, 16777217}, 3}}));
  // kernel_A (1200 ns) is launched by pid 100's call at 1000 ns, not by pid 200's at 1150 ns.
  for (const auto& [id, f] : flows) {
    if (f.second->str("ts") == "1.2") {
      EXPECT_EQ(f.first->str("ts"), "1");
    }
  }
}

TEST_F(Fixture, LaunchJoinLookupsEqualFreshLookups) {
  // The launch join's inner scan restarts at every kernel and, after a first lookup, finds the call by the catalog's
  // correlation index without SQL: one candidate (its process's or not); a few, of which the kernel's process holds
  // one (ids reused by another process) or none; no candidate (a kernel without its call); or two of the kernel's
  // process (twins: the SQL path). Its one track is set aside at each restart and taken back, lanes emptied, when a
  // later lookup lands on it (pid 100's and pid 200's kernels alternate; the call of id 10 overlaps the one of id
  // 1, so stale lanes would put it on lane 1). Every lookup must give what a new query with its values gives.
  load("correlation_reuse");
  const std::string pid100 = "281476654432356";  // pid 100's main thread
  auto call = [&](int start, int end, const std::string& thread, int corr) {
    insert_call(db, start, end, thread, corr);
  };
  call(500, 520, pid100, 7);
  call(2050, 2060, pid100, 2);  // pid 100's twin of id 2
  call(1050, 1200, pid100, 10);
  call(3600, 3610, pid100, 11);
  call(3700, 3710, pid100, 11);
  auto kernel = [&](int rowid, int start, int corr) { copy_kernel(db, rowid, start, corr); };
  kernel(1, 600, 7);    // the first lookup: a new scan
  kernel(1, 1250, 10);  // one candidate, its own
  kernel(1, 1260, 7);   // one candidate, its own
  kernel(4, 1270, 11);  // two candidates, both pid 100's: no row
  kernel(4, 1280, 7);   // one candidate, pid 100's: no row
  kernel(1, 1290, 9);   // no call has id 9
  kernel(4, 1700, 1);   // two candidates, pid 100's and its own
  kernel(1, 2250, 7);   // after the twins' SQL path: a new scan again
  const std::string columns = "a.ts, a.dur, a.name, a.pid, a.tid, a.process_name, a.thread_name, a.lane, a.global_tid";
  Rows joined = db.rows("select k.ts, " + columns + " from trace_events k left join trace_events a on "
                        "a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and a.kind = 'cuda_api' "
                        "where k.kind = 'kernel' order by k.ts, a.ts");
  Rows fresh;
  for (const auto& k : db.rows("select ts, correlation_id, global_pid from trace_events where kind = 'kernel' "
                               "order by ts")) {
    Rows calls = db.rows("select " + columns + " from trace_events a where a.correlation_id = " + k[1] +
                         " and a.global_pid = " + k[2] + " and a.kind = 'cuda_api' order by a.ts");
    if (calls.empty()) calls.push_back(std::vector<std::string>(9, "NULL"));
    for (auto& c : calls) {
      c.insert(c.begin(), k[0]);
      fresh.push_back(c);
    }
  }
  EXPECT_EQ(joined, fresh);
  // By hand: which call each kernel got (its start, pid and lane).
  auto calls_of = [&](const std::string& kernel_ts) {
    std::vector<std::string> out;
    for (const auto& r : joined)
      if (r[0] == kernel_ts) out.push_back(r[1] + " " + r[4] + " " + r[8]);
    return out;
  };
  using Calls = std::vector<std::string>;
  EXPECT_EQ(calls_of("600"), (Calls{"500 100 0"}));
  EXPECT_EQ(calls_of("1200"), (Calls{"1000 100 0"}));
  // (lane 1: the lane the whole profile places it on, where it overlaps the call of id 1; a query reads lanes and
  // track names as the whole profile has them, whatever it looks up)
  EXPECT_EQ(calls_of("1250"), (Calls{"1050 100 1"}));
  EXPECT_EQ(calls_of("1260"), (Calls{"500 100 0"}));
  EXPECT_EQ(calls_of("1270"), (Calls{"NULL NULL NULL"}));
  EXPECT_EQ(calls_of("1280"), (Calls{"NULL NULL NULL"}));
  EXPECT_EQ(calls_of("1290"), (Calls{"NULL NULL NULL"}));
  EXPECT_EQ(calls_of("1300"), (Calls{"1150 200 0"}));
  EXPECT_EQ(calls_of("1700"), (Calls{"1150 200 0"}));
  EXPECT_EQ(calls_of("2200"), (Calls{"2000 100 0", "2050 100 0"}));
  EXPECT_EQ(calls_of("2250"), (Calls{"500 100 0"}));
  EXPECT_EQ(calls_of("2300"), (Calls{"2150 200 0"}));
  EXPECT_EQ(joined.size(), 15u);
}

TEST_F(Fixture, CallColumnsTakeTheEarliestOfTwinCalls) {
  // Two API rows for one launch (exports of about 2022): call_* is the earliest call, by start, then the longest,
  // then the name, then the first stored; the other process's call of the same id is never it.
  load("correlation_reuse");
  db.exec("insert into StringIds values (9, 'cudaLaunchKernel')");
  const std::string main_thread = "281476654432356", other_thread = "281476654432357";  // pid 100's tids 100, 101
  auto call = [&](int start, int end, const std::string& thread, int corr, int name) {
    insert_call(db, start, end, thread, corr, name);
  };
  auto kernel = [&](int start, int corr) { copy_kernel(db, 1, start, corr); };  // kernel_A's copies (pid 100)
  call(2300, 2350, main_thread, 20, 2);  // equal start and length: 'cudaLaunchKernel' sorts first
  call(2300, 2350, main_thread, 20, 9);
  call(2300, 2350, main_thread, 21, 9);  // equal start: the longer
  call(2300, 2390, main_thread, 21, 2);
  call(2310, 2320, main_thread, 22, 2);  // equal in all but the thread: the first stored
  call(2310, 2320, other_thread, 22, 2);
  call(2290, 2295, other_thread, 23, 2);  // the earlier start, though stored later
  call(2280, 2285, "281478332154057", 23, 2);  // pid 200's id 23: another process's, never pid 100's kernel's
  kernel(2400, 20);
  kernel(2500, 21);
  kernel(2600, 22);
  kernel(2700, 23);
  call(2305, 2306, main_thread, 23, 9);
  Rows got = db.rows("select ts, call_ts, call_dur, call_name, call_pid, call_tid from trace_events "
                     "where kind = 'kernel' and ts between 2200 and 2700 order by ts");
  EXPECT_EQ(got, (Rows{{"2200", "2000", "100", "cudaLaunchKernel_v7000", "100", "100"},  // the fixture's twins
                       {"2300", "2150", "30", "cudaLaunchKernel_v7000", "200", "200"},
                       {"2400", "2300", "50", "cudaLaunchKernel", "100", "100"},
                       {"2500", "2300", "90", "cudaLaunchKernel_v7000", "100", "100"},
                       {"2600", "2310", "10", "cudaLaunchKernel_v7000", "100", "100"},
                       {"2700", "2290", "5", "cudaLaunchKernel_v7000", "100", "101"}}));
  // call_id is the call's own rowid, and the calls themselves have no call.
  EXPECT_EQ(db.text("select group_concat(ts, ' ') from (select c.ts from trace_events k join trace_events c "
                    "on c.rowid = k.call_id where k.kind = 'kernel' and k.ts between 2400 and 2700 order by k.ts)"),
            "2300 2300 2310 2290");
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'cuda_api' and call_id is not null"), 0);
  for (const auto& f : testdiff::check_call_columns(db)) ADD_FAILURE() << f;
}

TEST(CallColumns, AnInterruptWhileTheCallsAreReadIsAnInterruptAndKeepsNothing) {
  // The first read of a call_* column reads the report's calls (LaunchCalls::build) inside xColumn: cut there, the
  // query fails as interrupted (SQLite's own message), and the next query reads them whole. A progress handler
  // called every step (so that any statement stepped after the cut is cut too), and one called every 100 steps, as
  // the shell's .progress and Python's set_progress_handler are: then only the step that failed says so.
  for (const int every : {1, 100}) {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    const std::string with_calls = "select count(call_ts), sum(call_ts) from trace_events where kind = 'kernel'";
    const std::string without = "select count(ts), sum(ts) from trace_events where kind = 'kernel'";
    auto calls = [&](const std::string& sql) {  // progress calls the query makes, after the catalog's first reads
      testdb::Db counted;
      counted.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
      counted.rows(without);
      testdb::ProgressCut count;
      sqlite3_progress_handler(counted.get(), every, testdb::ProgressCut::handler, &count);
      counted.rows(sql);
      return count.calls;
    };
    const int plain = calls(without), building = calls(with_calls);
    // (the calls are read at the first row)
    const int first_row = calls("select ts from trace_events where kind = 'kernel' limit 1");
    ASSERT_GT(building, plain + 10) << "reading the calls takes steps of its own; every " << every;
    db.rows(without);
    testdb::ProgressCut cut{0, first_row + (building - plain) / 2};  // within the calls' read
    sqlite3_progress_handler(db.get(), every, testdb::ProgressCut::handler, &cut);
    EXPECT_EQ(db.error_of(with_calls), "interrupted in: " + with_calls) << "every " << every;
    sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
    Rows whole = db.rows(with_calls);
    EXPECT_EQ(whole, db.rows("select count(a.ts), sum(a.ts) from trace_events k join trace_events a on "
                             "a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and "
                             "a.kind = 'cuda_api' where k.kind = 'kernel'"));
    EXPECT_NE(whole[0][0], "0");
  }
}

TEST(CallColumns, NothingReadInAWriteTransactionOutlivesItsRollback) {
  // A change made and read within a transaction, then rolled back, leaves schema_version, data_version and
  // total_changes as they were: the calls (and the catalog) read then must not be kept.
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/correlation_reuse.sql");
  const std::string kernel_a =
      "select call_ts, (select ts from trace_events where kind = 'cuda_api' and rowid = k.call_id) from trace_events k "
      "where kind = 'kernel' and name = 'kernel_A'";
  const Rows before = db.rows(kernel_a);
  ASSERT_EQ(before, (Rows{{"1000", "1000"}}));
  for (const char* undo : {"rollback", "rollback to s"}) {
    db.exec(std::string("begin; savepoint s; update CUPTI_ACTIVITY_KIND_RUNTIME set start = 500 where rowid = 1"));
    EXPECT_EQ(db.rows(kernel_a), (Rows{{"500", "500"}})) << undo;
    db.exec(undo);
    EXPECT_EQ(db.rows(kernel_a), before) << undo;
    if (std::string(undo) != "rollback") db.exec("rollback");  // (after ROLLBACK TO, the transaction is still open)
  }
}

TEST(CallColumns, TwinsAreOrderedOnTheConnectionsClock) {
  // Report r1 started 5000 ns after main, so its times are shifted by 5000 and saturate at INT64_MAX: two calls of
  // one launch stored at INT64_MAX - 200 and - 100 both read as INT64_MAX, and the earliest is then the first by
  // name, as trace_events orders them, not the first stored.
  testdb::TempDir tmp{"nsystrace_calls"};
  const std::string r1 = tmp.file("r1.sqlite");
  {
    testdb::Db file(r1, false, true);
    file.exec_file(testdb::source_dir() + "/tests/fixtures/correlation_reuse.sql");
    file.exec("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + 5000");
    file.exec("insert into StringIds values (9, 'cudaLaunchKernel')");
    const int64_t near_end = INT64_MAX - 200, nearer = INT64_MAX - 100;
    insert_call(file, near_end, near_end, "281476654432356", 50, 2);  // pid 100's main thread
    insert_call(file, nearer, nearer, "281476654432356", 50, 9);
    copy_kernel(file, 1, 5000, 50);
  }
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/correlation_reuse.sql");
  db.exec("attach 'file:" + r1 + "?mode=ro' as r1");
  EXPECT_EQ(db.rows("select ts, call_ts, call_name from trace_events where schema = 'r1' and kind = 'kernel' "
                    "and correlation_id = 50"),
            (Rows{{"10000", "9223372036854775807", "cudaLaunchKernel"}}));
  for (const auto& f : testdiff::check_call_columns(db)) ADD_FAILURE() << f;
}

TEST(ConnectionLifecycle, CorrelatedSubqueriesLeaveNoStatementBehind) {
  // A correlated subquery over trace_events opens a cursor at every outer row; each takes the statements the last
  // closed one prepared (ConnectionState::idle_statements) while the outer cursor is open. Once the statement is
  // done the extension must hold no statement: an application may finalize every statement sqlite3_next_stmt finds,
  // and sqlite3_close() (unlike _v2) refuses to close while any is left.
  testdb::Db registers;  // the statically linked extension, registered for every connection opened after it
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  std::ifstream in(testdb::source_dir() + "/tests/fixtures/correlation_reuse.sql");
  std::stringstream script;
  script << in.rdbuf();
  ASSERT_EQ(sqlite3_exec(db, script.str().c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  auto count = [&](const char* sql) {
    int64_t n = -1;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  };
  // Each kernel has its call in its own process; none has one in the other's (ids 1 to 3 are both processes').
  const char* own = "select count(*) from trace_events k where k.kind = 'kernel' and exists (select 1 from "
                    "trace_events a where a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and "
                    "a.kind = 'cuda_api')";
  const char* other = "select count(*) from trace_events k where k.kind = 'kernel' and exists (select 1 from "
                      "trace_events a where a.correlation_id = k.correlation_id and a.global_pid != k.global_pid and "
                      "a.kind = 'cuda_api' and a.ts > k.ts)";
  EXPECT_EQ(count(own), 6);
  EXPECT_EQ(count(other), 0);  // pid 200's calls all start before pid 100's kernels of the same id end
  EXPECT_EQ(count(own), 6);
  EXPECT_EQ(sqlite3_next_stmt(db, nullptr), nullptr);  // count() finalized its own; none of the extension's is left
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK) << sqlite3_errmsg(db);
}

TEST_F(Fixture, MarksStartEndRangesAndUnclosedRanges) {
  load("marks_startend");
  EXPECT_EQ(count("nvtx"), 10);
  EXPECT_EQ(db.rows("select name, dur, tid, thread_name from trace_events where dur is null order by ts"),
            (Rows{{"begin mark", "NULL", "100", "main"},
                  {"inner mark", "NULL", "100", "main"},
                  {"worker mark", "NULL", "101", "worker"}}));
  // Push/pop ranges nest on the thread itself.
  EXPECT_EQ(db.rows("select name, tid from trace_events where name in ('outer','inner','innermost') order by ts"),
            (Rows{{"outer", "100"}, {"inner", "100"}, {"innermost", "100"}}));
  // Start/end ranges get their own track; the two that partially overlap are on two lanes of it.
  // tid stays the thread's; the track and its lane say where the slice is drawn.
  EXPECT_EQ(db.rows("select name, tid, thread_name, lane from trace_events where name in ('async A','async B',"
                    "'cross thread') order by ts"),
            (Rows{{"async A", "100", "main (NVTX start/end)", "0"},
                  {"async B", "100", "main (NVTX start/end)", "1"},
                  {"cross thread", "100", "main (NVTX start/end)", "0"}}));  // [500,700] fits the first lane again
  EXPECT_EQ(trace().thread_names.count({100, (int64_t{1} << 24) | 16777215}), 1u)
      << "in Chrome JSON the lane is a tid of its own: (1 << 24) | the track's id";
  EXPECT_EQ(db.text("select args from trace_events where name = 'cross thread'"),
            "{\"range\":\"start/end\",\"range_id\":3,\"end_tid\":101}");
  // A push without a pop extends to the profile's last timestamp (outer's end, 1000); NVIDIA's reports end it at the
  // last NVTX timestamp, here the same.
  EXPECT_EQ(db.rows("select dur, args from trace_events where name = 'never closed'"),
            (Rows{{"200", "{\"unclosed\":true,\"last_nvtx_ts\":1000}"}}));
  auto t = trace();
  EXPECT_EQ(t.per_cat["nvtx"], 10);
}

TEST_F(Fixture, OverlappingKernelsGetLanesAndNothingIsDropped) {
  load("overlap_stream");
  EXPECT_EQ(db.rows("select name, tid, thread_name, lane from trace_events where kind = 'kernel' order by ts, name"),
            (Rows{{"kernel_first", "7", "Stream 7", "0"},
                  {"kernel_second", "7", "Stream 7", "1"},
                  {"kernel_twin_a", "7", "Stream 7", "0"},
                  {"kernel_twin_b", "7", "Stream 7", "0"}}));
  // Every kernel of stream 7, whatever its lane (the review's case: one kernel on a lane was missed).
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'kernel' and tid = 7"), 4);
  // The API call that starts before 'region' and ends inside it pushes 'region' to a lane of the thread.
  // (+name: lanes are laid out over the rows a scan reads, so look at the full scan.)
  EXPECT_EQ(db.rows("select tid, lane from trace_events where +name = 'region' and +kind = 'nvtx'"), (Rows{{"100", "1"}}));
  auto t = trace();
  EXPECT_EQ(t.per_cat["kernel"], 4);
  EXPECT_EQ(t.per_cat["cuda_api"], 4);
  EXPECT_EQ(t.flow_starts, 4);
  EXPECT_EQ(t.thread_names.at({16777216, 16777223}), "Stream 7 [lane 1]");
}

TEST_F(Fixture, EmptyExportsGiveEmptyValidTraces) {
  for (const char* name : {"empty_export", "empty_tables"}) {
    SCOPED_TRACE(name);
    testdb::Db fresh;
    fresh.exec_file(testdb::source_dir() + "/tests/fixtures/" + name + ".sql");
    EXPECT_EQ(fresh.integer("select count(*) from trace_events"), 0);
    auto t = testtrace::check_trace(fresh.text("select chrome_trace(*) from trace_events"));
    EXPECT_TRUE(t.problems.empty());
    EXPECT_TRUE(t.slices.empty());
  }
}

TEST_F(Fixture, Legacy2020SchemaReadsByColumnName) {
  load("legacy_2020");
  EXPECT_EQ(db.rows("select kind, count(*) from trace_events where derived in (0, 1) group by kind order by kind"),
            (Rows{{"cuda_api", "8"}, {"kernel", "3"}, {"memcpy", "2"}, {"memset", "1"}, {"nvtx", "3"},
                  {"nvtx_kernel", "3"}, {"sync", "1"}}));
  EXPECT_EQ(db.rows("select distinct process_name from trace_events where device_id is null"), (Rows{{"python"}}));
  EXPECT_EQ(db.rows("select distinct process_name from trace_events where device_id is not null"),
            (Rows{{"GPU 0 (Quadro RTX 8000)"}}));
  EXPECT_EQ(db.rows("select name, args from trace_events where kind = 'memcpy' order by ts"),
            (Rows{{"Memcpy HtoD",
                   "{\"bytes\":4096,\"copy_kind\":\"Host-to-Device\",\"src_kind\":\"Pageable\",\"dst_kind\":\"Device\","
                   "\"correlation_id\":2,\"context_id\":1}"},
                  {"Memcpy DtoH",
                   "{\"bytes\":4,\"copy_kind\":\"Device-to-Host\",\"src_kind\":\"Device\",\"dst_kind\":\"Pageable\","
                   "\"correlation_id\":7,\"context_id\":1}"}}));
  EXPECT_EQ(db.text("select name from trace_events where kind = 'sync'"), "Stream sync");
  EXPECT_EQ(db.rows("select name, json_extract(args, '$.domain') from trace_events where kind = 'nvtx' order by ts"),
            (Rows{{"DATAFRAME_INIT", "cudf_python"}, {"make_column", "libcudf"}, {"default domain range", "NULL"}}));
  auto t = trace();
  EXPECT_EQ(t.flow_starts, 6);  // memcpy x2, memset, kernel x3
}

TEST_F(Fixture, OddNamesSurviveEscapingByteForByte) {
  load("odd_names");
  auto t = trace();
  std::multiset<std::string> from_json, from_db;
  for (const auto& s : t.slices)
    if (s.cat == "kernel" || s.cat == "nvtx") from_json.insert(s.name);
  for (const auto& r : db.rows("select name from trace_events where kind in ('kernel','nvtx')")) from_db.insert(r[0]);
  EXPECT_EQ(from_json.size(), 14u);
  EXPECT_EQ(from_json, from_db);
  EXPECT_EQ(from_db.count("Größe 核函数 🚀"), 1u);
  EXPECT_EQ(from_db.count("line1\nline2"), 1u);
  EXPECT_EQ(t.process_names.at(100), "odd \"proc\" it's");
  EXPECT_EQ(t.thread_names.at({100, 100}), "线程-1");
}

TEST_F(Fixture, DanglingStringsBecomePlaceholdersNotGaps) {
  load("dangling_strings");
  EXPECT_EQ(db.rows("select name from trace_events where kind = 'kernel' order by ts"),
            (Rows{{"good_kernel"}, {"[missing string 500]"}, {"good_kernel"}, {"good_kernel"}}));
  EXPECT_EQ(db.rows("select name, thread_name from trace_events where correlation_id = 3 and kind = 'cuda_api'"),
            (Rows{{"[missing string 600]", "Thread 101"}}));
  // Name pushdown keeps placeholder-named rows reachable.
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = '[missing string 500]'"), 1);
  EXPECT_EQ(db.integer("select count(*) from trace_events where name like '[missing%'"), 2);
  EXPECT_EQ(db.integer("select count(*) from trace_events where name glob '*string 600]'"), 1);
  auto t = trace();
  EXPECT_EQ(t.per_cat["kernel"], 4);
  EXPECT_EQ(t.per_cat["cuda_api"], 4);
  EXPECT_EQ(t.flow_starts, 3);  // corr 99 has no API call, corr 4 no GPU work
}

TEST_F(Fixture, NegativeAndHugeTimestampsAreExact) {
  load("negative_times");
  EXPECT_EQ(db.rows("select name, ts, dur from trace_events where kind = 'kernel' order by ts"),
            (Rows{{"neg_kernel", "-2500", "500"}, {"huge_kernel", "9007199254740993123", "333"}}));
  std::string json = db.text("select chrome_trace(*) from trace_events");
  // Perfetto drops negative timestamps: an event recorded before 0 is drawn at 0, ending where it ended (or at 0),
  // with its recorded times in args; otherData counts them. trace_events keeps the recorded times.
  EXPECT_NE(json.find("\"name\":\"neg_kernel\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":0,\"dur\":0,\"pid\":16777216,"
                      "\"tid\":7,\"args\":{\"recorded_ts_ns\":-2500,\"recorded_dur_ns\":500,\"demangled_name\""),
            std::string::npos);
  EXPECT_NE(json.find("\"name\":\"huge_kernel\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":9007199254740993.123,\"dur\":0.333"),
            std::string::npos);
  // (Past the latest time a viewer holds, viewer_time.h: drawn there, the recorded time in args.)
  EXPECT_NE(json.find("\"name\":\"int64 max mark\",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\",\"ts\":9223372036854000,"
                      "\"pid\":100,\"tid\":100,\"args\":{\"recorded_ts_ns\":9223372036854775807}"),
            std::string::npos);
  EXPECT_NE(json.find("\"name\":\"straddles zero\",\"cat\":\"nvtx\",\"ph\":\"X\",\"ts\":0,\"dur\":0.5,"), std::string::npos);
  EXPECT_NE(json.find("\"recorded_ts_ns\":-500,\"recorded_dur_ns\":1000"), std::string::npos);
  EXPECT_EQ(json.find("\"ts\":-"), std::string::npos) << "no negative timestamp reaches the viewer";
  auto t = trace();
  EXPECT_EQ(t.root.get("otherData")->str("events_clamped_to_zero"),
            std::to_string(db.integer("select count(*) from trace_events where ts < 0")));
  EXPECT_EQ(t.per_cat["nvtx"], 5);
  EXPECT_EQ(t.flow_starts, 2);
}

TEST_F(Fixture, NotAnExportIsAClearError) {
  db.exec("create table t(x)");
  std::string err = db.error_of("select count(*) from trace_events");
  EXPECT_NE(err.find("is not an Nsight Systems export"), std::string::npos) << err;
}

}  // namespace

namespace {
TEST_F(Fixture, OsRuntimeSchedulingCudaEventsAndDiagnostics) {
  load("more_kinds");
  EXPECT_EQ(db.rows("select kind, name, ts, dur, tid, thread_name from trace_events where kind != 'sched' order by ts"),
            (Rows{{"diagnostic", "CPU sampling was disabled", "20", "NULL", "NULL", "Diagnostics"},
                  {"osrt", "pthread_mutex_lock", "100", "200", "100", "main"},
                  {"osrt", "ioctl", "150", "50", "100", "main"},
                  {"cuda_event", "CUDA event 42", "900", "NULL", "7", "Stream 7"}}));
  EXPECT_EQ(db.rows("select name, ts, dur, thread_name, args from trace_events where kind = 'sched' order by ts"),
            (Rows{{"Running on CPU 3", "50", "350", "main (CPU)", "{\"cpu\":3}"},
                  {"Running on CPU 1", "60", "10", "Thread 101 (CPU)", "{\"cpu\":1}"},
                  {"Running on CPU 5", "500", "400", "main (CPU)", "{\"cpu\":5,\"until_profile_end\":true}"}}));
  EXPECT_EQ(db.text("select args from trace_events where kind = 'osrt' and name = 'ioctl'"),
            "{\"return_value\":0,\"nesting_level\":1}");
  EXPECT_EQ(db.integer("select count(*) from trace_events where name like 'Running%' and kind = 'sched'"), 3);
  auto t = trace();
  EXPECT_EQ(t.per_cat["osrt"], 2);
  EXPECT_EQ(t.per_cat["sched"], 3);
  EXPECT_EQ(t.per_cat["cuda_event"], 1);
  EXPECT_EQ(t.per_cat["diagnostic"], 1);
}
}  // namespace

namespace {
TEST_F(Fixture, NvtxColorsBecomeChromeColorNamesAndUsersCanImposeTheirOwn) {
  load("nvtx_strings");
  // 0xFFFF0000 (pure red): nearest reserved color is "terrible" rgb(180,0,0) (distance 75^2, next rail_animation).
  EXPECT_EQ(db.text("select cname from trace_events where name = 'dom5 registered'"), "terrible");
  EXPECT_EQ(db.text("select cname from trace_events where name = 'dom5 inline'"), "");  // no color: no cname
  std::string json = db.text("select chrome_trace(*) from trace_events");
  EXPECT_NE(json.find("\"name\":\"dom5 registered\",\"cat\":\"nvtx\",\"ph\":\"X\",\"ts\":0.4,\"dur\":0.1,\"pid\":100,"
                      "\"tid\":100,\"cname\":\"terrible\""),
            std::string::npos);
  // A user's color rules (nsys2json's --nvtx-color-scheme), as SQL: the explicit form's 12th argument.
  std::string ruled = db.text(
      "select chrome_trace(kind, name, ts, dur, pid, tid, process_name, thread_name, args, correlation_id, global_tid, "
      "case when name like 'dom5%' then 'thread_state_iowait' when name glob '*range*' then 'thread_state_running' end) "
      "from trace_events");
  auto t = testtrace::check_trace(ruled);
  EXPECT_TRUE(t.problems.empty());
  EXPECT_NE(ruled.find("\"name\":\"dom5 inline\",\"cat\":\"nvtx\",\"ph\":\"X\",\"ts\":0.51,\"dur\":0.09,\"pid\":100,"
                       "\"tid\":100,\"cname\":\"thread_state_iowait\""),
            std::string::npos);
  EXPECT_NE(db.error_of("select chrome_trace(kind, name, ts, dur, pid, tid, null, null, null, null, null, 'pink') "
                        "from trace_events")
                .find("not one of Chrome's reserved color names"),
            std::string::npos);
}
}  // namespace

namespace {
TEST_F(Fixture, NcclRangesGetALaneOfTheirOwn) {
  db.exec("create table StringIds(id integer primary key, value text);"
          "create table ThreadNames(nameId, priority, globalTid); insert into StringIds values (1, 'main');"
          "insert into ThreadNames values (1, 0, 281476654432356);"
          "create table NVTX_EVENTS(start, end, eventType, text, globalTid, textId, domainId);"
          "insert into NVTX_EVENTS values (0, null, 75, 'NCCL', 281476654432356, null, 7),"
          " (100, 500, 59, 'train step', 281476654432356, null, 0),"
          " (200, 300, 59, 'ncclAllReduce', 281476654432356, null, 7);");
  EXPECT_EQ(db.rows("select name, thread_name, json_extract(args, '$.domain') from trace_events order by ts"),
            (Rows{{"train step", "main", "NULL"}, {"ncclAllReduce", "main (NCCL)", "NCCL"}}));
  auto t = trace();
  EXPECT_EQ(t.per_cat["nvtx"], 2);
}
}  // namespace

namespace {
TEST_F(Fixture, GraphLaunchesTracedPerGraphAreSlicesAndProject) {
  load("graphs");
  EXPECT_EQ(db.rows("select name, ts, dur, thread_name, args from trace_events where kind = 'graph'"),
            (Rows{{"CUDA graph 3", "1300", "2700", "Stream 7",
                   "{\"graph_id\":3,\"graph_exec_id\":9,\"correlation_id\":5,\"context_id\":1}"}}));
  EXPECT_EQ(db.rows("select name, gpu_start, gpu_end, gpu_ops, kernels, graphs from nvtx_kernel_ranges"),
            (Rows{{"step", "1300", "4000", "1", "0", "1"}}));
  auto t = trace();
  EXPECT_EQ(t.per_cat["graph"], 1);
  EXPECT_EQ(t.flow_starts, 1);  // the launch call -> the graph
}
}  // namespace

namespace {
TEST_F(Fixture, CudnnCublasGraphCreationAndMpiCalls) {
  load("libraries");
  EXPECT_EQ(db.rows("select kind, name, ts, dur, thread_name, args from trace_events order by ts"),
            (Rows{{"cudnn", "cudnnConvolutionForward", "1000", "500", "main", "{}"},
                  {"cublas", "cublasSgemm_v2", "2000", "300", "main", "{}"},
                  {"cuda_graph", "cudaGraphAddKernelNode_v10000", "2500", "100", "main", "{\"graph_node_id\":11}"},
                  {"cuda_graph", "cudaGraphInstantiate_v12000", "3000", "400", "main",
                   "{\"graph_id\":4,\"graph_exec_id\":8}"},
                  {"mpi", "MPI_Send", "4000", "100", "main", "{\"remote_rank\":1,\"tag\":7,\"size\":4096}"},
                  {"mpi", "MPI_Allreduce", "5000", "0", "main", "{\"size\":1024,\"recv_size\":1024,\"no_end\":true}"}}));
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = 'MPI_Send'"), 1);  // name pushdown via textId
  auto t = trace();
  EXPECT_EQ(t.per_cat["mpi"], 2);
  EXPECT_EQ(t.per_cat["cuda_graph"], 2);
}
}  // namespace

namespace {
TEST_F(Fixture, GpuMetricsAreCounterTracks) {
  load("gpu_metrics");
  EXPECT_EQ(db.rows("select name, ts, dur, pid, process_name, args from trace_events order by ts, name"),
            (Rows{{"DRAM Read Bandwidth", "1000", "NULL", "25165825", "GPU metrics: GPU 0 - GH100", "{\"value\":12}"},
                  {"SMs Active", "1000", "NULL", "25165825", "GPU metrics: GPU 0 - GH100", "{\"value\":40}"},
                  {"SMs Active", "2000", "NULL", "25165825", "GPU metrics: GPU 0 - GH100", "{\"value\":75}"}}));
  std::string json = db.text("select chrome_trace(*) from trace_events");
  EXPECT_NE(json.find("{\"name\":\"SMs Active\",\"cat\":\"gpu_metric\",\"ph\":\"C\",\"ts\":2,\"pid\":25165825,\"tid\":0,"
                      "\"args\":{\"value\":75}}"),
            std::string::npos);
  auto t = trace();
  EXPECT_EQ(t.per_cat["gpu_metric"], 3);
  EXPECT_EQ(db.integer("select count(*) from trace_events where pid = 25165825"), 3);  // pid pushdown on typeId
}
}  // namespace

namespace {
// Two machines in one export (vm ids in the upper bits of globalTid) with a process of the same OS pid: the pid space
// has no room for a machine, so they share a pid; the trace says which pids, rather than merging them silently.
TEST_F(Fixture, ProcessesOfTwoMachinesSharingAPidAreNamedInTheTrace) {
  db.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'call');"
          "create table CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);"
          "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (10, 20, (1 << 48) + (100 << 24) + 100, 1, 1),"
          " (30, 40, (2 << 48) + (100 << 24) + 100, 2, 1), (50, 60, (1 << 48) + (200 << 24) + 200, 3, 1);");
  auto t = trace();
  EXPECT_EQ(t.root.get("otherData")->get("pids_shared_by_processes_of_several_machines")->items.size(), 1u);
  EXPECT_EQ(t.root.get("otherData")->get("pids_shared_by_processes_of_several_machines")->items[0].text, "100");
}
}  // namespace

namespace {
// CPU samples and backtraces (tests/fixtures/cpu_samples.sql, checked by hand): one cpu_sample instant per
// COMPOSITE_EVENTS row on a "(samples)" track beside its thread, named after its innermost frame, its stack in args as
// stored (a missing depth counted, never invented; a dangling symbol as its placeholder; no frames: "[no stack]");
// osrt and cuda_api calls with a callchainId carry their backtrace, callchainId 0 none.
TEST_F(Fixture, CpuSamplesAndBacktraces) {
  load("cpu_samples");
  EXPECT_EQ(db.rows("select name, ts, dur, pid, tid, process_name from trace_events where kind = 'cpu_sample' order by ts"),
            (Rows{{"step", "-500", "NULL", "100", "101", "trainer"},
                  {"matmul", "1000", "NULL", "100", "101", "trainer"},
                  {"matmul", "2000", "NULL", "100", "101", "trainer"},
                  {"do_syscall_64", "3000", "NULL", "100", "101", "trainer"},
                  {"0x7f00dead", "4000", "NULL", "100", "101", "trainer"},
                  {"loader", "5000", "NULL", "100", "102", "trainer"},
                  {"[no stack]", "6000", "NULL", "100", "101", "trainer"}}));
  EXPECT_EQ(db.text("select args from trace_events where kind = 'cpu_sample' and ts = 3000"),
            "{\"cpu\":4,\"thread_state\":\"OS runtime\",\"cpu_cycles\":1,\"stack\":["
            "{\"symbol\":\"do_syscall_64\",\"module\":\"[kernel.kallsyms]\",\"kernel\":true},"
            "{\"symbol\":\"read\",\"module\":\"libc.so.6\"},{\"symbol\":\"step\",\"module\":\"/bin/trainer\"},"
            "{\"symbol\":\"main\",\"module\":\"/bin/trainer\"}]}");
  EXPECT_EQ(db.text("select args from trace_events where kind = 'cpu_sample' and ts = 4000"),
            "{\"cpu\":4,\"thread_state\":\"Running\",\"cpu_cycles\":1,\"stack\":["
            "{\"symbol\":\"0x7f00dead\",\"module\":\"libc.so.6\",\"unresolved\":true},"
            "{\"symbol\":\"main\",\"module\":\"/bin/trainer\"}],\"stack_missing_depths\":1}");
  EXPECT_EQ(db.text("select args from trace_events where kind = 'cpu_sample' and ts = 5000"),
            "{\"cpu\":5,\"thread_state\":\"Running\",\"cpu_cycles\":1,\"stack\":["
            "{\"symbol\":\"loader\",\"module\":\"/bin/trainer\"},"
            "{\"symbol\":\"[missing string 99]\",\"module\":\"libc.so.6\"}]}");
  EXPECT_EQ(db.text("select args from trace_events where kind = 'cpu_sample' and ts = 6000"),
            "{\"cpu\":3,\"thread_state\":42,\"cpu_cycles\":1,\"stack\":[]}");
  EXPECT_EQ(db.rows("select kind, name, args from trace_events where kind in ('osrt', 'cuda_api') order by ts"),
            (Rows{{"osrt", "read",
                   "{\"return_value\":4096,\"nesting_level\":0,\"callchain_id\":1,\"backtrace\":["
                   "{\"symbol\":\"read\",\"module\":\"libc.so.6\"},{\"symbol\":\"step\",\"module\":\"/bin/trainer\"},"
                   "{\"symbol\":\"main\",\"module\":\"/bin/trainer\"}]}"},
                  {"osrt", "close", "{\"return_value\":0,\"nesting_level\":0}"},
                  {"cuda_api", "cudaLaunchKernel",
                   "{\"correlation_id\":1,\"return_value\":0,\"api\":\"runtime\",\"callchain_id\":7,\"backtrace\":["
                   "{\"symbol\":\"cudaLaunchKernel\",\"module\":\"libcudart.so\"},"
                   "{\"symbol\":\"step\",\"module\":\"/bin/trainer\"},{\"symbol\":\"main\",\"module\":\"/bin/trainer\"}]}"}}));
  // Pushed-down filters see the samples as the rows do.
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = 'matmul'"), 2);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'cpu_sample' and pid = 100"), 7);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'cpu_sample' and ts between 0 and 3000"), 3);
  // Chrome JSON: instants on "<thread> (samples)" tracks; the one recorded before 0 drawn at 0 with its recorded time.
  auto t = trace();
  EXPECT_EQ(t.per_cat["cpu_sample"], 7);
  std::set<std::string> names;
  for (const auto& [key, name] : t.thread_names) names.insert(name);
  EXPECT_EQ(names.count("main (samples)"), 1u);
  EXPECT_EQ(names.count("Thread 102 (samples)"), 1u);
  int clamped = 0;
  for (const auto& e : t.root.get("traceEvents")->items) {
    if (e.str("cat") != "cpu_sample") continue;
    EXPECT_EQ(e.str("ph"), "i");
    if (const testjson::Value* a = e.get("args"); a && a->get("recorded_ts_ns")) {
      EXPECT_EQ(a->str("recorded_ts_ns"), "-500");
      EXPECT_EQ(e.str("ts"), "0");
      ++clamped;
    }
  }
  EXPECT_EQ(clamped, 1);
}
}  // namespace

namespace {
// A report of sql/nsys_stats run on the fixture, as users run it (the file is one statement).
std::string read_report(const std::string& name) {
  return testdb::file_contents(testdb::source_dir() + "/sql/nsys_stats/" + name + ".sql");
}

// nsys numbers NVTX domains (and their categories) per process: pids 100 and 200 both create domainId 1, as
// 'Trainer' and 'Loader' (see the fixture's header). Looked up export-wide, the second definition named both.
TEST_F(Fixture, NvtxDomainsAndCategoriesAreNumberedPerProcess) {
  load("nvtx_domains_per_process");
  EXPECT_EQ(db.rows("select pid, name, json_extract(args, '$.domain'), json_extract(args, '$.domain_id'), "
                    "json_extract(args, '$.category') from trace_events where kind = 'nvtx' order by ts"),
            (Rows{{"100", "step", "Trainer", "1", "Compute"},
                  {"200", "step", "Loader", "1", "IO"},
                  {"100", "step", "Trainer", "1", "NULL"},
                  {"200", "never closed", "NULL", "NULL", "NULL"}}));
  // The projection: nvtx_kernel_ranges and the nvtx_kernel rows of trace_events name each range's own domain.
  EXPECT_EQ(db.rows("select rowid, pid, domain from nvtx_kernel_ranges order by rowid"),
            (Rows{{"5", "100", "Trainer"}, {"6", "200", "Loader"}, {"7", "100", "Trainer"}, {"8", "200", "NULL"}}));
  EXPECT_EQ(db.rows("select ts, json_extract(args, '$.domain') from trace_events where kind = 'nvtx_kernel' "
                    "and derived = 1 order by ts"),
            (Rows{{"1200", "Trainer"}, {"1250", "Loader"}, {"3200", "Trainer"}, {"8900", "NULL"}}));
  // The hidden column domain, read without args, names the same per-process domains.
  EXPECT_EQ(db.rows("select kind, (global_pid >> 24) & 16777215, domain from trace_events where derived in (0, 1) "
                    "and kind like 'nvtx%' order by kind, ts"),
            (Rows{{"nvtx", "100", "Trainer"}, {"nvtx", "200", "Loader"}, {"nvtx", "100", "Trainer"},
                  {"nvtx", "200", "NULL"}, {"nvtx_kernel", "100", "Trainer"}, {"nvtx_kernel", "200", "Loader"},
                  {"nvtx_kernel", "100", "Trainer"}, {"nvtx_kernel", "200", "NULL"}}));
  auto t = trace();
  EXPECT_EQ(t.per_cat["nvtx"], 4);
}

// A domain named NCCL in one process gives that process's ranges a lane of their own; another process's ranges of
// the same domain number stay on their thread.
TEST_F(Fixture, OnlyTheProcessThatNamedItsDomainNcclGetsAnNcclLane) {
  load("nvtx_domains_per_process");
  db.exec("insert into NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) values"
          " (8, null, 75, 'NCCL', 281476654432356, 2),"
          " (1500, 1600, 59, 'ncclAllReduce', 281476654432356, 2),"
          " (1500, 1600, 59, 'prefetch', 281478332154056, 2)");
  EXPECT_EQ(db.rows("select pid, name, thread_name, json_extract(args, '$.domain') from trace_events "
                    "where ts = 1500 order by pid"),
            (Rows{{"100", "ncclAllReduce", "trainer (NCCL)", "NCCL"}, {"200", "prefetch", "loader", "NULL"}}));
}

// nvtx_sum's rows are NVIDIA's: per domain:name, domains numbered per process; a range never closed ends at the
// last NVTX timestamp (6000, a domain destroy row), not at the profile's last event (9000).
TEST_F(Fixture, NvtxSumKeepsEachProcesssDomainsAndEndsOpenRangesAtTheLastNvtxTimestamp) {
  load("nvtx_domains_per_process");
  Rows rows = db.rows(read_report("nvtx_sum"));
  Rows got;  // Name, Instances, Total Time (ns), Max (ns)
  for (const auto& r : rows) got.push_back({r[8], r[2], r[1], r[6]});
  EXPECT_EQ(got, (Rows{{"never closed", "1", "2000", "2000"},
                       {"Trainer:step", "2", "1500", "1000"},
                       {"Loader:step", "1", "800", "800"}}));
  // trace_events still draws the open range to the end of the profile; its hidden column nsys_dur, which nvtx_sum
  // sums, is NVIDIA's duration, and dur for every closed range and mark (NULL).
  EXPECT_EQ(db.rows("select dur, json_extract(args, '$.unclosed'), nsys_dur, json_extract(args, '$.last_nvtx_ts') - ts "
                    "from trace_events where name = 'never closed' and derived = 0"),
            (Rows{{"5000", "1", "2000", "2000"}}));
  EXPECT_EQ(db.text("select count(*) from trace_events where name != 'never closed' and nsys_dur is not dur"), "0");
  EXPECT_NE(db.text("select count(*) from trace_events where name != 'never closed'"), "0");
}

// nsys 2026 writes deviceId 0 on the sync rows of a context on another GPU; the context's GPU is the one its kernels
// and copies ran on, per process (see the fixture's header).
TEST_F(Fixture, SyncRowsAreDrawnOnTheGpuOfTheirContext) {
  load("sync_context_device");
  EXPECT_EQ(db.rows("select ts, device_id, pid, json_extract(args, '$.context_id'), "
                    "json_extract(args, '$.recorded_device_id') from trace_events where kind = 'sync' order by ts"),
            (Rows{{"1000", "0", "16777216", "1", "NULL"},
                  {"1100", "1", "16777217", "1", "0"},
                  {"1200", "1", "16777217", "2", "0"},
                  {"1300", "3", "16777219", "5", "NULL"}}));
  // A pid constraint (pushed down to the reader) keeps exactly the rows drawn on that GPU.
  EXPECT_EQ(db.rows("select ts from trace_events where kind = 'sync' and pid = 16777217 order by ts"),
            (Rows{{"1100"}, {"1200"}}));
  EXPECT_EQ(db.rows("select ts from trace_events where pid = 16777216 and kind = 'sync'"), (Rows{{"1000"}}));
  auto t = trace();
  std::map<int64_t, int> sync_per_pid;
  for (const auto& e : t.root.get("traceEvents")->items)
    if (e.str("cat") == "sync") ++sync_per_pid[e.integer("pid")];
  EXPECT_EQ(sync_per_pid, (std::map<int64_t, int>{{16777216, 1}, {16777217, 2}, {16777219, 1}}));
}

// NVIDIA's cuda_api_sum names a call without its version suffix: '_v' and four characters at the end
// (cudaLaunchKernel_v7000 -> cudaLaunchKernel), exactly as its report does (substr(name, -6, 2) = '_v'), so
// cuMemAlloc_v2 and cudaStreamIsCapturing_v10000 keep theirs.
TEST_F(Fixture, CudaApiSumStripsTheVersionSuffixAsNvidiaDoes) {
  load("nvtx_domains_per_process");
  db.exec("insert into StringIds values (10, 'cuMemAlloc_v2'), (11, 'cudaStreamIsCapturing_v10000');"
          "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (9100, 9101, 1, 281476654432356, 50, 10, 0, null),"
          " (9200, 9201, 0, 281476654432356, 51, 11, 0, null)");
  Rows got;  // Name, Instances, Total Time (ns)
  for (const auto& r : db.rows(read_report("cuda_api_sum"))) got.push_back({r[8], r[2], r[1]});
  EXPECT_EQ(got, (Rows{{"cudaLaunchKernel", "4", "40"}, {"cuMemAlloc_v2", "1", "1"},
                       {"cudaStreamIsCapturing_v10000", "1", "1"}}));
}
}  // namespace

namespace {
// On the real exports (when ../shared is present): every sync row is drawn on the GPU its context's kernels and
// copies ran on. nsys 2026.2 writes deviceId 0 on the sync rows of the context on GPU 1 (122 and 188 rows in the two
// H100 exports were drawn on GPU 0).
TEST(RealExportsSync, SyncRowsLandOnTheDeviceOfTheirContext) {
  std::string dir = testdb::shared_fixtures_dir();
  if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/real absent";
  int checked = 0;
  for (const char* name : {"nsysai_h100_2gpu_fastvideo_1s_slice.sqlite", "nsysai_h100_2gpu_mfu_before_slice.sqlite",
                           "rtx8000_2020_cudf_nvtx_domains_osrt.sqlite", "t4_vectoradd_streams_osrt_2022_4.sqlite"}) {
    std::ifstream exists(dir + "/" + name);
    if (!exists) continue;
    testdb::Db db(dir + "/" + name);
    EXPECT_EQ(db.integer("with k as (select distinct global_pid, device_id, json_extract(args, '$.context_id') as ctx "
                         "from trace_events where kind in ('kernel', 'memcpy', 'memset')), "
                         "s as (select global_pid, device_id, json_extract(args, '$.context_id') as ctx "
                         "from trace_events where kind = 'sync') "
                         "select count(*) from s join k using (global_pid, ctx) where s.device_id != k.device_id"),
              0)
        << name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "none of the exports with sync rows is present";
  if (std::ifstream(dir + "/nsysai_h100_2gpu_mfu_before_slice.sqlite")) {
    EXPECT_EQ(testdb::Db(dir + "/nsysai_h100_2gpu_mfu_before_slice.sqlite")
                  .integer("select count(*) from trace_events where kind = 'sync' and device_id = 1"),
              188);
  }
}
}  // namespace

// NCCL's extended payloads (tests/fixtures/nccl_payloads.sql: NCCL's real schemas, payload bytes laid out as NCCL's
// structs): each range's args carry the fields by the schema's names, the reduction operation by its enum name, and
// where a blob cannot be decoded, its length and why. The values were worked out by hand from the bytes in the
// fixture's header; the Chrome JSON carries the same args.
namespace {
TEST_F(Fixture, NcclPayloadsAreDecodedBySchema) {
  load("nccl_payloads");
  const std::string comm = "\"NCCL communicator ID\":17297704936375867000";
  const std::string nccl = "{\"domain\":\"NCCL\",\"domain_id\":1,";
  EXPECT_EQ(db.rows("select ts, name, args from trace_events order by ts"),
            (Rows{{"100", "train step", "{}"},
                  {"200", "ncclCommInitRankConfig",
                   nccl + "\"payload_schema_id\":16777227," + comm + ",\"No. of ranks\":8,\"Rank\":3,\"CUDA device\":3}"},
                  {"500", "ncclAllReduce",
                   nccl + "\"payload_schema_id\":16777221," + comm +
                       ",\"Message size [bytes]\":33554432,\"Reduction operation\":\"Sum\"}"},
                  {"700", "ncclAllReduce",
                   nccl + "\"payload_schema_id\":16777221," + comm +
                       ",\"Message size [bytes]\":4096,\"Reduction operation\":\"Max\"}"},
                  {"900", "ncclAllReduce",
                   nccl + "\"payload_schema_id\":16777221," + comm +
                       ",\"Message size [bytes]\":1024,\"Reduction operation\":7}"},
                  {"1000", "ncclAllReduce",
                   nccl + "\"payload_schema_id\":16777221," + comm +
                       ",\"payload_bytes\":44,\"payload_error\":\"the header announces 24 payload bytes, binaryData "
                       "holds 12\"}"},
                  {"1100", "ncclCommFinalize", nccl + "\"payload_schema_id\":16777230," + comm + "}"},
                  {"1300", "ncclCommDestroy",
                   nccl + "\"payload_bytes\":10,\"payload_error\":\"binaryData of 10 bytes is shorter than its "
                          "32-byte header\"}"},
                  {"1500", "ncclGroupStart",
                   nccl + "\"payload_schema_id\":16777299,\"payload_bytes\":40,\"payload_error\":\"schema 16777299 of "
                          "domain 1 is not in NVTX_PAYLOAD_SCHEMAS\"}"}}));
  // SQL reads a field by its name.
  EXPECT_EQ(db.rows("select json_extract(args, '$.\"Message size [bytes]\"'), "
                    "json_extract(args, '$.\"Reduction operation\"') from trace_events where name = 'ncclAllReduce' "
                    "and json_extract(args, '$.payload_error') is null order by ts"),
            (Rows{{"33554432", "Sum"}, {"4096", "Max"}, {"1024", "7"}}));
  // A communicator id above 2^63 - 1: exact as the JSON text `->` gives (json_extract would make it a REAL).
  EXPECT_EQ(db.text("select args -> '$.\"NCCL communicator ID\"' from trace_events where ts = 500"),
            "17297704936375867000");
  auto t = trace();
  EXPECT_EQ(t.per_cat["nvtx"], 9);
  std::string json = db.text("select chrome_trace(*) from trace_events where ts = 500");
  EXPECT_NE(json.find(comm + ",\"Message size [bytes]\":33554432,\"Reduction operation\":\"Sum\"}"),
            std::string::npos)
      << json;
  // Without args asked for, nothing is decoded (and nothing fails).
  EXPECT_EQ(db.integer("select count(*) from trace_events where name like 'nccl%'"), 8);
}

// In the Chrome JSON, NCCL's ranges are on a tid of their own (16777215, counted down from 2^24 - 1) named
// "main (NCCL)", sorted right after their thread (tid 100), before a later thread (tid 200) of the process.
TEST_F(Fixture, NcclTidSortsRightAfterItsThreadInTheJson) {
  load("nccl_payloads");
  db.exec("insert into NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) values "
          "(3000, 3100, 59, 'loader step', 281476654432456, 0)");
  auto t = trace();
  EXPECT_EQ(t.thread_names, (std::map<std::pair<int64_t, int64_t>, std::string>{
                                {{100, 100}, "main"}, {{100, 200}, "Thread 200"}, {{100, 16777215}, "main (NCCL)"}}));
  std::string json = db.text("select chrome_trace(*) from trace_events");
  auto sort_index = [&](int tid) {
    std::string key = "\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":100,\"tid\":" + std::to_string(tid) +
                      ",\"args\":{\"sort_index\":";
    size_t at = json.find(key);
    return at == std::string::npos ? -1 : std::stoi(json.substr(at + key.size()));
  };
  EXPECT_EQ(sort_index(100), 0);
  EXPECT_EQ(sort_index(16777215), 1);
  EXPECT_EQ(sort_index(200), 2);
}
}  // namespace
