// Interval concurrency per bucket: how many of a set of intervals were open at once, bucket by bucket. SQL computes
// this with a window over every start and end (a sort of twice the rows) and a split of the constant-depth segments
// at bucket boundaries; here it is two sorts of integers and one sweep (used by sql/queue_depth.sql through
// nsystrace_concurrency()).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nsystrace {

// A million buckets per group (about 40 MB of JSON): 100 ms buckets over 27 hours, 1 ms buckets over 16 minutes.
inline constexpr size_t kMaxConcurrencyBuckets = 1'000'000;

// One bucket [start, start + width) of the sweep in which the depth was above 0 for some time.
struct ConcurrencyBucket {
  int64_t index = 0;     // floor((start - t0) / width)
  int64_t start = 0;     // t0 + index * width: exact (it lies between t0 and a time added, so it fits in int64)
  int64_t max_depth = 0;  // the deepest the intervals got in the bucket (over a positive length of time)
  __int128 depth_ns = 0;  // the integral of the depth over the bucket: depth x ns, summed (the mean is / width)
  int64_t busy_ns = 0;    // the time in the bucket with depth above 0: the union of the intervals, clipped to it
};

// The intervals [start, end) added, swept as +1 at each start and -1 at each end: the depth between two successive
// times is the starts minus the ends up to the first of them. Only times with depth > 0 count. An interval whose end
// precedes its start is kept as those two events (as the SQL sweep would), so it lowers the depth in between.
class ConcurrencyAccumulator {
 public:
  void add(int64_t start, int64_t end) {
    starts_.push_back(start);
    ends_.push_back(end);
  }
  // The buckets of `width` ns (> 0) from t0 in which the depth was above 0, in time order. Exact on the whole int64
  // range (bucket arithmetic in 128 bits), whatever t0 is (a bucket before t0 has a negative index). Sorts in place.
  // Throws std::length_error past max_buckets buckets or for an index outside int64 (a bucket too narrow for the
  // span: the caller widens it, as sql/queue_depth.sql does), instead of running for hours.
  std::vector<ConcurrencyBucket> buckets(int64_t t0, int64_t width, size_t max_buckets = kMaxConcurrencyBuckets);
  size_t size() const { return starts_.size(); }

 private:
  std::vector<int64_t> starts_, ends_;
};

// The buckets as a JSON array of [index, start, max_depth, depth_ns, busy_ns] arrays (depth_ns an integer, or a real
// when it exceeds int64).
std::string concurrency_json(const std::vector<ConcurrencyBucket>& buckets);

}  // namespace nsystrace
