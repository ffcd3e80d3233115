// Pieces shared by the virtual tables: the exception boundary and the connection-scoped vtab object.
#pragma once
#include <cstring>
#include <new>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ext/connection_state.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

struct ConnectionVtab {
  sqlite3_vtab base;  // must stay first
  ConnectionState* state;
};

inline void set_vtab_error(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
}

// Runs body(); turns exceptions into SQLite result codes (and the message into the vtab's error): no exception
// may unwind through SQLite.
template <class Body>
int guarded(sqlite3_vtab* vtab, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const Interrupted&) {
    return SQLITE_INTERRUPT;  // SQLite says "interrupted"
  } catch (const std::exception& e) {
    set_vtab_error(vtab, e.what());
    return SQLITE_ERROR;
  }
}

// xConnect for an eponymous read-only table with the given schema.
inline int connect_vtab(sqlite3* db, void* aux, const char* schema, sqlite3_vtab** out) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) return rc;
  // Reading the profile has no side effects: safe to use from views and triggers of untrusted schemas.
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  auto* vtab = static_cast<ConnectionVtab*>(sqlite3_malloc(sizeof(ConnectionVtab)));
  if (vtab == nullptr) return SQLITE_NOMEM;
  std::memset(vtab, 0, sizeof *vtab);
  vtab->state = static_cast<ConnectionState*>(aux);
  try {
    vtab->state->add_vtab(&vtab->base);
  } catch (const std::bad_alloc&) {
    sqlite3_free(vtab);
    return SQLITE_NOMEM;
  }
  *out = &vtab->base;
  return SQLITE_OK;
}

// (It leaves the connection's list of tables as it is: SQLite may destroy the state, with trace_events' module, before
// it disconnects the other modules' tables. The list is only compared with, never read through.)
inline int disconnect_vtab(sqlite3_vtab* vtab) {
  sqlite3_free(vtab);
  return SQLITE_OK;
}

// The module of a read-only, eponymous-only virtual table: no xCreate, so it needs (and allows) no CREATE VIRTUAL
// TABLE; no xUpdate; disconnected (and destroyed) by disconnect_vtab.
inline sqlite3_module read_only_eponymous_module(decltype(sqlite3_module::xConnect) connect,
                                                 decltype(sqlite3_module::xBestIndex) best_index,
                                                 decltype(sqlite3_module::xOpen) open,
                                                 decltype(sqlite3_module::xClose) close,
                                                 decltype(sqlite3_module::xFilter) filter,
                                                 decltype(sqlite3_module::xNext) next,
                                                 decltype(sqlite3_module::xEof) eof,
                                                 decltype(sqlite3_module::xColumn) column,
                                                 decltype(sqlite3_module::xRowid) rowid) {
  sqlite3_module m;
  std::memset(&m, 0, sizeof m);
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xDisconnect = disconnect_vtab;
  m.xDestroy = disconnect_vtab;
  m.xOpen = open;
  m.xClose = close;
  m.xFilter = filter;
  m.xNext = next;
  m.xEof = eof;
  m.xColumn = column;
  m.xRowid = rowid;
  return m;
}

// A value as text (after SQLite's conversion), without a copy; empty for NULL.
inline std::string_view text_of(sqlite3_value* v) {
  const unsigned char* p = sqlite3_value_text(v);
  return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_value_bytes(v)))
           : std::string_view();
}

// Calls f for each value of an IN list handed over whole (sqlite3_vtab_in), or for v itself when v is not one.
template <class F>
void for_each_in(sqlite3_value* v, F f, bool in_list) {
  if (!in_list) {
    f(v);
    return;
  }
  sqlite3_value* item = nullptr;
  int rc = sqlite3_vtab_in_first(v, &item);
  for (; rc == SQLITE_OK && item; rc = sqlite3_vtab_in_next(v, &item)) f(item);
  // SQLite's own example checks this: a list cut short by an error (out of memory, I/O) is not the list, and the
  // error is the statement's, never an empty list.
  if (rc == SQLITE_NOMEM) throw std::bad_alloc();
  if (rc != SQLITE_DONE && rc != SQLITE_OK)
    throw Error(std::string("nsystrace: SQLite could not hand over the values of an IN list: ") + sqlite3_errstr(rc));
}

// Whether the connection has a database (main, temp or ATTACHed) of that name.
inline bool schema_exists(sqlite3* db, const std::string& schema) {
  Statement s(db, "SELECT 1 FROM pragma_database_list WHERE name = ?1");
  s.bind(1, schema);
  return s.step();
}

// Throws the error a query naming a database the connection does not have gets (from the hidden schema column).
inline void check_schema_exists(sqlite3* db, const std::string& schema) {
  if (!schema_exists(db, schema))
    throw Error("nsystrace: there is no database named '" + schema +
                "': ATTACH each report first, e.g. ATTACH 'rank1.sqlite' AS rank1, then select ... where schema in "
                "('main', 'rank1')");
}

// Whether the connection's running statement was interrupted (sqlite3_interrupt, a progress handler): a statement
// stepped now fails with SQLITE_INTERRUPT (SQLite 3.40 has no sqlite3_is_interrupted).
inline bool is_interrupted(sqlite3* db) {
  sqlite3_stmt* probe = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT 1", -1, &probe, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(probe);
  sqlite3_finalize(probe);
  return rc == SQLITE_INTERRUPT;
}

// A vtab call's failure while the statement was interrupted (sqlite3_interrupt, Ctrl-C: a reader's step failed, or a
// check of its own threw) is SQLITE_INTERRUPT with SQLite's own "interrupted", as a query over a plain table reports
// it, not an error naming an inner statement. (A progress handler's interrupt is not seen by this probe, which runs
// too few steps to call it: the step it failed throws Interrupted, which guarded() maps.)
inline int interrupted_as_such(sqlite3_vtab* vtab, sqlite3* db, int rc) {
  if (rc != SQLITE_ERROR || !is_interrupted(db)) return rc;
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = nullptr;
  return SQLITE_INTERRUPT;
}

// "<message> [profile: /path/prof.sqlite]": which file a failure is about (the user may have several ATTACHed).
inline std::string naming_the_profile(sqlite3* db, const std::string& message, const std::string& schema = "main") {
  const char* file = sqlite3_db_filename(db, schema.c_str());
  if (file == nullptr || *file == '\0' || message.find(file) != std::string::npos) return message;
  return message + " [profile: " + file + "]";
}

// Rethrows the Error being handled (call it from its catch block) with the profile's file named, except an
// Interrupted one, rethrown as it is: guarded() reports that as SQLite reports an interrupt.
[[noreturn]] inline void rethrow_naming_the_profile(sqlite3* db, const Error& e, const std::string& schema = "main") {
  if (dynamic_cast<const Interrupted*>(&e) != nullptr) throw;
  throw Error(naming_the_profile(db, e.what(), schema));
}

// The cursor's scan, reopened with args (ScanFilter::args) and moved to its current row when it was opened without
// them (its query names neither args nor event): for the trace aggregates' (*) forms, which read the row's args
// from the cursor. Throws Error.
TimelineScan& scan_with_args(TraceEventsCursor& cursor, ConnectionState& state);

// The planner's view of SQLite's constraints (src/timeline/scan_plan.h); a literal LIMIT's value into *limit_value.
std::vector<OfferedConstraint> offered_constraints(sqlite3_index_info* info, std::optional<int64_t>* limit_value);
// A plan's constraint usage, costs, idxNum and idxStr into `info`; an SQLite result code.
int hand_plan_to_sqlite(const ScanPlan& plan, sqlite3_index_info* info);
// A constraint's or a function argument's value with what numeric affinity makes of it, without converting the value
// (it may be SQLite's constant, used again elsewhere in the statement).
FilterValue filter_value(sqlite3_value* v, bool numeric_column);
// xFilter's argv into `args`, in place (see vtab_support.cc).
void read_filter_arguments(std::vector<FilterArgument>& args, const ScanPlan& plan, int argc, sqlite3_value** argv);

using ConnectionReports = std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>>;
// The scan over the connection's reports, with its threads and its NVTX projections, for `filter`.
std::unique_ptr<TimelineScan> open_scan(ConnectionState& state, std::vector<TimelineScan::Report> reports,
                                        const ScanFilter& filter);
// The scan a cursor's plan and constraint values ask for: `previous` restarted in place when the new filter allows
// (a join's inner lookups), else a new one. The connection's reports are listed at the cursor's first call
// (reports_listed) and kept; the readers take their statements from `statements`. Throws Error for a schema that
// is not one of the connection's reports.
std::unique_ptr<TimelineScan> open_planned_scan(ConnectionState& state, const ScanPlan& plan,
                                                const std::vector<FilterArgument>& arguments, bool& reports_listed,
                                                ConnectionReports& reports_of_connection, StatementCache& statements,
                                                std::unique_ptr<TimelineScan> previous);

inline void result_text(sqlite3_context* ctx, std::string_view s) {
  sqlite3_result_text64(ctx, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

}  // namespace nsystrace
