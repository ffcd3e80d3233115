// The Perfetto trace's GPU compute model (nsystrace_option('gpu_model'), docs/gpu-model.md), judged by Perfetto's
// own trace processor on every real export in ../shared/fixtures/real and every fixture in tests/fixtures: one
// conversion and one import per export. Every kernel, memcpy and memset of the export is one gpu_slice, at its
// times (the recorded ones where a viewer could not draw it there), with the export's device, stream and context
// as its args; the calls' arrows reach them; the importer reports no error or data loss.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "src/readers/gpu_metrics_source.h"
#include "tests/support/mini_json.h"
#include "tests/support/perfetto_tools.h"
#include "tests/support/test_db.h"

namespace {

// Each GPU operation as "start,duration,invalid end,device,stream,context" (NULL as "null"), sorted: from the trace's
// gpu_slice (the recorded times where the slice was drawn elsewhere), and from the export's tables in plain SQL. An
// end before the start, or none, is drawn with duration 0, the recorded end in the "invalid_end" arg (as in
// trace_events; a NULL one is no arg).
// The trace's times are wall-clock times (the default): the session start plus the export's (`start`), given
// here to the queries on the trace as {S}.
std::string with_session_start(std::string sql, int64_t start) {
  for (size_t at; (at = sql.find("{S}")) != std::string::npos;) sql.replace(at, 3, std::to_string(start));
  return sql;
}


const char* kTraceGpuWork =
    "select coalesce(extract_arg(arg_set_id, 'recorded_ts_ns'), ts - {S}) || ',' || "
    "coalesce(extract_arg(arg_set_id, 'recorded_dur_ns'), dur) || ',' || "
    "coalesce(extract_arg(arg_set_id, 'invalid_end'), 'null') || ',' || "
    "coalesce(extract_arg(arg_set_id, 'device'), 'null') || ',' || coalesce(extract_arg(arg_set_id, 'stream'), 'null') "
    "|| ',' || coalesce(extract_arg(arg_set_id, 'context'), 'null') as r from gpu_slice order by r";

std::vector<std::string> export_gpu_work(testdb::Db& db) {
  std::string sql;
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    if (db.integer(std::string("select count(*) from sqlite_schema where type = 'table' and name = '") + table + "'") == 0)
      continue;
    // A NULL deviceId or streamId reads as 0, as trace_events has it (GPU 0); a NULL contextId is no arg.
    auto column = [&](const char* name, const char* if_null) {
      bool has = db.integer(std::string("select count(*) from pragma_table_info('") + table + "') where name = '" +
                            name + "'") > 0;
      return "coalesce(" + (has ? "\"" + std::string(name) + "\"" : std::string("null")) + ", " + if_null + ")";
    };
    if (!sql.empty()) sql += " union all ";
    sql += "select start || ',' || (case when \"end\" >= start then \"end\" - start else 0 end) || ',' || "
           "(case when \"end\" >= start or \"end\" is null then 'null' else \"end\" end) || ',' || " +
           column("deviceId", "0") + " || ',' || " + column("streamId", "0") + " || ',' || " +
           column("contextId", "'null'") + " as r from " + table +
           // a row without a start cannot be placed: trace_events counts it as skipped (otherData), draws nothing
           " where start is not null";
  }
  std::vector<std::string> out;
  if (sql.empty()) return out;
  for (const auto& row : db.rows(sql)) out.push_back(row[0]);
  std::sort(out.begin(), out.end());
  return out;
}

// GPU utilization as plain SQL over the export: per device, the union of its kernels', memcpys' and memsets'
// intervals (overlapping and touching intervals merged into runs), cut at every millisecond; then the counter's
// samples: a bucket's busy ns as a percentage where the value changes (idle buckets are 0), and a 0 after the last
// busy bucket. As "gpu,ts,percent" (4 decimals), sorted.
std::vector<std::string> export_utilization(testdb::Db& db) {
  std::string work;
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    if (db.integer(std::string("select count(*) from sqlite_schema where type = 'table' and name = '") + table + "'") == 0)
      continue;
    if (!work.empty()) work += " union all ";
    work += std::string("select coalesce(deviceId, 0) as d, start as s, \"end\" as e from ") + table +
            " where start is not null and \"end\" > start";
  }
  std::vector<std::string> out;
  if (work.empty()) return out;
  const std::string sql =
      "with w as (" + work + "), "
      "o as (select d, s, e, max(e) over (partition by d order by s, e rows between unbounded preceding and 1 "
      "preceding) as prev_end from w), "
      "g as (select d, s, e, sum(prev_end is null or s > prev_end) over (partition by d order by s, e rows unbounded "
      "preceding) as grp from o), "
      "runs as (select d, min(s) as s, max(e) as e from g group by d, grp), "
      "b(d, k, s, e) as (select d, s / 1000000, s, e from runs union all select d, k + 1, s, e from b where "
      "(k + 1) * 1000000 < e) "
      "select d, k, sum(min(e, (k + 1) * 1000000) - max(s, k * 1000000)) from b group by d, k order by d, k";
  int64_t device = -1, last_k = 0, last_value = -1;
  auto sample = [&](int64_t k, int64_t busy) {
    if (busy == last_value) return;
    last_value = busy;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld.%04lld", static_cast<long long>(device),
                  static_cast<long long>(k * 1000000), static_cast<long long>(busy / 10000),
                  static_cast<long long>(busy % 10000));
    out.push_back(buf);
  };
  for (const auto& r : db.rows(sql)) {
    int64_t d = std::stoll(r[0]), k = std::stoll(r[1]), busy = std::stoll(r[2]);
    if (d != device) {
      if (device >= 0) sample(last_k + 1, 0);
      device = d;
      last_value = -1;
    } else if (k > last_k + 1) {
      sample(last_k + 1, 0);
    }
    sample(k, busy);
    last_k = k;
  }
  if (device >= 0) sample(last_k + 1, 0);
  std::sort(out.begin(), out.end());
  return out;
}

const char* kTraceUtilization =
    "select printf('%d,%d,%.4f', extract_arg(t.dimension_arg_set_id, 'gpu'), c.ts - {S}, c.value) as r from counter c "
    "join counter_track t on t.id = c.track_id where t.type = 'gpu_counter' and t.name = 'GPU utilization' "
    "order by r";

bool has_table(testdb::Db& db, const std::string& table) {
  return db.integer("select count(*) from sqlite_schema where type = 'table' and name = '" + table + "'") > 0;
}
bool has_column(testdb::Db& db, const std::string& table, const std::string& column) {
  return db.integer("select count(*) from pragma_table_info('" + table + "') where name = '" + column + "'") > 0;
}

// The GPU counters other than utilization (nsys GPU metrics, CUDA memory in use) as "gpu,name,unit,ts,value" (value
// with 4 decimals), sorted: from the trace's gpu_counter tracks, and from the export in plain SQL.
const char* kTraceGpuCounters =
    "select printf('%d,%s,%s,%d,%.4f', extract_arg(t.dimension_arg_set_id, 'gpu'), t.name, coalesce(t.unit, ''), "
    "c.ts - {S}, c.value) as r from counter c join counter_track t on t.id = c.track_id where t.type = 'gpu_counter' and "
    "t.name != 'GPU utilization' order by r";

// A metric's unit as Perfetto shows it: the MeasureUnit the writer maps the bracketed unit of its name to.
const char* kMetricUnitSql =
    "case when metricName like '%\\%]' escape '\\' then '%' when metricName like '%[MHz]' then 'MHz' else '' end";

// A metric's value in its unit: the clocks named [MHz] are stored in Hz (NVIDIA documents gpc__cycles_elapsed and
// sys__cycles_elapsed .avg.per_second as frequencies in hertz). (The fixtures hold no metric set definition, whose
// multipliers the reader applies: the large export's test checks those.)
const char* kMetricValueSql = "case when metricName like '%[MHz]' then g.value / 1e6 else g.value end";

std::vector<std::string> export_gpu_counters(testdb::Db& db) {
  std::string sql;
  // GPU metrics: on the GPU typeId's low byte names (NVIDIA's recipes' rule), named by TARGET_INFO_GPU_METRICS.
  if (has_table(db, "GPU_METRICS")) {
    std::string names = has_table(db, "TARGET_INFO_GPU_METRICS")
                            ? "(select distinct typeId, metricId, metricName from TARGET_INFO_GPU_METRICS)"
                            : "(select null as typeId, null as metricId, null as metricName)";
    sql += std::string("select printf('%d,%s,%s,%d,%.4f', g.typeId & 255, coalesce(i.metricName, 'metric ' || "
                       "g.metricId), coalesce(") +
           kMetricUnitSql + ", ''), g.timestamp, " + kMetricValueSql + ") as r from GPU_METRICS g left join " + names +
           " i using (typeId, metricId) where g.timestamp is not null and g.value is not null";
  }
  // CUDA memory in use: per (device, memory kind), the running sum of allocations' bytes minus frees'.
  if (has_table(db, "CUDA_GPU_MEMORY_USAGE_EVENTS")) {
    std::string kind = has_table(db, "ENUM_CUDA_MEM_KIND")
                           ? "coalesce((select label from ENUM_CUDA_MEM_KIND where id = memKind), 'kind ' || memKind)"
                           : "'kind ' || memKind";
    if (!sql.empty()) sql += " union all ";
    sql += "select printf('%d,CUDA memory: %s,B,%d,%.4f', deviceId, " + kind + ", start, sum(case "
           "memoryOperationType when 0 then bytes when 1 then -bytes else 0 end) over (partition by deviceId, memKind "
           "order by start, rowid rows unbounded preceding)) as r from CUDA_GPU_MEMORY_USAGE_EVENTS";
  }
  std::vector<std::string> out;
  if (sql.empty()) return out;
  for (const auto& row : db.rows(sql)) out.push_back(row[0]);
  std::sort(out.begin(), out.end());
  return out;
}

// The kernels' kernel_name (the mangled name where the export has one, else the short name), demangled name and
// arch ("sm_<major><minor>" of their device), as "name|demangled|arch", sorted, from gpu_slice and from the export.
// (A line break in a name reads "<LF>": the trace processor's answer is read line by line.)
const char* kTraceKernelNames =
    "select replace(coalesce(extract_arg(arg_set_id, 'kernel_name'), 'null') || '|' || "
    "coalesce(extract_arg(arg_set_id, 'kernel_demangled_name'), 'null') || '|' || "
    "coalesce(extract_arg(arg_set_id, 'arch'), 'null'), char(10), '<LF>') as r from gpu_slice where "
    "render_stage_category = 2 order by r";

std::vector<std::string> export_kernel_names(testdb::Db& db) {
  const std::string k = "CUPTI_ACTIVITY_KIND_KERNEL";
  std::vector<std::string> out;
  if (!has_table(db, k)) return out;
  auto string_of = [](const std::string& id) {
    return "(select coalesce((select value from StringIds where id = " + id + "), '[missing string ' || " + id +
           " || ']'))";
  };
  auto col = [&](const char* c) { return has_column(db, k, c) ? "k." + std::string(c) : std::string("null"); };
  std::string mangled = col("mangledName"), short_name = col("shortName"), demangled = col("demangledName");
  std::string arch = "null";
  if (has_table(db, "TARGET_INFO_GPU") && has_column(db, "TARGET_INFO_GPU", "computeMajor"))
    arch = "(select 'sm_' || computeMajor || computeMinor from TARGET_INFO_GPU g where g." +
           std::string(has_column(db, "TARGET_INFO_GPU", "id") ? "id" : "deviceId") + " = coalesce(" +
           col("deviceId") + ", 0))";
  else if (has_table(db, "TARGET_INFO_CUDA_GPU") && has_column(db, "TARGET_INFO_CUDA_GPU", "computeCapabilityMajor"))
    arch = "(select 'sm_' || computeCapabilityMajor || computeCapabilityMinor from TARGET_INFO_CUDA_GPU g where "
           "g.deviceId = coalesce(" + col("deviceId") + ", 0))";
  std::string sql = "select replace(coalesce(case when " + mangled + " is not null then " + string_of(mangled) +
                    " end, " + string_of(short_name) + ", " + string_of(demangled) + ") || '|' || " +
                    "coalesce(case when " + demangled + " is not null then " + string_of(demangled) +
                    " end, 'null') || '|' || coalesce(" + arch + ", 'null'), char(10), '<LF>') from " + k +
                    " k where start is not null";
  for (const auto& row : db.rows(sql)) out.push_back(row[0]);
  std::sort(out.begin(), out.end());
  return out;
}

// Real exports as "real/<file>", our fixtures as "fixture/<name>" (a sample of them runs under the sanitizers: what
// this checks is the trace, which the Release pass checks on every one).
std::vector<std::string> profiles() {
  std::vector<std::string> out;
  for (const std::string& f : testdb::real_exports()) out.push_back("real/" + f);
  for (const std::string& script : testdb::fixture_scripts())
    if (script.rfind("tests/fixtures/", 0) == 0) out.push_back("fixture/" + script.substr(15, script.size() - 15 - 4));
  std::sort(out.begin(), out.end());
  return out;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class GpuModel : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuModel, EveryGpuOperationIsAGpuSliceWithTheExportsDeviceAndStream) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: the GPU model check NOT run";
  if (std::string why = testdb::not_sampled_under_sanitizers(GetParam(), profiles()); !why.empty()) GTEST_SKIP() << why;
  testdb::TempDir dir("nsystrace_gpu_model");
  std::string param = GetParam(), path;
  if (param.rfind("real/", 0) == 0) {
    path = testdb::shared_fixtures_dir() + "/" + param.substr(5);
  } else {
    path = dir.file("profile.sqlite");
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/" + param.substr(8) + ".sql");
  }
  testdb::Db db(path, /*load_shared_object=*/true);
  if (!db.error_of("select count(*) from trace_events").empty()) GTEST_SKIP() << param << " is no export trace_events reads";
  if (db.integer("select count(*) from trace_events") == 0) GTEST_SKIP() << param << " has no events: no trace";
  std::string trace = dir.file("t.pftrace");
  EXPECT_EQ(db.text("select nsystrace_option('gpu_model')"), "typed") << "the default";
  db.integer("select perfetto_trace_file('" + trace + "') from trace_events");

  std::vector<std::string> expected = export_gpu_work(db);
  const int64_t start = tp::session_start_ns(db);
  std::vector<std::string> got = tp::lines(tools, trace, with_session_start(kTraceGpuWork, start));
  EXPECT_EQ(got.size(), expected.size()) << param << ": gpu_slice rows vs the export's kernels + memcpys + memsets";
  EXPECT_EQ(got, expected) << param;
  // The importer's own view: no error or data loss; the arrows from the calls that launched GPU work, as many as the
  // writer linked (nsystrace_last_trace_file's flows: the same count the JSON draws).
  testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + trace));
  EXPECT_EQ(stats.get("stats")->items.size(), 0u) << param << ": " << tp::run(tools + "/import-stats " + trace);
  testjson::Value last = testjson::parse(db.text("select nsystrace_last_trace_file()"));
  EXPECT_EQ(stats.integer("flows"), last.integer("flows")) << param;
  // GPU utilization, on the real exports (all their work is within a viewer's times; a fixture's work at the ends
  // of int64 would be cut into 2^43 buckets by the SQL).
  size_t samples = 0;
  if (param.rfind("real/", 0) == 0) {
    std::vector<std::string> utilization = export_utilization(db);
    EXPECT_EQ(tp::lines(tools, trace, with_session_start(kTraceUtilization, start)), utilization) << param;
    samples = utilization.size();
  }
  // The other GPU counters (nsys GPU metrics, CUDA memory in use), with their GPU and unit; the kernels' names and
  // architecture.
  // (One query for both: a trace processor run per query is most of this test's time.)
  std::vector<std::string> counters = export_gpu_counters(db), trace_counters, trace_kernels;
  const std::string counters_and_kernels = std::string("select 'c' || r from (") + kTraceGpuCounters +
                                           ") union all select 'k' || r from (" + kTraceKernelNames + ")";
  for (const std::string& line : tp::lines(tools, trace, with_session_start(counters_and_kernels, start)))
    (line[0] == 'c' ? trace_counters : trace_kernels).push_back(line.substr(1));
  std::sort(trace_counters.begin(), trace_counters.end());
  std::sort(trace_kernels.begin(), trace_kernels.end());
  EXPECT_EQ(trace_counters, counters) << param;
  EXPECT_EQ(trace_kernels, export_kernel_names(db)) << param;
  if (param == "fixture/gpu_counters") {  // the totals known by construction (tests/fixtures/gpu_counters.sql)
    std::vector<std::string> memory;
    for (const std::string& c : counters)
      if (c.find(",CUDA memory") != std::string::npos) memory.push_back(c);
    EXPECT_EQ(memory, (std::vector<std::string>{
                          "0,CUDA memory: Device,B,1000,1024.0000", "0,CUDA memory: Device,B,2000,5120.0000",
                          "0,CUDA memory: Device,B,3000,4096.0000", "0,CUDA memory: Device,B,4000,4608.0000",
                          "0,CUDA memory: Device,B,5000,512.0000", "0,CUDA memory: Pinned,B,1500,256.0000",
                          "1,CUDA memory: Device,B,2500,8589934592.0000", "1,CUDA memory: Device,B,6000,0.0000"}));
    EXPECT_EQ(counters.size(), 13u);  // and the 5 GPU metric samples
  }
  std::printf("%s: %zu GPU operations as gpu_slice, %lld flows, %zu utilization samples, %zu other counter samples\n",
              param.c_str(), got.size(), static_cast<long long>(stats.integer("flows")), samples, counters.size());
}

INSTANTIATE_TEST_SUITE_P(Exports, GpuModel, ::testing::ValuesIn(profiles()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuModel);

// Several reports in one trace (ATTACHed exports, `schema in (...)`): each report's GPUs are GPUs of their own
// (Perfetto gpu id = report * 2^23 + device), and every GPU operation and counter sample of each is there, on its
// report's GPU. main and rank1: the same generated work on GPUs 0 and 1 (the same pids, correlation ids and GPU
// numbers); rank2: the GPU counters fixture.
TEST(GpuModelReports, EachReportsGpusAreApartAndEveryOperationIsThere) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: the GPU model check NOT run";
  testdb::TempDir dir("nsystrace_gpu_reports");
  const char* fixtures[] = {"concurrent_gpu_work", "concurrent_gpu_work", "gpu_counters"};
  for (int r = 0; r < 3; ++r) {
    testdb::Db make(dir.file("rank" + std::to_string(r) + ".sqlite"), false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/" + fixtures[r] + ".sql");
  }
  testdb::Db db(dir.file("rank0.sqlite"), /*load_shared_object=*/true);
  db.exec("attach 'file:" + dir.file("rank1.sqlite") + "?mode=ro' as rank1");
  db.exec("attach 'file:" + dir.file("rank2.sqlite") + "?mode=ro' as rank2");
  std::string trace = dir.file("t.pftrace");
  db.integer("select perfetto_trace_file('" + trace +
             "') from trace_events where schema in ('main', 'rank1', 'rank2')");
  testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + trace));
  EXPECT_EQ(stats.get("stats")->items.size(), 0u) << tp::run(tools + "/import-stats " + trace);
  // Every kernel of every report, as "gpu id,ts,dur", from the trace and from each export (none has a session start:
  // the reports share one clock with no offset).
  std::vector<std::string> expected;
  for (int r = 0; r < 2; ++r) {
    testdb::Db one(dir.file("rank" + std::to_string(r) + ".sqlite"));
    for (const auto& row : one.rows("select (" + std::to_string(r << 23) + " + deviceId) || ',' || start || ',' || "
                                    "(\"end\" - start) from CUPTI_ACTIVITY_KIND_KERNEL"))
      expected.push_back(row[0]);
  }
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> got = tp::lines(
      tools, trace,
      with_session_start("select extract_arg(t.dimension_arg_set_id, 'gpu') || ',' || (s.ts - {S}) || ',' || s.dur "
                         "as r from gpu_slice s join gpu_track t on t.id = s.track_id order by r",
                         tp::session_start_ns(db)));
  EXPECT_EQ(got.size(), 4000u);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(tp::lines(tools, trace,
                     "select distinct cast(extract_arg(t.dimension_arg_set_id, 'gpu') as text) as g from gpu_slice s "
                     "join gpu_track t on t.id = s.track_id order by g"),
            (std::vector<std::string>{"0", "1", "8388608", "8388609"}));
  // rank2's counters are on its own GPUs 2 * 2^23 and 2 * 2^23 + 1, as the single report has them on 0 and 1.
  testdb::Db rank2(dir.file("rank2.sqlite"), /*load_shared_object=*/true);
  std::vector<std::string> counters;
  for (const std::string& c : export_gpu_counters(rank2))  // "device,..." -> "2 * 2^23 + device,..."
    counters.push_back(std::to_string((2 << 23) + std::stoll(c.substr(0, c.find(',')))) + c.substr(c.find(',')));
  std::sort(counters.begin(), counters.end());
  EXPECT_EQ(tp::lines(tools, trace, with_session_start(kTraceGpuCounters, tp::session_start_ns(db))), counters);
  EXPECT_EQ(counters.size(), 13u);
}

// The option: 'slices' writes GPU work as TrackEvent slices (no gpu_slice); anything else is refused.
TEST(GpuModelOption, SlicesWritesNoGpuSliceAndBadValuesAreRefused) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: the GPU model check NOT run";
  testdb::TempDir dir("nsystrace_gpu_option");
  std::string path = dir.file("profile.sqlite");
  {
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/concurrent_gpu_work.sql");
  }
  testdb::Db db(path, /*load_shared_object=*/true);
  EXPECT_NE(db.error_of("select nsystrace_option('gpu_model', 'tracks')").find("'typed'"), std::string::npos);
  EXPECT_NE(db.error_of("select nsystrace_option('gpu_model', 1)").find("'slices'"), std::string::npos);
  EXPECT_EQ(db.text("select nsystrace_option('gpu_model', 'slices')"), "slices");
  std::string slices = dir.file("slices.pftrace"), typed = dir.file("typed.pftrace");
  db.integer("select perfetto_trace_file('" + slices + "') from trace_events");
  EXPECT_EQ(db.text("select nsystrace_option('gpu_model', 'typed')"), "typed");
  db.integer("select perfetto_trace_file('" + typed + "') from trace_events");
  int64_t gpu_work = db.integer("select count(*) from trace_events where kind in ('kernel', 'memcpy', 'memset')");
  ASSERT_GT(gpu_work, 0);
  const std::string count = "select cast(count(*) as text) from gpu_slice";
  EXPECT_EQ(tp::lines(tools, slices, count), std::vector<std::string>{"0"});
  EXPECT_EQ(tp::lines(tools, typed, count), std::vector<std::string>{std::to_string(gpu_work)});
  // The GPUs (0 and 1) are named in Perfetto's gpu table as their processes are.
  std::vector<std::string> names;
  for (const auto& r : db.rows("select distinct device_id || ',' || process_name from trace_events where kind in "
                               "('kernel', 'memcpy', 'memset') order by 1"))
    names.push_back(r[0]);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(tp::lines(tools, typed, "select gpu || ',' || name as r from gpu order by r"), names);
  const std::string kinds = "select cast(count(*) as text) from slice where category in ('kernel', 'memcpy', 'memset')";
  EXPECT_EQ(tp::lines(tools, slices, kinds), std::vector<std::string>{std::to_string(gpu_work)});
  EXPECT_EQ(tp::lines(tools, typed, kinds), std::vector<std::string>{"0"});
}

// What a GPU metric's stored value is multiplied by (src/readers/gpu_metrics_source.h): NVIDIA's metric set
// definition as nsys records it in an export's StringIds (the layout of the H200 export's GpuMetrics/gh100.config,
// cut down), and the rule without one.
TEST(GpuMetricScale, MultipliersOfTheMetricSetDefinitionExactly) {
  using nsystrace::MetricScale;
  auto same = [](std::optional<MetricScale> s, int64_t num, int64_t den) {
    return s && s->num == num && s->den == den;
  };
  EXPECT_TRUE(same(nsystrace::parse_decimal_scale("1.0e-06"), 1, 1000000));
  EXPECT_TRUE(same(nsystrace::parse_decimal_scale("0.5"), 1, 2));
  EXPECT_TRUE(same(nsystrace::parse_decimal_scale(" 2 "), 2, 1));
  EXPECT_TRUE(same(nsystrace::parse_decimal_scale("1.5E+3"), 1500, 1));
  for (const char* bad : {"", "abc", "0", "0.0", "1e-30", "1e", "1.0e-06x", "--1"})
    EXPECT_FALSE(nsystrace::parse_decimal_scale(bad)) << bad;
  EXPECT_EQ(MetricScale({1, 1000000}).apply(int64_t{345003750}), 345003750 / 1e6);  // what SQL's value / 1e6 gives
  EXPECT_EQ(MetricScale({1, 2}).apply(int64_t{4892354}), 2446177.0);

  const char* config = R"(# NOTE: a comment
version: 5
metricSets:
- alias: gh100
  displayRows:
  - name: GPC Clock Frequency
    type: overlay
    metrics:
    - GPC Clock Frequency
  metrics:
  - name: GPC Clock Frequency
    id: gpc__cycles_elapsed
    description: The frequency of the GPC graphics clock. In NVIDIA GPU Specs this
      is the Boost Clock and Base Clock.
    subMetrics:
    - name: MHz
      suffix: .avg.per_second
      multiplier: 1.0e-06
  - name: GR Active
    id: gr__cycles_active
    subMetrics:
    - name: Throughput %
      suffix: .sum.pct_of_peak_sustained_elapsed
  - name: Compute Warps in Flight
    id: TPC.TriageCompute.tpc__warps_active_shader_cs_realtime
    subMetrics:
    - name: Throughput %
      suffix: .avg.pct_of_peak_sustained_elapsed
    - name: Avg
      suffix: .avg
      multiplier: 0.5
    color: '#FFD179'
- alias: other
  metrics:
  - name: GR Active
    subMetrics:
    - name: Throughput %
      multiplier: 2
)";
  auto scales = nsystrace::metric_scales_from_config(config);
  std::vector<std::string> names;
  for (const auto& [name, scale] : scales)
    names.push_back(name + " " + std::to_string(scale.num) + "/" + std::to_string(scale.den));
  // GR Active's two sets disagree: left out (its values stay as stored).
  EXPECT_EQ(names, (std::vector<std::string>{"Compute Warps in Flight [Avg] 1/2",
                                             "Compute Warps in Flight [Throughput %] 1/1",
                                             "GPC Clock Frequency [MHz] 1/1000000"}));
  EXPECT_TRUE(nsystrace::metric_scale("GR Active [Throughput %]", scales).identity());
  const std::map<std::string, MetricScale, std::less<>> none;
  EXPECT_EQ(nsystrace::metric_scale("SYS Clock Frequency [MHz]", none).den, 1000000);  // clocks are stored in Hz
  EXPECT_TRUE(nsystrace::metric_scale("Compute Warps in Flight [Avg]", none).identity());
  EXPECT_TRUE(nsystrace::metric_scale("SMs Active", none).identity());
}

}  // namespace
