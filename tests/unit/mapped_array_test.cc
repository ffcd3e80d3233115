// MappedArray keeps its values through growth, insertion, truncation and moves.
#include "src/util/mapped_array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace nsystrace {
namespace {

struct Wide {  // not a divisor of the page size: the capacity is not a whole number of pages of values
  int64_t a, b, c;
};

TEST(MappedArray, KeepsValuesThroughGrowthInsertTruncateAndMove) {
  MappedArray<Wide> v;
  EXPECT_TRUE(v.empty());
  for (int64_t i = 0; i < 200000; ++i) v.push_back(Wide{i, -i, i * 3});  // many growth steps
  v.insert(0, Wide{-1, 1, -3});
  v.insert(100, Wide{7, 7, 7});
  ASSERT_EQ(v.size(), 200002u);
  EXPECT_EQ(v[0].a, -1);
  EXPECT_EQ(v[1].a, 0);
  EXPECT_EQ(v[100].c, 7);
  EXPECT_EQ(v[101].a, 99);
  EXPECT_EQ(v.back().a, 199999);

  v.truncate(1000);  // gives memory back, keeps the first 1000
  ASSERT_EQ(v.size(), 1000u);
  EXPECT_EQ(v[999].b, -997);
  v.push_back(Wide{5, 5, 5});  // and grows again from there
  EXPECT_EQ(v.back().a, 5);

  MappedArray<Wide> moved(std::move(v));
  EXPECT_TRUE(v.empty());
  ASSERT_EQ(moved.size(), 1001u);
  EXPECT_EQ(moved[101].a, 99);
  MappedArray<Wide> assigned;
  assigned.reserve(10);
  assigned.push_back(Wide{1, 2, 3});
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 1001u);
  assigned.truncate(0);
  EXPECT_TRUE(assigned.empty());
}

TEST(MappedArray, ReserveMakesRoomWithoutChangingTheSize) {
  MappedArray<int32_t> v;
  v.reserve(1 << 20);
  EXPECT_EQ(v.size(), 0u);
  for (int32_t i = 0; i < (1 << 20); ++i) v.push_back(i);
  EXPECT_EQ(v[(1 << 20) - 1], (1 << 20) - 1);
}

}  // namespace
}  // namespace nsystrace
