// Conformance over every real export in ../shared/fixtures/real (nsys 2020 -> 2026.2), through the built .so:
// each converts; per-kind counts equal the source tables; kernel (ts, dur) pairs in the JSON equal the profile's
// exactly; the JSON parses; no partial overlap on any track; every track has metadata; flows are paired.
// Without ../shared the suite skips with a visible message (CTest reports it as skipped, not passed).
#include <gtest/gtest.h>

#include <algorithm>
#include <dirent.h>
#include <cstdio>
#include <fstream>
#include <map>
#include <unistd.h>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

std::vector<std::string> real_exports() {
  std::vector<std::string> out;
  std::string dir = testdb::shared_fixtures_dir();
  if (dir.empty()) return out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 7 && name.substr(name.size() - 7) == ".sqlite") out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const char* const kKinds[] = {"kernel", "memcpy", "memset", "sync", "cuda_api", "nvtx", "osrt", "sched", "cuda_event",
                              "diagnostic"};

// What the profile itself says: rows per kind, counted straight from the source tables.
std::map<std::string, int64_t> source_counts(testdb::Db& db) {
  auto has = [&](const char* t) {
    return db.integer(std::string("select count(*) from sqlite_schema where type='table' and name='") + t + "'") > 0;
  };
  auto count = [&](const char* t, const char* where = "1") -> int64_t {
    return has(t) ? db.integer(std::string("select count(*) from ") + t + " where " + where) : 0;
  };
  auto has_column = [&](const char* t, const char* c) {
    return db.integer(std::string("select count(*) from pragma_table_info('") + t + "') where name = '" + c + "'") > 0;
  };
  return {{"kernel", count("CUPTI_ACTIVITY_KIND_KERNEL")},
          {"memcpy", count("CUPTI_ACTIVITY_KIND_MEMCPY")},
          {"memset", count("CUPTI_ACTIVITY_KIND_MEMSET")},
          {"sync", count("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")},
          {"cuda_api", count("CUPTI_ACTIVITY_KIND_RUNTIME")},
          {"nvtx", count("NVTX_EVENTS", "eventType in (34, 59, 60, 70, 71)")},
          {"osrt", count("OSRT_API")},
          {"sched", count("SCHED_EVENTS", "isSchedIn = 1")},  // a slice per sched-in, ended by the next record
          // CUDA events without a timestamp (before 2023.4) cannot be placed: counted as skipped instead.
          {"cuda_event", has("CUPTI_ACTIVITY_KIND_CUDA_EVENT") && has_column("CUPTI_ACTIVITY_KIND_CUDA_EVENT", "timestamp")
                             ? count("CUPTI_ACTIVITY_KIND_CUDA_EVENT") : 0},
          {"diagnostic", count("DIAGNOSTIC_EVENT")}};
}

class RealExport : public ::testing::TestWithParam<std::string> {};

TEST_P(RealExport, ConvertsCompletelyAndExactly) {
  std::string path = testdb::shared_fixtures_dir() + "/" + GetParam();
  testdb::Db db(path, /*load_shared_object=*/true);
  auto expected = source_counts(db);

  // trace_events: one row per source row, per kind.
  for (const char* kind : kKinds) {
    int64_t rows = db.integer(std::string("select count(*) from trace_events where kind='") + kind + "'");
    EXPECT_EQ(rows, expected[kind]) << kind;
  }

  std::string json = db.text("select chrome_trace(*) from trace_events");
  testtrace::TraceSummary t = testtrace::check_trace(json);
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  for (const char* kind : kKinds) EXPECT_EQ(t.per_cat[kind], expected[kind]) << "JSON slices of kind " << kind;
  // Rows that cannot be placed are accounted for in otherData, never silently missing.
  bool events_without_time =
      db.integer("select count(*) from sqlite_schema where name = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT'") > 0 &&
      db.integer("select count(*) from pragma_table_info('CUPTI_ACTIVITY_KIND_CUDA_EVENT') where name = 'timestamp'") == 0;
  if (events_without_time) {
    const testjson::Value* skipped = t.root.get("otherData")->get("skipped_rows_without_start");
    ASSERT_NE(skipped, nullptr);
    EXPECT_EQ(skipped->integer("cuda_event"), db.integer("select count(*) from CUPTI_ACTIVITY_KIND_CUDA_EVENT"));
  }
  // One 'nvtx_kernel' slice per (nvtx_kernel_ranges row, device it used).
  EXPECT_EQ(t.per_cat["nvtx_kernel"],
            db.integer("select coalesce(sum(length(devices) - length(replace(devices, ',', '')) + 1), 0) "
                       "from nvtx_kernel_ranges"));

  // Kernel (ts, dur) in the JSON, decoded digit for digit, equal the profile's (start, end - start).
  std::vector<std::pair<int64_t, int64_t>> from_json, from_profile;
  for (const auto& s : t.slices)
    if (s.cat == "kernel") from_json.emplace_back(s.ts_ns, s.dur_ns);
  if (expected["kernel"] > 0) {
    for (const auto& r : db.rows("select start, end - start from CUPTI_ACTIVITY_KIND_KERNEL"))
      from_profile.emplace_back(std::stoll(r[0]), std::stoll(r[1]));
  }
  std::sort(from_json.begin(), from_json.end());
  std::sort(from_profile.begin(), from_profile.end());
  EXPECT_EQ(from_json, from_profile);
}

// An independent, plain-SQL statement of NVIDIA's definition of the NVTX GPU projection (see
// src/nvtx_projection.h), for comparison row by row: (rowid, gpu_start, gpu_end, gpu_ops, kernels) per range that
// launched work. Built from the tables the export has; "" when it cannot have any row.
std::string reference_projection_sql(testdb::Db& db) {
  auto has = [&](const std::string& t) {
    return db.integer("select count(*) from sqlite_schema where type = 'table' and name = '" + t + "'") > 0;
  };
  if (!has("NVTX_EVENTS") || !has("CUPTI_ACTIVITY_KIND_RUNTIME")) return "";
  std::string ops, ends;
  for (auto [table, is_kernel] : {std::pair<const char*, int>{"CUPTI_ACTIVITY_KIND_KERNEL", 1},
                                  {"CUPTI_ACTIVITY_KIND_MEMCPY", 0}, {"CUPTI_ACTIVITY_KIND_MEMSET", 0},
                                  {"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", 0}}) {
    if (!has(table)) continue;
    ops += std::string(ops.empty() ? "" : " union all ") + "select correlationId as corr, globalPid >> 24 as proc, start, \"end\", " +
           std::to_string(is_kernel) + " as is_kernel from " + table;
  }
  if (ops.empty()) return "";
  for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}) {
    if (!has(t)) continue;
    ends += std::string(ends.empty() ? "" : " union all ") + "select max(start) as t from " + t +
            " union all select max(\"end\") from " + t;
  }
  return "with profile_end(t) as (select max(t) from (" + ends + ")), "
         "ranges as (select rowid as id, start, coalesce(\"end\", (select t from profile_end)) as \"end\", globalTid "
         "  from NVTX_EVENTS where eventType in (59, 60, 70, 71) and globalTid is not null "
         "  and (endGlobalTid is null or endGlobalTid = globalTid)), "
         "ops as (" + ops + "), "
         "calls as (select globalTid, start, \"end\", correlationId as corr, globalTid >> 24 as proc "
         "  from CUPTI_ACTIVITY_KIND_RUNTIME), "
         "work as (select r.id, c.corr, o.start, o.\"end\", o.is_kernel from ranges r "
         "  join calls c on c.globalTid = r.globalTid and c.start >= r.start and c.\"end\" <= r.\"end\" "
         "  join ops o on o.corr = c.corr and o.proc = c.proc) "
         "select id, min(start), max(\"end\"), count(distinct corr), sum(is_kernel) from work group by id order by id";
}

TEST_P(RealExport, NvtxProjectionMatchesAPlainSqlStatementOfTheDefinition) {
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  std::string reference = reference_projection_sql(db);
  auto ours = db.rows("select rowid, gpu_start, gpu_end, gpu_ops, kernels from nvtx_kernel_ranges order by rowid");
  if (reference.empty()) {
    EXPECT_TRUE(ours.empty());
    return;
  }
  auto expected = db.rows(reference);
  EXPECT_EQ(ours.size(), expected.size());
  EXPECT_EQ(ours, expected);
  std::printf("%s: %zu NVTX ranges with GPU work\n", GetParam().c_str(), ours.size());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 7);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

std::string run(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[65536];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int status = pclose(p);
    if (status != 0) ADD_FAILURE() << command << " failed:\n" << out;
  }
  return out;
}

// Perfetto's own importer (the one ui.perfetto.dev runs) is the judge: it takes every event of the trace, drops or
// changes none (its stats show no error or data_loss row), and holds as many slices and flows as we wrote.
TEST_P(RealExport, PerfettoImportsEveryEvent) {
  std::string tool = testdb::shared_fixtures_dir() + "/../../tools/perfetto/import-stats";
  if (access(tool.c_str(), X_OK) != 0)
    GTEST_SKIP() << tool << " not found: the check with Perfetto's importer NOT run";
  testdb::TempDir dir("nsystrace_perfetto");
  std::string trace = dir.file("trace.json.gz");
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  db.integer("select chrome_trace_file('" + trace + "') from trace_events");
  std::string json = db.text("select chrome_trace(*) from trace_events");
  testtrace::TraceSummary t = testtrace::check_trace(json);
  const testjson::Value* other = t.root.get("otherData");
  ASSERT_NE(other, nullptr);
  int64_t events = 0;
  for (const auto& [kind, n] : other->get("event_counts")->members)
    if (kind != "gpu_metric") events += std::stoll(n.text);
  std::string out = run(tool + " " + trace);
  testjson::Value stats = testjson::parse(out);
  EXPECT_EQ(stats.get("stats")->items.size(), 0u) << "Perfetto dropped or changed events: " << out;
  EXPECT_EQ(stats.integer("slices"), events) << out;
  EXPECT_EQ(stats.integer("flows"), other->integer("flows")) << out;
}

// The Perfetto protobuf trace of the same rows as the JSON holds, as Perfetto's importer reads them: nothing
// dropped or changed (stats), and the same slices (ts, dur, name, category), flows and counter values; on the whole
// export and on filtered queries (one kind, a ts window, one GPU).
TEST_P(RealExport, PerfettoProtobufHoldsWhatTheJsonHolds) {
  std::string tools = testdb::shared_fixtures_dir() + "/../../tools/perfetto";
  if (access((tools + "/import-stats").c_str(), X_OK) != 0)
    GTEST_SKIP() << tools << " not found: the check with Perfetto's importer NOT run";
  testdb::TempDir dir("nsystrace_pf");
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  int64_t first = db.integer("select coalesce(min(ts), 0) from trace_events where kind != 'nvtx_kernel'");
  int64_t last = db.integer("select coalesce(max(ts), 0) from trace_events where kind != 'nvtx_kernel'");
  std::vector<std::string> filters = {"", "where kind = 'cuda_api'",
                                      "where ts between " + std::to_string(first + (last - first) / 3) + " and " +
                                          std::to_string(first + (last - first) / 2),
                                      "where pid = 16777216"};
  const std::string slices = "select ts, dur, name, category from slice order by ts, dur, name, category";
  for (const std::string& where : filters) {
    if (db.integer("select count(*) from trace_events " + where) == 0) continue;
    std::string json = dir.file("t.json.gz"), proto = dir.file("t.pftrace");
    db.integer("select chrome_trace_file('" + json + "') from trace_events " + where);
    db.integer("select perfetto_trace_file('" + proto + "') from trace_events " + where);
    testjson::Value js = testjson::parse(run(tools + "/import-stats " + json));
    testjson::Value ps = testjson::parse(run(tools + "/import-stats " + proto));
    EXPECT_EQ(ps.get("stats")->items.size(), 0u) << where << ": Perfetto dropped or changed events";
    // (Not tracks_with_slices: Perfetto's JSON importer folds a tid-0 row into its process's main thread, where the
    // protobuf keeps it on the "Thread 0" track it is laid out on.)
    for (const char* key : {"slices", "flows", "counter_values"})
      EXPECT_EQ(ps.str(key), js.str(key)) << where << ": " << key;
    EXPECT_EQ(run(tools + "/trace-processor query " + proto + " '" + slices + "' 2>/dev/null"),
              run(tools + "/trace-processor query " + json + " '" + slices + "' 2>/dev/null"))
        << where;
    if (where.empty()) {
      auto size = [](const std::string& f) {
        std::ifstream in(f, std::ios::binary | std::ios::ate);
        return static_cast<int64_t>(in.tellg());
      };
      std::string plain = dir.file("t.json");
      db.integer("select chrome_trace_file('" + plain + "') from trace_events");
      std::printf("%s: protobuf %lld bytes, JSON %lld bytes (%.0f%%), %s slices, %s flows\n", GetParam().c_str(),
                  static_cast<long long>(size(proto)), static_cast<long long>(size(plain)),
                  100.0 * static_cast<double>(size(proto)) / static_cast<double>(size(plain)), ps.str("slices").c_str(),
                  ps.str("flows").c_str());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExport, ::testing::ValuesIn(real_exports()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExport);

TEST(RealExports, FixturesArePresent) {
  if (testdb::shared_fixtures_dir().empty())
    GTEST_SKIP() << "../shared/fixtures/real not found: conformance over real exports NOT run "
                    "(set NSYSTRACE_SHARED_FIXTURES to its path)";
  EXPECT_FALSE(real_exports().empty());
}

// Prints the files x kinds table of what the trace holds (CTest runs each test in its own process, so this one
// converts every file again; `ctest -R SummaryTable -V` shows it).
TEST(RealExports, SummaryTable) {
  if (real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real not found: no table to print";
  std::printf("\n%-46s %7s %7s %7s %6s %8s %7s %6s %6s %5s %5s %6s %6s %8s\n", "file", "kernel", "memcpy", "memset",
              "sync", "cuda_api", "nvtx", "nvtx_k", "osrt", "sched", "event", "diag", "flows", "KB");
  for (const auto& file : real_exports()) {
    testdb::Db db(testdb::shared_fixtures_dir() + "/" + file, /*load_shared_object=*/true);
    std::string json = db.text("select chrome_trace(*) from trace_events");
    testtrace::TraceSummary t = testtrace::check_trace(json);
    EXPECT_TRUE(t.problems.empty()) << file;
    std::printf("%-46s %7ld %7ld %7ld %6ld %8ld %7ld %6ld %6ld %5ld %5ld %6ld %6ld %8zu\n", file.c_str(),
                (long)t.per_cat["kernel"], (long)t.per_cat["memcpy"], (long)t.per_cat["memset"], (long)t.per_cat["sync"],
                (long)t.per_cat["cuda_api"], (long)t.per_cat["nvtx"], (long)t.per_cat["nvtx_kernel"],
                (long)t.per_cat["osrt"], (long)t.per_cat["sched"], (long)t.per_cat["cuda_event"],
                (long)t.per_cat["diagnostic"], (long)t.flow_starts, json.size() >> 10);
  }
}

}  // namespace

#include "tests/support/differential.h"

namespace {
// Pushdown, differentially, on every real export: as it is, and with a covering (start, end) index on every event
// table (tools users run add such indexes; they change SQLite's plans).
class RealExportDifferential : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(RealExportDifferential, PushedDownEqualsFilteredBySqlite) {
  auto [file, covering] = GetParam();
  testdb::TempDir dir("nsystrace_diff");
  std::string copy = dir.file("export.sqlite");
  {
    std::ifstream in(testdb::shared_fixtures_dir() + "/" + file, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  testdb::Db db(copy, /*load_shared_object=*/true, /*writable=*/covering);
  if (covering) testdiff::add_covering_indexes(db);
  testdiff::Report r = testdiff::check_pushdown(db, 5);
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  std::printf("%s%s: %d pushed-down queries compared\n", file.c_str(), covering ? " (covering indexes)" : "", r.queries);
}

std::string differential_name(const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
  std::string n = std::get<0>(info.param).substr(0, std::get<0>(info.param).size() - 7);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + (std::get<1>(info.param) ? "_with_covering_index" : "");
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExportDifferential,
                         ::testing::Combine(::testing::ValuesIn(real_exports()), ::testing::Bool()), differential_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExportDifferential);
}  // namespace

namespace {
// GPU metrics: no real export we have holds them, so our fixture (built from NVIDIA's documented columns) goes through
// Perfetto's importer in both formats: the same counter samples, named by metric, nothing dropped.
TEST(PerfettoImporter, GpuMetricsAreTheSameCountersInBothFormats) {
  std::string tools = testdb::shared_fixtures_dir() + "/../../tools/perfetto";
  if (testdb::shared_fixtures_dir().empty() || access((tools + "/import-stats").c_str(), X_OK) != 0)
    GTEST_SKIP() << "../shared/tools/perfetto not found: the check with Perfetto's importer NOT run";
  testdb::TempDir dir("nsystrace_metrics");
  std::string profile = dir.file("metrics.sqlite");
  {
    testdb::Db make(profile, false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/gpu_metrics.sql");
  }
  testdb::Db db(profile, /*load_shared_object=*/true);
  std::string json = dir.file("m.json"), proto = dir.file("m.pftrace");
  db.integer("select chrome_trace_file('" + json + "') from trace_events");
  db.integer("select perfetto_trace_file('" + proto + "') from trace_events");
  for (const std::string& f : {json, proto}) {
    testjson::Value stats = testjson::parse(run(tools + "/import-stats " + f));
    EXPECT_EQ(stats.get("stats")->items.size(), 0u) << f;
    EXPECT_EQ(stats.str("counter_values"), "3") << f;
  }
  // Values and times; the JSON importer names a counter "<event name> <arg>", the protobuf track by the metric.
  const std::string q = "select replace(t.name, ' value', ''), c.ts, c.value from counter c join counter_track t "
                        "on t.id = c.track_id order by 2, 1";
  std::string from_proto = run(tools + "/trace-processor query " + proto + " \"" + q + "\" 2>/dev/null");
  EXPECT_EQ(from_proto, run(tools + "/trace-processor query " + json + " \"" + q + "\" 2>/dev/null"));
  EXPECT_NE(from_proto.find("\"SMs Active\",2000,75"), std::string::npos) << from_proto;
}
}  // namespace
