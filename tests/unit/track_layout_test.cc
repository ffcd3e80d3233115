#include <gtest/gtest.h>

#include <random>

#include "src/timeline/lane_fitter.h"
#include "src/timeline/track_layout.h"

using namespace nsystrace;

namespace {
// Lanes chosen for slices given as (start, end), in order.
std::vector<size_t> lanes_for(const std::vector<std::pair<int64_t, int64_t>>& slices) {
  LaneFitter lanes;
  std::vector<size_t> out;
  for (auto [s, e] : slices) out.push_back(lanes.fit(s, e, false));
  return out;
}
}  // namespace

TEST(FitLane, NestedSlicesShareTheFirstLane) {
  EXPECT_EQ(lanes_for({{0, 100}, {10, 50}, {20, 30}, {60, 100}, {100, 200}}), (std::vector<size_t>{0, 0, 0, 0, 0}));
}

TEST(FitLane, PartialOverlapGoesToAnExtraLane) {
  // [100,300] and [200,400] partially overlap: the second cannot nest and must not be dropped. [250,500] overlaps
  // both open slices and takes a third lane; [350,360] fits the first lane again (its slice ended at 300).
  EXPECT_EQ(lanes_for({{100, 300}, {200, 400}, {250, 500}, {350, 360}, {600, 700}}),
            (std::vector<size_t>{0, 1, 2, 0, 0}));
}

TEST(FitLane, AdjacentSlicesDoNotOverlap) {
  EXPECT_EQ(lanes_for({{0, 10}, {10, 20}, {20, 30}}), (std::vector<size_t>{0, 0, 0}));
}

TEST(FitLane, IdenticalSlicesNest) {
  EXPECT_EQ(lanes_for({{5, 9}, {5, 9}, {5, 9}}), (std::vector<size_t>{0, 0, 0}));
}

TEST(FitLane, ManyOverlapsOpenManyLanesAndReuseThem) {
  std::vector<std::pair<int64_t, int64_t>> staircase;
  for (int i = 0; i < 5; ++i) staircase.push_back({i * 10, i * 10 + 45});
  staircase.push_back({100, 110});
  EXPECT_EQ(lanes_for(staircase), (std::vector<size_t>{0, 1, 2, 3, 4, 0}));
}

TEST(FitLane, InstantsStayOnTheFirstLane) {
  LaneFitter lanes;
  lanes.fit(0, 100, false);
  lanes.fit(50, 150, false);
  EXPECT_EQ(lanes.fit(60, 60, true), 0u);
  EXPECT_EQ(lanes.lanes(), 2u);
}

namespace {
// The rule, stated plainly: try every lane in order (what the fitter computes in O(log lanes)).
size_t first_fit(std::vector<std::vector<int64_t>>& lanes, int64_t start, int64_t end) {
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto& open = lanes[i];
    while (!open.empty() && open.back() <= start) open.pop_back();
    if (open.empty() || open.back() >= end) {
      open.push_back(end);
      return i;
    }
  }
  lanes.push_back({end});
  return lanes.size() - 1;
}

// Up to max_n random slices, sorted as the fitter takes them (start, longest first).
std::vector<std::pair<int64_t, int64_t>> random_slices(std::mt19937_64& rng, int max_n, int64_t max_span,
                                                       int64_t max_dur_bound) {
  int n = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_n));
  int64_t span = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_span));
  int64_t max_dur = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_dur_bound));
  std::vector<std::pair<int64_t, int64_t>> slices;
  for (int i = 0; i < n; ++i) {
    int64_t s = static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
    slices.push_back({s, s + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_dur))});
  }
  std::sort(slices.begin(), slices.end(), [](auto a, auto b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  return slices;
}
}  // namespace

TEST(FitLane, SameLanesAsTryingEveryLaneOnRandomSlices) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    auto slices = random_slices(rng, 400, 1000, 500);
    LaneFitter fitter;
    std::vector<std::vector<int64_t>> reference;
    for (auto [s, e] : slices) ASSERT_EQ(fitter.fit(s, e, false), first_fit(reference, s, e)) << "round " << round;
    EXPECT_EQ(fitter.lanes(), reference.size());
  }
}

TEST(FitLane, AClearedFitterFitsAsANewOne) {
  // clear() keeps the lanes' allocations (a join's inner scan clears its track's fitter at every lookup): what is
  // left of the last round must not show in the next, whose lanes may be fewer or more.
  std::mt19937_64 rng(11);
  LaneFitter fitter;
  for (int round = 0; round < 200; ++round) {
    auto slices = random_slices(rng, 100, 300, 400);
    fitter.clear();
    EXPECT_EQ(fitter.lanes(), 0u);
    std::vector<std::vector<int64_t>> reference;
    for (auto [s, e] : slices) ASSERT_EQ(fitter.fit(s, e, false), first_fit(reference, s, e)) << "round " << round;
    EXPECT_EQ(fitter.lanes(), reference.size());
  }
}
