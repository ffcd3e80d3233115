#include "src/timeline/lane_fitter.h"

#include <algorithm>
#include <climits>

namespace nsystrace {

void LaneFitter::set_key(size_t lane) {
  size_t i = size_ + lane;
  tree_[i] = stacks_[lane].empty() ? INT64_MAX : stacks_[lane].back();
  for (i /= 2; i >= 1; i /= 2) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
}

size_t LaneFitter::first_lane_ending_at_or_after(int64_t end) const {
  if (size_ == 0 || tree_[1] < end) return lanes_;
  size_t i = 1;
  while (i < size_) i = tree_[2 * i] >= end ? 2 * i : 2 * i + 1;
  return i - size_;  // a leaf past the last lane holds INT64_MIN and is never chosen
}

void LaneFitter::clear() {
  for (size_t l = 0; l < lanes_; ++l) stacks_[l].clear();
  lanes_ = 0;
  tree_.clear();
  size_ = 0;
  while (!open_.empty()) open_.pop();
}

size_t LaneFitter::fit(int64_t start, int64_t end, bool instant) {
  if (instant) return 0;
  while (!open_.empty() && open_.top().first <= start) {  // slices that ended by now leave their lane
    size_t lane = open_.top().second;
    open_.pop();
    stacks_[lane].pop_back();
    set_key(lane);
  }
  size_t lane = first_lane_ending_at_or_after(end);
  if (lane == lanes_) {
    if (lanes_ == stacks_.size()) stacks_.emplace_back();
    ++lanes_;
    if (lanes_ > size_) {  // grow the tree: twice the leaves, keys copied over
      size_t old = size_;
      size_ = std::max<size_t>(1, 2 * size_);
      tree_.assign(2 * size_, INT64_MIN);
      for (size_t l = 0; l < old; ++l) tree_[size_ + l] = stacks_[l].empty() ? INT64_MAX : stacks_[l].back();
      for (size_t i = size_ - 1; i >= 1; --i) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
    }
  }
  stacks_[lane].push_back(end);
  set_key(lane);
  open_.emplace(end, lane);
  return lane;
}

}  // namespace nsystrace
