// ApiCallIndex against a std::map on the orders calls really come in: sorted, nearly sorted, and none at all.
#include "src/writers/api_call_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>

namespace nsystrace {
namespace {

using Reference = std::map<std::pair<int64_t, int64_t>, ApiCall>;

void insert_both(ApiCallIndex& index, Reference& ref, int64_t process, int64_t correlation, int64_t ts) {
  ApiCall call{static_cast<uint64_t>(process * 7 + correlation % 7), ts};
  index.insert(process, correlation, call);
  ref.emplace(std::make_pair(process, correlation), call);  // first call wins in both
}

void expect_same(const ApiCallIndex& index, const Reference& ref, int64_t processes, int64_t max_correlation) {
  for (int64_t p = 0; p < processes; ++p)
    for (int64_t c = -2; c <= max_correlation + 2; ++c) {
      const ApiCall* got = index.find(p, c);
      auto want = ref.find({p, c});
      ASSERT_EQ(got != nullptr, want != ref.end()) << "process " << p << " correlation " << c;
      if (got != nullptr) {
        EXPECT_EQ(got->ts, want->second.ts) << "process " << p << " correlation " << c;
        EXPECT_EQ(got->endpoint, want->second.endpoint);
      }
    }
}

TEST(ApiCallIndex, EmptyFindsNothing) {
  ApiCallIndex index;
  EXPECT_EQ(index.find(1, 1), nullptr);
}

TEST(ApiCallIndex, SortedCallsWithGapsAndSeveralProcesses) {
  ApiCallIndex index;
  Reference ref;
  for (int64_t c = 0; c < 20000; c += 3)
    for (int64_t p = 0; p < 3; ++p) insert_both(index, ref, p, c + p, c * 10);
  expect_same(index, ref, 4, 20003);
}

TEST(ApiCallIndex, FirstCallWinsForARepeatedCorrelationId) {
  ApiCallIndex index;
  index.insert(1, 10, ApiCall{11, 100});
  index.insert(1, 11, ApiCall{11, 110});
  index.insert(1, 10, ApiCall{12, 999});  // out of order and a repeat
  index.insert(1, 11, ApiCall{12, 999});  // a repeat of the last
  ASSERT_NE(index.find(1, 10), nullptr);
  EXPECT_EQ(index.find(1, 10)->ts, 100);
  EXPECT_EQ(index.find(1, 11)->ts, 110);
}

TEST(ApiCallIndex, NearlySortedCallsAreInsertedInPlace) {
  ApiCallIndex index;
  Reference ref;
  std::mt19937 rng(7);
  for (int64_t c = 0; c < 50000; c += 8) {  // blocks of 8 ids arriving shuffled, as from racing threads
    int64_t block[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    std::shuffle(block, block + 8, rng);
    for (int64_t d : block) insert_both(index, ref, 1, c + d, c + d);
  }
  expect_same(index, ref, 2, 50008);
}

TEST(ApiCallIndex, CallsInNoOrderAtAllStillMatch) {
  ApiCallIndex index;
  Reference ref;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 30000; ++i) {
    int64_t p = static_cast<int64_t>(rng() % 3);
    int64_t c = static_cast<int64_t>(rng() % 40000);
    insert_both(index, ref, p, c, i);
  }
  expect_same(index, ref, 3, 40000);
}

TEST(ApiCallIndex, ExtremeCorrelationIds) {
  ApiCallIndex index;
  index.insert(0, INT64_MAX, ApiCall{12, 3});
  index.insert(0, INT64_MIN, ApiCall{45, 6});
  index.insert(0, 0, ApiCall{78, 9});
  EXPECT_EQ(index.find(0, INT64_MAX)->ts, 3);
  EXPECT_EQ(index.find(0, INT64_MIN)->ts, 6);
  EXPECT_EQ(index.find(0, 0)->ts, 9);
  EXPECT_EQ(index.find(0, 1), nullptr);
}

}  // namespace
}  // namespace nsystrace
