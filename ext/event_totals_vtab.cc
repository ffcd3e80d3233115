// event_totals: an eponymous, read-only virtual table with one row per (report, kind, name, domain) of trace_events:
// its rows, the rows with a duration, and the sum, least and greatest of their durations (src/timeline/
// event_totals.h). The totals are made at xFilter, in one scan of the rows the constraints on kind, name, schema and
// derived leave (trace_events' planner and scan), then handed over; SQLite applies every other constraint. When the
// groups outgrow nsystrace_option('totals_memory_mb'), they come from SQLite's GROUP BY over trace_events instead
// (the same rows: it sorts them, on disk if need be), stepped as SQLite reads them.
#include <fmt/format.h>

#include "ext/vtab_support.h"
#include "src/timeline/event_totals.h"

namespace nsystrace {
namespace {

// The groups by SQLite, for the rows of a scan's filter: for each of its reports (schemas) and kinds (the
// constraints the scan omits SQLite's check of; a name constraint is re-checked by SQLite on the groups), a GROUP BY
// name, domain over trace_events (main's: the eponymous table, whatever a temp object is called), stepped as SQLite
// reads it. One (report, kind) at a time: a GROUP BY that also names schema and kind sorts about twice as slowly.
// The sum of the durations comes in two halves (dur >> 32 and dur & 0xffffffff, neither of which can overflow), so
// that a sum past int64 fails only when total_ns is read, as from the hashed groups.
class GroupsBySqlite {
 public:
  GroupsBySqlite(sqlite3* db, const ScanFilter& filter)
      : groups_(db, "SELECT name, domain, count(*), count(dur), sum(dur >> 32), sum(dur & 4294967295), min(dur), "
                    "max(dur) FROM main.trace_events WHERE schema = ?1 AND kind = ?2 AND derived IN (0, 1) "
                    "GROUP BY name, domain") {
    for (const std::string& schema : filter.schemas)
      for (int k = 0; k < kKindCount; ++k)
        if (filter.wants(static_cast<Kind>(k))) pairs_.emplace_back(schema, static_cast<Kind>(k));
    next();
  }
  // Moves to the next group; false past the last.
  bool next() {
    on_row_ = false;  // (a failed step ends the rows)
    for (;;) {
      if (started_ && groups_.step()) return on_row_ = true;
      if (pair_ == pairs_.size()) return on_row_ = false;
      groups_.reset();
      groups_.bind(1, pairs_[pair_].first);
      groups_.bind(2, std::string_view(kind_name(pairs_[pair_].second)));
      ++pair_;
      started_ = true;
    }
  }
  bool on_row() const { return on_row_; }
  const std::string& schema() const { return pairs_[pair_ - 1].first; }
  Kind kind() const { return pairs_[pair_ - 1].second; }
  sqlite3_stmt* row() const { return groups_.get(); }  // name, domain, events, timed, two halves, min, max

 private:
  Statement groups_;
  std::vector<std::pair<std::string, Kind>> pairs_;
  size_t pair_ = 0;
  bool started_ = false, on_row_ = false;
};

struct TotalsCursor {
  sqlite3_vtab_cursor base;  // must stay first
  StatementCache statements;  // the scan's readers' (declared first: outlives the scan)
  bool reports_listed = false;
  ConnectionReports reports;
  std::vector<FilterArgument> arguments;
  std::unique_ptr<EventTotals> totals;
  std::vector<std::string> schemas;  // by report number, for the schema column
  size_t position = 0;
  // Past the memory budget: the groups as SQLite's GROUP BY gives them, one (report, kind) after the other.
  std::unique_ptr<GroupsBySqlite> by_sqlite;
};

int x_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  return connect_vtab(db, aux, event_totals_declaration(), out);
}

int x_best_index(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  return guarded(vtab, [&] {
    std::optional<int64_t> limit_value;  // (a LIMIT counts groups: the scan never takes it)
    ScanPlan plan = plan_totals(offered_constraints(info, &limit_value));
    return hand_plan_to_sqlite(plan, info);
  });
}

int x_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* cursor = new (std::nothrow) TotalsCursor();
  if (cursor == nullptr) return SQLITE_NOMEM;
  *out = &cursor->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* base) {
  delete reinterpret_cast<TotalsCursor*>(base);
  return SQLITE_OK;
}

int x_filter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* cursor = reinterpret_cast<TotalsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  cursor->totals.reset();
  cursor->position = 0;
  cursor->by_sqlite.reset();
  return interrupted_as_such(&vtab->base, vtab->state->db(), guarded(base->pVtab, [&] {
    ConnectionState* state = vtab->state;
    try {
      ScanPlan plan = ScanPlan::from_idx(idx_num, idx_str);
      read_filter_arguments(cursor->arguments, plan, argc, argv);
      std::unique_ptr<TimelineScan> scan = open_planned_scan(*state, plan, cursor->arguments, cursor->reports_listed,
                                                             cursor->reports, cursor->statements, nullptr);
      auto totals = std::make_unique<EventTotals>();
      // The whole scan runs in this call, so it checks now and then that the statement was not interrupted
      // (sqlite3_interrupt, Ctrl-C); interrupted_as_such() reports it as SQLite does.
      const uint64_t budget = static_cast<uint64_t>(state->totals_memory_mb) << 20;
      for (uint64_t n = 1; !scan->eof(); scan->next(), ++n) {
        totals->add(scan->row());
        if (totals->bytes() > budget) {  // SQLite groups them instead, in bounded memory
          ScanFilter filter = scan->filter();
          scan.reset();
          totals.reset();
          cursor->by_sqlite = std::make_unique<GroupsBySqlite>(state->db(), filter);
          return SQLITE_OK;
        }
        if (n % 4096 == 0 && is_interrupted(state->db())) throw Interrupted("nsystrace: event_totals: interrupted");
      }
      cursor->schemas.clear();
      for (const TimelineScan::Report& r : scan->reports()) {
        if (cursor->schemas.size() <= static_cast<size_t>(r.context.index))
          cursor->schemas.resize(static_cast<size_t>(r.context.index) + 1);
        cursor->schemas[static_cast<size_t>(r.context.index)] = r.context.schema;
      }
      cursor->totals = std::move(totals);
    } catch (const Error& e) {
      rethrow_naming_the_profile(state->db(), e);
    }
    return SQLITE_OK;
  }));
}

int x_next(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TotalsCursor*>(base);
  ++cursor->position;
  if (!cursor->by_sqlite) return SQLITE_OK;
  sqlite3* db = reinterpret_cast<ConnectionVtab*>(base->pVtab)->state->db();
  return interrupted_as_such(base->pVtab, db, guarded(base->pVtab, [&] {
    cursor->by_sqlite->next();
    return SQLITE_OK;
  }));
}

int x_eof(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TotalsCursor*>(base);
  if (cursor->by_sqlite) return !cursor->by_sqlite->on_row();
  return !cursor->totals || cursor->position >= cursor->totals->groups().size();
}

// A column of the current group as SQLite's GROUP BY gave it (GroupsBySqlite).
int column_by_sqlite(const GroupsBySqlite& groups, sqlite3_context* ctx, TotalsColumn column) {
  sqlite3_stmt* row = groups.row();
  auto pass = [&](int i) { sqlite3_result_value(ctx, sqlite3_column_value(row, i)); };
  switch (column) {
    case TotalsColumn::schema: result_text(ctx, groups.schema()); break;
    case TotalsColumn::kind: sqlite3_result_text(ctx, kind_name(groups.kind()), -1, SQLITE_STATIC); break;
    case TotalsColumn::name: pass(0); break;
    case TotalsColumn::domain: pass(1); break;
    case TotalsColumn::events: pass(2); break;
    case TotalsColumn::timed: pass(3); break;
    case TotalsColumn::total_ns: {
      if (sqlite3_column_int64(row, 3) == 0) break;  // no duration: NULL, as sum()
      __int128 total = static_cast<__int128>(sqlite3_column_int64(row, 4)) * (int64_t{1} << 32) +
                       sqlite3_column_int64(row, 5);
      if (total > INT64_MAX || total < INT64_MIN) {
        sqlite3_result_error(ctx, "integer overflow", -1);
        return SQLITE_ERROR;
      }
      sqlite3_result_int64(ctx, static_cast<int64_t>(total));
      break;
    }
    case TotalsColumn::min_ns: pass(6); break;
    case TotalsColumn::max_ns: pass(7); break;
    case TotalsColumn::derived: sqlite3_result_int(ctx, is_derived(groups.kind())); break;
  }
  return SQLITE_OK;
}

int x_column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = reinterpret_cast<TotalsCursor*>(base);
  if (cursor->by_sqlite) return column_by_sqlite(*cursor->by_sqlite, ctx, static_cast<TotalsColumn>(column));
  const EventTotals::Group& g = cursor->totals->groups()[cursor->position];
  switch (static_cast<TotalsColumn>(column)) {
    case TotalsColumn::kind: sqlite3_result_text(ctx, kind_name(g.kind), -1, SQLITE_STATIC); break;
    case TotalsColumn::name: result_text(ctx, g.name); break;
    case TotalsColumn::domain: if (g.domain) result_text(ctx, *g.domain); break;
    case TotalsColumn::events: sqlite3_result_int64(ctx, g.events); break;
    case TotalsColumn::timed: sqlite3_result_int64(ctx, g.timed); break;
    case TotalsColumn::total_ns:
      if (g.overflowed) {  // as SQLite's sum() over the same rows
        sqlite3_result_error(ctx, "integer overflow", -1);
        return SQLITE_ERROR;
      }
      if (g.timed > 0) sqlite3_result_int64(ctx, g.total_ns);
      break;
    case TotalsColumn::min_ns: if (g.timed > 0) sqlite3_result_int64(ctx, g.min_ns); break;
    case TotalsColumn::max_ns: if (g.timed > 0) sqlite3_result_int64(ctx, g.max_ns); break;
    case TotalsColumn::schema: result_text(ctx, cursor->schemas[static_cast<size_t>(g.report)]); break;
    case TotalsColumn::derived: sqlite3_result_int(ctx, is_derived(g.kind)); break;
  }
  return SQLITE_OK;
}

int x_rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<TotalsCursor*>(base)->position) + 1;
  return SQLITE_OK;
}

const sqlite3_module kModule =
    read_only_eponymous_module(x_connect, x_best_index, x_open, x_close, x_filter, x_next, x_eof, x_column, x_rowid);

}  // namespace

int register_event_totals(sqlite3* db, ConnectionState* state, std::string* error) {
  int rc = sqlite3_create_module_v2(db, "event_totals", &kModule, state, nullptr);
  if (rc != SQLITE_OK) *error = "cannot register event_totals";
  return rc;
}

}  // namespace nsystrace
