// The large real export ../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite (nsys 2025.3, one H200):
// 1,143,318 GPU_METRICS samples of 22 metrics at 10 kHz, TARGET_INFO_GPU_METRICS.typeName empty, samples before the
// session start. Every sample is a counter value in the unit its name states, on GPU 0, named after the GPU, in
// trace_events, the Chrome JSON and the Perfetto protobuf (judged by Perfetto's trace processor), each compared with
// plain SQL over GPU_METRICS. Whole in the Release pass; a 0.5 s window under the sanitizers (tests/run_all.sh sets
// NSYSTRACE_GRID_STRIDE there). Skipped, visibly, without ../shared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/support/mini_json.h"
#include "tests/support/perfetto_tools.h"
#include "tests/support/test_db.h"

namespace {

const char* const kExport = "h200_nccl_1rank_gpu_metrics.sqlite";

// What each metric's stored value means, from NVIDIA's own documents, written here apart from the reader:
//   [MHz]: the clocks gpc__cycles_elapsed.avg.per_second and sys__cycles_elapsed.avg.per_second, "the average ...
//     clock frequency in hertz" (Nsight Systems User Guide, GPU metrics); the export's own metric set definition
//     (StringIds: GpuMetrics/gh100.config) shows them in MHz with multiplier 1.0e-06;
//   [Avg], [Avg Warps per Cycle]: the warps-in-flight counters per TPC, which gh100.config shows per SM with
//     multiplier 0.5;
//   [Throughput %]: percentages as stored (no multiplier).
// The value in the named unit, as plain SQL over GPU_METRICS `g` joined to TARGET_INFO_GPU_METRICS `i`.
const char* kValueInUnit =
    "(case when i.metricName like '%[MHz]' then g.value / 1e6 "
    "when i.metricName like '%[Avg]' or i.metricName like '%[Avg Warps per Cycle]' then g.value * 0.5 "
    "else g.value end)";
// The unit Perfetto shows (counter_track.unit) for each.
const char* kUnit =
    "(case when i.metricName like '%[MHz]' then 'MHz' when i.metricName like '%\\%]' escape '\\' then '%' else '' end)";

// Per metric, one line: name, unit, samples, the sum of their times, an order-free digest of (time, value) pairs and
// the least and greatest values (6 decimals). `ts` and `v` name a sample's time and value in `from`.
std::string per_metric(const std::string& name, const std::string& unit, const std::string& ts, const std::string& v,
                       const std::string& from, const std::string& group) {
  return "select " + name + " || ',' || " + unit + " || ',' || count(*) || ',' || sum(" + ts +
         ") || ',' || sum(((" + ts + ") % 1009 + 1009) % 1009 * cast((" + v +
         ") * 1000 as int)) || ',' || printf('%.6f', min(" + v + ")) || ',' || printf('%.6f', max(" + v +
         ")) as r from " + from + " group by " + group + " order by r";
}

// The plain SQL answer over the export, for samples with `where` (on g.timestamp); `unit` as kUnit, or '' where the
// side compared with has no unit column.
// `ts`: the time a viewer is given (the traces draw a sample before the session start at its start, viewer_time.h).
std::vector<std::string> expected_per_metric(testdb::Db& db, const std::string& where, const std::string& unit = kUnit,
                                             const std::string& ts = "g.timestamp") {
  std::vector<std::string> out;
  for (const auto& row : db.rows(per_metric("i.metricName", unit, ts, kValueInUnit,
                                            "GPU_METRICS g join TARGET_INFO_GPU_METRICS i using (typeId, metricId) "
                                            "where " + where,
                                            "i.metricName")))
    out.push_back(row[0]);
  return out;
}

class LargeGpuMetrics : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = testdb::large_export();
    if (path_.empty()) GTEST_SKIP() << "../shared/fixtures/large/" << kExport << " not found: NOT checked";
    whole_ = testdb::sanitizer_stride() == 1;
  }
  // The samples checked: all of them in the Release pass, 0.5 s in the middle under the sanitizers.
  std::string where(const std::string& ts) const {
    return whole_ ? ts + " is not null" : ts + " between 2000000000 and 2499999999";
  }
  std::string path_;
  bool whole_ = true;
};

// trace_events: every sample a gpu_metric row, its args' value in the unit its name states, on GPU 0's metrics
// process named after the GPU; the samples before the session start (negative times) included.
TEST_P(LargeGpuMetrics, EveryMetricInItsUnitInTraceEvents) {
  testdb::Db db(path_, /*load_shared_object=*/true);
  EXPECT_EQ(db.integer("select count(*) from TARGET_INFO_GPU_METRICS where typeName = ''"), 22)
      << "the export changed?";
  // (No unit on this side: trace_events has no unit column; the names carry it.)
  std::vector<std::string> expected = expected_per_metric(db, where("g.timestamp"), "''");
  EXPECT_EQ(expected.size(), 22u);
  std::vector<std::string> got;
  for (const auto& row : db.rows(per_metric("name", "''", "ts", "json_extract(args, '$.value')",
                                            "trace_events where kind = 'gpu_metric' and " + where("ts"), "name")))
    got.push_back(row[0]);
  EXPECT_EQ(got, expected);
  if (whole_) {
    EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'gpu_metric'"), 1143318);
    EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'gpu_metric' and ts < 0"),
              db.integer("select count(*) from GPU_METRICS where timestamp < 0"));
    EXPECT_GT(db.integer("select count(*) from GPU_METRICS where timestamp < 0"), 0);
  }
  // The clocks in MHz: an idle H200's GPC clock is about 345 MHz, and none far above the GPU's peak clock
  // (TARGET_INFO_GPU.clockRate, in Hz).
  EXPECT_EQ(db.text("select printf('%.5f', json_extract(args, '$.value')) from trace_events where kind = 'gpu_metric' "
                    "and name = 'GPC Clock Frequency [MHz]' and ts = (select min(timestamp) from GPU_METRICS)"),
            db.text("select printf('%.5f', value / 1e6) from GPU_METRICS where metricId = 0 and timestamp = "
                    "(select min(timestamp) from GPU_METRICS)"));
  // (GPC samples fluctuate a little around the clock: NVIDIA's User Guide. This export's reach 1980.63 MHz.)
  EXPECT_LE(db.integer("select max(json_extract(args, '$.value')) * 1e6 from trace_events where kind = 'gpu_metric' "
                       "and name like '%Clock Frequency [MHz]' and " + where("ts")),
            db.integer("select clockRate * 1.01 from TARGET_INFO_GPU where id = 0"));
  EXPECT_EQ(db.text("select group_concat(distinct process_name) from trace_events where kind = 'gpu_metric' and " +
                    where("ts")),
            "GPU metrics: GPU 0 (" + db.text("select name from TARGET_INFO_GPU where id = 0") + ")");
}

// The Perfetto protobuf, as trace processor imports it: no error stat; every sample a value of a GPU counter of GPU
// 0, one per metric, in its unit, at its wall-clock time; the same per-metric digests as plain SQL.
TEST_P(LargeGpuMetrics, PerfettoHoldsEverySampleInItsUnitOnItsGpu) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: NOT checked";
  testdb::Db db(path_, /*load_shared_object=*/true);
  testdb::TempDir dir("nsystrace_large_metrics");
  std::string trace = dir.file("t.pftrace");
  db.integer("select perfetto_trace_file('" + trace + "') from trace_events where " +
             (whole_ ? std::string("1") : "kind = 'gpu_metric' and " + where("ts")));
  testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + trace));
  EXPECT_EQ(stats.get("stats")->items.size(), 0u) << tp::run(tools + "/import-stats " + trace);
  const std::string start = db.text("select utcEpochNs from TARGET_INFO_SESSION_START_TIME");
  const std::string ts = "(c.ts - " + start + ")";
  std::vector<std::string> got = tp::lines(
      tools, trace,
      per_metric("t.name", "coalesce(t.unit, '')", ts, "c.value",
                 "counter c join counter_track t on t.id = c.track_id where t.type = 'gpu_counter' and "
                 "t.name != 'GPU utilization'",
                 "t.id"));
  // Samples before the session start are drawn at its start (time 0; a counter keeps no recorded time: its args are
  // its values), not dropped.
  EXPECT_EQ(got, expected_per_metric(db, where("g.timestamp"), kUnit, "max(g.timestamp, 0)"));
  EXPECT_EQ(tp::lines(tools, trace,
                     "select distinct cast(extract_arg(t.dimension_arg_set_id, 'gpu') as text) as g from counter_track "
                     "t where t.type = 'gpu_counter' and t.name != 'GPU utilization'"),
            std::vector<std::string>{"0"});
  if (whole_) {
    EXPECT_EQ(tp::lines(tools, trace,
                       "select cast(count(*) as text) from counter c join counter_track t on t.id = c.track_id where "
                       "t.type = 'gpu_counter' and t.name != 'GPU utilization'"),
              std::vector<std::string>{"1143318"});
  }
}

// The Chrome JSON of a 0.5 s window: every sample a "C" event named by its metric, its value in its unit.
TEST_P(LargeGpuMetrics, ChromeJsonHoldsEverySampleOfAWindowInItsUnit) {
  testdb::Db db(path_, /*load_shared_object=*/true);
  const std::string window = "ts between 2000000000 and 2499999999";
  testjson::Value root = testjson::parse(
      db.text("select chrome_trace(*) from trace_events where kind = 'gpu_metric' and " + window));
  struct Sums {
    int64_t n = 0, ts = 0, digest = 0;
    double min = 1e300, max = -1e300;
  };
  std::map<std::string, Sums> per_name;
  for (const testjson::Value& e : root.get("traceEvents")->items) {
    if (e.str("ph") != "C") continue;
    EXPECT_EQ(e.str("cat"), "gpu_metric");
    int64_t t = testjson::us_text_to_ns(e.str("ts"));
    double v = std::stod(e.get("args")->str("value"));
    Sums& s = per_name[e.str("name")];
    ++s.n, s.ts += t, s.digest += (t % 1009) * static_cast<int64_t>(v * 1000);
    s.min = std::min(s.min, v), s.max = std::max(s.max, v);
  }
  std::vector<std::string> got;
  for (const auto& [name, s] : per_name) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s,,%lld,%lld,%lld,%.6f,%.6f", name.c_str(), static_cast<long long>(s.n),
                  static_cast<long long>(s.ts), static_cast<long long>(s.digest), s.min, s.max);
    got.push_back(buf);
  }
  std::sort(got.begin(), got.end());
  std::vector<std::string> expected =
      expected_per_metric(db, "g.timestamp between 2000000000 and 2499999999", "''");
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), 22u);
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, LargeGpuMetrics, ::testing::Values(std::string(kExport)),
                         [](const ::testing::TestParamInfo<std::string>&) { return std::string("h200_nccl_1rank"); });

}  // namespace
