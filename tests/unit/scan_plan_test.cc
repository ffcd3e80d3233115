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

// A GROUP BY (sqlite3_vtab_distinct 1, its terms all columns) takes the rows in any order, unless the query names a
// column whose value depends on the order rows are placed in (lane, thread_name, process_name, event); kind alone is
// answered kind by kind, in the term's direction. Other shapes keep the time order. The choice comes back from idxStr.
TEST(ScanPlanRowOrder, OnlyAGroupByThatNamesNoPlacementOrderedColumn) {
  const int kind = static_cast<int>(Column::kind), name = static_cast<int>(Column::name);
  const uint64_t count_and_sum = (uint64_t{1} << kind) | (uint64_t{1} << static_cast<int>(Column::dur));
  auto order_of = [](int distinct, std::vector<OfferedOrder> terms, uint64_t used) {
    ScanPlan plan = plan_scan({}, terms, distinct, used);
    ScanPlan back = ScanPlan::from_idx(plan.idx_num(), plan.idx_str().c_str());
    EXPECT_EQ(back.row_order, plan.row_order) << plan.idx_str();
    return plan.row_order;
  };
  EXPECT_EQ(order_of(1, {{kind, false}}, count_and_sum), RowOrder::kind_ascending);
  EXPECT_EQ(order_of(1, {{kind, true}}, count_and_sum), RowOrder::kind_descending);
  EXPECT_EQ(order_of(1, {{name, false}}, count_and_sum), RowOrder::any);
  EXPECT_EQ(order_of(1, {{kind, false}, {name, false}}, count_and_sum), RowOrder::any);
  for (Column c : {Column::lane, Column::thread_name, Column::process_name, Column::event}) {
    EXPECT_EQ(order_of(1, {{kind, false}}, count_and_sum | (uint64_t{1} << static_cast<int>(c))), RowOrder::time);
    EXPECT_EQ(order_of(1, {{name, false}}, count_and_sum | (uint64_t{1} << static_cast<int>(c))), RowOrder::time);
  }
  EXPECT_EQ(order_of(0, {{kind, false}}, count_and_sum), RowOrder::time);  // ORDER BY kind: rows keep their order
  EXPECT_EQ(order_of(2, {{kind, false}}, count_and_sum), RowOrder::time);  // DISTINCT
  EXPECT_EQ(order_of(0, {}, count_and_sum), RowOrder::time);
  // A GROUP BY with a term SQLite cannot hand over (an expression): it offers no terms at all.
  EXPECT_EQ(order_of(1, {}, count_and_sum), RowOrder::time);
  EXPECT_EQ(build_filter(plan_scan({}, {{kind, true}}, 1, count_and_sum), {}).order, RowOrder::kind_descending);
  EXPECT_EQ(build_filter(plan_scan({}, {}, 0, count_and_sum), {}).order, RowOrder::time);
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
