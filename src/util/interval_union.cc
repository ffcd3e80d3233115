#include "src/util/interval_union.h"

#include <algorithm>

namespace nsystrace {

void IntervalUnion::sort() {
  if (!sorted_) std::sort(intervals_.begin(), intervals_.end());
  sorted_ = true;
}

__int128 IntervalUnion::length() {
  sort();
  __int128 total = 0;
  int64_t covered = INT64_MIN;  // the latest end so far
  for (auto [start, end] : intervals_) {
    if (end <= covered) continue;  // inside the piece so far
    total += static_cast<__int128>(end) - std::max(start, covered);
    covered = end;
  }
  return total;
}

std::vector<Gap> IntervalUnion::gaps(int64_t min_gap) {
  sort();
  std::vector<Gap> out;
  if (intervals_.empty()) return out;
  int64_t covered = intervals_.front().second;  // the latest end so far
  for (size_t i = 1; i < intervals_.size(); ++i) {
    auto [start, end] = intervals_[i];
    // In 128 bits: the gap between two times of int64 may not fit in it.
    if (start > covered && static_cast<__int128>(start) - covered >= min_gap) out.push_back(Gap{covered, start});
    covered = std::max(covered, end);
  }
  return out;
}

std::string gaps_json(const std::vector<Gap>& gaps) {
  std::string s = "[";
  for (const Gap& g : gaps) {
    if (s.size() > 1) s += ',';
    s += '[' + std::to_string(g.start) + ',' + std::to_string(g.end) + ']';
  }
  s += ']';
  return s;
}

}  // namespace nsystrace
