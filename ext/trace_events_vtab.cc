// trace_events: an eponymous, read-only virtual table with one row per timeline event of the export. This file only
// translates between SQLite and the core: the columns and the planner (which constraints the scan applies, the
// LIMIT, the idxStr tokens that EXPLAIN QUERY PLAN shows) are src/timeline/scan_plan.h, the scan src/timeline/timeline_scan.h.
//
// The rows are those of every report on the connection (main and ATTACHed exports), stored (`derived` 0) and derived
// (1: nvtx_kernel); constraints only decide how much of that the scan reads (src/timeline/scan_plan.h).
// `event` hands the current row to the trace aggregates by pointer (kTraceRowPointerType).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>
#include <sstream>

#include "ext/vtab_support.h"
#include "src/timeline/scan_plan.h"
#include "src/sqlite/statement.h"

namespace nsystrace {
namespace {

int x_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  int rc = connect_vtab(db, aux, trace_events_declaration(), out);
  if (rc == SQLITE_OK) static_cast<ConnectionState*>(aux)->trace_events_vtab = *out;
  return rc;
}

// Translates sqlite3_index_info to the planner's terms (src/timeline/scan_plan.h) and its plan back.
int best_index(sqlite3_index_info* info) {
  std::optional<int64_t> limit_value;
  std::vector<OfferedConstraint> offered = offered_constraints(info, &limit_value);
  std::vector<OfferedOrder> order_by(info->nOrderBy);
  for (int i = 0; i < info->nOrderBy; ++i)
    order_by[i] = OfferedOrder{info->aOrderBy[i].iColumn, info->aOrderBy[i].desc != 0};
  ScanPlan plan = plan_scan(offered, order_by, sqlite3_vtab_distinct(info), static_cast<uint64_t>(info->colUsed),
                            limit_value);
  // Kind by kind, the rows come as the GROUP BY wants them.
  if (plan.row_order == RowOrder::kind_ascending || plan.row_order == RowOrder::kind_descending)
    info->orderByConsumed = 1;
  return hand_plan_to_sqlite(plan, info);
}

int x_best_index(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  return guarded(vtab, [&] { return best_index(info); });
}

int x_open(sqlite3_vtab* base, sqlite3_vtab_cursor** out) {
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base);
  auto* cursor = new (std::nothrow) TraceEventsCursor();
  if (cursor == nullptr) return SQLITE_NOMEM;
  try {
    vtab->state->add_cursor(cursor);
  } catch (const std::bad_alloc&) {
    delete cursor;
    return SQLITE_NOMEM;
  }
  std::swap(cursor->statements, vtab->state->idle_statements);  // the last closed cursor's, prepared
  *out = &cursor->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  vtab->state->remove_cursor(cursor);
  cursor->scan.reset();  // its statements back to the cursor's cache, reset
  if (vtab->state->has_cursors())
    std::swap(cursor->statements, vtab->state->idle_statements);  // for the next cursor; the older ones go
  else
    vtab->state->release_statements();  // the statement is done: the extension keeps none between statements
  delete cursor;
  return SQLITE_OK;
}

int x_disconnect(sqlite3_vtab* vtab) {
  ConnectionState* state = reinterpret_cast<ConnectionVtab*>(vtab)->state;
  state->release_statements();
  if (state->trace_events_vtab == vtab) state->trace_events_vtab = nullptr;
  return disconnect_vtab(vtab);
}

int x_filter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  // The cursor's last scan, restarted in place when the new filter allows (TimelineScan::restart: a join's inner
  // lookups), else dropped before the new one is built (its statements go back to the cache first).
  std::unique_ptr<TimelineScan> previous = std::move(cursor->scan);
  ++cursor->generation;
  cursor->advanced_at = vtab->state->tick();
  return interrupted_as_such(base->pVtab, vtab->state->db(), guarded(base->pVtab, [&] {
    ConnectionState* state = vtab->state;
    try {
      // A cursor is one loop of one statement's plan: parsed at its first xFilter (a join's inner scan has one at
      // every outer row), parsed again only if SQLite ever hands it another.
      if (!cursor->plan || cursor->plan_idx_num != idx_num || cursor->plan_idx_str != (idx_str ? idx_str : "")) {
        cursor->plan = std::make_unique<ScanPlan>(ScanPlan::from_idx(idx_num, idx_str));
        cursor->plan_idx_num = idx_num;
        cursor->plan_idx_str = idx_str ? idx_str : "";
      }
      const ScanPlan& plan = *cursor->plan;
      cursor->grouped = plan.feeds_groups;
      read_filter_arguments(cursor->arguments, plan, argc, argv);
      cursor->scan = open_planned_scan(*state, plan, cursor->arguments, cursor->reports_listed, cursor->reports,
                                       cursor->statements, std::move(previous));
    } catch (const Error& e) {
      rethrow_naming_the_profile(state->db(), e);
    }
    return SQLITE_OK;
  }));
}

int x_next(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  int rc = guarded(base->pVtab, [&] {
    try {
      cursor->advanced_at = vtab->state->tick();
      cursor->scan->next();
    } catch (const Error& e) {
      rethrow_naming_the_profile(vtab->state->db(), e);
    }
    return SQLITE_OK;
  });
  if (rc != SQLITE_OK) cursor->scan.reset();
  return interrupted_as_such(base->pVtab, vtab->state->db(), rc);
}

int x_eof(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  return !cursor->scan || cursor->scan->eof();
}

// The call_* columns: the CUDA API call of the row's correlation id in its process (src/timeline/launch_calls.h),
// NULL for the calls themselves and for rows without a correlation id or whose call is not in the profile.
void result_call_column(sqlite3_context* ctx, TraceEventsCursor& cursor, Column column) {
  const TraceRow& r = cursor.scan->row();
  if (!r.has_correlation || !r.has_global_tid || r.kind == Kind::cuda_api) return;
  const TimelineScan::Report& report = cursor.scan->reports()[r.report];
  if (cursor.launch_calls.size() <= static_cast<size_t>(r.report)) cursor.launch_calls.resize(r.report + 1);
  std::shared_ptr<const LaunchCalls>& calls = cursor.launch_calls[r.report];
  if (!calls) {
    auto* vtab = reinterpret_cast<ConnectionVtab*>(cursor.base.pVtab);
    try {
      calls = vtab->state->launch_calls(report.context.schema, report.context.clock_offset);
    } catch (const Error& e) {
      rethrow_naming_the_profile(vtab->state->db(), e, report.context.schema);
    }
  }
  const LaunchCalls::Call* call = calls->find(r.global_tid, r.correlation_id);
  if (call == nullptr) return;
  switch (column) {
    case Column::call_id:
      sqlite3_result_int64(ctx, (static_cast<int64_t>(r.report) << 56) | calls->rowid(*call));
      break;
    case Column::call_ts: sqlite3_result_int64(ctx, call->ts); break;
    case Column::call_dur: sqlite3_result_int64(ctx, call->dur); break;
    case Column::call_name: {
      std::string scratch;
      result_text(ctx, calls->name(*call, scratch));
      break;
    }
    case Column::call_pid: sqlite3_result_int64(ctx, os_process_pid(r.report, call->global_tid)); break;
    case Column::call_tid: sqlite3_result_int64(ctx, os_tid_of(call->global_tid)); break;
    case Column::call_global_tid: sqlite3_result_int64(ctx, call->global_tid); break;
    default: break;
  }
}

// A labelled kind id as its column shows it, and args too (LabelledId::show); NULL for none.
void result_labelled(sqlite3_context* ctx, const std::optional<LabelledId>& kind) {
  if (kind)
    kind->show([&](std::string_view text) { result_text(ctx, text); }, [&](int64_t id) { sqlite3_result_int64(ctx, id); });
}

int x_column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  try {
    const TraceRow& r = cursor->scan->row();
    switch (static_cast<Column>(column)) {
      case Column::kind: sqlite3_result_text(ctx, kind_name(r.kind), -1, SQLITE_STATIC); break;
      case Column::name: result_text(ctx, r.name); break;
      case Column::ts: sqlite3_result_int64(ctx, r.ts); break;
      case Column::dur: if (r.has_dur) sqlite3_result_int64(ctx, r.dur); break;
      case Column::pid: sqlite3_result_int64(ctx, r.pid); break;
      case Column::tid: if (r.has_tid) sqlite3_result_int64(ctx, r.tid); break;
      case Column::process_name: if (r.process_name) result_text(ctx, *r.process_name); break;
      case Column::thread_name: result_text(ctx, r.track->name); break;
      case Column::lane: sqlite3_result_int64(ctx, r.lane); break;
      case Column::device_id: if (r.on_gpu) sqlite3_result_int64(ctx, r.device_id); break;
      case Column::stream_id: if (r.has_stream) sqlite3_result_int64(ctx, r.stream_id); break;
      case Column::correlation_id: if (r.has_correlation) sqlite3_result_int64(ctx, r.correlation_id); break;
      case Column::global_tid: if (r.has_global_tid) sqlite3_result_int64(ctx, r.global_tid); break;
      case Column::global_pid: if (r.has_global_tid) sqlite3_result_int64(ctx, global_pid_of(r.global_tid)); break;
      case Column::derived: sqlite3_result_int(ctx, is_derived(r.kind)); break;
      case Column::args: result_text(ctx, cursor->scan->args()); break;
      case Column::schema: if (r.schema) result_text(ctx, *r.schema); break;
      case Column::cname: if (r.cname) sqlite3_result_text(ctx, r.cname, -1, SQLITE_STATIC); break;
      case Column::domain: if (r.domain) result_text(ctx, *r.domain); break;
      case Column::demangled_name: {
        std::string scratch;
        if (auto name = cursor->scan->demangled_name(scratch)) result_text(ctx, *name);
        break;
      }
      case Column::nsys_dur:
        if (auto dur = cursor->scan->nsys_dur()) sqlite3_result_int64(ctx, *dur);
        break;
      case Column::size_bytes: if (r.memory.bytes) sqlite3_result_int64(ctx, *r.memory.bytes); break;
      case Column::copy_kind: result_labelled(ctx, cursor->scan->copy_kind()); break;
      case Column::src_kind: result_labelled(ctx, cursor->scan->memory_kind(r.memory.src_kind)); break;
      case Column::dst_kind: result_labelled(ctx, cursor->scan->memory_kind(r.memory.dst_kind)); break;
      case Column::mem_kind: result_labelled(ctx, cursor->scan->memory_kind(r.memory.mem_kind)); break;
      case Column::call_id:
      case Column::call_ts:
      case Column::call_dur:
      case Column::call_name:
      case Column::call_pid:
      case Column::call_tid:
      case Column::call_global_tid:
        result_call_column(ctx, *cursor, static_cast<Column>(column));
        break;
      case Column::event:
        // The row's token (see TraceEventsCursor::advanced_at), not an address: SQLite never dereferences it, and a
        // copy that outlives the row names a position no cursor is at any more, which the aggregate refuses.
        sqlite3_result_pointer(ctx, reinterpret_cast<void*>(static_cast<uintptr_t>(cursor->advanced_at)),
                               kTraceRowPointerType, nullptr);
        break;
    }
    return SQLITE_OK;
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    // A column read that failed because the statement was interrupted (the call_* columns' first read builds the
    // report's calls) says so, as SQLite does, rather than naming an inner statement.
    if (dynamic_cast<const Interrupted*>(&e) != nullptr || is_interrupted(sqlite3_context_db_handle(ctx))) {
      sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
      return SQLITE_INTERRUPT;
    }
    sqlite3_result_error(ctx, e.what(), -1);
    return SQLITE_ERROR;
  }
}

int x_rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = reinterpret_cast<TraceEventsCursor*>(base)->scan->row().rowid;
  return SQLITE_OK;
}

const sqlite3_module kModule = [] {
  sqlite3_module m =
      read_only_eponymous_module(x_connect, x_best_index, x_open, x_close, x_filter, x_next, x_eof, x_column, x_rowid);
  m.xDisconnect = m.xDestroy = x_disconnect;  // the connection's idle statements go first
  return m;
}();

void destroy_state(void* p) { delete static_cast<ConnectionState*>(p); }

}  // namespace

TimelineScan& scan_with_args(TraceEventsCursor& cursor, ConnectionState& state) {
  TimelineScan& scan = *cursor.scan;
  if (scan.reads_args()) return scan;
  // The same scan with args, moved to the same row: scans are deterministic (the same rows, lanes and tracks in
  // the same order), so row n of one is row n of the other. This reads again what the old one had read, once per
  // statement, and only where a trace aggregate's (*) form runs over a query that names no args (its colUsed).
  ScanFilter filter = scan.filter();
  filter.args = true;
  std::unique_ptr<TimelineScan> with_args = open_scan(state, scan.reports(), filter);
  while (!with_args->eof() && with_args->row_number() < scan.row_number()) with_args->next();
  if (with_args->eof() || with_args->row().rowid != scan.row().rowid)
    throw Error("nsystrace: internal: a trace_events scan reopened with args did not come to the same row");
  cursor.scan = std::move(with_args);
  return *cursor.scan;
}

int register_trace_events(sqlite3* db, ConnectionState* state, std::string* error) {
  int rc = sqlite3_create_module_v2(db, "trace_events", &kModule, state, destroy_state);
  if (rc != SQLITE_OK) *error = "cannot register trace_events";
  return rc;
}

}  // namespace nsystrace
