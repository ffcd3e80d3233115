#include "src/timeline/scan_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {

using Op = OfferedConstraint::Op;

constexpr const char* kTokenTexts[] = {
    "kind=",        "kind!=",         "kind_in",       "ts=",           "ts>",           "ts>=",
    "ts<",          "ts<=",           "pid=",          "name=",         "name_in",       "name_like",
    "name_glob",    "correlation=",   "correlation_in", "global_tid=",  "global_tid_in", "global_pid=",
    "global_pid_in", "schema=",       "schema_in",     "derived=",      "derived_in",    "limit"};
static_assert(std::size(kTokenTexts) == static_cast<size_t>(Token::limit) + 1, "one text per token");

constexpr int kFeedsGroups = 1 << 30;

bool is(int column, Column c) { return column == static_cast<int>(c); }

// The token the scan applies a constraint with, or nothing: then SQLite applies it.
std::optional<Token> token_for(const OfferedConstraint& c) {
  bool in = c.whole_in_list;
  if (c.op == Op::eq) {
    // Text equality only under BINARY, the comparison the scan makes; the integer keys compare the same under any.
    if (is(c.column, Column::kind)) return c.binary ? std::optional(in ? Token::kind_in : Token::kind_eq) : std::nullopt;
    if (is(c.column, Column::name)) return c.binary ? std::optional(in ? Token::name_in : Token::name_eq) : std::nullopt;
    if (is(c.column, Column::schema)) return c.binary ? std::optional(in ? Token::schema_in : Token::schema_eq) : std::nullopt;
    if (is(c.column, Column::derived)) return in ? Token::derived_in : Token::derived_eq;
    if (is(c.column, Column::correlation_id)) return in ? Token::correlation_in : Token::correlation_eq;
    if (is(c.column, Column::global_tid)) return in ? Token::global_tid_in : Token::global_tid_eq;
    if (is(c.column, Column::global_pid)) return in ? Token::global_pid_in : Token::global_pid_eq;
    if (in) return std::nullopt;  // SQLite would rescan once per value: a full scan filtered by SQLite is cheaper
    if (is(c.column, Column::ts)) return Token::ts_eq;
    if (is(c.column, Column::pid)) return Token::pid_eq;
    return std::nullopt;
  }
  if (is(c.column, Column::kind) && c.op == Op::ne && c.binary) return Token::kind_ne;
  if (is(c.column, Column::name) && c.op == Op::like) return Token::name_like;
  if (is(c.column, Column::name) && c.op == Op::glob) return Token::name_glob;
  if (is(c.column, Column::ts)) {
    switch (c.op) {
      case Op::gt: return Token::ts_gt;
      case Op::ge: return Token::ts_ge;
      case Op::lt: return Token::ts_lt;
      case Op::le: return Token::ts_le;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

// The share of the rows a handed constraint leaves, for the cost SQLite compares plans by.
double selectivity(const OfferedConstraint& c) {
  if (is(c.column, Column::kind)) return c.op == Op::ne ? 0.9 : 0.2;
  if (is(c.column, Column::name)) return c.op == Op::eq ? 0.01 : 0.1;
  if (is(c.column, Column::ts)) return c.op == Op::eq ? 1e-6 : 0.3;
  if (is(c.column, Column::pid)) return 0.1;
  if (is(c.column, Column::correlation_id)) return 1e-5;  // a handful of rows: the inner loop of the launch join
  if (is(c.column, Column::global_tid)) return 0.01;
  if (is(c.column, Column::global_pid)) return 0.1;
  return 1.0;
}

uint64_t column_bit(Column c) {
  int i = static_cast<int>(c);
  return i < 63 ? uint64_t{1} << i : uint64_t{1} << 63;  // colUsed: bit 63 stands for every later column
}

}  // namespace

const char* trace_events_declaration() {
  static const std::string sql = [] {
    std::string s = "CREATE TABLE x(";
#define NSYSTRACE_COLUMN_SQL(name, type) s += #name " " type ", ";
    NSYSTRACE_TRACE_EVENTS_COLUMNS(NSYSTRACE_COLUMN_SQL)
#undef NSYSTRACE_COLUMN_SQL
    s.resize(s.size() - 2);
    return s + ")";
  }();
  return sql.c_str();
}

const char* token_text(Token t) { return kTokenTexts[static_cast<int>(t)]; }

bool is_list(Token t) {
  return t == Token::kind_in || t == Token::name_in || t == Token::correlation_in || t == Token::global_tid_in ||
         t == Token::global_pid_in || t == Token::schema_in || t == Token::derived_in;
}

bool on_integer_column(Token t) {
  switch (t) {
    case Token::kind_eq:
    case Token::kind_ne:
    case Token::kind_in:
    case Token::name_eq:
    case Token::name_in:
    case Token::name_like:
    case Token::name_glob:
    case Token::schema_eq:
    case Token::schema_in: return false;
    default: return true;
  }
}

std::optional<Token> token_from_text(std::string_view text) {
  for (size_t i = 0; i < std::size(kTokenTexts); ++i)
    if (text == kTokenTexts[i]) return static_cast<Token>(i);
  return std::nullopt;
}

std::string ScanPlan::idx_str() const {
  std::string s;
  for (Token t : tokens) s += (s.empty() ? "" : " ") + std::string(token_text(t));
  if (no_args) s += (s.empty() ? "" : " ") + std::string(kNoArgsWord);
  if (reads_placement) s += (s.empty() ? "" : " ") + std::string(kPlacementWord);
  for (const auto& [order, word] : kRowOrderWords)
    if (order == row_order) s += (s.empty() ? "" : " ") + std::string(word);
  return s;
}

int ScanPlan::idx_num() const {
  // The count of argv values in the low bits, as EXPLAIN QUERY PLAN has always shown it ("INDEX 2:kind= ts>").
  return static_cast<int>(tokens.size()) | (feeds_groups ? kFeedsGroups : 0);
}

ScanPlan ScanPlan::from_idx(int idx_num, const char* idx_str) {
  ScanPlan p;
  p.feeds_groups = (idx_num & kFeedsGroups) != 0;
  // Split on spaces by hand: xFilter parses this at every restart of a join's inner scan (an istringstream cost
  // a few percent of such a lookup).
  std::string_view words(idx_str ? idx_str : "");
  while (!words.empty()) {
    size_t end = words.find(' ');
    std::string_view word = words.substr(0, end);
    words.remove_prefix(end == std::string_view::npos ? words.size() : end + 1);
    if (word.empty()) continue;
    if (word == kNoArgsWord) {
      p.no_args = true;
      continue;
    }
    if (word == kPlacementWord) {
      p.reads_placement = true;
      continue;
    }
    auto order = std::find_if(std::begin(kRowOrderWords), std::end(kRowOrderWords),
                              [&](const auto& o) { return word == o.second; });
    if (order != std::end(kRowOrderWords)) {
      p.row_order = order->first;
      continue;
    }
    auto t = token_from_text(word);
    if (!t) throw Error("nsystrace: trace_events: unknown plan token '" + std::string(word) + "'");
    p.tokens.push_back(*t);
  }
  return p;
}

ScanPlan plan_scan(const std::vector<OfferedConstraint>& offered, const std::vector<OfferedOrder>& order_by,
                   int distinct, uint64_t columns_used, std::optional<int64_t> limit_value) {
  ScanPlan plan;
  plan.uses.resize(offered.size());
  bool every_constraint_handed = true, has_offset = false;
  // Columns whose values depend on the rows placed before (lanes; the names of a stream or a pid two processes share,
  // which the first placed names), and `event`, which hands the row to an aggregate that draws it on its lane.
  const uint64_t placement_ordered = column_bit(Column::lane) | column_bit(Column::thread_name) |
                                     column_bit(Column::process_name) | column_bit(Column::event);
  // A query that reads lanes or those names gets them as the whole profile places them (ScanFilter::keeps_placement).
  plan.reads_placement =
      (columns_used & (column_bit(Column::lane) | column_bit(Column::thread_name) | column_bit(Column::process_name))) != 0;
  int limit = -1;
  double fraction = 1.0;
  for (size_t i = 0; i < offered.size(); ++i) {
    const OfferedConstraint& c = offered[i];
    if (c.op == Op::offset) has_offset = true;
    if (c.op == Op::limit) {
      if (c.usable) limit = static_cast<int>(i);
      continue;
    }
    if (c.op == Op::offset) continue;
    std::optional<Token> token = c.usable ? token_for(c) : std::nullopt;
    if (!token) {
      every_constraint_handed = false;
      continue;
    }
    ScanPlan::Use& use = plan.uses[i];
    use.argv = static_cast<int>(plan.tokens.size()) + 1;
    use.whole_in_list = c.whole_in_list;
    // kind, schema and derived are matched exactly against the scan's own vocabulary: SQLite need not re-check.
    use.omit = is(c.column, Column::kind) || is(c.column, Column::schema) || is(c.column, Column::derived);
    plan.tokens.push_back(*token);
    fraction *= selectivity(c);
  }
  // The rows SQLite gets are the rows it returns only when it filters, sorts and skips nothing after the scan.
  if (limit >= 0 && every_constraint_handed && !has_offset && order_by.empty() && distinct == 0) {
    plan.uses[limit].argv = static_cast<int>(plan.tokens.size()) + 1;
    plan.tokens.push_back(Token::limit);
  }
  plan.feeds_groups = !order_by.empty() && distinct >= 1;
  plan.no_args = (columns_used & (column_bit(Column::args) | column_bit(Column::event))) == 0;
  // A GROUP BY (sqlite3_vtab_distinct() 1) takes its rows in any order: SQLite sorts them, unless the scan hands
  // them over grouped, in the terms' order (SQLite 3.40 also passes 1 for "GROUP BY x ORDER BY x" and then skips that
  // sort too), as it does for kind alone. Not when a column's value depends on the order rows are placed in.
  if (distinct == 1 && !order_by.empty() && (columns_used & placement_ordered) == 0) {
    if (order_by.size() == 1 && is(order_by[0].column, Column::kind))
      plan.row_order = order_by[0].descending ? RowOrder::kind_descending : RowOrder::kind_ascending;
    else
      plan.row_order = RowOrder::any;
  }
  // Costs: a fixed part (every scan prepares a statement per event table and merges them) and a part in proportion
  // to the rows the constraints leave, so SQLite prefers plans that push constraints (in joins too). The fixed part
  // is over half of the largest cost, so two scans always cost more than one: SQLite never answers an OR with one
  // scan per term (MULTI-INDEX OR), which would lay out lanes twice.
  constexpr double kRows = 1e6, kFixedCost = 1e6;
  double rows = kRows * fraction;
  if (limit >= 0 && plan.uses[limit].argv > 0 && limit_value && *limit_value >= 0)
    rows = std::min(rows, static_cast<double>(*limit_value));
  plan.estimated_rows = std::max(1.0, rows);
  plan.estimated_cost = kFixedCost + 0.99 * rows;
  return plan;
}

namespace {

// Applies one ts comparison to the inclusive bounds; a value the scan cannot compare exactly (text, blob) is left
// to SQLite (inexact: the scan reads every ts and takes no LIMIT).
void apply_ts(ScanFilter& f, Token op, const FilterValue& v) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;  // the inclusive range of integers satisfying "ts op v"
  if (v.numeric == FilterValue::Type::integer) {
    int64_t x = v.integer;
    if (op == Token::ts_eq) lo = hi = x;
    else if (op == Token::ts_gt) { if (x == INT64_MAX) f.impossible = true; else lo = x + 1; }
    else if (op == Token::ts_ge) lo = x;
    else if (op == Token::ts_lt) { if (x == INT64_MIN) f.impossible = true; else hi = x - 1; }
    else if (op == Token::ts_le) hi = x;
  } else if (v.numeric == FilterValue::Type::real) {
    double d = v.real;
    if (std::isnan(d)) return;
    auto clamp = [](double x) -> int64_t {  // x integral
      if (x >= 9223372036854775807.0) return INT64_MAX;
      if (x <= -9223372036854775808.0) return INT64_MIN;
      return static_cast<int64_t>(x);
    };
    if (op == Token::ts_eq) {
      if (std::floor(d) != d) { f.impossible = true; return; }
      lo = hi = clamp(d);
    } else if (op == Token::ts_gt || op == Token::ts_ge) {
      double b = op == Token::ts_gt ? std::floor(d) + 1 : std::ceil(d);
      if (b > 9223372036854775807.0) f.impossible = true; else lo = clamp(b);
    } else {
      double b = op == Token::ts_lt ? std::ceil(d) - 1 : std::floor(d);
      if (b < -9223372036854775808.0) f.impossible = true; else hi = clamp(b);
    }
  } else if (v.type == FilterValue::Type::null) {
    f.impossible = true;  // a comparison with NULL is never true
    return;
  } else {
    f.inexact = true;
    return;
  }
  if (lo != INT64_MIN) f.ts_min = f.ts_min ? std::max(*f.ts_min, lo) : lo;
  if (hi != INT64_MAX) f.ts_max = f.ts_max ? std::min(*f.ts_max, hi) : hi;
  if (f.ts_min && f.ts_max && *f.ts_min > *f.ts_max) f.impossible = true;
}

// The kind a constraint names; 0 for a value that names no kind: `kind` is TEXT, and a value equal to no kind's name
// (NULL, a number, a BLOB, 'kernels') matches no row. Typos are the command's to catch (it names what exists).
uint32_t kind_mask_of(const FilterValue& v) {
  if (v.type != FilterValue::Type::text) return 0;  // a number compared with TEXT is compared as its text, no kind's
  if (auto k = kind_from_name(v.text)) return kind_bit(*k);
  return 0;
}

// The integers of an = or IN constraint on an integer column, into `set` (intersected with what is there). NULL is
// never equal to anything; any other non-integer value is compared by SQLite's rules, so it is left to SQLite.
void apply_integer_set(ScanFilter& f, std::optional<std::vector<int64_t>>& set, const FilterArgument& arg) {
  std::vector<int64_t> values;
  for (const FilterValue& x : arg) {
    if (x.type == FilterValue::Type::integer) {
      values.push_back(x.integer);
    } else if (x.type != FilterValue::Type::null) {
      f.inexact = true;
      return;
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (set) {
    std::vector<int64_t> both;
    std::set_intersection(set->begin(), set->end(), values.begin(), values.end(), std::back_inserter(both));
    values = std::move(both);
  }
  set = std::move(values);
  if (set->empty()) f.impossible = true;
}

// `derived` = X (or an IN list): which of the two the scan yields (bit 0: stored rows, bit 1: derived). The column
// holds INTEGER 0 or 1, so X matches where SQLite's comparison makes it equal to 0 or 1 (1.0 and '1' do; 2, 0.5,
// 'x' and NULL match nothing).
int derived_mask_of(const FilterArgument& arg) {
  int mask = 0;
  for (const FilterValue& x : arg) {
    if (x.numeric == FilterValue::Type::integer && (x.integer == 0 || x.integer == 1)) mask |= 1 << x.integer;
    else if (x.numeric == FilterValue::Type::real && (x.real == 0.0 || x.real == 1.0)) mask |= 1 << static_cast<int>(x.real);
  }
  return mask;
}

}  // namespace

ScanFilter build_filter(const ScanPlan& plan, const std::vector<FilterArgument>& argv) {
  ScanFilter f;
  f.args = !plan.no_args;
  f.order = plan.row_order;
  int derived = 3;                  // which rows `derived` leaves (bit 0 stored, bit 1 derived)
  bool schema_fixed = false;
  for (size_t i = 0; i < plan.tokens.size() && i < argv.size(); ++i) {
    const FilterArgument& arg = argv[i];
    // An IN list with no members (`x IN (SELECT … WHERE 0)`) comes empty. Each list token below reads it as it reads
    // a list of NULLs: nothing it can equal, so no row. (Every other token has exactly one value.)
    static const FilterValue kNull;
    const FilterValue& v = arg.empty() ? kNull : arg.front();
    switch (plan.tokens[i]) {
      case Token::derived_eq:
      case Token::derived_in: derived &= derived_mask_of(arg); break;
      case Token::correlation_eq:
      case Token::correlation_in: apply_integer_set(f, f.correlations, arg); break;
      case Token::global_tid_eq:
      case Token::global_tid_in: apply_integer_set(f, f.global_tids, arg); break;
      case Token::global_pid_eq:
      case Token::global_pid_in: apply_integer_set(f, f.global_pids, arg); break;
      case Token::schema_eq:
      case Token::schema_in: {
        std::vector<std::string> wanted;
        for (const FilterValue& x : arg)  // compared as text (the column's affinity); NULL and a BLOB never equal
          if (x.type != FilterValue::Type::null && x.type != FilterValue::Type::blob) wanted.push_back(x.text);
        std::sort(wanted.begin(), wanted.end());
        wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
        if (!schema_fixed) {
          f.schemas = wanted;
        } else {  // schema = a AND schema IN (...): both hold
          std::vector<std::string> both;
          std::set_intersection(f.schemas.begin(), f.schemas.end(), wanted.begin(), wanted.end(),
                                std::back_inserter(both));
          f.schemas = both;
        }
        schema_fixed = f.schemas_named = true;
        if (f.schemas.empty()) f.impossible = true;
        break;
      }
      case Token::kind_eq: f.kinds &= kind_mask_of(v); break;
      case Token::kind_ne:
        if (v.type == FilterValue::Type::null) f.impossible = true;  // x != NULL is never true
        else f.kinds &= ~kind_mask_of(v);
        break;
      case Token::kind_in: {
        uint32_t mask = 0;
        for (const FilterValue& x : arg) mask |= kind_mask_of(x);
        f.kinds &= mask;
        break;
      }
      case Token::name_in: {
        std::vector<NameMatch> any;
        bool narrow = true;  // a non-text value is compared by SQLite's rules: then do not narrow
        for (const FilterValue& x : arg) {
          if (x.type == FilterValue::Type::text) any.push_back(NameMatch{NameMatch::Op::eq, x.text});
          else if (x.type != FilterValue::Type::null) narrow = false;  // (NULL is never equal to anything)
        }
        if (!narrow) f.inexact = true;
        else if (any.empty()) f.impossible = true;  // only NULLs
        else f.names.push_back(std::move(any));
        break;
      }
      case Token::name_eq:
      case Token::name_like:
      case Token::name_glob:
        if (v.type == FilterValue::Type::null) {
          f.impossible = true;  // name = NULL / LIKE NULL is never true
        } else if (v.type == FilterValue::Type::text) {
          NameMatch m;
          m.op = plan.tokens[i] == Token::name_eq     ? NameMatch::Op::eq
                 : plan.tokens[i] == Token::name_like ? NameMatch::Op::like
                                                      : NameMatch::Op::glob;
          m.pattern = v.text;
          f.names.push_back({std::move(m)});
        } else {
          f.inexact = true;  // a number or blob: compared by SQLite's rules, left to SQLite
        }
        break;
      case Token::limit:
        if (v.numeric == FilterValue::Type::integer && v.integer >= 0) f.limit = v.integer;
        break;
      case Token::pid_eq: {
        if (v.numeric != FilterValue::Type::integer) {
          if (v.type == FilterValue::Type::null) f.impossible = true;
          else f.inexact = true;
          break;
        }
        int64_t pid = v.integer;
        if (pid < 0 || pid >= (int64_t{1} << 31) || (f.pid && *f.pid != pid)) f.impossible = true;
        f.pid = pid;
        break;
      }
      case Token::ts_eq:
      case Token::ts_gt:
      case Token::ts_ge:
      case Token::ts_lt:
      case Token::ts_le: apply_ts(f, plan.tokens[i], v); break;
    }
  }
  if (!(derived & 1)) f.kinds &= kDerivedKinds;
  if (!(derived & 2)) f.kinds &= ~kDerivedKinds;
  if (f.kinds == 0) f.impossible = true;
  if (f.inexact) f.limit.reset();  // a row the scan returns might still be dropped by SQLite: it must not count
  return f;
}

}  // namespace nsystrace
