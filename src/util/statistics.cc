#include "src/util/statistics.h"

#include <algorithm>
#include <cmath>

namespace nsystrace {

namespace {
// The middle value(s) of v (reordered in place): {lower middle, upper middle}.
template <class T>
std::pair<T, T> middles(std::vector<T>& v) {
  size_t upper = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(upper), v.end());
  T hi = v[upper];
  if (v.size() % 2 == 1) return {hi, hi};
  T lo = *std::max_element(v.begin(), v.begin() + static_cast<long>(upper));
  return {lo, hi};
}
}  // namespace

std::optional<double> MedianAccumulator::result() {
  if (reals_.empty() && integers_.empty()) return std::nullopt;
  if (reals_.empty()) {
    auto [lo, hi] = middles(integers_);
    return (static_cast<long double>(lo) + static_cast<long double>(hi)) / 2;
  }
  // Mixed or real values: compared as reals, as SQLite compares an integer with a real.
  for (int64_t i : integers_) reals_.push_back(static_cast<double>(i));
  integers_.clear();
  auto [lo, hi] = middles(reals_);
  return (static_cast<long double>(lo) + hi) / 2;
}

void StdDevAccumulator::add(long double v) {
  ++n_;
  long double delta = v - mean_;
  mean_ += delta / n_;
  m2_ += delta * (v - mean_);
}

std::optional<double> StdDevAccumulator::result() const {
  if (n_ == 0) return std::nullopt;
  if (n_ == 1) return 0.0;
  return static_cast<double>(std::sqrt(m2_ / (n_ - 1)));
}

}  // namespace nsystrace
