// Whether a statement feeds the rows of a virtual-table scan straight into an aggregate, read from the statement's
// own bytecode (EXPLAIN): the ground truth of what SQLite runs, whatever the SQL looks like and whichever release
// planned it. The trace aggregates' (*) forms take no argument naming their row: they draw the current row of the
// trace_events scan, which is the row they aggregate only in this shape (ext/chrome_trace_function.cc).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsystrace {

// One row of EXPLAIN's output. `addr` restarts at 0 for each trigger program listed after the statement's own.
struct Instruction {
  int64_t addr = 0;
  std::string opcode;
  int64_t p1 = 0, p2 = 0, p3 = 0;
  std::string p4;
  int64_t p5 = 0;
};

struct FeedingCheck {
  bool has_aggregate = false;  // a program calls the aggregate with that many arguments
  bool straight = false;       // ... and only straight from a scan's loop (see feeding_check)
  std::string why_not;         // when it does not: what stands between, in the user's terms
  // The idxStr (VFilter's P4) of each scan that feeds it: the cursor stepped last among those with one of these
  // plans is the row being aggregated.
  std::vector<std::string> scan_plans;
};

// `aggregate`: the function's name; `argc`: the arguments of the call (AggStep's P5); `scan_vtab`: VOpen's P4 for
// the table whose rows are drawn ("vtab:<pointer>"); `other_vtabs`: P4s of the extension's other tables, whose
// cursors may open scans of that table of their own.
//
// Straight means, for every AggStep of the aggregate: exactly one loop over a cursor C of the scanned table encloses
// it (after VFilter C, before VNext C); no loop inside that body encloses it (a backward jump from after it: a join's
// inner loop, a subquery read per row), and nothing outside the body jumps into it; and between VFilter C and the
// AggStep nothing else can move a cursor with C's plan: no op on another cursor of the table with the same idxStr,
// none on the other tables, no subroutine call where those exist. Then each step aggregates C's current row, once,
// and C is the last cursor with its plan to have moved.
FeedingCheck feeding_check(const std::vector<Instruction>& listing, std::string_view aggregate, int64_t argc,
                           std::string_view scan_vtab, const std::vector<std::string>& other_vtabs);

}  // namespace nsystrace
