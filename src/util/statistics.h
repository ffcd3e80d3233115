// The statistics NVIDIA's `nsys stats` reports show beside count, total, min, max and mean: the median and the
// sample standard deviation, which SQLite has no aggregate for. In SQL they cost a window-function sort per report
// (the slowest part of a report on a large profile); as aggregates they are one pass.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace nsystrace {

// The median of the values added: the middle one, or the mean of the two middle ones (as NVIDIA reports it).
// Keeps the values (8 bytes each) until asked; integers stay exact until the final division.
class MedianAccumulator {
 public:
  void add(int64_t v) { integers_.push_back(v); }
  void add(double v) { reals_.push_back(v); }
  std::optional<double> result();  // nothing for no values

 private:
  std::vector<int64_t> integers_;
  std::vector<double> reals_;
};

// The sample standard deviation (n - 1 in the denominator; 0 for a single value, as NVIDIA reports it), by
// Welford's update in long double: one pass, no cancellation between a large sum of squares and the squared mean.
class StdDevAccumulator {
 public:
  void add(long double v);
  std::optional<double> result() const;  // nothing for no values

 private:
  int64_t n_ = 0;
  long double mean_ = 0, m2_ = 0;
};

}  // namespace nsystrace
