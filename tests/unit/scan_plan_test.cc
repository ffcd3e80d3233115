// The plan trace_events hands SQLite comes back to xFilter as idxNum and idxStr: ScanPlan::from_idx must give the
// same tokens and flags, for every token, whatever spacing idxStr has.
#include <gtest/gtest.h>

#include "src/timeline/event_totals.h"
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

// event_totals' plan: the constraints on a group's kind, name, schema and derived go to the scan as trace_events'
// (kind, schema and derived omitted, name re-checked by SQLite); those on the totals and the domain, and a LIMIT or
// OFFSET (they count groups), stay with SQLite; the rows come in any order, without args.
TEST(EventTotalsPlan, TheGroupsColumnsGoToTheScanTheTotalsStayWithSqlite) {
  using Op = OfferedConstraint::Op;
  auto on = [](TotalsColumn c, Op op) {
    OfferedConstraint o;
    o.column = static_cast<int>(c);
    o.op = op;
    return o;
  };
  std::vector<OfferedConstraint> offered = {
      on(TotalsColumn::kind, Op::eq),    on(TotalsColumn::name, Op::like),   on(TotalsColumn::timed, Op::gt),
      on(TotalsColumn::schema, Op::eq),  on(TotalsColumn::domain, Op::eq),   on(TotalsColumn::total_ns, Op::eq),
      on(TotalsColumn::derived, Op::eq), on(TotalsColumn::kind, Op::limit),  on(TotalsColumn::kind, Op::offset)};
  offered.push_back(OfferedConstraint{});  // the rowid (column -1), = : a group's position
  offered.back().op = Op::eq;
  ScanPlan plan = plan_totals(offered);
  ASSERT_EQ(plan.uses.size(), offered.size());
  auto handed = [&](size_t i) { return plan.uses[i].argv > 0; };
  EXPECT_TRUE(handed(0) && plan.uses[0].omit);
  EXPECT_TRUE(handed(1) && !plan.uses[1].omit);
  EXPECT_TRUE(handed(3) && plan.uses[3].omit);
  EXPECT_TRUE(handed(6) && plan.uses[6].omit);
  for (size_t i : {2, 4, 5, 7, 8, 9}) EXPECT_FALSE(handed(i)) << i;
  EXPECT_EQ(plan.tokens, (std::vector<Token>{Token::kind_eq, Token::name_like, Token::schema_eq, Token::derived_eq}));
  EXPECT_EQ(plan.row_order, RowOrder::any);
  EXPECT_TRUE(plan.no_args);
  ScanPlan back = ScanPlan::from_idx(plan.idx_num(), plan.idx_str().c_str());
  EXPECT_EQ(back.row_order, RowOrder::any);
  EXPECT_EQ(back.tokens, plan.tokens);
  // A constraint on schema or derived that the scan does not apply (here !=): every report, both kinds of rows,
  // and SQLite applies it. Selecting them (colUsed) changes nothing: main's stored rows.
  ScanPlan every = plan_totals({on(TotalsColumn::schema, Op::ne), on(TotalsColumn::derived, Op::ne)});
  EXPECT_TRUE(every.all_reports && every.all_derived);
  ScanPlan main_only = plan_totals({});
  EXPECT_FALSE(main_only.all_reports || main_only.all_derived);
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

namespace nsystrace {
namespace {

// derived and schema are parameters: which rows a scan yields follows the constraints SQLite shows it, never the
// select list (colUsed). No constraint: main's stored rows. = or IN the scan applies: those. Any other operator, or
// an = this plan cannot use: every row it could match (all_derived, all_reports), and SQLite applies it.
TEST(ScanPlanParameters, RowsFollowTheConstraintsNotTheSelectList) {
  using Op = OfferedConstraint::Op;
  auto on = [](Column c, Op op, bool usable = true) {
    OfferedConstraint o;
    o.column = static_cast<int>(c);
    o.op = op;
    o.usable = usable;
    o.binary = true;
    return o;
  };
  uint64_t every_column = ~uint64_t{0};
  ScanPlan selected = plan_scan({}, {}, 0, every_column);
  EXPECT_FALSE(selected.all_derived || selected.all_reports);
  for (Column c : {Column::derived, Column::schema}) {
    for (Op op : {Op::ne, Op::lt, Op::le, Op::gt, Op::ge, Op::like, Op::glob, Op::other}) {
      ScanPlan p = plan_scan({on(c, op)}, {}, 0, 0);
      EXPECT_EQ(c == Column::derived ? p.all_derived : p.all_reports, true) << static_cast<int>(op);
      EXPECT_EQ(p.uses[0].argv, 0) << "SQLite applies it";
    }
    ScanPlan unusable = plan_scan({on(c, Op::eq, false)}, {}, 0, 0);
    EXPECT_EQ(c == Column::derived ? unusable.all_derived : unusable.all_reports, true);
    ScanPlan fixed = plan_scan({on(c, Op::eq)}, {}, 0, every_column);
    EXPECT_FALSE(fixed.all_derived || fixed.all_reports);
    EXPECT_TRUE(fixed.uses[0].argv > 0 && fixed.uses[0].omit);
  }
  // A LIMIT is not a constraint on a column, whatever column SQLite numbers it with.
  ScanPlan limited = plan_scan({on(Column::derived, Op::limit)}, {}, 0, every_column);
  EXPECT_FALSE(limited.all_derived);
}

}  // namespace
}  // namespace nsystrace
