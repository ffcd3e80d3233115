#include "src/util/concurrency.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace nsystrace {

namespace {
// floor(a / b) for b > 0.
__int128 floor_div(__int128 a, __int128 b) {
  __int128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
}  // namespace

std::vector<ConcurrencyBucket> ConcurrencyAccumulator::buckets(int64_t t0, int64_t width, size_t max_buckets) {
  if (width <= 0) throw std::invalid_argument("the bucket width must be a positive number of ns");
  std::vector<ConcurrencyBucket> out;
  std::sort(starts_.begin(), starts_.end());
  std::sort(ends_.begin(), ends_.end());
  const __int128 w = width;
  size_t i = 0, j = 0;
  int64_t depth = 0;
  // Each step: every event at the earliest time t left, then the segment [t, next event) at the depth after them.
  while (i < starts_.size() || j < ends_.size()) {
    int64_t t = (j == ends_.size() || (i < starts_.size() && starts_[i] < ends_[j])) ? starts_[i] : ends_[j];
    while (j < ends_.size() && ends_[j] == t) --depth, ++j;
    while (i < starts_.size() && starts_[i] == t) ++depth, ++i;
    if (depth <= 0 || (i == starts_.size() && j == ends_.size())) continue;
    int64_t next = (j == ends_.size() || (i < starts_.size() && starts_[i] < ends_[j])) ? starts_[i] : ends_[j];
    // The segment [t, next) in the buckets from k (holding t) to last (holding next - 1).
    __int128 k = floor_div(static_cast<__int128>(t) - t0, w);
    __int128 last = floor_div(static_cast<__int128>(next) - 1 - t0, w);
    for (; k <= last; ++k) {
      __int128 lo = t0 + k * w, hi = lo + w;
      __int128 ns = std::min<__int128>(next, hi) - std::max<__int128>(t, lo);
      if (out.empty() || out.back().index != static_cast<int64_t>(k)) {
        if (out.size() == max_buckets || k < INT64_MIN || k > INT64_MAX)
          throw std::length_error("more than " + std::to_string(max_buckets) +
                                  " buckets (or a bucket number past 64 bits): widen the bucket");
        ConcurrencyBucket b;
        b.index = static_cast<int64_t>(k);
        b.start = static_cast<int64_t>(lo);
        out.push_back(b);
      }
      ConcurrencyBucket& b = out.back();
      b.max_depth = std::max(b.max_depth, depth);
      b.depth_ns += ns * depth;
      b.busy_ns += static_cast<int64_t>(ns);  // ns <= width: the sum stays within the bucket
    }
  }
  return out;
}

std::string concurrency_json(const std::vector<ConcurrencyBucket>& buckets) {
  std::string s = "[";
  for (const ConcurrencyBucket& b : buckets) {
    if (s.size() > 1) s += ',';
    s += '[';
    s += std::to_string(b.index) + ',' + std::to_string(b.start) + ',' + std::to_string(b.max_depth) + ',';
    if (b.depth_ns >= INT64_MIN && b.depth_ns <= INT64_MAX) {
      s += std::to_string(static_cast<int64_t>(b.depth_ns));
    } else {
      char buf[32];
      snprintf(buf, sizeof buf, "%.17g", static_cast<double>(b.depth_ns));
      s += buf;
    }
    s += ',' + std::to_string(b.busy_ns) + ']';
  }
  s += ']';
  return s;
}

}  // namespace nsystrace
