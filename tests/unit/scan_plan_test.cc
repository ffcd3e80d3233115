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
  plan.feeds_groups = true;
  ScanPlan back = ScanPlan::from_idx(plan.idx_num(), plan.idx_str().c_str());
  EXPECT_EQ(back.tokens, plan.tokens);
  EXPECT_TRUE(back.feeds_groups);
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
  // A constraint on schema or derived that the scan does not apply (here !=) is SQLite's.
  ScanPlan every = plan_totals({on(TotalsColumn::schema, Op::ne), on(TotalsColumn::derived, Op::ne)});
  EXPECT_TRUE(every.tokens.empty());
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

OfferedConstraint on(Column c, OfferedConstraint::Op op) {
  OfferedConstraint o;
  o.column = static_cast<int>(c);
  o.op = op;
  return o;
}

// A row's lane (and the name of a stream or pid two processes share) follows from the rows of its track placed before
// it. A query that reads them is still handed every constraint it can apply; its plan says that it reads them, so
// that the scan takes them from the whole profile's placement where its constraints drop rows of a track.
TEST(ScanPlanPlacement, AQueryReadingLanesIsStillHandedItsConstraints) {
  using Op = OfferedConstraint::Op;
  const std::vector<OfferedConstraint> offered = {on(Column::kind, Op::eq), on(Column::name, Op::eq),
                                                  on(Column::ts, Op::gt), on(Column::pid, Op::eq)};
  for (Column read : {Column::lane, Column::thread_name, Column::process_name}) {
    ScanPlan plan = plan_scan(offered, {}, 0, uint64_t{1} << static_cast<int>(read));
    for (size_t i = 0; i < offered.size(); ++i) EXPECT_GT(plan.uses[i].argv, 0) << i;
    EXPECT_TRUE(plan.reads_placement);
    EXPECT_TRUE(ScanPlan::from_idx(plan.idx_num(), plan.idx_str().c_str()).reads_placement);
  }
  EXPECT_FALSE(plan_scan(offered, {}, 0, uint64_t{1} << static_cast<int>(Column::name)).reads_placement);
}

// A value that names nothing selects nothing, as SQL's comparison says: never an error.
TEST(ScanPlanValues, AValueNoRowHasSelectsNoRow) {
  using Op = OfferedConstraint::Op;
  auto filter_of = [](Column c, FilterValue v) {
    ScanPlan plan = plan_scan({on(c, Op::eq)}, {}, 0, 0);
    return build_filter(plan, {FilterArgument{v}});
  };
  FilterValue no_kind;
  no_kind.type = no_kind.numeric = FilterValue::Type::text;
  no_kind.text = "kernels";
  EXPECT_TRUE(filter_of(Column::kind, no_kind).impossible);
  FilterValue two;
  two.type = two.numeric = FilterValue::Type::integer;
  two.integer = 2;
  EXPECT_TRUE(filter_of(Column::derived, two).impossible);
  FilterValue one_real;
  one_real.type = one_real.numeric = FilterValue::Type::real;
  one_real.real = 1.0;
  ScanFilter derived = filter_of(Column::derived, one_real);
  EXPECT_FALSE(derived.impossible);
  EXPECT_EQ(derived.kinds, kDerivedKinds);
  ScanFilter everything = build_filter(plan_scan({}, {}, 0, 0), {});
  EXPECT_EQ(everything.kinds, kAllKinds) << "stored and derived rows, with no constraint";
}

}  // namespace
}  // namespace nsystrace
