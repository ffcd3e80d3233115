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

std::vector<std::pair<int64_t, int64_t>> IntervalUnion::pieces() {
  sort();
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto [start, end] : intervals_) {
    if (!out.empty() && start <= out.back().second) out.back().second = std::max(out.back().second, end);
    else if (end > start) out.emplace_back(start, end);
  }
  return out;
}

UnionCover::UnionCover(IntervalUnion& cover) : pieces_(cover.pieces()) {
  before_.reserve(pieces_.size());
  __int128 total = 0;
  for (auto [start, end] : pieces_) {
    before_.push_back(total);
    total += static_cast<__int128>(end) - start;
  }
}

__int128 UnionCover::covered_before(int64_t t) const {
  // The last piece that starts before t: every piece before it ends before it starts.
  auto after = std::lower_bound(pieces_.begin(), pieces_.end(), t,
                                [](const std::pair<int64_t, int64_t>& p, int64_t x) { return p.first < x; });
  if (after == pieces_.begin()) return 0;
  size_t i = static_cast<size_t>(after - pieces_.begin()) - 1;
  return before_[i] + std::min<__int128>(static_cast<__int128>(t) - pieces_[i].first,
                                         static_cast<__int128>(pieces_[i].second) - pieces_[i].first);
}

__int128 UnionCover::covered(int64_t start, int64_t end) const {
  return end <= start ? 0 : covered_before(end) - covered_before(start);
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
