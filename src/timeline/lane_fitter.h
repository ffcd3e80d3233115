// First-fit lanes for the slices of one track, so that slices on a lane always nest. Slices arrive in (start,
// longest first) order; a slice [start, end] takes the first lane whose innermost open slice ends at or after `end`
// (it nests inside) or that has no slice open at `start` (slices ending at `start` have ended), else a new lane.
//
// In O(log lanes) per slice, so staggered overlaps that open thousands of lanes stay n log n: ended slices leave
// their lane through one min-heap of the track's open ends (a lane's innermost slice ends first, so the heap pops
// exactly the lanes' tops), and the first lane that takes a slice is found in a segment tree of each lane's
// innermost open end (INT64_MAX for an empty lane). Same lanes as trying every lane in order.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace nsystrace {

class LaneFitter {
 public:
  // The lane (0-based) the slice takes; instants take lane 0 and open nothing (they overlap nothing).
  size_t fit(int64_t start, int64_t end, bool instant);
  size_t lanes() const { return lanes_; }
  // As new, keeping its allocations.
  void clear();

 private:
  void set_key(size_t lane);
  size_t first_lane_ending_at_or_after(int64_t end) const;  // lanes() when none

  std::vector<std::vector<int64_t>> stacks_;  // each lane's open ends, innermost (smallest) last; lanes_ in use
  size_t lanes_ = 0;
  std::vector<int64_t> tree_;                 // max of the lanes' innermost open end; leaves at [size_, 2 size_)
  size_t size_ = 0;
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>, std::greater<>> open_;
};

}  // namespace nsystrace
