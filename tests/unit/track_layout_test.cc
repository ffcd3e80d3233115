#include <gtest/gtest.h>

#include "src/track_layout.h"

using namespace nsystrace;

namespace {
// Lanes chosen for slices given as (start, end), in order.
std::vector<size_t> lanes_for(const std::vector<std::pair<int64_t, int64_t>>& slices) {
  std::vector<TrackLayout::Lane> lanes;
  std::vector<size_t> out;
  for (auto [s, e] : slices) out.push_back(TrackLayout::fit_lane(lanes, s, e, false));
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
  std::vector<TrackLayout::Lane> lanes;
  TrackLayout::fit_lane(lanes, 0, 100, false);
  TrackLayout::fit_lane(lanes, 50, 150, false);
  EXPECT_EQ(TrackLayout::fit_lane(lanes, 60, 60, true), 0u);
  EXPECT_EQ(lanes.size(), 2u);
}
