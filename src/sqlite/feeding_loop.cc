#include "src/sqlite/feeding_loop.h"

#include <algorithm>
#include <map>

namespace nsystrace {

namespace {

// Opcodes whose P2 is an address the program may jump back to: a loop's back edge, or a subroutine called from it.
bool may_jump_back(const std::string& opcode) {
  static const char* const kOpcodes[] = {"Goto", "Gosub", "Next", "Prev", "VNext", "SorterNext", "NextIfOpen",
                                         "PrevIfOpen"};
  return std::any_of(std::begin(kOpcodes), std::end(kOpcodes), [&](const char* o) { return opcode == o; });
}

bool calls(const Instruction& in, std::string_view aggregate, int64_t argc) {
  if (in.opcode != "AggStep" && in.opcode != "AggStep1") return false;
  // P4 shows the function as name(nArg as registered); P5 is the call's argument count.
  return in.p5 == argc && in.p4.size() > aggregate.size() && in.p4.compare(0, aggregate.size(), aggregate) == 0 &&
         in.p4[aggregate.size()] == '(';
}

// Opcodes that move or read a virtual-table cursor (P1).
bool on_vtab_cursor(const std::string& opcode) {
  return opcode == "VFilter" || opcode == "VNext" || opcode == "VColumn" || opcode == "VOpen" || opcode == "Rowid";
}

// One program (the statement's, or a trigger's): addresses are places in `ops`.
void check_program(const std::vector<Instruction>& ops, std::string_view aggregate, int64_t argc,
                   std::string_view scan_vtab, const std::vector<std::string>& other_vtabs, FeedingCheck& check) {
  enum class Table { scanned, other_ours };
  std::map<int64_t, Table> cursors;  // the extension's cursors
  std::map<int64_t, size_t> filter_at, next_at;
  std::map<int64_t, int> filters, nexts;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Instruction& in = ops[i];
    if (in.opcode == "VOpen") {
      if (in.p4 == scan_vtab) cursors[in.p1] = Table::scanned;
      else if (std::find(other_vtabs.begin(), other_vtabs.end(), in.p4) != other_vtabs.end())
        cursors[in.p1] = Table::other_ours;
    }
    if (in.opcode == "VFilter") filter_at[in.p1] = i, ++filters[in.p1];
    if (in.opcode == "VNext") next_at[in.p1] = i, ++nexts[in.p1];
  }
  auto plan_of = [&](int64_t c) { return filter_at.count(c) ? ops[filter_at[c]].p4 : std::string(); };
  for (size_t step = 0; step < ops.size(); ++step) {
    if (!calls(ops[step], aggregate, argc)) continue;
    check.has_aggregate = true;
    std::vector<int64_t> enclosing;
    for (const auto& [c, table] : cursors)
      if (table == Table::scanned && filters[c] == 1 && nexts[c] == 1 && filter_at[c] < step && step < next_at[c])
        enclosing.push_back(c);
    if (enclosing.empty()) {
      check.why_not = "its rows reach it after the trace_events scan, not straight from it: they are sorted, grouped, "
                      "windowed, materialized, or come from a subquery or another table";
      return;
    }
    if (enclosing.size() > 1) {
      check.why_not = "it is fed inside a join of trace_events with itself, which repeats rows";
      return;
    }
    const int64_t c = enclosing.front();
    const size_t filter = filter_at[c], next = next_at[c];
    for (size_t j = step + 1; j < next; ++j)
      if (may_jump_back(ops[j].opcode) && ops[j].p2 > static_cast<int64_t>(filter) &&
          ops[j].p2 <= static_cast<int64_t>(step)) {
        check.why_not = "a loop inside the scan's (a join, a subquery read row by row) repeats the rows it is fed";
        return;
      }
    for (size_t j = 0; j < ops.size(); ++j)
      if ((j < filter || j > next) && may_jump_back(ops[j].opcode) && ops[j].p2 > static_cast<int64_t>(filter) &&
          ops[j].p2 < static_cast<int64_t>(next)) {
        check.why_not = "SQLite enters the scan's loop from elsewhere in the statement";
        return;
      }
    // A loop around C's (a join with another table, an EXISTS that SQLite turned into one) steps the aggregate with
    // rows that are not C's, unless the aggregate is finished within each of its turns (a correlated subquery
    // evaluated per row: its AggFinal inside the loop too). The statement's trailer (after Halt: Transaction, and the
    // Goto back to the start) is no loop.
    size_t trailer = ops.size();
    for (size_t j = next; j < ops.size(); ++j)
      if (ops[j].opcode == "Halt") {
        trailer = j;
        break;
      }
    std::vector<size_t> finals;
    for (size_t j = 0; j < ops.size(); ++j)
      if (ops[j].opcode == "AggFinal" && ops[j].p1 == ops[step].p3) finals.push_back(j);
    for (size_t j = next + 1; j < trailer; ++j) {
      const Instruction& in = ops[j];
      if (in.opcode == "Gosub" || !may_jump_back(in.opcode) || in.p2 > static_cast<int64_t>(filter)) continue;
      const size_t target = static_cast<size_t>(std::max<int64_t>(in.p2, 0));
      bool finished_inside =
          std::any_of(finals.begin(), finals.end(), [&](size_t f) { return f > next && f >= target && f < j; });
      if (!finished_inside) {
        check.why_not = "a loop around the trace_events scan (a join, an EXISTS that SQLite made a join) steps it "
                        "with rows that are not the scan's";
        return;
      }
    }
    // Between the row and its step, nothing may move another cursor that the aggregate could take for C.
    bool others_exist = std::any_of(cursors.begin(), cursors.end(), [&](const auto& e) {
      return e.first != c && (e.second == Table::other_ours || plan_of(e.first) == plan_of(c));
    });
    for (size_t j = filter + 1; j < step; ++j) {
      const Instruction& in = ops[j];
      auto it = cursors.find(in.p1);
      bool disturbs = (on_vtab_cursor(in.opcode) && it != cursors.end() && in.p1 != c &&
                       (it->second == Table::other_ours || plan_of(in.p1) == plan_of(c))) ||
                      ((in.opcode == "Gosub" || in.opcode == "Program") && others_exist);
      if (disturbs) {
        check.why_not = "another scan of trace_events with the same constraints, or of event_totals or "
                        "nvtx_kernel_ranges, runs for each row before it reaches the aggregate";
        return;
      }
    }
    check.scan_plans.push_back(plan_of(c));
  }
}

}  // namespace

FeedingCheck feeding_check(const std::vector<Instruction>& listing, std::string_view aggregate, int64_t argc,
                           std::string_view scan_vtab, const std::vector<std::string>& other_vtabs) {
  FeedingCheck check;
  // EXPLAIN lists the statement's program, then each trigger program it may run, each from address 0.
  std::vector<Instruction> program;
  auto check_one = [&] {
    if (check.why_not.empty()) check_program(program, aggregate, argc, scan_vtab, other_vtabs, check);
    program.clear();
  };
  for (const Instruction& in : listing) {
    if (in.addr == 0 && !program.empty()) check_one();
    program.push_back(in);
  }
  check_one();
  check.straight = check.has_aggregate && check.why_not.empty();
  return check;
}

}  // namespace nsystrace
