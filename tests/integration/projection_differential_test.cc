// The NVTX projection against the way it was computed before (tests/support/reference_projection: every
// (range, operation) pair enumerated), on generated exports (nesting, overlapping and unclosed ranges, ranges ended
// on another thread, nested and twin API calls, concurrent work on several GPUs, operations ending before they
// start, graph launches) and on every real export; with 1 and several threads; and windowed (a trace_events ts
// window computes only the ranges that can have rows in it) against the whole projection, both in C++ and through
// SQL (the windowed rows against the whole profile's rows filtered by SQLite).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <dirent.h>

#include <random>
#include <set>

#include "src/model/nvtx_projection.h"
#include "src/model/profile_catalog.h"
#include "tests/support/reference_projection.h"
#include "tests/support/test_db.h"

namespace {

using namespace nsystrace;
using Rows = std::vector<std::vector<std::string>>;

std::string describe(const ProjectedRange& r, const DeviceExtent* devices, size_t device_count) {
  std::string s = fmt::format(
      "rowid {} [{}, {}] tid {} parent {} depth {} gpu [{}, {}] op_time {} busy {} ops {} k {} mc {} ms {} g {} "
      "domain {} unclosed {} start_end {} devices",
      r.nvtx_rowid, r.start, r.end, r.global_tid, r.parent_rowid, r.depth, r.gpu_start, r.gpu_end, r.gpu_op_time,
      r.gpu_busy_time, r.gpu_ops, r.kernels, r.memcpys, r.memsets, r.graphs, r.domain_id, r.unclosed, r.start_end);
  for (size_t d = 0; d < device_count; ++d)
    s += fmt::format(" {}:[{}, {}]x{}", devices[d].device, devices[d].gpu_start, devices[d].gpu_end, devices[d].ops);
  return s;
}

std::vector<std::string> described(const NvtxProjection& p) {
  std::vector<std::string> out;
  for (const ProjectedRange& r : p.ranges()) out.push_back(describe(r, p.devices(r), r.device_count));
  return out;
}

std::vector<std::string> described(const std::vector<ReferenceRange>& ranges) {
  std::vector<std::string> out;
  for (const ReferenceRange& r : ranges) out.push_back(describe(r.range, r.devices.data(), r.devices.size()));
  return out;
}

// The rows a window must keep: the ranges with a GPU start in [first, last] on some device.
std::vector<std::string> in_window(const NvtxProjection& p, int64_t first, int64_t last) {
  std::vector<std::string> out;
  for (const ProjectedRange& r : p.ranges()) {
    const DeviceExtent* d = p.devices(r);
    if (std::any_of(d, d + r.device_count, [&](const DeviceExtent& e) { return e.gpu_start >= first && e.gpu_start <= last; }))
      out.push_back(describe(r, d, r.device_count));
  }
  return out;
}

constexpr int64_t kProcessA = (int64_t{1} << 48) + (int64_t{100} << 24), kProcessB = (int64_t{1} << 48) + (int64_t{200} << 24);

// A random export in the layout of tests/fixtures/nvtx_projection.sql (whose tables it empties and refills).
// odd_times: some times are reals or text (the projection reads them as integers; trace_events' readers refuse
// NVTX rows whose text time breaks their order, so only the projection's own tests use them).
void generate(testdb::Db& db, std::mt19937_64& rng, int ranges, int calls, bool odd_times = false) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  // A time as SQL: now and then a real (read truncated) or a text that is not a number (read parsed), which SQL
  // compares differently from the integer the projection reads; a window must not lose those rows.
  auto time = [&](int64_t t) {
    if (odd_times && chance(0.02)) return fmt::format("{}.{}", t, uniform(1, 9));
    if (odd_times && chance(0.01)) return fmt::format("'{}x'", t);
    return std::to_string(t);
  };
  const int64_t threads[] = {kProcessA + 100, kProcessA + 101, kProcessB + 200, kProcessA + 102};  // 102: no ranges
  const int64_t span = chance(0.5) ? 2000 : 20000;
  const int64_t base = chance(0.2) ? -span / 2 : 0;  // times before 0 too
  db.exec("DELETE FROM NVTX_EVENTS; DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME; DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;"
          "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;"
          "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start INTEGER NOT NULL, end INTEGER NOT NULL, "
          "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
          "correlationId INTEGER, globalPid INTEGER, graphId INTEGER, graphExecId INTEGER);"
          "DELETE FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE;");
  std::string sql = "BEGIN;";
  for (int i = 0; i < ranges; ++i) {
    int64_t tid = threads[uniform(0, 2)];
    int64_t start = base + uniform(0, span);
    bool start_end = chance(0.4);
    std::string end = chance(0.1) ? "NULL" : std::to_string(start + (chance(0.7) ? uniform(0, span / 10) : uniform(0, span)));
    if (chance(0.1) && i > 0) start = base + uniform(0, 3) * span / 4;  // equal starts
    std::string end_tid = start_end ? (chance(0.15) ? std::to_string(threads[uniform(0, 2)]) : std::to_string(tid)) : "NULL";
    if (end != "NULL") end = time(std::stoll(end));
    sql += fmt::format("INSERT INTO NVTX_EVENTS VALUES ({}, {}, {}, NULL, NULL, NULL, 'r{}', {}, {}, NULL, {});",
                       time(start), end, start_end ? 60 : 59, i, tid, end_tid, chance(0.2) ? 3 : 0);
  }
  struct Launch {
    int64_t tid, corr, start, end;
  };
  std::vector<Launch> launches;
  int64_t next_corr[2] = {1, 1};
  for (int i = 0; i < calls; ++i) {
    int64_t tid = threads[uniform(0, 3)];
    int process = tid >= kProcessB ? 1 : 0;
    int64_t start = base + uniform(0, span), end = start + (chance(0.05) ? -uniform(1, 5) : uniform(0, 30));
    int64_t corr = next_corr[process]++;
    if (chance(0.05)) corr = uniform(1, 5);  // the same id in both processes
    launches.push_back({tid, corr, start, end});
    if (chance(0.2)) {  // a twin with the same correlation id: around it, identical, or elsewhere on the thread
      int how = static_cast<int>(uniform(0, 2));
      int64_t s = how == 0 ? start - uniform(1, 5) : how == 1 ? start : base + uniform(0, span);
      int64_t e = how == 0 ? end + uniform(1, 5) : how == 1 ? end : s + uniform(0, 30);
      launches.push_back({tid, corr, s, e});
    }
    if (chance(0.05)) launches.push_back({tid, corr + 100000, start + 1, std::max(start + 1, end - 1)});  // nested
  }
  for (const Launch& l : launches)
    sql += fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 0, {}, {}, 3, 0);", time(l.start),
                       time(l.end), l.tid, l.corr);
  std::set<std::pair<int64_t, int64_t>> done;
  for (const Launch& l : launches) {
    int64_t pid = l.tid >= kProcessB ? kProcessB : kProcessA;
    if (!done.insert({l.corr, pid}).second) continue;
    int ops = chance(0.1) ? 0 : chance(0.7) ? 1 : static_cast<int>(uniform(2, 4));
    for (int o = 0; o < ops; ++o) {
      int64_t device = chance(0.6) ? 0 : uniform(1, 2);
      int64_t start = l.start + uniform(-20, 400), end = start + (chance(0.05) ? -uniform(1, 10) : uniform(0, 300));
      int table = chance(0.7) ? 0 : static_cast<int>(uniform(1, 3));
      const char* names[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                             "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"};
      if (table == 3)
        sql += fmt::format("INSERT INTO {} VALUES ({}, {}, {}, 1, NULL, 7, {}, {}, 1, 1);", names[table], time(start),
                           time(end), device, l.corr, pid);
      else
        sql += fmt::format("INSERT INTO {} VALUES ({}, {}, {}, 1, {}, {}, {}, 4, 4);", names[table], time(start),
                           time(end), device, uniform(7, 9), l.corr, pid);
    }
  }
  // Operations no call launched.
  sql += fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({}, {}, 0, 1, 7, 999999, {}, 4, 4);", base,
                     base + 10, kProcessA);
  db.exec(sql + "COMMIT;");
}

std::shared_ptr<const NvtxProjection> project(testdb::Db& db, int threads,
                                              const std::optional<ProjectionWindow>& window = std::nullopt) {
  auto catalog = ProfileCatalog::load(db.get(), "main");
  return NvtxProjection::compute(db.get(), *catalog, false, threads, window);
}

// Windows worth trying on a projection: empty, whole, reversed, and edges exactly on GPU starts and ends.
std::vector<std::pair<int64_t, int64_t>> windows(const NvtxProjection& whole, std::mt19937_64& rng, int count) {
  std::vector<int64_t> times;
  for (const ProjectedRange& r : whole.ranges())
    for (size_t d = 0; d < r.device_count; ++d) {
      times.push_back(whole.devices(r)[d].gpu_start);
      times.push_back(whole.devices(r)[d].gpu_end);
    }
  std::vector<std::pair<int64_t, int64_t>> out = {{INT64_MIN, INT64_MAX}, {1, 0}, {INT64_MIN, INT64_MIN}};
  if (times.empty()) return out;
  std::sort(times.begin(), times.end());
  auto pick = [&] { return times[std::uniform_int_distribution<size_t>(0, times.size() - 1)(rng)]; };
  out.push_back({times.front(), times.front()});
  out.push_back({times.back(), INT64_MAX});
  for (int i = 0; i < count; ++i) {
    int64_t a = pick(), b = pick();
    if (a > b) std::swap(a, b);
    int nudge = static_cast<int>(rng() % 3);  // on the edges, or just inside / outside them
    out.push_back({a + (nudge == 1) - (nudge == 2), b - (nudge == 1) + (nudge == 2)});
  }
  return out;
}

void expect_windows_match(const NvtxProjection& whole, testdb::Db& db, std::mt19937_64& rng, int count,
                          const std::string& what) {
  for (auto [first, last] : windows(whole, rng, count)) {
    auto windowed = project(db, 2, ProjectionWindow{first, last});
    std::vector<std::string> all = described(whole);
    std::set<std::string> known(all.begin(), all.end());
    for (const std::string& r : described(*windowed))
      EXPECT_TRUE(known.count(r)) << what << " window [" << first << ", " << last << "]: not in the whole projection: " << r;
    EXPECT_EQ(in_window(*windowed, first, last), in_window(whole, first, last))
        << what << " window [" << first << ", " << last << "]";
  }
}

TEST(ProjectionDifferential, GeneratedExportsMatchTheReferenceWithOneAndSeveralThreads) {
  std::mt19937_64 rng(20261125);
  int nonempty = 0;
  for (int round = 0; round < 300; ++round) {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
    int ranges = static_cast<int>(rng() % 60) + 1, calls = static_cast<int>(rng() % 150) + 1;
    generate(db, rng, ranges, calls, /*odd_times=*/true);
    auto catalog = ProfileCatalog::load(db.get(), "main");
    std::vector<std::string> expected = described(reference_projection(db.get(), *catalog));
    nonempty += !expected.empty();
    ASSERT_EQ(described(*project(db, 1)), expected) << "round " << round;
    ASSERT_EQ(described(*project(db, 3)), expected) << "round " << round << ", 3 threads";
    if (round % 5 == 0) expect_windows_match(*project(db, 1), db, rng, 6, "round " + std::to_string(round));
  }
  EXPECT_GT(nonempty, 250);  // the generator makes ranges with work, not empty projections
}

// In a file, with threads: the ranges are read on a connection of their own while this one reads the calls and
// the GPU operations (in memory, everything is read on one connection: the case above).
TEST(ProjectionDifferential, GeneratedFilesReadOnTwoConnectionsMatchTheReference) {
  testdb::TempDir dir("nsystrace_projection_files");
  std::mt19937_64 rng(20261126);
  for (int round = 0; round < 8; ++round) {
    std::string file = dir.file("generated" + std::to_string(round) + ".sqlite");
    {
      testdb::Db make(file, false, true);
      make.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
      generate(make, rng, static_cast<int>(rng() % 100) + 1, static_cast<int>(rng() % 250) + 1, /*odd_times=*/true);
      if (round >= 6) {  // rowids at both ends of int64: the ranges are read in chunks of the rowids' span
        make.exec("UPDATE NVTX_EVENTS SET rowid = -9223372036854775808 WHERE rowid = (SELECT min(rowid) "
                  "FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71))");
        make.exec("UPDATE NVTX_EVENTS SET rowid = 9223372036854775807 WHERE rowid = (SELECT max(rowid) "
                  "FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71))");
        if (round == 7) make.exec("UPDATE NVTX_EVENTS SET rowid = 9223372036854775806 WHERE rowid = (SELECT min(rowid) "
                                  "FROM NVTX_EVENTS WHERE rowid > 0 AND eventType IN (59, 60, 70, 71))");
      }
    }
    testdb::Db db(file);
    auto catalog = ProfileCatalog::load(db.get(), "main");
    std::vector<std::string> expected = described(reference_projection(db.get(), *catalog));
    EXPECT_FALSE(expected.empty()) << "round " << round;
    EXPECT_EQ(described(*project(db, 2)), expected) << "round " << round << ", 2 threads";
    EXPECT_EQ(described(*project(db, 3)), expected) << "round " << round << ", 3 threads";
  }
}

// The fixtures' exports, and the hand-made one of the projection's rules.
TEST(ProjectionDifferential, FixturesMatchTheReference) {
  for (const char* fixture : {"nvtx_projection", "projection_extremes", "hostile", "graphs", "nvtx_domains_per_process",
                              "concurrent_gpu_work", "correlation_reuse", "legacy_2020", "negative_times", "null_identities"}) {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/" + fixture + ".sql");
    auto catalog = ProfileCatalog::load(db.get(), "main");
    auto expected = described(reference_projection(db.get(), *catalog));
    EXPECT_EQ(described(*project(db, 1)), expected) << fixture;
    EXPECT_EQ(described(*project(db, 4)), expected) << fixture;
    std::mt19937_64 rng(7);
    expect_windows_match(*project(db, 1), db, rng, 10, fixture);
  }
}

TEST(ProjectionDifferential, RealExportsMatchTheReference) {
  if (testdb::real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real not found: NOT compared";
  for (const std::string& file : testdb::real_exports()) {
    testdb::Db db(testdb::shared_fixtures_dir() + "/" + file);
    auto catalog = ProfileCatalog::load(db.get(), "main");
    auto expected = described(reference_projection(db.get(), *catalog));
    EXPECT_EQ(described(*project(db, 1)), expected) << file;
    EXPECT_EQ(described(*project(db, 4)), expected) << file;
    std::mt19937_64 rng(11);
    expect_windows_match(*project(db, 1), db, rng, 12, file);
    std::printf("%s: %zu ranges with GPU work\n", file.c_str(), expected.size());
  }
}

// The shape that made the projection quadratic: n start/end ranges never ended on one thread, each followed by a
// launch, so that range i holds the launches i..n-1 (n^2/2 (range, operation) pairs). Values worked out: range i
// holds n - i launches whose kernels run [10^6 + 10j, 10^6 + 10j + 15] (each overlapping the next by 5).
TEST(ProjectionDifferential, LeakedRangesEachHoldingEveryLaterLaunch) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
  const int n = 3000;
  db.exec(fmt::format(
      "DELETE FROM NVTX_EVENTS; DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME; DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;"
      "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;"
      "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n} - 1)"
      "  INSERT INTO NVTX_EVENTS SELECT i * 10, NULL, 60, i, NULL, NULL, 'leak', {tid}, NULL, NULL, 0 FROM c;"
      "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n} - 1)"
      "  INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT i * 10 + 5, i * 10 + 6, 0, {tid}, i + 1, 3, 0 FROM c;"
      "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n} - 1)"
      "  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000000 + i * 10, 1000000 + i * 10 + 15, 0, 1, 7, i + 1, {pid}, 4, 4 FROM c;",
      fmt::arg("n", n), fmt::arg("tid", kProcessA + 100), fmt::arg("pid", kProcessA)));
  auto p = project(db, 2);
  ASSERT_EQ(p->ranges().size(), static_cast<size_t>(n));
  for (int i : {0, 1, n / 2, n - 1}) {
    const ProjectedRange& r = p->ranges()[static_cast<size_t>(i)];
    int64_t launches = n - i;
    EXPECT_EQ(r.gpu_ops, launches);
    EXPECT_EQ(r.depth, i);
    EXPECT_EQ(r.gpu_start, 1000000 + 10 * i);
    EXPECT_EQ(r.gpu_end, 1000000 + 10 * (n - 1) + 15);
    EXPECT_EQ(r.gpu_op_time, 15 * launches);
    EXPECT_EQ(r.gpu_busy_time, 10 * launches + 5);
  }
  auto catalog = ProfileCatalog::load(db.get(), "main");
  EXPECT_EQ(described(*p), described(reference_projection(db.get(), *catalog)));
}

// Through SQL: `ts between A and B` with derived rows (the windowed projection, on a connection that never computed
// the whole one) against the whole profile's rows filtered by SQLite on another connection. Every column but lane
// and thread_name: both are the track layout's, made over the rows a scan reads (a stream id used by two processes
// on one GPU names its second track "(pid N)", and which is second depends on where the scan starts).
void expect_sql_windows_match(const std::string& file, std::mt19937_64& rng, int count) {
  testdb::Db whole(file), windowed(file);
  const std::string columns = "rowid, kind, name, ts, dur, pid, tid, process_name, device_id, stream_id, "
                              "correlation_id, global_tid, args, global_pid";
  whole.exec("CREATE TEMP TABLE all_rows AS SELECT " + columns + " FROM trace_events WHERE derived IN (0, 1)");
  auto projected_times = whole.rows("SELECT DISTINCT ts FROM temp.all_rows WHERE kind = 'nvtx_kernel' ORDER BY ts");
  std::vector<std::pair<int64_t, int64_t>> list = {{1, 0}};
  if (!projected_times.empty()) {
    auto pick = [&] { return std::stoll(projected_times[rng() % projected_times.size()][0]); };
    for (int i = 0; i < count; ++i) {
      int64_t a = pick(), b = pick();
      if (a > b) std::swap(a, b);
      list.push_back({a, b});
      if (a < INT64_MAX && b > INT64_MIN) list.push_back({a + 1, b - 1});  // just inside (times can be the extremes)
    }
  }
  // Last: a window that pushes no bound computes (and keeps) the whole projection.
  list.push_back({INT64_MIN, INT64_MAX});
  for (auto [a, b] : list) {
    std::string bounds = fmt::format("ts between {} and {}", a, b);
    Rows got = windowed.rows("SELECT " + columns + " FROM trace_events WHERE " + bounds +
                             " AND derived IN (0, 1) ORDER BY rowid");
    Rows expected = whole.rows("SELECT * FROM temp.all_rows WHERE " + bounds + " ORDER BY rowid");
    EXPECT_EQ(got.size(), expected.size()) << file << ": " << bounds;
    EXPECT_EQ(got, expected) << file << ": " << bounds;
  }
  EXPECT_EQ(windowed.integer("SELECT count(*) FROM trace_events WHERE derived = 1"),
            whole.integer("SELECT count(*) FROM temp.all_rows WHERE kind = 'nvtx_kernel'"));
}

TEST(ProjectionWindowSql, WindowedRowsAreTheWholeProfilesRowsInTheWindow) {
  testdb::TempDir dir("nsystrace_projection_window");
  std::mt19937_64 rng(3);
  for (const char* fixture : {"nvtx_projection", "projection_extremes", "graphs", "concurrent_gpu_work"}) {
    std::string file = dir.file(std::string(fixture) + ".sqlite");
    {
      testdb::Db make(file, false, true);
      make.exec_file(testdb::source_dir() + "/tests/fixtures/" + fixture + ".sql");
    }
    expect_sql_windows_match(file, rng, 8);
  }
  for (int round = 0; round < 6; ++round) {
    std::string file = dir.file("generated" + std::to_string(round) + ".sqlite");
    {
      testdb::Db make(file, false, true);
      make.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
      generate(make, rng, 40, 120);
    }
    expect_sql_windows_match(file, rng, 8);
  }
  const auto reals = testdb::real_exports();
  for (const std::string& real : reals) {
    if (!testdb::not_sampled_under_sanitizers(real, reals).empty()) continue;  // a sample under the sanitizers
    const std::string path = testdb::shared_fixtures_dir() + "/" + real;
    testdb::Db probe(path);
    expect_sql_windows_match(path, rng, static_cast<int>(std::max<size_t>(1, 4 / testdb::work_weight(probe))));
  }
}

}  // namespace

namespace {
// nsystrace_option('threads', N): the threads of a profile are added up in parallel; the trace and the table are
// the same whatever N is (each connection computes its own projection).
TEST(ProjectionThreads, OneAndSeveralThreadsGiveTheSameTraceAndTable) {
  testdb::TempDir dir("nsystrace_projection_threads");
  std::vector<std::string> files;
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3; ++round) {
    std::string file = dir.file("generated" + std::to_string(round) + ".sqlite");
    testdb::Db make(file, false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
    generate(make, rng, 200, 600);
    files.push_back(file);
  }
  const auto reals = testdb::real_exports();
  for (const std::string& real : reals)  // a sample of them under the sanitizers (ASan and the TSan pass)
    if (testdb::not_sampled_under_sanitizers(real, reals).empty()) files.push_back(testdb::shared_fixtures_dir() + "/" + real);
  for (const std::string& file : files) {
    std::vector<std::string> traces;
    std::vector<Rows> tables;
    for (int threads : {1, 2, 5}) {
      testdb::Db db(file);
      EXPECT_EQ(db.integer("select nsystrace_option('threads', " + std::to_string(threads) + ")"), threads);
      traces.push_back(db.text("select chrome_trace(*) from trace_events where derived in (0, 1)"));
      tables.push_back(db.rows("select rowid, * , gpu_span, gpu_op_time, gpu_busy_time from nvtx_kernel_ranges"));
    }
    EXPECT_GT(traces[0].size(), 100u) << file;
    for (size_t i = 1; i < traces.size(); ++i) {
      EXPECT_TRUE(traces[i] == traces[0]) << file << ": the trace differs with " << i << " threads";
      EXPECT_EQ(tables[i], tables[0]) << file;
    }
  }
}
}  // namespace

namespace {
size_t threads_of_this_process() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// A projection that fails (time beyond int64, found after the threads ran) or is interrupted (SQLite stops it while
// it reads) leaves no thread behind, and the connection works afterwards.
TEST(ProjectionThreads, AnErrorOrAnInterruptLeavesNoThread) {
  const size_t before = threads_of_this_process();
  {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/projection_extremes.sql");
    db.integer("select nsystrace_option('threads', 4)");
    db.exec("insert into NVTX_EVENTS values (-9223372036854775808, 9223372036854775807, 59, 'whole clock', "
            "281476654432357, null, null, 0)");
    EXPECT_NE(db.error_of("select count(*) from nvtx_kernel_ranges").find("is beyond 64-bit nanoseconds"),
              std::string::npos);
    EXPECT_EQ(threads_of_this_process(), before);
  }
  if (testdb::real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real not found: the interrupt NOT tried";
  testdb::Db db(testdb::shared_fixtures_dir() + "/nsysai_h100_2gpu_mfu_before_slice.sqlite");
  db.integer("select nsystrace_option('threads', 4)");
  int steps = 0;
  sqlite3_progress_handler(db.get(), 1000, [](void* n) { return ++*static_cast<int*>(n) > 50 ? 1 : 0; }, &steps);
  EXPECT_NE(db.error_of("select count(*) from nvtx_kernel_ranges").find("interrupt"), std::string::npos);
  EXPECT_EQ(threads_of_this_process(), before);
  sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
  EXPECT_GT(db.integer("select count(*) from nvtx_kernel_ranges"), 0);
  EXPECT_EQ(threads_of_this_process(), before);
}
}  // namespace
