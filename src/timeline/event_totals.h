// event_totals: trace_events' rows totalled per (report, kind, name, domain) in one pass, without handing SQLite a
// row per event. It is what `select kind, name, domain, count(*), count(dur), sum(dur), min(dur), max(dur) from
// trace_events group by schema, kind, name, domain` gives, for the per-name totals recipes and diffs start from:
// SQLite's GROUP BY over a virtual table sorts every row (x200's 3.8 M NVTX ranges: 2 s of sorting), where these
// totals hash them as the scan passes. The rows are the scan's: the same readers, names, domains and durations.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/timeline/scan_plan.h"
#include "src/timeline/timeline_scan.h"

namespace nsystrace {

// The columns of event_totals, in declaration order: X(name, SQL type, the trace_events column a constraint on it
// is a constraint on, or none). kind, name, schema and derived are the group's and its rows' alike, so the scan
// applies their constraints to the rows (the groups it gives are then exactly the groups that pass); the others
// are the totals', which SQLite applies.
#define NSYSTRACE_EVENT_TOTALS_COLUMNS(X)         \
  X(kind, "TEXT", Column::kind)                   \
  X(name, "TEXT", Column::name)                   \
  X(domain, "TEXT", Column::domain)               \
  X(events, "INTEGER", std::nullopt)              \
  X(timed, "INTEGER", std::nullopt)               \
  X(total_ns, "INTEGER", std::nullopt)            \
  X(min_ns, "INTEGER", std::nullopt)              \
  X(max_ns, "INTEGER", std::nullopt)              \
  X(schema, "TEXT HIDDEN", Column::schema)        \
  X(derived, "INTEGER HIDDEN", Column::derived)

enum class TotalsColumn : int {
#define NSYSTRACE_TOTALS_ENUM(name, type, row_column) name,
  NSYSTRACE_EVENT_TOTALS_COLUMNS(NSYSTRACE_TOTALS_ENUM)
#undef NSYSTRACE_TOTALS_ENUM
};
// "CREATE TABLE x(kind TEXT, ...)", for sqlite3_declare_vtab.
const char* event_totals_declaration();
// The trace_events column whose constraints a constraint on this column is, or nothing (SQLite applies it).
std::optional<Column> row_column_of(TotalsColumn c);

// The plan of an event_totals scan: trace_events' planner (plan_scan) given the constraints on the columns a group
// shares with its rows, without a LIMIT (it counts groups, not rows) and with the rows in any order (the totals do
// not depend on it).
ScanPlan plan_totals(std::vector<OfferedConstraint> offered);

class EventTotals {
 public:
  struct Group {
    int report = 0;                  // TraceRow::report
    Kind kind = Kind::nvtx;
    std::string_view name;           // owned by the EventTotals
    const std::string* domain = nullptr;  // owned by the EventTotals; null: no domain (the column's NULL)
    int64_t events = 0;              // rows
    int64_t timed = 0;               // rows with a dur (not NVTX marks, not samples)
    int64_t total_ns = 0;            // the sum of their durs; meaningful when timed > 0 and !overflowed
    int64_t min_ns = 0, max_ns = 0;  // when timed > 0
    bool overflowed = false;         // total_ns went past int64 (SQLite's sum() fails with "integer overflow")
  };

  // Adds the scan's current row.
  void add(const TraceRow& row);
  // The groups in the order their first row came (the scan's order: the same on every run and thread count).
  const std::vector<Group>& groups() const { return groups_; }
  // About the memory the groups take (their names, the table, the groups), to bound it: past a budget the caller
  // lets SQLite group the rows instead (event_totals' totals_memory_mb), whose sort spills to disk.
  size_t bytes() const { return bytes_; }

 private:
  // An open-addressing table of the groups (linear probing, a power of two of slots, at most half full): one
  // probe is usually one cache line, where std::unordered_map's nodes cost a pointer chase per row.
  struct Slot {
    uint64_t hash = 0;
    uint32_t group = kEmpty;
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static uint64_t hash_of(int report, Kind kind, std::string_view name, const std::string* domain);
  void grow();
  const std::string* canonical_domain(const std::string* domain);

  std::vector<Group> groups_;
  size_t bytes_ = 0;
  std::vector<Slot> slots_;
  // Each group's name, packed in blocks that never move (a std::string per group cost 50 more bytes a group: a
  // profile whose every NVTX range has a name of its own, PyTorch's "seq = N", has as many groups as ranges).
  std::string_view keep_name(std::string_view name);
  std::vector<std::unique_ptr<char[]>> name_blocks_;
  size_t block_left_ = 0;
  char* block_next_ = nullptr;
  // Domain texts: the catalog's pointer -> the canonical copy of its text (two processes' "NCCL" are one domain).
  std::unordered_map<const std::string*, const std::string*> domain_of_pointer_;
  std::unordered_map<std::string_view, const std::string*> domain_of_text_;
  std::deque<std::string> domains_;
  const std::string* last_domain_ = nullptr;
  const std::string* last_canonical_ = nullptr;
};

}  // namespace nsystrace
