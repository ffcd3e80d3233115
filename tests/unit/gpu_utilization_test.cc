// GpuUtilization (src/writers/gpu_utilization.h) on hand-computed cases: the union of overlapping work, buckets
// cut at every millisecond, samples only where the value changes, a 0 after the last busy bucket, and work as long
// as a viewer's whole time range in O(1) (no bucket by bucket walk).
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "src/writers/gpu_utilization.h"
#include "src/writers/viewer_time.h"

namespace {

using nsystrace::GpuUtilization;
using Samples = std::vector<std::tuple<int32_t, int64_t, int64_t>>;  // (pid, ts, busy ns)

struct Op {
  int32_t pid;
  int64_t ts, dur;
};

Samples run(const std::vector<Op>& ops) {
  GpuUtilization u;
  std::vector<GpuUtilization::Sample> out;
  for (const Op& op : ops) u.add(op.pid, 0, op.pid, op.ts, op.dur, out);
  u.finish(out);
  Samples s;
  for (const auto& x : out) s.emplace_back(u.gpus()[x.gpu].pid, x.ts, x.busy_ns);
  std::sort(s.begin(), s.end());  // by GPU, then time (finish() hands back GPU by GPU)
  return s;
}

TEST(GpuUtilization, OverlapsCountOnceAndIdleBucketsAreZero) {
  // [100, 600) and [500, 1.2 ms) overlap: busy [100, 1.2 ms) -> 999900 ns of ms 0, 200000 of ms 1; ms 2 idle (a
  // zero-length op at 3 ms adds nothing); [3.5 ms, 3.6 ms) -> 100000 of ms 3; then idle.
  EXPECT_EQ(run({{1, 100, 500}, {1, 500, 1199500}, {1, 3000000, 0}, {1, 3500000, 100000}}),
            (Samples{{1, 0, 999900}, {1, 1000000, 200000}, {1, 2000000, 0}, {1, 3000000, 100000}, {1, 4000000, 0}}));
}

TEST(GpuUtilization, EqualValuesAreOneSampleAndGpusAreApart) {
  // GPU 2 busy for 3 whole ms: one sample of 100%, then 0. GPU 1's work between does not touch it.
  EXPECT_EQ(run({{2, 0, 3000000}, {1, 10, 20}, {2, 3000000, 0}}),
            (Samples{{1, 0, 20}, {1, 1000000, 0}, {2, 0, 1000000}, {2, 3000000, 0}}));
}

TEST(GpuUtilization, WorkAsLongAsTheViewersRangeIsTwoSamples) {
  constexpr int64_t kLatest = nsystrace::kLatestViewerTs;
  EXPECT_EQ(run({{3, 0, kLatest}}), (Samples{{3, 0, 1000000}, {3, kLatest, 0}}));
  // Work ending at the latest time: its last millisecond, then 0 at the latest time (still a drawable time).
  EXPECT_EQ(run({{3, kLatest - 10, 10}}), (Samples{{3, kLatest - 1000000, 10}, {3, kLatest, 0}}));
}

TEST(GpuUtilization, PercentTextIsExact) {
  EXPECT_EQ(GpuUtilization::percent_text(999900), "99.99");
  EXPECT_EQ(GpuUtilization::percent_text(200000), "20");
  EXPECT_EQ(GpuUtilization::percent_text(1), "0.0001");
  EXPECT_EQ(GpuUtilization::percent_text(123456), "12.3456");
  EXPECT_EQ(GpuUtilization::percent_text(1000000), "100");
  EXPECT_EQ(GpuUtilization::percent_text(0), "0");
  EXPECT_EQ(GpuUtilization::percent(123456), 12.3456);
}

}  // namespace
