#include "src/writers/gpu_utilization.h"

#include <algorithm>
#include <string>

#include "src/writers/viewer_time.h"

namespace nsystrace {

void GpuUtilization::add(int32_t pid, int report, int64_t device, int64_t ts, int64_t dur, std::vector<Sample>& out) {
  if (last_ == SIZE_MAX || pid != last_pid_) {
    auto [it, fresh] = index_.try_emplace(pid, gpus_.size());
    if (fresh) {
      gpus_.push_back(GpuKey{report, device, pid});
      states_.emplace_back();
    }
    last_ = it->second;
    last_pid_ = pid;
  }
  State& s = states_[last_];
  int64_t end;
  if (dur < 0 || __builtin_add_overflow(ts, dur, &end)) end = ts;  // never from drawn rows (viewer_time.h)
  if (!s.running) {
    s.running = true;
    s.run_start = ts;
    s.run_end = end;
  } else if (ts > s.run_end) {  // a new run: the last one is whole
    flush_run(last_, s, out);
    s.running = true;
    s.run_start = ts;
    s.run_end = end;
  } else {
    s.run_end = std::max(s.run_end, end);
  }
}

// Adds the current run [run_start, run_end) to the buckets it covers; every bucket before the one it ends in is
// final (later runs start after it), so is sampled.
void GpuUtilization::flush_run(size_t gpu, State& s, std::vector<Sample>& out) {
  const int64_t a = s.run_start, e = s.run_end;
  s.running = false;
  if (e <= a) return;
  const int64_t first = a / kBucketNs, last = (e - 1) / kBucketNs;
  if (!s.has_bucket) {
    s.has_bucket = true;
    s.bucket = first;
    s.busy = 0;
  } else if (first > s.bucket) {
    emit(gpu, s, s.bucket, s.busy, out);
    if (first > s.bucket + 1) emit(gpu, s, s.bucket + 1, 0, out);  // idle buckets in between
    s.bucket = first;
    s.busy = 0;
  }
  if (first == last) {
    s.busy += e - a;
    return;
  }
  s.busy += (first + 1) * kBucketNs - a;  // (first + 1) * kBucketNs <= last * kBucketNs < e: no overflow
  emit(gpu, s, first, s.busy, out);
  if (last > first + 1) emit(gpu, s, first + 1, kBucketNs, out);  // whole buckets
  s.bucket = last;
  s.busy = e - last * kBucketNs;
}

void GpuUtilization::emit(size_t gpu, State& s, int64_t bucket, int64_t value, std::vector<Sample>& out) {
  if (value == s.last_value) return;  // the counter holds it already
  s.last_value = value;
  out.push_back(Sample{gpu, bucket * kBucketNs, value});
}

void GpuUtilization::finish(std::vector<Sample>& out) {
  for (size_t g = 0; g < states_.size(); ++g) {
    State& s = states_[g];
    if (s.running) flush_run(g, s, out);
    if (!s.has_bucket) continue;
    emit(g, s, s.bucket, s.busy, out);
    if (s.bucket < kLatestViewerTs / kBucketNs) emit(g, s, s.bucket + 1, 0, out);  // idle after its last work
  }
}

std::string GpuUtilization::percent_text(int64_t busy_ns) {
  std::string out = std::to_string(busy_ns / 10000);
  int64_t frac = busy_ns % 10000;
  if (frac == 0) return out;
  std::string digits = std::to_string(frac);
  digits.insert(0, 4 - digits.size(), '0');
  while (digits.back() == '0') digits.pop_back();
  out += '.';
  out += digits;
  return out;
}

}  // namespace nsystrace
