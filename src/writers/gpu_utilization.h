// GPU utilization as a counter, for both trace formats: for each GPU, the share of each millisecond (buckets
// [k ms, (k + 1) ms) of the trace's clock) during which any of its work (kernels, memcpys, memsets) ran: the union
// of their intervals, so work overlapping on several streams counts once. Integer nanoseconds throughout: a bucket's
// value is its busy ns; writers show it as a percentage (busy ns / 10^4, exact in decimal).
//
// Fed the GPU work in the rows' order (start order); keeps O(1) state per GPU (the current run of overlapping work
// and the bucket it ends in) and hands back a sample only where the value changes (a counter holds its value until
// the next sample), once no later row can change it. The last sample of a GPU is a 0 after its last busy bucket.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/model/event.h"

namespace nsystrace {

class GpuUtilization {
 public:
  static constexpr int64_t kBucketNs = 1000000;
  static constexpr const char* kName = "GPU utilization";
  // The kinds that make a GPU busy.
  static bool counts(Kind k) { return k == Kind::kernel || k == Kind::memcpy || k == Kind::memset; }

  struct GpuKey {
    int report = 0;
    int64_t device = 0;
    int32_t pid = 0;  // the GPU's process in the trace (its rows' pid)
  };
  struct Sample {
    size_t gpu;       // index into gpus()
    int64_t ts;       // a bucket's start
    int64_t busy_ns;  // in [0, kBucketNs]
  };
  // One GPU operation drawn at [ts, ts + dur) (ts >= 0, dur >= 0, in start order) on the GPU drawn as process pid
  // (one per (report, device)), which is device `device` of report `report`.
  void add(int32_t pid, int report, int64_t device, int64_t ts, int64_t dur, std::vector<Sample>& out);
  // Every sample still held.
  void finish(std::vector<Sample>& out);
  const std::vector<GpuKey>& gpus() const { return gpus_; }

  // busy ns as a percentage of the bucket: exact decimal text ("37.5421") and the nearest double.
  static std::string percent_text(int64_t busy_ns);
  static double percent(int64_t busy_ns) { return static_cast<double>(busy_ns) / 10000.0; }

 private:
  struct State {
    bool running = false;
    int64_t run_start = 0, run_end = 0;  // the current run of overlapping work
    bool has_bucket = false;
    int64_t bucket = 0, busy = 0;        // the bucket the last flushed run ended in, and its busy ns so far
    int64_t last_value = -1;             // the last sample's value (-1: none yet)
  };
  void flush_run(size_t gpu, State& s, std::vector<Sample>& out);
  void emit(size_t gpu, State& s, int64_t bucket, int64_t value, std::vector<Sample>& out);

  std::vector<GpuKey> gpus_;
  std::vector<State> states_;
  std::map<int32_t, size_t> index_;  // pid -> index
  size_t last_ = SIZE_MAX;           // the last GPU looked up (rows come in runs)
  int32_t last_pid_ = 0;
};

}  // namespace nsystrace
