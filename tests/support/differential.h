// Differential checks of trace_events' pushdown, with generated values rather than hand-picked ones: for every
// column that can be pushed down and every distinct value it takes in the unfiltered scan (capped per column,
// spread over the values), the pushed-down scan (`x = v`) must give exactly the rows SQLite selects from the
// unfiltered scan (`+x = v`, here: the unfiltered rows materialized once, then filtered by SQLite).
// Also: rowids are unique and the unfiltered scan comes in time order.
#pragma once
#include <string>
#include <vector>

#include "tests/support/test_db.h"

namespace testdiff {

struct Report {
  std::vector<std::string> failures;  // one line per query that disagreed (or invariant broken)
  int queries = 0;                    // pushed-down queries compared
};

// values_per_column: the cap on distinct values tried per column.
Report check_pushdown(testdb::Db& db, size_t values_per_column);

// The generated grid of query shapes: every column of trace_events x every comparison operator (=, !=, <, <=, >, >=,
// IS, IS NOT, IN, NOT IN, BETWEEN, LIKE, GLOB, IS NULL, IS NOT NULL) x values taken from the profile (and NULL, a
// real, a text where the column is an integer), alone and with ORDER BY ... LIMIT, LIMIT/OFFSET; joins and
// subqueries over trace_events; every report of the connection (main and ATTACHed). Each query over trace_events
// must return exactly the rows the same query returns over the rows materialized once into a plain table, that is,
// SQLite's own answer. `stride` > 1 samples the grid: the shapes whose number is `phase` modulo `stride`.
Report check_query_grid(testdb::Db& db, size_t values_per_column, size_t stride = 1, size_t phase = 0);

// The hidden columns that args also carry (`domain`: args' "domain"; `demangled_name`: args' "demangled_name";
// `size_bytes`: args' "bytes"; `copy_kind`, `src_kind`, `dst_kind`, `mem_kind`: the args of those names)
// against args, on every row of every report (derived ones too): equal in one scan with args (`domain IS
// json_extract(args, '$.domain')`), a scan without args (the plan's no-args) gives the same values row by row, and
// no other kind has them. One line per disagreement; none when they agree.
std::vector<std::string> check_columns_args_carry(testdb::Db& db);

// The call_* columns (the CUDA API call of a row's correlation id in its process; src/timeline/launch_calls.h)
// against the join any query can write: every row of every report with a correlation id that is not a call itself,
// joined to the cuda_api rows of its correlation id and process, the earliest taken (by start, the longest, the
// name, then the rowid). The call's rowid, start, duration, name, pid, tid and global_tid must be those of call_id,
// call_ts, call_dur, call_name, call_pid, call_tid and call_global_tid; the rows without a call must have them
// NULL, and so must the calls.
std::vector<std::string> check_call_columns(testdb::Db& db);

// The zero-argument trace aggregates (chrome_trace(*), perfetto_trace(*)) over generated inputs: direct scans, LIMITs,
// nested and correlated subqueries (scalar in WHERE and in the select list, EXISTS), joins, UNION ALL, temp tables
// (alone, beside a subquery over trace_events, and while another statement of the connection is in the middle of a
// trace_events scan). For each, chrome_trace(*) over the input either draws exactly its rows (the trace's (name, ts)
// pairs, as a multiset, equal the input's) or refuses with an error naming the reliable forms; perfetto_trace(*)
// succeeds or refuses alike; and the typed form (chrome_trace(k.event)) draws exactly the rows wherever it is given
// the scan's rows directly. `accepted` / `refused` in the report's counts: both must be reached.
// With a share (stride > 1), the inputs i with i % stride == phase only, the direct scans and the other statement's
// scan always: the real exports share the inputs among them, as they share the query grid.
struct StarReport : Report {
  int accepted = 0, refused = 0;
};
StarReport check_star_forms(testdb::Db& db, size_t stride = 1, size_t phase = 0);

// Adds a covering index on (start, end) (or (timestamp)) to every event table of main, as tools users run do.
void add_covering_indexes(testdb::Db& db);

}  // namespace testdiff
