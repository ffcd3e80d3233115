// trace_events: an eponymous, read-only virtual table with one row per timeline event of the export.
//
// Pushdown (xBestIndex): constraints on kind (=, !=, IN), ts (=, <, <=, >, >=), pid (=), name (=, IN, LIKE, GLOB)
// and correlation_id, global_tid, global_pid (=, IN) restrict which event tables are read and what is read from
// them. idxStr lists the constraints handed to xFilter, one token per argv entry, in argv order: "kind=", "kind!=",
// "kind_in", "ts=", "ts>", "ts>=", "ts<", "ts<=", "pid=", "name=", "name_in", "name_like", "name_glob",
// "correlation=", "correlation_in", "global_tid=", "global_tid_in", "global_pid=", "global_pid_in", "schema=",
// "schema_in", "derived=", "derived_in", "limit". It is what EXPLAIN QUERY PLAN shows.
//
// The hidden column `derived` is a parameter, like `schema`: without it the scan yields the events stored in the
// profile; `derived = 1` the rows nsystrace derives (nvtx_kernel) only, `derived IN (0, 1)` both.
//
// The hidden column `schema` selects the reports (main and ATTACHed databases) the scan merges: without a
// constraint on it, only "main" is read. Only kind constraints are omitted (matched exactly here); SQLite re-checks the others, so a value we
// cannot use (NULL, text for ts) only costs a wider scan, never a wrong row.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>
#include <sstream>

#include "ext/vtab_support.h"
#include "src/statement.h"

namespace nsystrace {
namespace {

// idxNum: the number of argv values, and this flag.
constexpr int kFeedsGroups = 1 << 30;

enum Column {
  kColKind, kColName, kColTs, kColDur, kColPid, kColTid, kColProcessName, kColThreadName, kColDeviceId,
  kColStreamId, kColCorrelationId, kColGlobalTid, kColArgs, kColLane, kColGlobalPid, kColSchema, kColCname,
  kColDerived
};

constexpr const char* kSchema =
    "CREATE TABLE x(kind TEXT, name TEXT, ts INTEGER, dur INTEGER, pid INTEGER, tid INTEGER, process_name TEXT,"
    " thread_name TEXT, device_id INTEGER, stream_id INTEGER, correlation_id INTEGER, global_tid INTEGER,"
    " args TEXT, lane INTEGER, global_pid INTEGER, schema TEXT HIDDEN, cname TEXT HIDDEN, derived INTEGER HIDDEN)";

// Tables whose presence marks a database as an Nsight Systems export.
constexpr const char* kExportMarkers[] = {
    "StringIds", "META_DATA_EXPORT", "EXPORT_META_DATA", "ThreadNames", "TARGET_INFO_GPU",
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "ProcessStreams"};

int x_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  return connect_vtab(db, aux, kSchema, out);
}

int best_index(sqlite3_index_info* info) {
  std::string idx;
  int argc = 0;
  bool all_used = true, has_offset = false;
  int limit = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.op == SQLITE_INDEX_CONSTRAINT_OFFSET) has_offset = true;
    if (c.op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      if (c.usable) limit = i;
      continue;
    }
    if (!c.usable) {
      all_used = false;
      continue;
    }
    // An IN list on kind or name is taken whole (one scan); on other columns it is left to SQLite, which would
    // otherwise rescan once per value.
    bool in_list = c.op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(info, i, -1);
    const char* token = nullptr;
    // Text equality is pushed down only under the default collation (BINARY), which is what the scan applies.
    bool binary = std::strcmp(sqlite3_vtab_collation(info, i), "BINARY") == 0;
    if ((c.iColumn == kColKind || c.iColumn == kColName) && c.op == SQLITE_INDEX_CONSTRAINT_EQ && !binary) continue;
    if (c.iColumn == kColSchema && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "schema_in" : "schema=";
    } else if (c.iColumn == kColDerived && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "derived_in" : "derived=";
    } else if (c.iColumn == kColCorrelationId && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "correlation_in" : "correlation=";
    } else if (c.iColumn == kColGlobalTid && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "global_tid_in" : "global_tid=";
    } else if (c.iColumn == kColGlobalPid && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "global_pid_in" : "global_pid=";
    } else if (c.iColumn == kColKind && c.op == SQLITE_INDEX_CONSTRAINT_NE && binary) {
      token = "kind!=";
    } else if (c.iColumn == kColKind && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = in_list ? "kind_in" : "kind=";
    } else if (c.iColumn == kColName) {
      if (c.op == SQLITE_INDEX_CONSTRAINT_EQ) token = in_list ? "name_in" : "name=";
      else if (c.op == SQLITE_INDEX_CONSTRAINT_LIKE) token = "name_like";
      else if (c.op == SQLITE_INDEX_CONSTRAINT_GLOB) token = "name_glob";
    } else if (in_list) {
      continue;
    } else if (c.iColumn == kColTs) {
      switch (c.op) {
        case SQLITE_INDEX_CONSTRAINT_EQ: token = "ts="; break;
        case SQLITE_INDEX_CONSTRAINT_GT: token = "ts>"; break;
        case SQLITE_INDEX_CONSTRAINT_GE: token = "ts>="; break;
        case SQLITE_INDEX_CONSTRAINT_LT: token = "ts<"; break;
        case SQLITE_INDEX_CONSTRAINT_LE: token = "ts<="; break;
        default: break;
      }
    } else if (c.iColumn == kColPid && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      token = "pid=";
    }
    if (token == nullptr) {
      all_used = false;
      continue;
    }
    if (in_list) sqlite3_vtab_in(info, i, 1);  // hand us the whole IN list at once
    info->aConstraintUsage[i].argvIndex = ++argc;
    // kind is matched exactly by the scan (a text compared to our fixed names), so SQLite need not re-check it;
    // every other constraint it re-checks.
    info->aConstraintUsage[i].omit = c.iColumn == kColKind || c.iColumn == kColSchema || c.iColumn == kColDerived;
    if (!idx.empty()) idx += ' ';
    idx += token;
  }
  // A LIMIT (SQLite offers it when the scan is the query's only table) is applied by the scan itself, so a scan
  // cut short still reaches its end: a scalar subquery over trace_events (LIMIT 1 implicitly) is then no longer
  // a live scan that chrome_trace(*) could mistake for its own. Only when every other constraint is handed to the
  // scan (which applies each exactly, or ignores the LIMIT: see build_filter) and there is no OFFSET (SQLite
  // applies that itself, after the scan).
  if (limit >= 0 && all_used && !has_offset) {
    info->aConstraintUsage[limit].argvIndex = ++argc;
    if (!idx.empty()) idx += ' ';
    idx += "limit";
  }
  // Costs: a fixed part (every scan prepares a statement per event table and merges them) and a part in proportion
  // to the rows the constraints leave, so SQLite prefers plans that push constraints (in joins too). The fixed part
  // is over half of the largest cost, so two scans always cost more than one: SQLite never answers an OR with one
  // scan per term (MULTI-INDEX OR), which would lay out lanes twice and give chrome_trace(*) two scans.
  double fraction = 1.0;
  for (int i = 0; i < info->nConstraint; ++i) {
    if (info->aConstraintUsage[i].argvIndex == 0) continue;
    const auto& c = info->aConstraint[i];
    if (c.op == SQLITE_INDEX_CONSTRAINT_LIMIT) continue;
    if (c.iColumn == kColKind) fraction *= c.op == SQLITE_INDEX_CONSTRAINT_NE ? 0.9 : 0.2;
    else if (c.iColumn == kColName) fraction *= c.op == SQLITE_INDEX_CONSTRAINT_EQ ? 0.01 : 0.1;
    else if (c.iColumn == kColTs) fraction *= c.op == SQLITE_INDEX_CONSTRAINT_EQ ? 1e-6 : 0.3;
    else if (c.iColumn == kColPid) fraction *= 0.1;
    else if (c.iColumn == kColCorrelationId) fraction *= 1e-5;  // a handful of rows: the join's inner loop
    else if (c.iColumn == kColGlobalTid) fraction *= 0.01;
    else if (c.iColumn == kColGlobalPid) fraction *= 0.1;
  }
  constexpr double kRows = 1e6, kFixedCost = 1e6;
  double rows = kRows * fraction;
  if (limit >= 0 && info->aConstraintUsage[limit].argvIndex > 0) {
    sqlite3_value* n = nullptr;  // a literal LIMIT is known now; a bound one is not
    if (sqlite3_vtab_rhs_value(info, limit, &n) == SQLITE_OK && sqlite3_value_numeric_type(n) == SQLITE_INTEGER &&
        sqlite3_value_int64(n) >= 0)
      rows = std::min(rows, static_cast<double>(sqlite3_value_int64(n)));
  }
  info->estimatedRows = static_cast<sqlite3_int64>(std::max(1.0, rows));
  info->estimatedCost = kFixedCost + 0.99 * rows;
  info->idxNum = argc;
  // Rows that feed a DISTINCT or a GROUP BY stand for their group: chrome_trace(*) must not read them as events.
  if (info->nOrderBy > 0 && sqlite3_vtab_distinct(info) >= 1) info->idxNum |= kFeedsGroups;
  if (!idx.empty()) {
    info->idxStr = sqlite3_mprintf("%s", idx.c_str());
    info->needToFreeIdxStr = 1;
  }
  return SQLITE_OK;
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
  *out = &cursor->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  vtab->state->remove_cursor(cursor);
  delete cursor;
  return SQLITE_OK;
}

// Applies one ts comparison to the inclusive bounds. Integral values only; others are left to SQLite.
void apply_ts(ScanFilter& f, const std::string& op, sqlite3_value* v) {
  int type = sqlite3_value_numeric_type(v);
  int64_t lo = INT64_MIN, hi = INT64_MAX;  // the inclusive range of integers satisfying "ts op v"
  if (type == SQLITE_INTEGER) {
    int64_t x = sqlite3_value_int64(v);
    if (op == "ts=") lo = hi = x;
    else if (op == "ts>") { if (x == INT64_MAX) f.impossible = true; else lo = x + 1; }
    else if (op == "ts>=") lo = x;
    else if (op == "ts<") { if (x == INT64_MIN) f.impossible = true; else hi = x - 1; }
    else if (op == "ts<=") hi = x;
  } else if (type == SQLITE_FLOAT) {
    double d = sqlite3_value_double(v);
    if (std::isnan(d)) return;
    auto clamp = [](double x) -> int64_t {  // x integral
      if (x >= 9223372036854775807.0) return INT64_MAX;
      if (x <= -9223372036854775808.0) return INT64_MIN;
      return static_cast<int64_t>(x);
    };
    if (op == "ts=") {
      if (std::floor(d) != d) { f.impossible = true; return; }
      lo = hi = clamp(d);
    } else if (op == "ts>" || op == "ts>=") {
      double b = op == "ts>" ? std::floor(d) + 1 : std::ceil(d);
      if (b > 9223372036854775807.0) f.impossible = true; else lo = clamp(b);
    } else {
      double b = op == "ts<" ? std::ceil(d) - 1 : std::floor(d);
      if (b < -9223372036854775808.0) f.impossible = true; else hi = clamp(b);
    }
  } else if (type == SQLITE_NULL) {
    f.impossible = true;  // a comparison with NULL is never true
    return;
  } else {
    f.inexact = true;  // text or blob: SQLite's own check decides
    return;
  }
  if (lo != INT64_MIN) f.ts_min = f.ts_min ? std::max(*f.ts_min, lo) : lo;
  if (hi != INT64_MAX) f.ts_max = f.ts_max ? std::min(*f.ts_max, hi) : hi;
  if (f.ts_min && f.ts_max && *f.ts_min > *f.ts_max) f.impossible = true;
}

// The kind a constraint names. NULL matches nothing (x = NULL is never true); any other value that is not a kind
// is a mistake (`kind = 'kernels'`), and an empty answer would look like a profile without kernels.
uint32_t kind_mask_of(sqlite3_value* v) {
  if (sqlite3_value_type(v) == SQLITE_NULL) return 0;
  auto k = kind_from_name(text_of(v));
  if (k) return kind_bit(*k);
  std::string kinds;
  for (int i = 0; i < kKindCount; ++i) kinds += fmt::format("{}'{}'", i ? ", " : "", kind_name(static_cast<Kind>(i)));
  throw Error(fmt::format("nsystrace: trace_events has no kind '{}'; the kinds are: {}", text_of(v), kinds));
}

// The integers of an = or IN constraint on an integer column, into `set` (intersected with what is there). NULL is
// never equal to anything; any other non-integer value is compared by SQLite's rules, so it is left to SQLite.
void apply_integer_set(ScanFilter& f, std::optional<std::vector<int64_t>>& set, sqlite3_value* v) {
  std::vector<int64_t> values;
  bool exact = true;
  for_each_in(v, [&](sqlite3_value* x) {
    if (sqlite3_value_type(x) == SQLITE_INTEGER) values.push_back(sqlite3_value_int64(x));
    else if (sqlite3_value_type(x) != SQLITE_NULL) exact = false;
  });
  if (!exact) {
    f.inexact = true;
    return;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (set) {
    std::vector<int64_t> both;
    std::set_intersection(set->begin(), set->end(), values.begin(), values.end(), std::back_inserter(both));
    values = std::move(both);
  }
  set = std::move(values);
  if (set->empty()) f.impossible = true;
}

// `derived` = 0 or 1 (or an IN list of them): which of the two the scan yields (bit 0: stored rows, bit 1: derived).
int derived_mask_of(sqlite3_value* v) {
  int mask = 0;
  for_each_in(v, [&](sqlite3_value* x) {
    if (sqlite3_value_type(x) == SQLITE_NULL) return;
    if (sqlite3_value_numeric_type(x) != SQLITE_INTEGER || (sqlite3_value_int64(x) != 0 && sqlite3_value_int64(x) != 1))
      throw Error(fmt::format("nsystrace: trace_events.derived is 0 (events stored in the profile) or 1 (rows "
                              "nsystrace derives: 'nvtx_kernel'), not '{}'", text_of(x)));
    mask |= 1 << sqlite3_value_int64(x);
  });
  return mask;
}

ScanFilter build_filter(const char* idx_str, int argc, sqlite3_value** argv) {
  ScanFilter f;
  std::istringstream tokens(idx_str ? idx_str : "");
  std::string op;
  std::optional<int> derived;          // which rows `derived` asks for; unasked: the stored ones only
  bool kind_names_derived = false;     // kind = 'nvtx_kernel' (or IN) was asked for
  for (int i = 0; i < argc && (tokens >> op); ++i) {
    sqlite3_value* v = argv[i];
    if (op == "derived=" || op == "derived_in") {
      derived = derived.value_or(3) & derived_mask_of(v);
    } else if (op == "correlation=" || op == "correlation_in") {
      apply_integer_set(f, f.correlations, v);
    } else if (op == "global_tid=" || op == "global_tid_in") {
      apply_integer_set(f, f.global_tids, v);
    } else if (op == "global_pid=" || op == "global_pid_in") {
      apply_integer_set(f, f.global_pids, v);
    } else if (op == "schema=" || op == "schema_in") {
      std::vector<std::string> wanted;
      for_each_in(v, [&](sqlite3_value* x) {
        if (sqlite3_value_type(x) == SQLITE_TEXT) wanted.emplace_back(text_of(x));
      });
      std::sort(wanted.begin(), wanted.end());
      wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
      if (f.schemas.empty()) {
        f.schemas = wanted;
      } else {  // schema = a AND schema IN (...): both hold
        std::vector<std::string> both;
        std::set_intersection(f.schemas.begin(), f.schemas.end(), wanted.begin(), wanted.end(), std::back_inserter(both));
        f.schemas = both;
      }
      if (f.schemas.empty()) f.impossible = true;
    } else if (op == "kind=") {
      uint32_t mask = kind_mask_of(v);
      f.kinds &= mask;
      kind_names_derived |= (mask & kDerivedKinds) != 0;
    } else if (op == "kind!=") {
      if (sqlite3_value_type(v) == SQLITE_NULL) f.impossible = true;  // x != NULL is never true
      else f.kinds &= ~kind_mask_of(v);
    } else if (op == "kind_in") {
      uint32_t mask = 0;
      for_each_in(v, [&](sqlite3_value* item) { mask |= kind_mask_of(item); });
      f.kinds &= mask;
      kind_names_derived |= (mask & kDerivedKinds) != 0;
    } else if (op == "name_in") {
      std::vector<NameMatch> any;
      bool narrow = true;  // a non-text value is compared by SQLite's rules: then do not narrow
      for_each_in(v, [&](sqlite3_value* item) {
        if (sqlite3_value_type(item) == SQLITE_TEXT) any.push_back(NameMatch{NameMatch::Op::eq, std::string(text_of(item))});
        else if (sqlite3_value_type(item) != SQLITE_NULL) narrow = false;  // (NULL is never equal to anything)
      });
      if (!narrow) f.inexact = true;
      else if (any.empty()) f.impossible = true;  // only NULLs: nothing is equal to NULL
      else f.names.push_back(std::move(any));
    } else if (op == "name=" || op == "name_like" || op == "name_glob") {
      if (sqlite3_value_type(v) == SQLITE_NULL) {
        f.impossible = true;  // name = NULL / LIKE NULL is never true
      } else if (sqlite3_value_type(v) == SQLITE_TEXT) {
        NameMatch m;
        m.op = op == "name=" ? NameMatch::Op::eq : op == "name_like" ? NameMatch::Op::like : NameMatch::Op::glob;
        m.pattern = std::string(text_of(v));
        f.names.push_back({std::move(m)});
      } else {
        f.inexact = true;  // a number or blob: compared by SQLite's rules, left to SQLite
      }
    } else if (op == "limit") {
      if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER && sqlite3_value_int64(v) >= 0) f.limit = sqlite3_value_int64(v);
    } else if (op == "pid=") {
      if (sqlite3_value_numeric_type(v) != SQLITE_INTEGER) {
        f.inexact = true;
        continue;
      }
      int64_t pid = sqlite3_value_int64(v);
      if (pid < 0 || pid >= (int64_t{1} << 31) || (f.pid && *f.pid != pid)) f.impossible = true;
      f.pid = pid;
    } else {
      apply_ts(f, op, v);
    }
  }
  if (!derived && kind_names_derived)
    throw Error("nsystrace: 'nvtx_kernel' rows (NVTX ranges projected onto the GPUs) are derived, not stored in the "
                "profile, and trace_events has them only when asked: add `derived = 1` (those rows only) or "
                "`derived in (0, 1)` (with every stored event), or read nvtx_kernel_ranges");
  int wanted = derived.value_or(1);
  if (!(wanted & 1)) f.kinds &= kDerivedKinds;
  if (!(wanted & 2)) f.kinds &= ~kDerivedKinds;
  if (f.kinds == 0) f.impossible = true;
  if (f.inexact) f.limit.reset();  // a row the scan returns might still be dropped by SQLite: it must not count
  return f;
}

void check_is_export(const ProfileCatalog& catalog, sqlite3* db) {
  for (const char* t : kExportMarkers)
    if (catalog.schema().has(t)) return;
  const char* file = sqlite3_db_filename(db, catalog.schema().schema().c_str());
  throw Error(fmt::format(
      "nsystrace: database '{}' ({}) is not an Nsight Systems export: it has none of the tables nsys writes "
      "(StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, ...). Export the report with "
      "`nsys export --type sqlite report.nsys-rep` and open the .sqlite file it writes.",
      catalog.schema().schema(), file && *file ? file : "in memory"));
}

int x_filter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  cursor->scan.reset();
  ++cursor->generation;
  cursor->advanced_at = vtab->state->tick();
  cursor->grouped = (idx_num & kFeedsGroups) != 0;
  return guarded(base->pVtab, [&] {
    ConnectionState* state = vtab->state;
    try {
      ScanFilter filter = build_filter(idx_str, argc, argv);
      std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> schemas;
      for (const std::string& name : filter.schemas.empty() ? std::vector<std::string>{"main"} : filter.schemas) {
        check_schema_exists(state->db(), name);
        auto catalog = state->catalog(name);
        check_is_export(*catalog, state->db());
        schemas.emplace_back(name, std::move(catalog));
      }
      std::vector<TimelineScan::Report> reports = TimelineScan::align_reports(state->db(), std::move(schemas));
      for (TimelineScan::Report& r : reports) r.context.statements = &cursor->statements;
      cursor->scan = std::make_unique<TimelineScan>(
          state->db(), std::move(reports), filter,
          [state](const std::string& schema) { return state->projection(schema); });
    } catch (const Error& e) {
      throw Error(naming_the_profile(state->db(), e.what()));
    }
    return SQLITE_OK;
  });
}

int x_next(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  int rc = guarded(base->pVtab, [&] {
    try {
      cursor->advanced_at = vtab->state->tick();
      cursor->scan->next();
    } catch (const Error& e) {
      throw Error(naming_the_profile(vtab->state->db(), e.what()));
    }
    return SQLITE_OK;
  });
  if (rc != SQLITE_OK) cursor->scan.reset();
  return rc;
}

int x_eof(sqlite3_vtab_cursor* base) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  return !cursor->scan || cursor->scan->eof();
}

int x_column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = reinterpret_cast<TraceEventsCursor*>(base);
  try {
    const TraceRow& r = cursor->scan->row();
    switch (column) {
      case kColKind: sqlite3_result_text(ctx, kind_name(r.kind), -1, SQLITE_STATIC); break;
      case kColName: result_text(ctx, r.name); break;
      case kColTs: sqlite3_result_int64(ctx, r.ts); break;
      case kColDur: if (r.has_dur) sqlite3_result_int64(ctx, r.dur); break;
      case kColPid: sqlite3_result_int64(ctx, r.pid); break;
      case kColTid: if (r.has_tid) sqlite3_result_int64(ctx, r.tid); break;
      case kColProcessName: if (r.process_name) result_text(ctx, *r.process_name); break;
      case kColThreadName: result_text(ctx, r.track->name); break;
      case kColLane: sqlite3_result_int64(ctx, r.lane); break;
      case kColDeviceId: if (r.on_gpu) sqlite3_result_int64(ctx, r.device_id); break;
      case kColStreamId: if (r.has_stream) sqlite3_result_int64(ctx, r.stream_id); break;
      case kColCorrelationId: if (r.has_correlation) sqlite3_result_int64(ctx, r.correlation_id); break;
      case kColGlobalTid: if (r.has_global_tid) sqlite3_result_int64(ctx, r.global_tid); break;
      case kColGlobalPid: if (r.has_global_tid) sqlite3_result_int64(ctx, global_pid_of(r.global_tid)); break;
      case kColDerived: sqlite3_result_int(ctx, is_derived(r.kind)); break;
      case kColArgs: result_text(ctx, cursor->scan->args()); break;
      case kColSchema: if (r.schema) result_text(ctx, *r.schema); break;
      case kColCname: if (r.cname) sqlite3_result_text(ctx, r.cname, -1, SQLITE_STATIC); break;
      default: break;
    }
    return SQLITE_OK;
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
    return SQLITE_ERROR;
  }
}

int x_rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = reinterpret_cast<TraceEventsCursor*>(base)->scan->row().rowid;
  return SQLITE_OK;
}

const sqlite3_module kModule =
    read_only_eponymous_module(x_connect, x_best_index, x_open, x_close, x_filter, x_next, x_eof, x_column, x_rowid);

void destroy_state(void* p) { delete static_cast<ConnectionState*>(p); }

}  // namespace

int register_trace_events(sqlite3* db, ConnectionState* state, std::string* error) {
  int rc = sqlite3_create_module_v2(db, "trace_events", &kModule, state, destroy_state);
  if (rc != SQLITE_OK) *error = "cannot register trace_events";
  return rc;
}

}  // namespace nsystrace
