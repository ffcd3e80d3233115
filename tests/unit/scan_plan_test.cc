// The plan trace_events hands SQLite comes back to xFilter as idxNum and idxStr: ScanPlan::from_idx must give the
// same tokens and flags, for every token, whatever spacing idxStr has.
#include <gtest/gtest.h>

#include "src/timeline/scan_plan.h"

namespace nsystrace {
namespace {

TEST(ScanPlanIdx, EveryTokenAndFlagComesBack) {
  ScanPlan plan;
  for (int t = 0; t <= static_cast<int>(Token::limit); ++t) plan.tokens.push_back(static_cast<Token>(t));
  plan.feeds_groups = plan.all_derived = true;
  ScanPlan back = ScanPlan::from_idx(plan.idx_num(), plan.idx_str().c_str());
  EXPECT_EQ(back.tokens, plan.tokens);
  EXPECT_TRUE(back.feeds_groups);
  EXPECT_TRUE(back.all_derived);
  EXPECT_FALSE(back.all_reports);
}

TEST(ScanPlanIdx, SpacesAndEmptyStrings) {
  EXPECT_TRUE(ScanPlan::from_idx(0, nullptr).tokens.empty());
  EXPECT_TRUE(ScanPlan::from_idx(0, "").tokens.empty());
  EXPECT_EQ(ScanPlan::from_idx(2, "  kind=   correlation= ").tokens,
            (std::vector<Token>{Token::kind_eq, Token::correlation_eq}));
  EXPECT_EQ(ScanPlan::from_idx(1, "limit").tokens, std::vector<Token>{Token::limit});
}

TEST(ScanPlanIdx, AnUnknownTokenIsAnError) {
  EXPECT_THROW(ScanPlan::from_idx(1, "kind= kind=="), Error);
  EXPECT_THROW(ScanPlan::from_idx(1, "kin"), Error);
}

}  // namespace
}  // namespace nsystrace
