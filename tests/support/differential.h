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

// Adds a covering index on (start, end) (or (timestamp)) to every event table of main, as tools users run do.
void add_covering_indexes(testdb::Db& db);

}  // namespace testdiff
