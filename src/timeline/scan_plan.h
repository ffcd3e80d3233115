// The query planner of trace_events, without SQLite: which constraints a scan applies itself (exactly), which it
// leaves to SQLite, whether it may take the LIMIT, and how the constraint values become a ScanFilter. ext/ only
// translates SQLite's sqlite3_index_info and sqlite3_value to and from these types.
//
// The rule that keeps every answer SQLite's: the table's rows are a function of the profile alone (every report on
// the connection, stored and derived rows), and a constraint is handed to the scan only when the scan applies it
// exactly, without changing any other row's values (reads_placement); everything else (an operator, a collation or a value the scan does not know) is left to SQLite, which
// then filters a wider scan. SQLite re-checks every handed constraint but kind, schema and derived (omit), which the
// scan matches exactly against its own fixed vocabulary. A LIMIT is taken only when nothing after the scan can drop
// or reorder rows: every constraint of the WHERE is handed and exact, there is no OFFSET, no ORDER BY, no DISTINCT.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/readers/event_sources.h"

namespace nsystrace {

// The columns of trace_events, in declaration order (the order of the CREATE TABLE and of xColumn's index):
// X(name, SQL type). Hidden columns carry what is not an event field (schema, derived, cname;
// domain and demangled_name, which args also carry, readable without them; the call_* columns, the CUDA API call of
// the row's correlation id (src/timeline/launch_calls.h); size_bytes (args' "bytes": not named `bytes`, which the
// export's memory tables have, so that a query joining them keeps an unqualified `bytes` unambiguous) and the memory
// kinds of memcpys, memsets and CUDA memory rows, which args also carry (MemoryFields); and `event`: the row handed to an aggregate by pointer, see
// kTraceRowPointerType). Hidden: `select *` and the contract's columns stay as they are.
#define NSYSTRACE_TRACE_EVENTS_COLUMNS(X) \
  X(kind, "TEXT")                         \
  X(name, "TEXT")                         \
  X(ts, "INTEGER")                        \
  X(dur, "INTEGER")                       \
  X(pid, "INTEGER")                       \
  X(tid, "INTEGER")                       \
  X(process_name, "TEXT")                 \
  X(thread_name, "TEXT")                  \
  X(device_id, "INTEGER")                 \
  X(stream_id, "INTEGER")                 \
  X(correlation_id, "INTEGER")            \
  X(global_tid, "INTEGER")                \
  X(args, "TEXT")                         \
  X(lane, "INTEGER")                      \
  X(global_pid, "INTEGER")                \
  X(schema, "TEXT HIDDEN")                \
  X(cname, "TEXT HIDDEN")                 \
  X(domain, "TEXT HIDDEN")                \
  X(demangled_name, "TEXT HIDDEN")        \
  X(nsys_dur, "INTEGER HIDDEN")           \
  X(call_id, "INTEGER HIDDEN")            \
  X(call_ts, "INTEGER HIDDEN")            \
  X(call_dur, "INTEGER HIDDEN")           \
  X(call_name, "TEXT HIDDEN")             \
  X(call_pid, "INTEGER HIDDEN")           \
  X(call_tid, "INTEGER HIDDEN")           \
  X(call_global_tid, "INTEGER HIDDEN")    \
  X(size_bytes, "INTEGER HIDDEN")         \
  X(copy_kind, "HIDDEN")                  \
  X(src_kind, "HIDDEN")                   \
  X(dst_kind, "HIDDEN")                   \
  X(mem_kind, "HIDDEN")                   \
  X(derived, "INTEGER HIDDEN")            \
  X(event, "HIDDEN")

enum class Column : int {
#define NSYSTRACE_COLUMN_ENUM(name, type) name,
  NSYSTRACE_TRACE_EVENTS_COLUMNS(NSYSTRACE_COLUMN_ENUM)
#undef NSYSTRACE_COLUMN_ENUM
};
// "CREATE TABLE x(kind TEXT, ...)", for sqlite3_declare_vtab.
const char* trace_events_declaration();

// The pointer type of trace_events.event (sqlite3_result_pointer): only the trace aggregates read it, and SQLite
// turns it into NULL wherever it copies, sorts or stores the value, so an aggregate can only see a row SQLite hands
// it directly from the scan.
constexpr const char* kTraceRowPointerType = "nsystrace_trace_row";

// One constraint SQLite offers (an entry of sqlite3_index_info.aConstraint).
struct OfferedConstraint {
  enum class Op { eq, ne, lt, le, gt, ge, like, glob, limit, offset, other };
  int column = -1;            // a Column, or -1 for the rowid
  Op op = Op::other;
  bool usable = true;
  bool binary = true;         // the comparison's collation is BINARY
  bool whole_in_list = false; // an IN list SQLite can hand over at once (sqlite3_vtab_in)
};

// What the scan does with one handed constraint: its token in idxStr (what EXPLAIN QUERY PLAN shows) and how
// xFilter reads its value.
enum class Token : uint8_t {
  kind_eq, kind_ne, kind_in, ts_eq, ts_gt, ts_ge, ts_lt, ts_le, pid_eq, name_eq, name_in, name_like, name_glob,
  correlation_eq, correlation_in, global_tid_eq, global_tid_in, global_pid_eq, global_pid_in, schema_eq, schema_in,
  derived_eq, derived_in, limit
};
const char* token_text(Token t);
// Whether xFilter gets the token's value as an IN list handed over whole (sqlite3_vtab_in).
bool is_list(Token t);
// Whether the token compares an INTEGER column (its value is given numeric affinity first), not a TEXT one.
bool on_integer_column(Token t);
constexpr const char* kNoArgsWord = "no-args";
constexpr const char* kPlacementWord = "profile-lanes";  // ScanPlan::reads_placement
// How idxStr shows a ScanPlan::row_order other than time order, after the tokens.
constexpr std::pair<RowOrder, const char*> kRowOrderWords[] = {
    {RowOrder::kind_ascending, "by-kind"}, {RowOrder::kind_descending, "by-kind-desc"}, {RowOrder::any, "any-order"}};
std::optional<Token> token_from_text(std::string_view text);

struct ScanPlan {
  struct Use {
    int argv = 0;          // 1-based position in xFilter's argv; 0: left to SQLite
    bool omit = false;     // SQLite need not re-check it
    bool whole_in_list = false;
  };
  std::vector<Use> uses;          // one per offered constraint
  std::vector<Token> tokens;      // in argv order
  bool feeds_groups = false;      // its rows feed a DISTINCT or GROUP BY: one row stands for a group
  // The query reads lane, thread_name or process_name: they are the whole profile's (ScanFilter::keeps_placement,
  // src/timeline/profile_placement.h), whatever the constraints leave out. Shown in idxStr as kPlacementWord.
  bool reads_placement = false;
  // The query names neither `args` nor `event` (colUsed): the scan need not read what only args show
  // (ScanFilter::args). Shown in idxStr as the word kNoArgsWord, after the tokens.
  bool no_args = false;
  // The rows feed a GROUP BY (sqlite3_vtab_distinct 1, its terms all columns) and the query names none of the
  // columns whose values depend on the order the rows are placed in (lane, thread_name, process_name, event): then
  // the rows need not come in time order (ScanFilter::order). A GROUP BY kind alone (with or without ORDER BY kind)
  // gets them kind by kind and SQLite needs no sort (idxStr's by-kind, by-kind-desc); any other gets each table as
  // stored, which SQLite sorts anyway (any-order). See kRowOrderWords.
  RowOrder row_order = RowOrder::time;
  double estimated_cost = 0, estimated_rows = 0;

  std::string idx_str() const;
  // idxNum: the flags above, so xFilter gets them back with the tokens.
  int idx_num() const;
  static ScanPlan from_idx(int idx_num, const char* idx_str);
};

// One ORDER BY term SQLite offers (an entry of sqlite3_index_info.aOrderBy).
struct OfferedOrder {
  int column = -1;
  bool descending = false;
};

// order_by: the ORDER BY (or GROUP BY) terms SQLite offers; distinct: sqlite3_vtab_distinct() (0: none);
// columns_used: sqlite3_index_info.colUsed; limit_value: a LIMIT known at plan time (a literal), for the row estimate
// only.
ScanPlan plan_scan(const std::vector<OfferedConstraint>& offered, const std::vector<OfferedOrder>& order_by,
                   int distinct, uint64_t columns_used, std::optional<int64_t> limit_value = std::nullopt);

// A constraint value as xFilter gets it, without SQLite: its storage type, and its value after SQLite's numeric
// conversion (sqlite3_value_numeric_type), which a comparison with an INTEGER column applies.
struct FilterValue {
  enum class Type { null, integer, real, text, blob };
  Type type = Type::null;      // as stored
  Type numeric = Type::null;   // after numeric affinity: integer, real, or still text/blob/null
  int64_t integer = 0;         // when numeric == integer
  double real = 0;             // when numeric == real
  std::string text;            // the value as text (for kind, name, schema and messages)
};
// The values of one handed constraint: one, or the members of an IN list handed over whole.
using FilterArgument = std::vector<FilterValue>;

// The ScanFilter a plan's constraint values give: exactly the rows SQLite's comparisons would keep, whatever the
// values (a kind that does not exist, derived = 2, NULL: no row). The reports are left to the caller (every report
// of the connection unless schema names some).
ScanFilter build_filter(const ScanPlan& plan, const std::vector<FilterArgument>& argv);

}  // namespace nsystrace
