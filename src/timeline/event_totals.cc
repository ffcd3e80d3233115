#include "src/timeline/event_totals.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "src/sqlite/statement.h"

namespace nsystrace {

const char* event_totals_declaration() {
  static const std::string sql = [] {
    std::string s = "CREATE TABLE x(";
#define NSYSTRACE_TOTALS_SQL(name, type, row_column) s += #name " " type ", ";
    NSYSTRACE_EVENT_TOTALS_COLUMNS(NSYSTRACE_TOTALS_SQL)
#undef NSYSTRACE_TOTALS_SQL
    s.resize(s.size() - 2);
    return s + ")";
  }();
  return sql.c_str();
}

std::optional<Column> row_column_of(TotalsColumn c) {
  switch (c) {
#define NSYSTRACE_TOTALS_ROW_COLUMN(name, type, row_column) \
  case TotalsColumn::name: return row_column;
    NSYSTRACE_EVENT_TOTALS_COLUMNS(NSYSTRACE_TOTALS_ROW_COLUMN)
#undef NSYSTRACE_TOTALS_ROW_COLUMN
  }
  return std::nullopt;
}

ScanPlan plan_totals(std::vector<OfferedConstraint> offered) {
  using Op = OfferedConstraint::Op;
  for (OfferedConstraint& c : offered) {
    if (c.op == Op::limit || c.op == Op::offset) c.usable = false;  // they count groups
    std::optional<Column> row_column;
    if (c.column >= 0) row_column = row_column_of(static_cast<TotalsColumn>(c.column));
    if (!row_column) c.usable = false;  // a total, or the rowid (a group's position): SQLite applies it
    c.column = row_column ? static_cast<int>(*row_column) : -1;
  }
  auto bit = [](auto column) { return uint64_t{1} << static_cast<int>(column); };
  // The rows' columns the totals read. Which rows (reports, derived) follows the constraints on schema and derived
  // alone, as over trace_events (plan_scan), never the select list.
  uint64_t row_columns = bit(Column::kind) | bit(Column::name) | bit(Column::dur) | bit(Column::domain);
  ScanPlan plan = plan_scan(offered, {}, 0, row_columns);
  plan.row_order = RowOrder::any;  // sums do not depend on the order; the groups' order is the scan's, any order's
  return plan;
}

uint64_t EventTotals::hash_of(int report, Kind kind, std::string_view name, const std::string* domain) {
  uint64_t h = std::hash<std::string_view>()(name) + (name.data() == nullptr);  // (NULL apart from '')
  h ^= (reinterpret_cast<uintptr_t>(domain) >> 4) * 0x9e3779b97f4a7c15ULL;
  h ^= ((static_cast<uint64_t>(report) << 8) | static_cast<uint64_t>(kind)) * 0xff51afd7ed558ccdULL;
  return h ^ (h >> 29);
}

void EventTotals::grow() {
  std::vector<Slot> bigger(slots_.empty() ? 1024 : slots_.size() * 2);
  const size_t mask = bigger.size() - 1;
  for (const Slot& slot : slots_) {
    if (slot.group == kEmpty) continue;
    size_t at = slot.hash & mask;
    while (bigger[at].group != kEmpty) at = (at + 1) & mask;
    bigger[at] = slot;
  }
  slots_ = std::move(bigger);
}

const std::string* EventTotals::canonical_domain(const std::string* domain) {
  if (domain == nullptr) return nullptr;
  if (domain == last_domain_) return last_canonical_;  // rows of one domain come together
  last_domain_ = domain;
  auto known = domain_of_pointer_.find(domain);
  if (known != domain_of_pointer_.end()) return last_canonical_ = known->second;
  auto by_text = domain_of_text_.find(*domain);
  const std::string* canonical;
  if (by_text != domain_of_text_.end()) {
    canonical = by_text->second;
  } else {
    canonical = &domains_.emplace_back(*domain);
    domain_of_text_.emplace(*canonical, canonical);
  }
  domain_of_pointer_.emplace(domain, canonical);
  return last_canonical_ = canonical;
}

std::string_view EventTotals::keep_name(std::string_view name) {
  constexpr size_t kBlock = size_t{1} << 20;
  // An empty name stays a text (SQLite's '', not NULL): only a view without data is the NULL name.
  static const char kEmptyText[] = "";
  if (name.data() == nullptr) return {};
  if (name.empty()) return std::string_view(kEmptyText, 0);
  if (name.size() > block_left_) {
    size_t size = std::max(kBlock, name.size());
    name_blocks_.push_back(std::make_unique<char[]>(size));
    block_next_ = name_blocks_.back().get();
    block_left_ = size;
  }
  std::memcpy(block_next_, name.data(), name.size());
  std::string_view kept(block_next_, name.size());
  block_next_ += name.size();
  block_left_ -= name.size();
  return kept;
}

void EventTotals::add(const TraceRow& row) {
  const std::string* domain = canonical_domain(row.domain);
  const uint64_t hash = hash_of(row.report, row.kind, row.name, domain);
  if (2 * (groups_.size() + 1) > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t at = hash & mask;
  for (;; at = (at + 1) & mask) {
    const Slot& slot = slots_[at];
    if (slot.group == kEmpty) break;
    if (slot.hash != hash) continue;
    const Group& g = groups_[slot.group];
    if (g.report == row.report && g.kind == row.kind && g.domain == domain && g.name == row.name &&
        (g.name.data() == nullptr) == (row.name.data() == nullptr))  // NULL and '' are two names
      break;
  }
  if (slots_[at].group == kEmpty) {
    if (groups_.size() >= kEmpty - 1) throw Error("nsystrace: event_totals: more than 2^32 - 2 groups");
    Group g;
    g.report = row.report;
    g.kind = row.kind;
    g.name = keep_name(row.name);  // the group's own copy
    g.domain = domain;
    slots_[at] = Slot{hash, static_cast<uint32_t>(groups_.size())};
    // (a group, twice while the vector grows, and two slots of a table at most half full)
    bytes_ += 2 * sizeof(Group) + 2 * sizeof(Slot) + row.name.size();
    groups_.push_back(g);
  }
  Group& g = groups_[slots_[at].group];

  ++g.events;
  if (!row.has_dur) return;
  if (g.timed++ == 0) {
    g.min_ns = g.max_ns = row.dur;
  } else {
    if (row.dur < g.min_ns) g.min_ns = row.dur;
    if (row.dur > g.max_ns) g.max_ns = row.dur;
  }
  if (!g.overflowed && __builtin_add_overflow(g.total_ns, row.dur, &g.total_ns)) g.overflowed = true;
}

}  // namespace nsystrace
