// xBestIndex pushdown: constraints on kind, ts and pid restrict what is read, visible in EXPLAIN QUERY PLAN,
// and always give the same rows as an unconstrained scan filtered afterwards.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/test_db.h"

namespace {

class Pushdown : public ::testing::Test {
 protected:
  void SetUp() override { db.exec_file(testdb::source_dir() + "/examples/example_profile.sql"); }
  std::string plan(const std::string& sql) {
    std::string out;
    for (const auto& r : db.rows("explain query plan " + sql)) out += r.back() + "\n";
    return out;
  }
  // The same query with pushdown and with the constraint hidden from xBestIndex (+ makes it an expression).
  void expect_same_rows(const std::string& where, const std::string& hidden_where) {
    auto pushed = db.rows("select kind, name, ts, pid, tid from trace_events where " + where + " order by rowid");
    auto filtered = db.rows("select kind, name, ts, pid, tid from trace_events where " + hidden_where + " order by rowid");
    EXPECT_FALSE(pushed.empty()) << where;
    // Rows are the same set; track ids may differ only for extra lanes, so compare (kind, name, ts, pid).
    auto strip = [](std::vector<std::vector<std::string>> v) {
      for (auto& r : v) r.pop_back();
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(strip(pushed), strip(filtered)) << where;
  }
  testdb::Db db;
};

TEST_F(Pushdown, PlansShowTheConstraintsHandedToTheScan) {
  EXPECT_NE(plan("select name, ts from trace_events where kind = 'kernel'").find("INDEX 1:kind="), std::string::npos);
  EXPECT_NE(plan("select name, ts from trace_events where kind in ('kernel','nvtx')").find("kind_in"), std::string::npos);
  EXPECT_NE(plan("select name, ts from trace_events where ts >= 5 and ts < 10").find("ts>= ts<"), std::string::npos);
  // A query that reads lanes or track names is handed its constraints too (it takes them from the whole profile's
  // placement).
  EXPECT_NE(plan("select * from trace_events where kind = 'kernel'").find("INDEX 1:kind="), std::string::npos);
  EXPECT_NE(plan("select lane from trace_events where kind = 'kernel'").find("kind="), std::string::npos);
  EXPECT_NE(plan("select * from trace_events where pid = 4101").find("pid="), std::string::npos);
  EXPECT_NE(plan("select * from trace_events").find("INDEX 0:"), std::string::npos);
}

TEST_F(Pushdown, KindReadsOnlyItsTable) {
  // The per-table readers are only opened for wanted kinds: with kind='kernel' no other table is touched, which
  // we observe through SQLite's statement list (sqlite_stmt is not available everywhere, so count via status).
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'kernel'"),
            db.integer("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL"));
  // A kind that does not exist matches no row, as SQL's comparison says (the command names what exists).
  const int64_t all = db.integer("select count(*) from trace_events");
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'kernels'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind != 'kernels'"), all);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind in ('kernel', 'kernels')"),
            db.integer("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = null"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind in ('memset', 'memcpy')"),
            db.integer("select (select count(*) from CUPTI_ACTIVITY_KIND_MEMSET) + "
                       "(select count(*) from CUPTI_ACTIVITY_KIND_MEMCPY)"));
}

TEST_F(Pushdown, PushedAndUnpushedConstraintsGiveTheSameRows) {
  int64_t lo = db.integer("select min(start) + (max(start) - min(start)) / 3 from CUPTI_ACTIVITY_KIND_KERNEL");
  int64_t hi = db.integer("select min(start) + 2 * (max(start) - min(start)) / 3 from CUPTI_ACTIVITY_KIND_KERNEL");
  std::string lo_s = std::to_string(lo), hi_s = std::to_string(hi);
  expect_same_rows("kind = 'kernel'", "+kind = 'kernel'");
  expect_same_rows("kind in ('nvtx', 'memcpy')", "+kind in ('nvtx', 'memcpy')");
  expect_same_rows("kind != 'nvtx' and kind != 'cuda_api'", "+kind != 'nvtx' and +kind != 'cuda_api'");
  expect_same_rows("ts >= " + lo_s + " and ts < " + hi_s, "+ts >= " + lo_s + " and +ts < " + hi_s);
  expect_same_rows("ts > " + lo_s + ".5 and ts <= " + hi_s, "+ts > " + lo_s + ".5 and +ts <= " + hi_s);
  expect_same_rows("ts = " + lo_s + " or ts > " + hi_s, "+ts = " + lo_s + " or +ts > " + hi_s);
  expect_same_rows("pid = 4101", "+pid = 4101");
  expect_same_rows("pid = 16777217", "+pid = 16777217");
  expect_same_rows("pid = 4102 and kind = 'cuda_api' and ts > " + lo_s,
                   "+pid = 4102 and +kind = 'cuda_api' and +ts > " + lo_s);
}

TEST_F(Pushdown, OrAndInAreOneScanWithStableRowids) {
  // SQLite must not split an OR into one scan per term: lanes and chrome_trace(*) need one scan.
  for (const char* where : {"ts = 2000040000 or ts > 2139000000", "kind = 'kernel' or name = 'forward'",
                            "name in ('forward', 'backward')", "ts in (2000040000, 2000048000)", "pid in (4101, 4102)"}) {
    std::string p = plan(std::string("select * from trace_events where ") + where);
    EXPECT_EQ(p.find("MULTI-INDEX OR"), std::string::npos) << where << "\n" << p;
    EXPECT_EQ(db.error_of(std::string("select chrome_trace(*) from trace_events where ") + where), "") << where;
  }
  EXPECT_NE(plan("select ts from trace_events where name in ('forward', 'backward')").find("name_in"), std::string::npos);
  expect_same_rows("name in ('forward', 'Memset', 'nope')", "+name in ('forward', 'Memset', 'nope')");
  expect_same_rows("kind = 'memset' or name = 'forward'", "+kind = 'memset' or +name = 'forward'");
  // rowid = (rowid in the source table << 5) | kind: the same whatever the query.
  EXPECT_EQ(db.rows("select rowid from trace_events where kind = 'kernel' and ts > 2100000000 order by rowid"),
            db.rows("select rowid from trace_events where +kind = 'kernel' and +ts > 2100000000 order by rowid"));
  EXPECT_EQ(db.integer("select count(distinct rowid) = count(*) from trace_events"), 1);
  EXPECT_EQ(db.rows("select rowid >> 5 from trace_events where kind = 'memset' order by 1"),
            db.rows("select rowid from CUPTI_ACTIVITY_KIND_MEMSET order by 1"));
}

TEST_F(Pushdown, ImpossibleConstraintsGiveNoRows) {
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts > 10 and ts < 5"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'kernel' and kind = 'nvtx'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where pid = 1 and pid = 2"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts > 9223372036854775807"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts = 1.5"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts > null"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where pid = -3"), 0);
}

}  // namespace

namespace {

// Records every event table an SQL statement prepared on the connection may read (SQLite's authorizer sees the
// statements the extension prepares inside xFilter too): proof that pushdown keeps other tables closed.
class TablesRead {
 public:
  explicit TablesRead(sqlite3* db) : db_(db) { sqlite3_set_authorizer(db_, &TablesRead::callback, this); }
  ~TablesRead() { sqlite3_set_authorizer(db_, nullptr, nullptr); }
  std::set<std::string> event_tables() const { return tables_; }

 private:
  static int callback(void* self, int action, const char* table, const char*, const char*, const char*) {
    if (action == SQLITE_READ && table != nullptr) {
      std::string t = table;
      if (t.rfind("CUPTI_ACTIVITY_KIND_", 0) == 0 || t == "NVTX_EVENTS")
        static_cast<TablesRead*>(self)->tables_.insert(t);
    }
    return SQLITE_OK;
  }
  sqlite3* db_;
  std::set<std::string> tables_;
};

TEST_F(Pushdown, ConstraintsKeepTablesTheyCannotMatchClosed) {
  // Load the catalog and the NVTX GPU projection first: both are computed once per connection and cached.
  db.integer("select count(*) from trace_events");
  auto read_by = [&](const std::string& where) {
    TablesRead watch(db.get());
    db.rows("select kind from trace_events where " + where);
    return watch.event_tables();
  };
  using Set = std::set<std::string>;
  EXPECT_EQ(read_by("kind = 'kernel'"), (Set{"CUPTI_ACTIVITY_KIND_KERNEL"}));
  EXPECT_EQ(read_by("kind in ('memcpy', 'sync')"),
            (Set{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}));
  EXPECT_EQ(read_by("kind = null"), Set{});
  // A GPU pid cannot match CPU events, an OS pid cannot match GPU work.
  // (NVTX_EVENTS: the names of the NVTX ranges projected on the GPU, the derived rows on the GPU's pid; the
  // projection itself was made by the first query.)
  EXPECT_EQ(read_by("pid = 16777216"),
            (Set{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"}));
  EXPECT_EQ(read_by("pid = 16777216 and derived = 0"),
            (Set{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}));
  // correlation_id: only the tables that have one; global_tid / global_pid: only those of CPU threads or processes.
  EXPECT_EQ(read_by("correlation_id = 1003 and derived = 0"),
            (Set{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME"}));
  EXPECT_EQ(read_by("pid = 16777216 and kind != 'nvtx_kernel'"),
            (Set{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}));
  EXPECT_EQ(read_by("pid = 4101"), (Set{"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}));
  // Names that only one table can produce.
  EXPECT_EQ(read_by("name = 'Memcpy HtoD'"), (Set{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL",
                                                 "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}));
  EXPECT_EQ(read_by("name = 'Memset' and kind in ('memset', 'memcpy', 'sync')"), (Set{"CUPTI_ACTIVITY_KIND_MEMSET"}));
  EXPECT_EQ(read_by("name like 'Stream%' and kind in ('memset', 'memcpy', 'sync')"),
            (Set{"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}));
  EXPECT_EQ(read_by("ts > 10 and ts < 5"), Set{});
  EXPECT_EQ(read_by("kind != 'nvtx_kernel' and kind != 'nvtx' and kind != 'cuda_api'"),
            (Set{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}));
}

TEST_F(Pushdown, NameConstraintsGiveTheSameRowsAsAFilter) {
  expect_same_rows("name = 'Memcpy HtoD'", "+name = 'Memcpy HtoD'");
  expect_same_rows("name like 'nccl%'", "+name like 'nccl%'");
  expect_same_rows("name like 'STEP 1_'", "+name like 'STEP 1_'");  // LIKE is case-insensitive, as in SQLite
  expect_same_rows("name glob '*sgemm*'", "+name glob '*sgemm*'");
  expect_same_rows("name = 'forward'", "+name = 'forward'");
  expect_same_rows("name = 'Stream sync'", "+name = 'Stream sync'");
  expect_same_rows("name = 'cudaLaunchKernel_v7000' and ts > 2050000000", "+name = 'cudaLaunchKernel_v7000' and +ts > 2050000000");
  EXPECT_NE(plan("select ts from trace_events where name like 'nccl%'").find("name_like"), std::string::npos);
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = 'no such name'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = null"), 0);
}

}  // namespace

namespace {
TEST_F(Pushdown, OtherCollationsAreLeftToSqlite) {
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'KERNEL' collate nocase"),
            db.integer("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_EQ(db.integer("select count(*) from trace_events where name = 'MEMSET' collate nocase"),
            db.integer("select count(*) from CUPTI_ACTIVITY_KIND_MEMSET"));
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'KERNEL'"), 0);  // BINARY: no such kind
}
}  // namespace

namespace {
// Readers yield time order whatever the stored order: a few rows out of place are read apart and merged back;
// many send the table through SQLite's sort. Both give the same rows in the same order.
TEST(StoredOrder, StragglersAndShuffledTablesComeOutInTimeOrder) {
  testdb::Db db;
  db.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'k');"
          "create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, shortName);"
          "insert into CUPTI_ACTIVITY_KIND_KERNEL values (100, 110, 0, 7, 1), (300, 310, 0, 7, 1), (200, 210, 0, 7, 1),"
          " (400, 410, 0, 7, 1), (50, 60, 0, 7, 1), (400, 500, 0, 7, 1);");
  EXPECT_EQ(db.rows("select ts, dur from trace_events"),
            (std::vector<std::vector<std::string>>{
                {"50", "10"}, {"100", "10"}, {"200", "10"}, {"300", "10"}, {"400", "100"}, {"400", "10"}}));
  testdb::Db shuffled;
  shuffled.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'k');"
                "create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, shortName);"
                "with recursive n(i) as (select 1 union all select i + 1 from n where i < 10000)"
                " insert into CUPTI_ACTIVITY_KIND_KERNEL select (i * 7919) % 10007, (i * 7919) % 10007 + 5, 0, 7, 1 from n;");
  auto rows = shuffled.rows("select ts from trace_events");  // in the scan's order
  ASSERT_EQ(rows.size(), 10000u);
  for (size_t i = 1; i < rows.size(); ++i) ASSERT_LE(std::stoll(rows[i - 1][0]), std::stoll(rows[i][0])) << i;
}
}  // namespace

namespace {
// A thousand names in one IN list: bound as one JSON array, not a thousand OR terms (SQLite caps an expression's
// depth: "Expression tree is too large"), and the same rows as without pushdown.
TEST_F(Pushdown, AThousandNamesInOneList) {
  std::string list;
  for (int i = 0; i < 1000; ++i) list += "'name " + std::to_string(i) + "', ";
  list += "'step 5', 'ampere_sgemm_128x64_tn', 'Memset', 'Memcpy HtoD', 'cudaLaunchKernel_v7000'";
  int64_t pushed = db.integer("select count(*) from trace_events where name in (" + list + ")");
  EXPECT_EQ(pushed, db.integer("select count(*) from trace_events where +name in (" + list + ")"));
  EXPECT_GT(pushed, 160);
}
}  // namespace

namespace {
// Costs follow the constraints, so a join pushes its constraint into trace_events (one narrow scan per outer row
// instead of a full scan), yet two scans always cost more than one, so an OR is never split into several scans.
TEST_F(Pushdown, JoinsPushConstraintsAndOrsStayOneScan) {
  EXPECT_NE(plan("select count(*) from (select 'step 5' as n union all select 'forward') v "
                 "join trace_events e on e.name = v.n")
                .find("SCAN e VIRTUAL TABLE INDEX 1:name="),
            std::string::npos);
  EXPECT_EQ(db.integer("select count(*) from (select 'step 5' as n union all select 'forward') v "
                       "join trace_events e on e.name = v.n"),
            db.integer("select count(*) from trace_events where +name in ('step 5', 'forward')"));
  for (const char* where : {"kind = 'kernel' or name = 'step 5'", "ts between 5 and 10 or pid = 4101",
                            "kind = 'memset' or (kind = 'kernel' and ts < 2100000000)"}) {
    std::string p = plan(std::string("select * from trace_events where ") + where);
    EXPECT_EQ(p.find("MULTI-INDEX OR"), std::string::npos) << where << "\n" << p;
  }
}
}  // namespace

namespace {

// A profile of n launches on one thread of each of two processes (pids 10 and 20), with the same correlation ids
// in both (CUPTI numbers each process's calls from 1): a kernel per launch.
void make_launches(testdb::Db& db, int n) {
  db.exec(R"sql(
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'gemm');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);)sql");
  for (int64_t pid : {10, 20}) {
    int64_t global_pid = (int64_t{1} << 48) | (pid << 24);
    db.exec("WITH RECURSIVE i(c) AS (SELECT 1 UNION ALL SELECT c + 1 FROM i WHERE c < " + std::to_string(n) + ") "
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT c * 1000 + " + std::to_string(pid) + ", c * 1000 + 100, 0, " +
            std::to_string(global_pid + pid) + ", c, 1, 0 FROM i");
    db.exec("WITH RECURSIVE i(c) AS (SELECT 1 UNION ALL SELECT c + 1 FROM i WHERE c < " + std::to_string(n) + ") "
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT c * 1000 + 500 + " + std::to_string(pid) +
            ", c * 1000 + 900, 0, 1, 7, c, " + std::to_string(global_pid) + ", 2, 2 FROM i");
  }
}

// "Which call launched this kernel": the join on (correlation_id, global_pid).
constexpr const char* kLaunchJoin =
    "select count(*), count(a.name), sum(k.ts - a.ts) from trace_events k "
    "left join trace_events a on a.correlation_id = k.correlation_id and a.global_pid = k.global_pid "
    "and a.kind = 'cuda_api' where k.kind = 'kernel'";

// SQLite virtual machine instructions (in thousands) a query runs, the extension's own statements included: a
// measure of work that does not depend on the machine's speed.
int64_t work_of(testdb::Db& db, const std::string& sql) {
  int64_t ticks = 0;
  sqlite3_progress_handler(
      db.get(), 1000, [](void* p) { return ++*static_cast<int64_t*>(p), 0; }, &ticks);
  db.rows(sql);
  sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
  return ticks;
}

TEST(LaunchJoin, FindsEachKernelsCallWithinItsProcess) {
  testdb::Db db;
  make_launches(db, 50);
  // 100 kernels, each joined to exactly its own launch (same process), 500 ns after it.
  EXPECT_EQ(db.rows(kLaunchJoin), (std::vector<std::vector<std::string>>{{"100", "100", "50000"}}));
  // Without the process, a correlation id matches a call of each process: why global_pid is part of the key.
  EXPECT_EQ(db.integer("select count(*) from trace_events k join trace_events a on a.correlation_id = "
                       "k.correlation_id and a.kind = 'cuda_api' where k.kind = 'kernel'"),
            200);
  std::string plan;
  for (const auto& r : db.rows(std::string("explain query plan ") + kLaunchJoin)) plan += r.back() + "\n";
  EXPECT_NE(plan.find("correlation= global_pid= kind="), std::string::npos) << plan;
}

// The join is index-fast: each kernel's lookup reads its launch alone (through the catalog's correlation index),
// so 4x the launches cost about 4x the work. A scan per kernel would cost 16x.
TEST(LaunchJoin, WorkGrowsLinearlyWithTheProfile) {
  testdb::Db small, large;
  make_launches(small, 500);
  make_launches(large, 2000);
  small.rows(kLaunchJoin);  // the catalogs and indexes, built once per connection, are not what is measured
  large.rows(kLaunchJoin);
  double ratio = static_cast<double>(work_of(large, kLaunchJoin)) / static_cast<double>(work_of(small, kLaunchJoin));
  EXPECT_GT(ratio, 3.0);
  EXPECT_LT(ratio, 5.5) << "the launch join's work grew faster than the profile";
  // The measure can tell: the same join with the key hidden from the scan (+) reads every call per kernel.
  std::string unindexed = std::string(kLaunchJoin).replace(std::string(kLaunchJoin).find("a.correlation_id ="), 18,
                                                           "+a.correlation_id =");
  testdb::Db tiny;
  make_launches(tiny, 125);
  tiny.rows(unindexed);
  double quadratic = static_cast<double>(work_of(small, unindexed)) / static_cast<double>(work_of(tiny, unindexed));
  EXPECT_GT(quadratic, 10.0) << "4x the launches without the index should cost about 16x";
}

}  // namespace

namespace {

// The shapes of issue reports that returned wrong rows with no error.
TEST_F(Pushdown, ALimitAfterAnOrderByIsSqlitesNotTheScans) {
  // The scan took the LIMIT although SQLite still had to sort: the first 3 rows read, sorted, were returned.
  auto longest = db.rows("select dur from trace_events where kind = 'kernel' order by dur desc limit 3");
  auto expected = db.rows("select dur from (select dur from trace_events where kind = 'kernel') order by dur desc "
                          "limit 3");
  ASSERT_EQ(longest.size(), 3u);
  EXPECT_EQ(longest, expected);
  EXPECT_EQ(longest[0][0], db.text("select max(dur) from trace_events where kind = 'kernel'"));
  // An IN list on a column the scan does not take, with a LIMIT: all 5 rows.
  EXPECT_EQ(db.rows("select rowid from trace_events where pid in (4101, 4102) limit 5").size(), 5u);
  EXPECT_EQ(plan("select dur from trace_events where kind = 'kernel' order by dur desc limit 3").find("limit"),
            std::string::npos);
  EXPECT_NE(plan("select dur from trace_events where kind = 'kernel' limit 3").find("limit"), std::string::npos);
  // A collation the scan does not apply leaves the kind to SQLite, and the LIMIT with it.
  EXPECT_EQ(db.rows("select rowid from trace_events where kind = 'KERNEL' collate nocase limit 4").size(), 4u);
}

TEST_F(Pushdown, DerivedIsAColumnLikeAnyOther) {
  int64_t derived = db.integer("select count(*) from trace_events where derived = 1");
  int64_t stored = db.integer("select count(*) from trace_events where derived = 0");
  ASSERT_GT(derived, 0);
  // Every operator, and none: SQL's answer over the table's rows, stored and derived.
  EXPECT_EQ(db.integer("select count(*) from trace_events"), stored + derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived != 0"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived > 0"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived is 1"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 1.0"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = '1'"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived in (2, 'yes', 0.5, null)"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived between 0 and 1"), stored + derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived is not null"), stored + derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived is null"), 0);
  EXPECT_EQ(db.integer("select sum(derived) from trace_events"), derived);
  EXPECT_EQ(db.rows("select kind, derived, count(*) from trace_events group by 1, 2 order by 1"),
            db.rows("select kind, kind = 'nvtx_kernel', count(*) from trace_events group by 1 order by 1"));
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived not in (0)"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived + 0 = 0"), stored);
}

}  // namespace

namespace {

// event_totals' sum past int64 fails as SQLite's sum() does, and only for a query that reads it, whether the groups
// are hashed or (past totals_memory_mb; 0: at once) grouped by SQLite.
TEST(EventTotals, ASumPastInt64FailsAsSqlitesSum) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  // Three kernels of one name lasting 2^62 ns each.
  db.exec("update CUPTI_ACTIVITY_KIND_KERNEL set end = start + 4611686018427387904 where rowid in (select rowid from "
          "CUPTI_ACTIVITY_KIND_KERNEL where shortName = (select shortName from CUPTI_ACTIVITY_KIND_KERNEL order by "
          "rowid limit 1) order by rowid limit 3)");
  const std::string grouped = "from trace_events where kind = 'kernel' group by name";
  EXPECT_NE(db.error_of("select sum(dur) " + grouped).find("integer overflow"), std::string::npos);
  for (const char* budget : {"256", "0"}) {
    db.exec(std::string("select nsystrace_option('totals_memory_mb', ") + budget + ")");
    EXPECT_NE(db.error_of("select total_ns from event_totals where kind = 'kernel'").find("integer overflow"),
              std::string::npos) << budget;
    EXPECT_EQ(db.rows("select name, events, timed, min_ns, max_ns from event_totals where kind = 'kernel' order by name"),
              db.rows("select name, count(*), count(dur), min(dur), max(dur) " + grouped + " order by name"))
        << budget;
    EXPECT_EQ(db.integer("select max(events) from event_totals where kind = 'kernel'"),
              db.integer("select max(n) from (select count(*) as n " + grouped + ")")) << budget;
  }
}

}  // namespace

namespace {

// An empty name is a name ('' is not NULL): its group is named '' whether the groups are hashed or grouped by
// SQLite, as in trace_events, and `name = ''` finds it.
TEST(EventTotals, AnEmptyNameIsANameNotNull) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  db.exec("update NVTX_EVENTS set text = '' where rowid in (select rowid from NVTX_EVENTS where text is not null "
          "and eventType = 59 order by rowid limit 3)");  // three push/pop ranges
  ASSERT_EQ(db.integer("select count(*) from trace_events where name = '' and derived = 0"), 3);
  const std::string columns = "kind, quote(name), quote(domain), events, timed, total_ns";
  for (const char* budget : {"256", "0"}) {
    db.exec(std::string("select nsystrace_option('totals_memory_mb', ") + budget + ")");
    EXPECT_EQ(db.rows("select " + columns + " from event_totals where name = '' or name is null order by 1, 2, 3"),
              db.rows("select kind, quote(name), quote(domain), count(*), count(dur), sum(dur) from trace_events "
                      "where name = '' or name is null group by kind, name, domain order by 1, 2, 3"))
        << budget;
    EXPECT_EQ(db.integer("select sum(events) from event_totals where name = '' and derived = 0"), 3) << budget;
  }
  // SQLite's grouping reads main's trace_events, whatever a temp object of that name holds.
  const int64_t groups = db.integer("select count(*) from event_totals");
  db.exec("create temp table trace_events(name, domain, dur, schema, kind, derived)");
  EXPECT_EQ(db.integer("select count(*) from event_totals"), groups);
}

}  // namespace
