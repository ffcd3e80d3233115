#include "src/readers/event_sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>

#include "src/readers/callchains.h"
#include "src/readers/chrome_colors.h"
#include "src/readers/gpu_metrics_source.h"
#include "src/readers/nvtx_payload.h"
#include "src/writers/json_writer.h"

namespace nsystrace {

namespace {

bool valid_utf8(std::string_view s) {
  auto* p = reinterpret_cast<const unsigned char*>(s.data());
  auto* end = p + s.size();
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    size_t n = utf8_sequence_length(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

// Labels used when an export has no ENUM_* tables (before 2022.4); same text as the tables.
const char* builtin_memcpy_kind(int64_t id) {
  static const char* const labels[] = {"Unknown",         "Host-to-Device",   "Device-to-Host",
                                       "Host-to-Array",   "Array-to-Host",    "Array-to-Array",
                                       "Array-to-Device", "Device-to-Array",  "Device-to-Device",
                                       "Host-to-Host",    "Peer-to-Peer",     "Unified Host-to-Device",
                                       "Unified Device-to-Host", "Unified Device-to-Device"};
  return id >= 0 && id < 14 ? labels[id] : nullptr;
}
const char* memcpy_short_name(int64_t id) {
  static const char* const names[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH",
                                      "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH",
                                      "Memcpy PtoP", "Memcpy UVM HtoD", "Memcpy UVM DtoH", "Memcpy UVM DtoD"};
  return id >= 0 && id < 14 ? names[id] : "Memcpy";
}
const char* builtin_memory_kind(int64_t id) {
  static const char* const labels[] = {"Pageable", "Pinned",         "Device",        "Array",
                                       "Managed",  "Device Static",  "Managed Static", "Unknown"};
  return id >= 0 && id < 8 ? labels[id] : nullptr;
}
const char* builtin_sync_type(int64_t id) {
  static const char* const labels[] = {"Unknown", "Event sync", "Stream wait sync", "Stream sync", "Context sync"};
  return id >= 0 && id < 5 ? labels[id] : nullptr;
}

constexpr const char* kUnnamedApiCall = "[unnamed CUDA API call]";

std::string_view label_or(const std::string* from_export, const char* builtin) {
  if (from_export != nullptr) return *from_export;
  return builtin != nullptr ? std::string_view(builtin) : std::string_view();
}

// A labelled kind id (copy_kind, src_kind, dst_kind, mem_kind) in args, as the columns show it.
void labelled_arg(ArgsSink& o, std::string_view key, const std::optional<LabelledId>& kind) {
  if (kind) kind->show([&](std::string_view text) { o.string(key, text); }, [&](int64_t id) { o.integer(key, id); });
}

int64_t checked_duration(int64_t start, int64_t end) {
  int64_t d;
  if (__builtin_sub_overflow(end, start, &d)) return INT64_MAX;
  return d < 0 ? 0 : d;
}

// The end (column 1) by which a row sorts: an open range (NULL end) sorts as the longest.
int64_t end_for_order(const Statement& s) { return s.optional_int64(1).value_or(INT64_MAX); }
}  // namespace

std::string_view copy_kind_text(const ProfileCatalog& catalog, int64_t id) {
  return label_or(catalog.memcpy_kind_label(id), builtin_memcpy_kind(id));
}
std::string_view memory_kind_text(const ProfileCatalog& catalog, int64_t id) {
  return label_or(catalog.memory_kind_label(id), builtin_memory_kind(id));
}
std::optional<LabelledId> copy_kind_of(const ProfileCatalog& catalog, std::optional<int64_t> id) {
  if (!id) return std::nullopt;
  return LabelledId{*id, copy_kind_text(catalog, *id)};
}
std::optional<LabelledId> memory_kind_of(const ProfileCatalog& catalog, std::optional<int64_t> id) {
  if (!id) return std::nullopt;
  return LabelledId{*id, memory_kind_text(catalog, *id)};
}

bool EventSource::step_stream(Statement& s, bool main) {
  while (s.step()) {
    if (!s.optional_int64(0)) {
      ++skipped_;  // no start time: cannot be placed on a timeline; counted, not silently lost
      continue;
    }
    // The main stream passes over the stragglers (they come, sorted, from the other stream). Both are in rowid
    // order, so one cursor into the list suffices; it moves past stragglers a filter removed from this stream.
    if (main && straggler_rowids_ != nullptr) {
      const std::vector<int64_t>& stragglers = *straggler_rowids_;
      int64_t rowid = s.int64(2);
      while (next_straggler_ < stragglers.size() && stragglers[next_straggler_] < rowid) ++next_straggler_;
      if (next_straggler_ < stragglers.size() && stragglers[next_straggler_] == rowid) {
        ++next_straggler_;
        continue;
      }
    }
    return true;
  }
  return false;
}

// (start, longest first) order of the two streams' current rows: is the stragglers' row first?
bool EventSource::stragglers_first() const {
  return ProfileCatalog::sorts_before(stragglers_.int64(0), end_for_order(stragglers_), stmt_.int64(0),
                                      end_for_order(stmt_));
}

bool EventSource::step_runs() {
  // Heap order: the earliest row (time order, then rowid) on top.
  auto later = [](const OpenRun& a, const OpenRun& b) {
    if (a.start != b.start || a.end != b.end) return ProfileCatalog::sorts_before(b.start, b.end, a.start, a.end);
    return a.rowid > b.rowid;
  };
  auto wait_at_next_row = [&](Statement run) {  // or retire the run at its end
    if (!step_stream(run, false)) {
      spare_runs_.push_back(std::move(run));
      return;
    }
    int64_t start = run.int64(0), end = end_for_order(run), rowid = run.int64(2);
    open_runs_.push_back(OpenRun{start, end, rowid, std::move(run)});
    std::push_heap(open_runs_.begin(), open_runs_.end(), later);
  };
  if (started_) wait_at_next_row(std::move(stmt_));  // the run whose row was consumed last
  started_ = true;
  const std::vector<ProfileCatalog::SortedRun>& runs = *runs_;
  // Open the runs whose first rows come no later than the earliest open run's row (a run's rows come no earlier
  // than its first; the filter may remove some).
  while (next_run_ < runs.size() &&
         (open_runs_.empty() || !ProfileCatalog::sorts_before(open_runs_.front().start, open_runs_.front().end,
                                                              runs[next_run_].start, runs[next_run_].end))) {
    const ProfileCatalog::SortedRun& run = runs[next_run_++];
    Statement s;
    if (spare_runs_.empty()) {
      s = statement(run_sql_);
    } else {
      s = std::move(spare_runs_.back());
      spare_runs_.pop_back();
      s.reset();
    }
    bind_all(s, run_binds_);
    const int at = static_cast<int>(run_binds_.size());
    s.bind(at + 1, run.first_rowid);
    s.bind(at + 2, run.last_rowid);
    wait_at_next_row(std::move(s));
  }
  if (open_runs_.empty()) return false;
  std::pop_heap(open_runs_.begin(), open_runs_.end(), later);
  stmt_ = std::move(open_runs_.back().stmt);
  open_runs_.pop_back();
  return true;
}

void EventSource::release_runs() {
  for (OpenRun& r : open_runs_) spare_runs_.push_back(std::move(r.stmt));
  open_runs_.clear();
  if (report_.statements != nullptr)
    for (Statement& s : spare_runs_) report_.statements->give_back(std::move(s));
  spare_runs_.clear();
  runs_ = nullptr;
  next_run_ = 0;
}

bool EventSource::next() {
  if (!stmt_ && runs_ == nullptr) return false;
  if (forward_lookup_) {  // the one row forward_to() found, once
    if (!forward_found_) return false;
    forward_found_ = false;
    emitted_ = true;
    last_start_ = stmt_.int64(0);
    last_end_ = end_for_order(stmt_);
    event_.name_id = -1;
    return read_row();
  }
  for (;;) {
    // stmt_ always holds the stream whose row was consumed last (or both start fresh); stragglers_, the other.
    if (runs_ != nullptr) {
      has_row_ = step_runs();
    } else if (!started_) {
      started_ = true;
      has_row_ = step_stream(stmt_, true);
      has_straggler_ = stragglers_ ? step_stream(stragglers_, false) : false;
    } else {
      has_row_ = step_stream(stmt_, main_in_stmt_);
    }
    if (has_straggler_ && (!has_row_ || stragglers_first())) {
      std::swap(stmt_, stragglers_);
      std::swap(has_row_, has_straggler_);
      main_in_stmt_ = !main_in_stmt_;
    }
    if (!has_row_) return false;
    // The invariant the merge and the track layout rely on, checked on every row rather than assumed.
    int64_t start = stmt_.int64(0), end = end_for_order(stmt_);
    if (emitted_ && !in_any_order_ && ProfileCatalog::sorts_before(start, end, last_start_, last_end_))
      throw Error(fmt::format("nsystrace: rows of {} came out of time order (start {} after {}): an nsystrace bug; "
                              "please report it with the export's EXPORT_SCHEMA_VERSION",
                              table_->name, start, last_start_));
    emitted_ = true;
    last_start_ = start;
    last_end_ = end;
    event_.name_id = -1;  // set by the row's reader when its name is a registered string
    if (read_row()) return true;
  }
}

void EventSource::prepare(const TableInfo& table, const std::string& select_list, const ScanFilter& filter,
                          const Shape& shape) {
  if (table_ != &table) qualified_ = catalog_.schema().qualified(table.name), correlation_index_ = nullptr;
  one_row_lookup_ = forward_lookup_ = forward_found_ = false;
  release_parked();
  was_global_tids_ = filter.global_tids.has_value();
  was_global_pids_ = filter.global_pids.has_value();
  table_ = &table;
  const std::string& qualified = qualified_;  // kept across restarts (a join's inner lookups): the same table
  if (&select_list != &select_list_) select_list_ = select_list;
  if (&shape != &shape_) shape_ = shape;
  const std::string time = quote_identifier(shape.time);
  // Values are bound, never pasted into the SQL.
  Binds binds;
  // ts bounds first: SQLite tests the terms in the order written, and a window's bounds turn most rows away after
  // one column (0.36 -> 0.22 s for a 0.5 s window of x200's NVTX_EVENTS, against its eventType terms first). They
  // are on the (aligned) timeline; the table holds this report's own clock.
  std::string where;
  if (filter.ts_min) {
    where += time + " >= ? AND ";
    binds.push_back(saturating_add(*filter.ts_min, -report_.clock_offset));
  }
  if (filter.ts_max) {
    where += time + " <= ? AND ";
    binds.push_back(saturating_add(*filter.ts_max, -report_.clock_offset));
  }
  where += shape.condition();
  for (const auto& alternatives : filter.names) {
    std::string any = any_name_condition(alternatives, binds);
    if (any == "0") return;  // no row of this table can have that name: do not even open it
    if (any != "1") where += " AND (" + any + ")";
  }
  if (filter.pid) {
    int64_t pid = pid_in_report(*filter.pid, report_.index).value_or(-1);
    // Exactly what placement computes from the row (gpu_pid, gpu_metrics_pid, os_pid_of), NULL read as 0: the
    // filter keeps the rows placed at that pid, no more and no fewer.
    switch (shape.pid) {
      case PidColumn::device:
        where += fmt::format(" AND {} + (coalesce({}, 0) & {}) = ?", kGpuPidBase, column_sql("deviceId"), kGpuIdMask);
        break;
      case PidColumn::metric_type:
        where += fmt::format(" AND {} + (coalesce({}, 0) & {}) = ?", kGpuMetricsPidBase, column_sql("typeId"), kGpuIdMask);
        break;
      case PidColumn::thread: where += " AND ((coalesce(" + column_sql("globalTid") + ", 0) >> 24) & 16777215) = ?"; break;
      case PidColumn::process: where += " AND ((coalesce(" + column_sql("globalPid") + ", 0) >> 24) & 16777215) = ?"; break;
    }
    binds.push_back(pid);
  }
  // correlation_id, global_tid and global_pid are the columns the reader reads (its Shape): NULL where it has none,
  // which no = or IN holds for, so then the table is not even opened.
  std::optional<std::vector<int64_t>> rowids;  // the rows a correlation_id lookup found
  // "expr = ?" for one value (the launch join's inner lookups: a direct seek, no temporary table for the list),
  // else "expr IN" the values bound as one JSON array.
  auto one_of = [&](const std::string& expr, const std::vector<int64_t>& values) {
    if (values.size() == 1) {
      where += " AND " + expr + " = ?";
      binds.emplace_back(values.front());
    } else {
      where += " AND " + expr + " IN (SELECT value FROM json_each(?))";
      binds.emplace_back(integer_list(values));
    }
  };
  if (filter.correlations) {
    if (shape.correlation == nullptr || !table.has(shape.correlation)) return;
    if (shape.from_sql.empty()) {  // by the catalog's index: only the matching rows are read (the join's inner loop)
      if (correlation_index_ == nullptr || correlation_index_of_ != shape.correlation)
        correlation_index_ = &catalog_.correlation_index(db_, qualified, shape.correlation),
        correlation_index_of_ = shape.correlation;
      rowids = ProfileCatalog::rowids_with(*correlation_index_, *filter.correlations);
      if (rowids->empty()) return;
      one_of("rowid", *rowids);
    } else {
      one_of(quote_identifier(shape.correlation), *filter.correlations);
    }
  }
  if (filter.global_tids || filter.global_pids) {
    if (shape.global_id == nullptr || !table.has(shape.global_id)) return;
    const std::string id = quote_identifier(shape.global_id);
    if (filter.global_tids) one_of(id, *filter.global_tids);
    // a globalTid's process is its globalPid: the same with the tid bits cleared
    if (filter.global_pids) one_of(fmt::format("({} & {})", id, kProcessIdMask), *filter.global_pids);
  }
  // Readers must yield (start, longest first). SQLite would sort every table for that (the largest single cost of
  // a scan), but exports store events nearly in that order: the table's stored order is checked once
  // (ProfileCatalog::stored_order), then the rows are read as stored and the few out of place ("stragglers") are
  // read apart, sorted, and merged back in next(). Both reads go NOT INDEXED, the same path as the check, in rowid
  // order: with an index covering (start, end) SQLite would otherwise plan them differently, and the check would
  // describe another order than the one read. A ts window reads with ORDER BY instead, where an index on start
  // (nsystrace_create_indexes) spares both the sort and the full read. next() checks the order of every row.
  const std::string end = shape.end.empty() ? std::string("NULL") : quote_identifier(shape.end);
  const std::string order = shape.end.empty() ? " ORDER BY " + time
                                              : " ORDER BY " + time + ", " + end + " IS NULL DESC, " + end + " DESC";
  const bool base_table = shape.from_sql.empty();
  const std::string from = " FROM " + (base_table ? qualified : shape.from_sql) + " WHERE " + where;
  in_any_order_ = false;
  if (filter.order != RowOrder::time && base_table && !rowids) {
    // The rows in any order (a GROUP BY that SQLite sorts, or takes kind by kind): the table as stored, neither its
    // stored order checked (a pass over the table, at a connection's first query) nor the rows merged back in order.
    opened_ = true;
    in_any_order_ = true;
    stmt_ = statement("SELECT " + select_list + from);
    bind_all(stmt_, binds);
    return;
  }
  const ProfileCatalog::StoredOrder* stored = nullptr;
  if (base_table && !filter.ts_min && !filter.ts_max && !rowids)
    stored = &catalog_.stored_order(db_, qualified, time, end, shape.condition());
  opened_ = true;
  if (stored != nullptr && !stored->nearly_sorted && !stored->runs.empty()) {
    // Runs in time order, merged as they are read (step_runs()): each read as stored, by its rowid range.
    run_sql_ = "SELECT " + select_list + " FROM " + qualified + " NOT INDEXED WHERE " + where +
               " AND rowid BETWEEN ? AND ?";
    run_binds_ = std::move(binds);
    runs_ = &stored->runs;  // the catalog outlives every scan of it
    next_run_ = 0;
    return;
  }
  if (stored == nullptr || !stored->nearly_sorted) {
    // One row (a join's lookup of one row id) is in order: no sorter to open at every lookup.
    const bool one_row = rowids && rowids->size() == 1;
    stmt_ = statement("SELECT " + select_list + from + (one_row ? "" : order));
    bind_all(stmt_, binds);
    // Its only values the row id and the id sets' single values, in that order: restart() rebinds them.
    one_row_lookup_ = one_row && binds.size() == size_t{1} + (filter.global_tids ? 1 : 0) + (filter.global_pids ? 1 : 0) &&
                      (!filter.global_tids || filter.global_tids->size() == 1) &&
                      (!filter.global_pids || filter.global_pids->size() == 1);
    return;
  }
  const std::string as_stored = " FROM " + qualified + " NOT INDEXED WHERE " + where;
  stmt_ = statement("SELECT " + select_list + as_stored);
  bind_all(stmt_, binds);
  if (stored->stragglers.empty()) return;
  Binds with_list = binds;
  with_list.emplace_back(integer_list(stored->stragglers));
  stragglers_ = statement("SELECT " + select_list + from + " AND rowid IN (SELECT value FROM json_each(?))" + order);
  bind_all(stragglers_, with_list);
  straggler_rowids_ = &stored->stragglers;  // the catalog outlives every scan of it
}

bool EventSource::restartable() const {
  if (table_ == nullptr) return false;  // never prepared (a table without a time column)
  // The readers of the launch join's kinds, whose state between rows is their statements' (CallSource, GpuSource):
  // a reader that carries state from row to row (the scheduling and NVTX readers) is built anew.
  switch (kind()) {
    case Kind::cuda_api:
    case Kind::kernel:
    case Kind::memcpy:
    case Kind::memset: return true;
    default: return false;
  }
}

bool EventSource::rebind_one_row(const ScanFilter& filter) {
  if (!one_row_lookup_ || !stmt_ || !filter.correlations || correlation_index_ == nullptr) return false;
  // The same SQL as prepare() would build when the lookup is again one row id and one value per id set.
  if (filter.global_tids.has_value() != was_global_tids_ || filter.global_pids.has_value() != was_global_pids_ ||
      (filter.global_tids && filter.global_tids->size() != 1) || (filter.global_pids && filter.global_pids->size() != 1))
    return false;
  std::vector<int64_t> rowids = ProfileCatalog::rowids_with(*correlation_index_, *filter.correlations);
  // Correlation ids repeat across processes (x200: 7% of the kernels' ids are two calls'): a few candidates are
  // looked at here, by the lookup's one global id, and the row is the one that holds it; none is no row (as the
  // point query finds none). Two that hold it, or many candidates, take the point query.
  constexpr size_t kMaxCandidates = 8;
  if (rowids.size() > kMaxCandidates || (rowids.size() != 1 && !filter.global_tids && !filter.global_pids))
    return false;
  if (!forward_lookup_) {
    // The point query's statement goes back to the cache; the forward cursors read the same columns, and the
    // global id after them.
    const char* id = shape_.global_id != nullptr && table_->has(shape_.global_id) ? shape_.global_id : nullptr;
    forward_sql_ = "SELECT " + select_list_ + ", " + (id ? quote_identifier(id) : std::string("NULL")) + " FROM " +
                   qualified_ + " WHERE " + shape_.condition() +
                   " AND rowid >= ? ORDER BY rowid";
    Statement forward = statement(forward_sql_);
    forward_id_column_ = sqlite3_column_count(forward.get()) - 1;
    if (report_.statements != nullptr) report_.statements->give_back(std::move(stmt_));
    stmt_ = std::move(forward);
    forward_ = ForwardCursor();
    forward_lookup_ = true;
  }
  if (rowids.empty()) {  // next() hands out nothing
    forward_found_ = false;
    return true;
  }
  if (rowids.size() == 1) return forward_to(rowids.front(), filter);
  std::optional<int64_t> chosen;
  for (int64_t rowid : rowids) {
    std::optional<bool> match = forward_match(rowid, filter);
    if (!match) {
      forward_lookup_ = forward_found_ = false;
      return false;
    }
    if (*match && chosen) return false;
    if (*match) chosen = rowid;
  }
  if (!chosen) {
    forward_found_ = false;
    return true;
  }
  return forward_to(*chosen, filter);
}

std::optional<bool> EventSource::forward_match(int64_t rowid, const ScanFilter& filter) {
  constexpr int64_t kReach = 64;  // rows stepped over at most before a seek is cheaper
  constexpr size_t kCursors = 4;  // interleaved runs followed at once
  auto within_reach = [&](const ForwardCursor& c) { return c.at.within_reach(rowid, kReach); };
  if (!within_reach(forward_)) {
    // The parked cursor nearest below the row, else one to seek: a new one while there are fewer than kCursors,
    // else the least recently used.
    size_t pick = parked_.size();
    for (size_t i = 0; i < parked_.size(); ++i)
      if (within_reach(parked_[i]) && (pick == parked_.size() || parked_[i].at.rowid > parked_[pick].at.rowid))
        pick = i;
    const bool seek = pick == parked_.size();
    if (seek && parked_.size() + 1 < kCursors) {
      parked_.push_back(ForwardCursor{statement(forward_sql_)});
    } else if (seek) {
      pick = 0;
      for (size_t i = 1; i < parked_.size(); ++i)
        if (parked_[i].used < parked_[pick].used) pick = i;
    }
    // Park the current cursor and take the picked one (move_forward() seeks it when it is out of reach).
    std::swap(forward_.stmt, stmt_);
    std::swap(forward_, parked_[pick]);
    std::swap(forward_.stmt, stmt_);
  }
  forward_.used = ++lookups_;
  if (!move_forward(stmt_, 2, forward_.at, rowid, kReach)) return false;  // start, end, rowid first
  if (!filter.global_tids && !filter.global_pids) return true;
  // What the point query's "id = ?" / "(id & mask) = ?" keep: NULL matches no value; an integer is compared here;
  // any other stored type is left to the point query (SQLite's comparison rules).
  int type = stmt_.type(forward_id_column_);
  if (type != SQLITE_NULL && type != SQLITE_INTEGER) return std::nullopt;
  int64_t id = stmt_.int64(forward_id_column_);
  return type != SQLITE_NULL && (!filter.global_tids || id == filter.global_tids->front()) &&
         (!filter.global_pids || (id & kProcessIdMask) == filter.global_pids->front());
}

bool EventSource::forward_to(int64_t rowid, const ScanFilter& filter) {
  std::optional<bool> match = forward_match(rowid, filter);
  if (!match) {
    forward_lookup_ = forward_found_ = false;
    return false;
  }
  forward_found_ = *match;
  if (forward_found_ && stmt_.is_null(0)) {
    ++skipped_;  // no start time, as step_stream() counts it
    forward_found_ = false;
  }
  return true;
}

void EventSource::restart(const ScanFilter& filter) {
  opened_ = started_ = has_row_ = has_straggler_ = emitted_ = false;
  main_in_stmt_ = true;
  straggler_rowids_ = nullptr;
  next_straggler_ = 0;
  release_runs();
  last_start_ = last_end_ = 0;
  skipped_ = invalid_ends_ = 0;
  end_was_null_ = end_invalid_ = false;
  stored_end_ = 0;
  // The launch join's lookups: one row by its id, the statement kept and only its values bound again (no SQL
  // built, none looked up in the cache).
  if (rebind_one_row(filter)) {
    opened_ = true;
    return;
  }
  one_row_lookup_ = false;
  // The statements go back to the cache, where prepare() finds them again when its SQL is the same.
  if (report_.statements != nullptr) {
    report_.statements->give_back(std::move(stmt_));
    report_.statements->give_back(std::move(stragglers_));
  }
  stmt_ = Statement();
  stragglers_ = Statement();
  prepare(*table_, select_list_, filter, shape_);
}

void EventSource::release_parked() {
  if (report_.statements != nullptr)
    for (ForwardCursor& c : parked_) report_.statements->give_back(std::move(c.stmt));
  parked_.clear();
}

EventSource::~EventSource() {
  release_parked();
  release_runs();
  if (report_.statements == nullptr) return;
  report_.statements->give_back(std::move(stmt_));
  report_.statements->give_back(std::move(stragglers_));
}

uint64_t EventSource::estimated_rows() const {
  return opened_ ? catalog_.row_estimate(db_, catalog_.schema().qualified(table_->name)) : 0;
}

uint64_t EventSource::table_rows() const {
  return opened_ ? catalog_.row_count(db_, catalog_.schema().qualified(table_->name)) : 0;
}

void EventSource::bind_all(Statement& s, const Binds& binds) {
  for (size_t i = 0; i < binds.size(); ++i) {
    if (const auto* v = std::get_if<int64_t>(&binds[i])) s.bind(static_cast<int>(i + 1), *v);
    else s.bind(static_cast<int>(i + 1), std::get<std::string>(binds[i]));
  }
}

// Whether a name starting with `prefix` may satisfy m (a superset answer: used to keep rows, never to drop them).
static bool may_start_with(const NameMatch& m, std::string_view prefix) {
  if (m.op == NameMatch::Op::eq) return m.pattern.compare(0, prefix.size(), prefix) == 0;
  // The pattern's literal head, up to its first wildcard: a name can match only if one is a prefix of the other.
  const char* wild = m.op == NameMatch::Op::like ? "%_" : "*?[";
  size_t n = m.pattern.find_first_of(wild);
  std::string_view head = std::string_view(m.pattern).substr(0, n == std::string::npos ? m.pattern.size() : n);
  size_t common = std::min(head.size(), prefix.size());
  for (size_t i = 0; i < common; ++i) {
    char a = head[i], b = prefix[i];
    if (m.op == NameMatch::Op::like) {  // SQLite's LIKE folds ASCII case
      a = static_cast<char>(std::tolower(static_cast<unsigned char>(a)));
      b = static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
    }
    if (a != b) return false;
  }
  return true;
}

std::string EventSource::any_name_condition(const std::vector<NameMatch>& any, Binds& binds) const {
  // A long IN list of names is bound as one JSON array, never as one OR term per value (SQLite caps an
  // expression's depth): readers that name rows through a column take it whole (names_in_condition).
  bool plain_list = any.size() > 8 && std::all_of(any.begin(), any.end(), [](const NameMatch& m) {
    return m.op == NameMatch::Op::eq;
  });
  if (plain_list) {
    std::vector<std::string_view> names;
    for (const NameMatch& m : any) {
      // JSON carries only valid UTF-8: such a list is not narrowed here (TimelineScan matches names exactly).
      if (!valid_utf8(m.pattern)) return "1";
      names.push_back(m.pattern);
    }
    if (std::optional<std::string> cond = names_in_condition(names, binds)) return *cond;
  }
  // Otherwise one condition per alternative, each distinct one once (fixed names give a few at most).
  std::vector<std::string> conds;
  for (const NameMatch& m : any) {
    Binds mine;
    std::string cond = name_condition(m, mine);
    if (cond == "1") return "1";
    if (cond == "0") continue;
    if (mine.empty() && std::find(conds.begin(), conds.end(), cond) != conds.end()) continue;
    conds.push_back(cond);
    binds.insert(binds.end(), mine.begin(), mine.end());
  }
  if (conds.empty()) return "0";
  std::string out;
  for (const auto& c : conds) out += (out.empty() ? "" : " OR ") + c;
  return out;
}

std::string EventSource::integer_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (int64_t v : values) out += (out.size() > 1 ? "," : "") + std::to_string(v);
  return out + "]";
}

std::string EventSource::json_list(const std::vector<std::string_view>& values) {
  std::string out = "[";
  for (std::string_view v : values) {
    if (out.size() > 1) out += ',';
    append_json_string(out, v);
  }
  return out + "]";
}

std::string EventSource::string_column_in(const char* column, const std::vector<std::string_view>& names,
                                          Binds& binds) const {
  return string_expression_in(column_sql(column), names, binds);
}

std::string EventSource::string_expression_in(const std::string& col, const std::vector<std::string_view>& names,
                                              Binds& binds) const {
  std::string cond = "(" + col + " IN (SELECT id FROM " +
                     (catalog_.schema().has("StringIds") ? catalog_.schema().qualified("StringIds") : std::string("(SELECT NULL AS id, NULL AS value WHERE 0)")) +
                     " WHERE value IN (SELECT value FROM json_each(?)))";
  binds.emplace_back(json_list(names));
  bool missing = std::any_of(names.begin(), names.end(),
                             [](std::string_view n) { return n.rfind(kMissingStringPrefix, 0) == 0; });
  if (missing && catalog_.schema().has("StringIds"))
    cond += " OR " + col + " NOT IN (SELECT id FROM " + catalog_.schema().qualified("StringIds") + ")";
  return cond + " OR " + col + " IS NULL)";
}

bool NameMatcher::operator()(const NameMatch& m, std::string_view name) {
  if (m.op == NameMatch::Op::eq) return name == m.pattern;
  Statement& s = m.op == NameMatch::Op::like ? like_ : glob_;
  if (!s) s = Statement(db_, std::string("SELECT ?1 ") + m.sql_operator() + " ?2");
  s.reset();
  s.bind(1, name);
  s.bind(2, m.pattern);
  return s.step() && !s.is_null(0) && s.int64(0) != 0;
}

std::string EventSource::string_ids_matching(const NameMatch& m, Binds& binds) const {
  if (!catalog_.schema().has("StringIds")) return "(SELECT NULL WHERE 0)";
  binds.emplace_back(m.pattern);
  return "(SELECT id FROM " + catalog_.schema().qualified("StringIds") + " WHERE value " + m.sql_operator() + " ?)";
}

std::string EventSource::column_sql(const char* column) const {
  return table_ != nullptr && table_->has(column) ? quote_identifier(column) : std::string("NULL");
}

std::string EventSource::string_column_condition(const char* column, const NameMatch& m, Binds& binds) const {
  return string_expression_condition(column_sql(column), m, binds);
}

std::string EventSource::string_expression_condition(const std::string& col, const NameMatch& m, Binds& binds) const {
  std::string cond = "(" + col + " IN " + string_ids_matching(m, binds);
  // A dangling id reads "[missing string N]": keep such rows when the pattern could match that text.
  if (may_start_with(m, kMissingStringPrefix)) {
    cond += " OR " + col + " NOT IN " +
            (catalog_.schema().has("StringIds") ? "(SELECT id FROM " + catalog_.schema().qualified("StringIds") + ")"
                                                : std::string("(SELECT NULL WHERE 0)"));
  }
  return cond + " OR " + col + " IS NULL)";
}

void EventSource::optional_int(ArgsSink& o, std::string_view key, int col) const {
  if (auto v = stmt_.optional_int64(col)) o.integer(key, *v);
}

bool EventSource::read_interval(bool end_may_be_null) {
  int64_t start = stmt_.int64(0);
  event_.source_rowid = stmt_.int64(2);
  event_.report = report_.index;
  std::optional<int64_t> end = stmt_.optional_int64(1);
  end_was_null_ = !end;
  stored_end_ = end.value_or(0);
  end_invalid_ = (end_was_null_ && !end_may_be_null) || (!end_was_null_ && stored_end_ < start);
  invalid_ends_ += end_invalid_;
  event_.dur = end_was_null_ ? 0 : checked_duration(start, stored_end_);
  event_.ts = report_.clock_offset == 0 ? start : saturating_add(start, report_.clock_offset);
  return true;
}

std::optional<std::string_view> EventSource::string_or_placeholder(int col, std::string& scratch) const {
  std::optional<int64_t> id = stmt_.optional_int64(col);
  if (!id) return std::nullopt;
  return catalog_.string_or_placeholder(*id, scratch);
}

std::optional<std::string_view> EventSource::name_from_string_id(int col, std::string& scratch) {
  std::optional<int64_t> id = stmt_.optional_int64(col);
  if (!id) return std::nullopt;
  event_.name_id = *id;
  return catalog_.string_or_placeholder(*id, scratch);
}

namespace {

// Puts a kind's declared time and end columns (NULL for points) and the table's rowid at result columns 0, 1, 2,
// where read_interval() expects them.
SelectBuilder& time_columns_first(SelectBuilder& b, Kind kind) {
  const KindSpec& k = kind_spec(kind);
  b.column(k.time);
  if (k.end != nullptr) b.column(k.end); else b.expression("NULL");
  b.expression("rowid");
  return b;
}

// The same for the readers of start/end tables that name no kind there (NVTX, synchronization): the static_assert
// holds their kinds to these columns.
SelectBuilder& interval_first(SelectBuilder& b) {
  b.column("start");
  b.column("end");
  b.expression("rowid");
  return b;
}
constexpr bool declared_start_end(Kind k) {
  return std::string_view(kind_spec(k).time) == "start" && kind_spec(k).end != nullptr &&
         std::string_view(kind_spec(k).end) == "end";
}
static_assert(declared_start_end(Kind::nvtx) && declared_start_end(Kind::sync),
              "interval_first() selects start and end: what export_model.def declares for the kinds that use it");

// The columns of a reader that only its args show (write_args): selected when the scan's query asks for args
// (ScanFilter::args); otherwise each reads as one shared NULL column, so SQLite neither fetches nor sorts them.
class ArgColumns {
 public:
  ArgColumns(SelectBuilder& b, bool read) : b_(b), read_(read) {}
  int operator()(std::string_view column) {
    if (read_) return b_.column(column);
    if (null_ < 0) null_ = b_.expression("NULL");
    return null_;
  }

 private:
  SelectBuilder& b_;
  bool read_;
  int null_ = -1;
};

// The id columns GpuColumns reads for every GPU activity kind: the kernel's, which every device-placed kind shares.
constexpr const KindSpec& kGpuIds = kind_spec(Kind::kernel);
constexpr bool gpu_kinds_share_ids() {
  for (const KindSpec& k : kKindSpecs)
    if (k.origin == Origin::stored && k.pid == PidColumn::device &&
        !(std::string_view(k.global_id) == kGpuIds.global_id && std::string_view(k.correlation) == kGpuIds.correlation))
      return false;
  return true;
}
static_assert(gpu_kinds_share_ids(), "GpuColumns reads one globalPid and correlationId column for all GPU kinds");

class GpuSource : public EventSource {
 protected:
  using EventSource::EventSource;
  // A GPU activity table: placed by device, its process in globalPid, correlated with the call that launched it
  // (as its kind is declared: called in a reader's constructor body, where kind() is the reader's).
  Shape gpu_shape() const { return shape_of(kind()); }
  // Columns shared by the GPU activity tables (their id columns: kGpuIds, above).
  struct GpuColumns {
    int device, stream, correlation, global_pid, context;
    // context_read: its contextId is read (false: NULL; for readers that show it in args only, without args).
    explicit GpuColumns(SelectBuilder& b, bool context_read = true)
        : device(b.column("deviceId")),
          stream(b.column("streamId")),
          correlation(read_column(b, kGpuIds.correlation)),
          global_pid(read_column(b, kGpuIds.global_id)),
          context(context_read ? b.column("contextId") : b.expression("NULL")) {}
  };
  bool read_gpu(const GpuColumns& c, Placement placement) {
    read_interval(false);
    event_.placement = placement;
    event_.device_id = stmt_.int64(c.device);
    event_.stream_id = stmt_.int64(c.stream);
    read_optional(c.global_pid, event_.has_global_id, event_.global_id);
    read_optional(c.correlation, event_.has_correlation, event_.correlation_id);
    return true;
  }
  void common_args(ArgsSink& o, const GpuColumns& c) const {
    optional_int(o, "correlation_id", c.correlation);
    optional_int(o, "context_id", c.context);
  }
  // Work of a CUDA graph traced per node (graphNodeId; 0: none): its node, and where CUDA_GRAPH_NODE_EVENTS has the
  // node, the node it was cloned from and the call that created it (src/model/graph_nodes.h).
  void graph_node_args(ArgsSink& o, int node_column) const {
    int64_t node = stmt_.int64(node_column);
    if (node == 0) return;
    o.integer("graph_node_id", node);
    const GraphNodeCreation* made = event_.has_global_id ? catalog_.graph_node(process_key_of(event_.global_id), node)
                                                         : nullptr;
    if (made == nullptr) return;
    if (made->original_id) o.integer("graph_node_original_id", *made->original_id);
    if (!made->has_call) return;
    o.string("graph_node_created_by", made->call_name);
    o.integer("graph_node_created_ts", saturating_add(made->call_ts, report_.clock_offset));
    if (made->call_correlation_id) o.integer("graph_node_created_correlation_id", *made->call_correlation_id);
  }
};

class KernelSource final : public GpuSource {
 public:
  KernelSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
               const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(time_columns_first(b_, Kind::kernel), f.args) {
    short_name_ = b_.column("shortName");
    demangled_ = b_.column("demangledName");  // also the name when shortName is NULL
    ArgColumns arg(b_, f.args);
    for (int i = 0; i < 3; ++i) {
      grid_[i] = arg(std::string("grid") + "XYZ"[i]);
      block_[i] = arg(std::string("block") + "XYZ"[i]);
    }
    registers_ = arg("registersPerThread");
    static_shared_ = arg("staticSharedMemory");
    dynamic_shared_ = arg("dynamicSharedMemory");
    local_ = arg("localMemoryPerThread");
    shared_executed_ = arg("sharedMemoryExecuted");
    graph_id_ = arg("graphId");
    graph_node_ = b_.column("graphNodeId");  // with or without args: a replay's slice is opened by its first node
    mangled_ = arg("mangledName");
    launch_type_ = arg("launchType");
    local_total_ = arg("localMemoryTotal");
    event_.kind = Kind::kernel;
    prepare(t, b_.select_list(), f, gpu_shape());
  }
  Kind kind() const override { return Kind::kernel; }
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    return string_column_condition("shortName", m, binds);  // NULL shortName: named by demangledName, kept
  }
  std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                Binds& binds) const override {
    return string_column_in("shortName", names, binds);
  }
  bool read_row() override {
    read_gpu(gpu_, Placement::gpu_stream);
    auto name = name_from_string_id(short_name_, name_scratch_);
    event_.name = name ? *name : name_from_string_id(demangled_, name_scratch_).value_or(std::string_view());
    read_optional(demangled_, event_.has_demangled_id, event_.demangled_id);
    event_.graph_node_id = stmt_.int64(graph_node_);
    return true;
  }
  void write_args(ArgsSink& o) const override {
    std::string scratch;
    if (event_.has_demangled_id)  // the id the column reads (TimelineScan::demangled_name)
      o.string("demangled_name", catalog_.string_or_placeholder(event_.demangled_id, scratch));
    if (auto x = stmt_.optional_int64(grid_[0])) o.triple("grid", *x, stmt_.int64(grid_[1]), stmt_.int64(grid_[2]));
    if (auto x = stmt_.optional_int64(block_[0])) o.triple("block", *x, stmt_.int64(block_[1]), stmt_.int64(block_[2]));
    optional_int(o, "registers_per_thread", registers_);
    optional_int(o, "static_shared_memory", static_shared_);
    optional_int(o, "dynamic_shared_memory", dynamic_shared_);
    optional_int(o, "local_memory_per_thread", local_);
    optional_int(o, "shared_memory_executed", shared_executed_);
    common_args(o, gpu_);
    optional_int(o, "graph_id", graph_id_);
    graph_node_args(o, graph_node_);
    // Where the export has them (nsys 2022+; the mangled name from 2022.3): the raw symbol, how it was launched
    // (ENUM_CUDA_KERNEL_LAUNCH_TYPE), its local memory, and its device's architecture.
    if (auto mangled = string_or_placeholder(mangled_, scratch)) o.string("mangled_name", *mangled);
    if (auto type = stmt_.optional_int64(launch_type_)) {
      static const char* const labels[] = {"Unknown", "Regular", "Coop Single Device", "Coop Multi Device"};
      if (*type >= 0 && *type < 4) o.string("launch_type", labels[*type]); else o.integer("launch_type", *type);
    }
    optional_int(o, "local_memory_total", local_total_);
    if (const std::string* arch = catalog_.gpu_arch(stmt_.int64(gpu_.device))) o.string("arch", *arch);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int short_name_, demangled_, grid_[3], block_[3], registers_, static_shared_, dynamic_shared_, local_,
      shared_executed_, graph_id_, graph_node_, mangled_, launch_type_, local_total_;
  std::string name_scratch_;
};

class MemcpySource final : public GpuSource {
 public:
  MemcpySource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
               const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(time_columns_first(b_, Kind::memcpy), f.args) {
    copy_kind_ = b_.column("copyKind");  // the name
    // The hidden columns bytes, copy_kind, src_kind and dst_kind read these with or without args.
    bytes_ = b_.column("bytes");
    src_kind_ = b_.column("srcKind");
    dst_kind_ = b_.column("dstKind");
    ArgColumns arg(b_, f.args);
    src_device_ = arg("srcDeviceId");
    dst_device_ = arg("dstDeviceId");
    graph_node_ = b_.column("graphNodeId");
    event_.kind = Kind::memcpy;
    prepare(t, b_.select_list(), f, gpu_shape());
  }
  Kind kind() const override { return Kind::memcpy; }
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    std::string kinds;
    for (int64_t k = 1; k < 14; ++k)
      if (name_could_be(m, memcpy_short_name(k))) kinds += (kinds.empty() ? "" : ",") + std::to_string(k);
    bool unknown = name_could_be(m, "Memcpy");  // copyKind 0, NULL or unlisted
    if (kinds.empty() && !unknown) return "0";
    std::string copy_kind = column_sql("copyKind");
    std::string cond = "(" + copy_kind + " IN (" + kinds + ")";
    if (unknown) cond += " OR " + copy_kind + " IS NULL OR " + copy_kind + " NOT BETWEEN 1 AND 13";
    return cond + ")";
  }
  bool read_row() override {
    read_gpu(gpu_, Placement::gpu_stream);
    event_.name = memcpy_short_name(stmt_.int64(copy_kind_));
    event_.memory.bytes = stmt_.optional_int64(bytes_);
    event_.memory.copy_kind = stmt_.optional_int64(copy_kind_);
    event_.memory.src_kind = stmt_.optional_int64(src_kind_);
    event_.memory.dst_kind = stmt_.optional_int64(dst_kind_);
    event_.graph_node_id = stmt_.int64(graph_node_);
    return true;
  }
  void write_args(ArgsSink& o) const override {
    const MemoryFields& m = event_.memory;
    if (m.bytes) o.integer("bytes", *m.bytes);
    labelled_arg(o, "copy_kind", copy_kind_of(catalog_, m.copy_kind));
    labelled_arg(o, "src_kind", memory_kind_of(catalog_, m.src_kind));
    labelled_arg(o, "dst_kind", memory_kind_of(catalog_, m.dst_kind));
    optional_int(o, "src_device_id", src_device_);
    optional_int(o, "dst_device_id", dst_device_);
    common_args(o, gpu_);
    graph_node_args(o, graph_node_);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int bytes_, copy_kind_, src_kind_, dst_kind_, src_device_, dst_device_, graph_node_;
};

class MemsetSource final : public GpuSource {
 public:
  MemsetSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
               const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(time_columns_first(b_, Kind::memset), f.args) {
    bytes_ = b_.column("bytes");  // the hidden columns bytes and mem_kind read these with or without args
    mem_kind_ = b_.column("memKind");
    ArgColumns arg(b_, f.args);
    value_ = arg("value");
    graph_node_ = b_.column("graphNodeId");
    event_.kind = Kind::memset;
    prepare(t, b_.select_list(), f, gpu_shape());
  }
  Kind kind() const override { return Kind::memset; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    return name_could_be(m, "Memset") ? "1" : "0";
  }
  bool read_row() override {
    read_gpu(gpu_, Placement::gpu_stream);
    event_.name = "Memset";
    event_.memory.bytes = stmt_.optional_int64(bytes_);
    event_.memory.mem_kind = stmt_.optional_int64(mem_kind_);
    event_.graph_node_id = stmt_.int64(graph_node_);
    return true;
  }
  void write_args(ArgsSink& o) const override {
    if (event_.memory.bytes) o.integer("bytes", *event_.memory.bytes);
    optional_int(o, "value", value_);
    labelled_arg(o, "mem_kind", memory_kind_of(catalog_, event_.memory.mem_kind));
    common_args(o, gpu_);
    graph_node_args(o, graph_node_);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int bytes_, value_, mem_kind_, graph_node_;
};

// CUDA graph launches traced per graph (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, nsys's default --cuda-graph-trace=graph):
// one slice per launch on its stream, linked to its launch call like a kernel. (Traced per node, a graph's kernels
// are ordinary kernel rows sharing the launch's correlation id.)
class GraphSource final : public GpuSource {
 public:
  GraphSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
              const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(time_columns_first(b_, Kind::graph)) {
    graph_id_ = b_.column("graphId");
    graph_exec_id_ = b_.column("graphExecId");
    event_.kind = Kind::graph;
    prepare(t, b_.select_list(), f, gpu_shape());
  }
  Kind kind() const override { return Kind::graph; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    return may_start_with(m, "CUDA graph") ? "1" : "0";
  }
  bool read_row() override {
    read_gpu(gpu_, Placement::gpu_stream);
    std::optional<int64_t> graph = stmt_.optional_int64(graph_id_);
    name_scratch_ = graph ? fmt::format("CUDA graph {}", *graph) : "CUDA graph";
    event_.name = name_scratch_;
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "graph_id", graph_id_);
    optional_int(o, "graph_exec_id", graph_exec_id_);
    common_args(o, gpu_);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int graph_id_, graph_exec_id_;
  std::string name_scratch_;
};

// Synchronization records, on their context's GPU: nsys 2026 writes deviceId 0 on the rows of contexts on other
// GPUs, so a row's device is its context's (ProfileCatalog::context_device), the stored one kept in args when it
// differs. A pid constraint is therefore checked here, on the device the row is placed on, not pushed into SQL.
class SyncSource final : public GpuSource {
 public:
  SyncSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
               const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(interval_first(b_)) {
    sync_type_ = b_.column("syncType");
    event_id_ = b_.column("eventId");
    event_.kind = Kind::sync;
    ScanFilter by_context = f;
    if (f.pid) {
      gpu_pid_wanted_ = pid_in_report(*f.pid, r.index).value_or(-1);
      by_context.pid.reset();
    }
    prepare(t, b_.select_list(), by_context, gpu_shape());
  }
  Kind kind() const override { return Kind::sync; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    std::string match, known;
    for (int64_t t = 0; t < 64; ++t) {
      std::string_view label = label_or(catalog_.sync_type_label(t), builtin_sync_type(t));
      if (label.empty()) continue;
      known += (known.empty() ? "" : ",") + std::to_string(t);
      if (name_could_be(m, label)) match += (match.empty() ? "" : ",") + std::to_string(t);
    }
    bool unlabeled = may_start_with(m, "Sync type ");  // types without a label are named "Sync type N"
    bool null_type = name_could_be(m, label_or(catalog_.sync_type_label(0), builtin_sync_type(0)));
    if (match.empty() && !unlabeled && !null_type) return "0";
    std::string type = column_sql("syncType");
    return "(" + type + " IN (" + match + ")" + (unlabeled ? " OR " + type + " NOT IN (" + known + ")" : "") +
           (null_type ? " OR " + type + " IS NULL" : "") + ")";
  }
  bool read_row() override {
    read_gpu(gpu_, Placement::gpu_sync);
    recorded_device_ = event_.device_id;
    if (auto context = stmt_.optional_int64(gpu_.context); context && event_.has_global_id)
      event_.device_id = catalog_.context_device(db_, event_.global_id, *context, recorded_device_);
    if (gpu_pid_wanted_ && gpu_pid(event_.device_id) != *gpu_pid_wanted_) return false;
    int64_t type = stmt_.int64(sync_type_);
    std::string_view label = label_or(catalog_.sync_type_label(type), builtin_sync_type(type));
    if (label.empty()) {
      name_scratch_ = fmt::format("Sync type {}", type);
      label = name_scratch_;
    }
    event_.name = label;
    return true;
  }
  void write_args(ArgsSink& o) const override {
    if (!stmt_.is_null(sync_type_)) o.string("sync_type", event_.name);
    // 0xFFFFFFFF marks "no event" / "no stream" in CUPTI records.
    if (auto event = stmt_.optional_int64(event_id_); event && *event != 0xFFFFFFFF) o.integer("event_id", *event);
    common_args(o, gpu_);
    if (event_.device_id != recorded_device_) o.integer("recorded_device_id", recorded_device_);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int sync_type_, event_id_;
  std::optional<int64_t> gpu_pid_wanted_;  // a pid constraint: the rows placed on that GPU
  int64_t recorded_device_ = 0;            // the row's own deviceId
  std::string name_scratch_;
};

// Calls on a CPU thread, named through StringIds (nameId): CUDA runtime and driver API calls
// (CUPTI_ACTIVITY_KIND_RUNTIME, which carry the correlation id GPU work points back to), OS runtime calls (OSRT_API),
// cuDNN and cuBLAS calls (CUDNN_EVENTS, CUBLAS_EVENTS), and CUDA graph / graph node creation (CUDA_GRAPH_EVENTS,
// CUDA_GRAPH_NODE_EVENTS). Columns as in NVIDIA's export schema; absent ones read as NULL.
class CallSource final : public EventSource {
 public:
  CallSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
             const ReportContext& r, Kind kind)
      : EventSource(db, catalog, r),
        b_(t),
        kind_(kind),
        backtraces_(db, catalog, kind == Kind::osrt ? "OSRT_CALLCHAINS" : kind == Kind::cuda_api ? "CUDA_CALLCHAINS" : "") {
    const Shape shape = shape_of(kind);  // only CUDA API calls have a correlation id (with GPU work)
    time_columns_first(b_, kind);
    global_tid_ = read_column(b_, shape.global_id);
    name_id_ = b_.column("nameId");
    correlation_ = read_column(b_, shape.correlation);
    ArgColumns arg(b_, f.args);
    return_value_ = arg("returnValue");
    callchain_ = arg("callchainId");
    // Only CUDA API calls come from the runtime or the driver.
    event_class_ = kind == Kind::cuda_api ? arg("eventClass") : b_.expression("NULL");
    nesting_ = arg("nestingLevel");
    graph_id_ = arg("graphId");
    graph_node_id_ = arg("graphNodeId");
    graph_exec_id_ = arg("graphExecId");
    unnamed_ = kind == Kind::cuda_api ? kUnnamedApiCall : "[unnamed call]";
    event_.kind = kind;
    event_.placement = Placement::cpu_thread;
    prepare(t, b_.select_list(), f, shape);
  }
  Kind kind() const override { return kind_; }
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    std::string cond = string_column_condition("nameId", m, binds);
    if (!name_could_be(m, unnamed_)) cond = "(" + cond + " AND " + column_sql("nameId") + " IS NOT NULL)";
    return cond;
  }
  std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                Binds& binds) const override {
    std::string cond = string_column_in("nameId", names, binds);
    if (std::find(names.begin(), names.end(), std::string_view(unnamed_)) == names.end())
      cond = "(" + cond + " AND " + column_sql("nameId") + " IS NOT NULL)";
    return cond;
  }
  bool read_row() override {
    read_interval(false);
    read_optional(global_tid_, event_.has_global_id, event_.global_id);
    read_optional(correlation_, event_.has_correlation, event_.correlation_id);
    event_.name = name_from_string_id(name_id_, name_scratch_).value_or(unnamed_);
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "correlation_id", correlation_);
    optional_int(o, "return_value", return_value_);
    if (auto event_class = stmt_.optional_int64(event_class_)) {
      int64_t c = *event_class;
      if (c == 0) o.string("api", "runtime");
      else if (c == 1) o.string("api", "driver");
      else o.integer("event_class", c);
    }
    optional_int(o, "nesting_level", nesting_);
    optional_int(o, "graph_id", graph_id_);
    optional_int(o, "graph_node_id", graph_node_id_);
    optional_int(o, "graph_exec_id", graph_exec_id_);
    if (auto callchain = stmt_.optional_int64(callchain_); callchain && (kind_ == Kind::cuda_api || *callchain != 0)) {
      o.integer("callchain_id", *callchain);
      // 0: no backtrace was recorded for the call.
      if (*callchain != 0 && backtraces_.available()) o.stack("backtrace", backtraces_.read(*callchain));
    }
  }

 private:
  SelectBuilder b_;
  Kind kind_;
  mutable CallchainReader backtraces_;
  const char* unnamed_;
  int global_tid_, correlation_, name_id_, return_value_, event_class_, nesting_, callchain_, graph_id_,
      graph_node_id_, graph_exec_id_;
  std::string name_scratch_;
};

class NvtxSource final : public EventSource {
 public:
  NvtxSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
               const ReportContext& r)
      : EventSource(db, catalog, r), b_(t) {
    // Marks and ranges; definitions (domain and category names) are not events.
    const Shape shape = shape_of(Kind::nvtx, nvtx_types_condition(kNvtxEvents));
    interval_first(b_);
    type_ = b_.column("eventType");
    text_ = b_.column("text");
    text_id_ = b_.column("textId");
    global_tid_ = read_column(b_, shape.global_id);
    domain_ = b_.column("domainId");  // also places NCCL's ranges
    color_ = b_.column("color");      // also the cname
    ArgColumns arg(b_, f.args);
    end_global_tid_ = arg("endGlobalTid");
    category_ = arg("category");
    range_id_ = arg("rangeId");
    static const char* const payloads[] = {"int64Value", "uint64Value", "int32Value", "uint32Value",
                                           "doubleValue", "floatValue"};
    for (int i = 0; i < 6; ++i) payload_[i] = arg(payloads[i]);
    json_text_ = arg("jsonText");
    json_text_id_ = arg("jsonTextId");
    binary_data_ = arg("binaryData");  // an extended payload, decoded by its schema (src/readers/nvtx_payload.h)
    event_.kind = Kind::nvtx;
    event_.placement = Placement::cpu_thread;
    prepare(t, b_.select_list(), f, shape);
  }
  Kind kind() const override { return Kind::nvtx; }
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    binds.emplace_back(m.pattern);
    std::string text = column_sql("text"), text_id = column_sql("textId");
    std::string cond = "(" + text + " " + m.sql_operator() + " ? OR (" + text + " IS NULL AND " +
                       string_column_condition("textId", m, binds);
    if (!name_could_be(m, kUnnamedNvtxRange)) cond += " AND " + text_id + " IS NOT NULL";
    return cond + "))";
  }
  std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                Binds& binds) const override {
    std::string text = column_sql("text"), text_id = column_sql("textId");
    binds.emplace_back(json_list(names));
    std::string cond = "(" + text + " IN (SELECT value FROM json_each(?)) OR (" + text + " IS NULL AND " +
                       string_column_in("textId", names, binds);
    if (std::find(names.begin(), names.end(), std::string_view(kUnnamedNvtxRange)) == names.end())
      cond += " AND " + text_id + " IS NOT NULL";
    return cond + "))";
  }
  bool read_row() override {
    read_interval(true);
    int64_t type = stmt_.int64(type_);
    event_.instant = nvtx_type_is(type, NvtxRole::mark);
    auto color = stmt_.optional_int64(color_);
    event_.cname = color ? nearest_chrome_color(static_cast<uint32_t>(*color)) : nullptr;
    event_.placement = nvtx_type_is(type, NvtxRole::start_end_range) ? Placement::cpu_async : Placement::cpu_thread;
    const Domain& domain = domain_of(stmt_.int64(global_tid_), stmt_.int64(domain_));  // NULL: the default, 0
    event_.domain = domain.name;
    if (event_.placement == Placement::cpu_thread && domain.nccl)
      event_.placement = Placement::cpu_nccl;  // NCCL's own ranges read better on a lane of their own
    if (!event_.instant && end_was_null_) {
      // A range never closed extends to the end of the profile.
      event_.dur = checked_duration(stmt_.int64(0), catalog_.profile_end(db_));
    }
    if (event_.instant) event_.dur = 0;
    read_optional(global_tid_, event_.has_global_id, event_.global_id);
    std::optional<std::string_view> text = stmt_.optional_text(text_);
    std::optional<int64_t> text_id = stmt_.optional_int64(text_id_);
    event_.name = catalog_.nvtx_range_name(text, text_id, name_scratch_);
    if (!text && text_id) event_.name_id = *text_id;  // a registered string, as nvtx_range_name took it
    return true;
  }
  void write_args(ArgsSink& o) const override {
    int64_t domain = stmt_.int64(domain_), thread = stmt_.int64(global_tid_);  // domains are numbered per process
    if (domain != 0) {
      if (event_.domain) o.string("domain", *event_.domain);  // read_row's, the column's value
      o.integer("domain_id", domain);
    }
    if (int64_t cat = stmt_.int64(category_); cat != 0) {  // NULL or 0: no category
      if (const std::string* name = catalog_.nvtx_category(db_, thread, domain, cat)) o.string("category", *name);
      o.integer("category_id", cat);
    }
    if (auto color = stmt_.optional_int64(color_)) {
      uint32_t argb = static_cast<uint32_t>(*color);
      o.string("color", fmt::format("#{:08X}", argb));
    }
    for (int i = 0; i < 6; ++i) {
      if (stmt_.is_null(payload_[i])) continue;
      if (i < 4) {
        if (i == 1 && stmt_.int64(payload_[i]) < 0)  // uint64 stored in SQLite's signed integer
          o.unsigned_integer("payload", static_cast<uint64_t>(stmt_.int64(payload_[i])));
        else
          o.integer("payload", stmt_.int64(payload_[i]));
      } else {
        o.real("payload", stmt_.real(payload_[i]));
      }
      break;
    }
    std::string scratch;
    if (auto json = stmt_.optional_text(json_text_)) o.string("payload_json", *json);
    else if (auto json_ref = string_or_placeholder(json_text_id_, scratch)) o.string("payload_json", *json_ref);
    if (auto blob = stmt_.optional_blob(binary_data_)) {
      if (!payload_schemas_) payload_schemas_ = NvtxPayloadSchemas::load(db_, catalog_.schema());
      write_nvtx_payload_args(*payload_schemas_, domain, *blob, o);
    }
    int64_t type = stmt_.int64(type_);
    if (nvtx_type_is(type, NvtxRole::start_end_range)) o.string("range", "start/end");
    optional_int(o, "range_id", range_id_);
    auto ended_on = stmt_.optional_int64(end_global_tid_), started_on = stmt_.optional_int64(global_tid_);
    if (ended_on && started_on && *ended_on != *started_on) o.integer("end_tid", os_tid_of(*ended_on));
    if (!event_.instant && end_was_null_) {
      o.boolean("unclosed", true);
      // Where NVIDIA's nvtx_sum ends it (trace_events draws it to the end of the profile), on the timeline's clock.
      if (std::optional<int64_t> last = catalog_.last_nvtx_timestamp(db_))
        o.integer("last_nvtx_ts", saturating_add(*last, report_.clock_offset));
    }
  }

 private:
  // A domain as the rows need it: its name (null: the default domain, or one never named) and whether it is NCCL's.
  struct Domain {
    const std::string* name = nullptr;
    bool nccl = false;
  };
  const Domain& domain_of(int64_t global_tid, int64_t domain) {
    std::pair<int64_t, int64_t> key{global_pid_of(global_tid), domain};
    auto it = domains_.find(key);
    if (it == domains_.end()) {
      const std::string* name = catalog_.nvtx_domain(db_, global_tid, domain);
      // The default domain (0) has no name in args, whatever a definition says; its NCCL test is as it was.
      it = domains_.emplace(key, Domain{domain != 0 ? name : nullptr, name != nullptr && *name == "NCCL"}).first;
    }
    return it->second;
  }
  SelectBuilder b_;
  int type_, text_, text_id_, global_tid_, end_global_tid_, domain_, category_, color_, range_id_, payload_[6],
      json_text_, json_text_id_, binary_data_;
  mutable std::optional<NvtxPayloadSchemas> payload_schemas_;  // read at the first row with a binaryData
  std::map<std::pair<int64_t, int64_t>, Domain> domains_;  // (globalPid, domainId) -> its Domain
  std::string name_scratch_;
};


// MPI calls (MPI_P2P_EVENTS, MPI_COLLECTIVES_EVENTS, MPI_START_WAIT_EVENTS, MPI_OTHER_EVENTS): on their thread,
// named by the registered string textId (the MPI function), with their message parameters in args.
class MpiSource final : public EventSource {
 public:
  MpiSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f, const ReportContext& r)
      : EventSource(db, catalog, r), b_(t) {
    const Shape shape = shape_of(Kind::mpi);
    time_columns_first(b_, Kind::mpi);
    global_tid_ = read_column(b_, shape.global_id);
    text_id_ = b_.column("textId");
    static const char* const params[] = {"remoteRank", "rootRank", "tag", "size", "recvSize", "commHandle",
                                         "requestHandle"};
    for (int i = 0; i < 7; ++i) params_[i] = b_.column(params[i]);
    event_.kind = Kind::mpi;
    event_.placement = Placement::cpu_thread;
    prepare(t, b_.select_list(), f, shape);
  }
  Kind kind() const override { return Kind::mpi; }
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    return string_column_condition("textId", m, binds);
  }
  std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                Binds& binds) const override {
    return string_column_in("textId", names, binds);
  }
  bool read_row() override {
    read_interval(true);  // an MPI call may have no end (still running when collection stopped)
    if (end_was_null()) event_.dur = 0;
    read_optional(global_tid_, event_.has_global_id, event_.global_id);
    event_.name = name_from_string_id(text_id_, name_scratch_).value_or("[unnamed MPI call]");
    return true;
  }
  void write_args(ArgsSink& o) const override {
    static const char* const keys[] = {"remote_rank", "root_rank", "tag", "size", "recv_size", "comm_handle",
                                       "request_handle"};
    for (int i = 0; i < 7; ++i)
      optional_int(o, keys[i], params_[i]);
    if (end_was_null()) o.boolean("no_end", true);
  }

 private:
  SelectBuilder b_;
  int global_tid_, text_id_, params_[7];
  std::string name_scratch_;
};

// CUDA memory in use (CUDA_GPU_MEMORY_USAGE_EVENTS, nsys --cuda-memory-usage=true): one counter sample per
// allocation or deallocation, on its GPU's "CUDA memory" track, named by its memory kind ("CUDA memory: Device").
// Its value is the bytes in use of that kind on that device just after it: the running sum over the whole table,
// in (start, rowid) order, of +bytes per allocation (memoryOperationType 0) and -bytes per deallocation (1), computed
// by SQLite before any constraint applies, so a row's value is the same in every query (a window or a pid filter
// does not restart the sum). Summed over processes: a GPU's memory is one pool, which is what runs out.
class CudaMemorySource final : public EventSource {
 public:
  CudaMemorySource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                   const ReportContext& r)
      : EventSource(db, catalog, r) {
    auto col = [&](const char* c, const char* as) {
      return (t.has(c) ? quote_identifier(c) : std::string("NULL")) + " AS " + quote_identifier(as);
    };
    std::string in_use =
        "(SELECT start, rowid AS source_rowid, " + col("deviceId", "deviceId") + ", " + col("globalPid", "globalPid") +
        ", " + col("correlationId", "correlationId") + ", " + col("contextId", "contextId") + ", " +
        col("streamId", "streamId") + ", " + col("address", "address") + ", " + col("memKind", "memKind") + ", " +
        col("name", "variableName") + ", bytes, memoryOperationType, "
        "sum(CASE memoryOperationType WHEN 0 THEN coalesce(bytes, 0) WHEN 1 THEN -coalesce(bytes, 0) ELSE 0 END) "
        "OVER (PARTITION BY " + (t.has("deviceId") ? std::string("deviceId") : std::string("NULL")) + ", " +
        (t.has("memKind") ? std::string("memKind") : std::string("NULL")) +
        " ORDER BY start, rowid ROWS UNBOUNDED PRECEDING) AS in_use FROM " + catalog.schema().qualified(t.name) + ")";
    Shape shape = shape_of(Kind::cuda_memory);
    shape.from_sql = in_use;
    event_.kind = Kind::cuda_memory;
    event_.placement = Placement::gpu_memory;
    event_.instant = true;
    prepare(t,
            "start, NULL, source_rowid, deviceId, globalPid, correlationId, memKind, memoryOperationType, bytes, "
            "address, variableName, contextId, streamId, in_use",
            f, shape);
  }
  Kind kind() const override { return Kind::cuda_memory; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    return may_start_with(m, "CUDA memory") ? "1" : "0";
  }
  bool read_row() override {
    read_interval(true);
    event_.dur = 0;
    event_.device_id = stmt_.optional_int64(kDevice).value_or(0);
    event_.stream_id = 0;
    read_optional(kGlobalPid, event_.has_global_id, event_.global_id);
    read_optional(kCorrelation, event_.has_correlation, event_.correlation_id);
    std::optional<int64_t> kind = stmt_.optional_int64(kMemKind);
    event_.memory.bytes = stmt_.optional_int64(kBytes);
    event_.memory.mem_kind = kind;
    std::string_view label = kind ? memory_kind_text(catalog_, *kind) : "";
    name_scratch_ = !kind ? "CUDA memory" : !label.empty() ? fmt::format("CUDA memory: {}", label)
                                                           : fmt::format("CUDA memory: kind {}", *kind);
    event_.name = name_scratch_;
    return true;
  }
  void write_args(ArgsSink& o) const override {
    o.integer("value", stmt_.int64(kInUse));  // bytes in use: the counter's value (the writers draw only this)
    if (auto op = stmt_.optional_int64(kOperation))
      *op == 0 ? o.string("operation", "Allocation") : *op == 1 ? o.string("operation", "Deallocation")
                                                                 : o.integer("operation", *op);
    const MemoryFields& m = event_.memory;
    if (m.bytes) o.integer("bytes", *m.bytes);
    optional_int(o, "address", kAddress);
    labelled_arg(o, "mem_kind", memory_kind_of(catalog_, m.mem_kind));
    if (auto name = stmt_.optional_text(kVariableName)) o.string("variable_name", *name);
    optional_int(o, "context_id", kContext);
    optional_int(o, "stream_id", kStream);
    optional_int(o, "correlation_id", kCorrelation);
  }

 private:
  // The select list's columns (the constructor's), after start, end and rowid.
  static constexpr int kDevice = 3, kGlobalPid = 4, kCorrelation = 5, kMemKind = 6, kOperation = 7, kBytes = 8,
                       kAddress = 9, kVariableName = 10, kContext = 11, kStream = 12, kInUse = 13;
  std::string name_scratch_;
};

// Thread scheduling (SCHED_EVENTS): each sched-in record starts a "Running on CPU n" slice on a track beside its
// thread, ending at the thread's next record (its sched-out), or at the end of the profile when there is none.
class SchedSource final : public EventSource {
 public:
  SchedSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
              const ReportContext& r)
      : EventSource(db, catalog, r) {
    event_.kind = Kind::sched;
    event_.placement = Placement::cpu_sched;
    std::string paired = "(SELECT start, lead(start) OVER (PARTITION BY globalTid ORDER BY start, rowid) AS \"end\", "
                         "rowid AS source_rowid, cpu, isSchedIn, globalTid FROM " +
                         catalog.schema().qualified(t.name) + ")";
    Shape shape = shape_of(Kind::sched, "isSchedIn = 1");
    shape.from_sql = paired;
    shape.end = "end";  // the paired end computed there
    prepare(t, "start, \"end\", source_rowid, cpu, globalTid", f, shape);
  }
  Kind kind() const override { return Kind::sched; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    return may_start_with(m, "Running on CPU ") || name_could_be(m, "Running") ? "1" : "0";  // NULL cpu: "Running"
  }
  bool read_row() override {
    read_interval(true);
    if (end_was_null()) event_.dur = checked_duration(stmt_.int64(0), catalog_.profile_end(db_));
    read_optional(4, event_.has_global_id, event_.global_id);
    std::optional<int64_t> cpu = stmt_.optional_int64(3);
    name_scratch_ = cpu ? fmt::format("Running on CPU {}", *cpu) : "Running";
    event_.name = name_scratch_;
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "cpu", 3);
    if (end_was_null()) o.boolean("until_profile_end", true);
  }

 private:
  std::string name_scratch_;
};

// CUDA events (CUPTI_ACTIVITY_KIND_CUDA_EVENT): instants on their stream, at their `timestamp`. Exports before
// 2023.4 have no timestamp column: their rows cannot be placed and are counted as skipped.
class CudaEventSource final : public GpuSource {
 public:
  CudaEventSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                  const ReportContext& r)
      : GpuSource(db, catalog, r), b_(t), gpu_(time_columns_first(b_, Kind::cuda_event)) {
    event_id_ = b_.column("eventId");
    event_.kind = Kind::cuda_event;
    event_.instant = true;
    prepare(t, b_.select_list(), f, gpu_shape());
  }
  Kind kind() const override { return Kind::cuda_event; }
  std::string name_condition(const NameMatch& m, Binds&) const override {
    return may_start_with(m, "CUDA event") ? "1" : "0";
  }
  bool read_row() override {
    // An instant (a timestamp, no end): read_gpu() would take its missing end for an invalid one.
    read_interval(/*end_may_be_null=*/true);
    event_.placement = Placement::gpu_stream;
    event_.device_id = stmt_.int64(gpu_.device);
    event_.stream_id = stmt_.int64(gpu_.stream);
    read_optional(gpu_.global_pid, event_.has_global_id, event_.global_id);
    read_optional(gpu_.correlation, event_.has_correlation, event_.correlation_id);
    event_.dur = 0;
    std::optional<int64_t> event = stmt_.optional_int64(event_id_);
    name_scratch_ = event ? fmt::format("CUDA event {}", *event) : "CUDA event";
    event_.name = name_scratch_;
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "event_id", event_id_);
    common_args(o, gpu_);
  }

 private:
  SelectBuilder b_;
  GpuColumns gpu_;
  int event_id_;
  std::string name_scratch_;
};

// Diagnostics (DIAGNOSTIC_EVENT): messages nsys recorded during collection, instants on a per-process
// "Diagnostics" track.
class DiagnosticSource final : public EventSource {
 public:
  DiagnosticSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                   const ReportContext& r)
      : EventSource(db, catalog, r), b_(t) {
    const Shape shape = shape_of(Kind::diagnostic);
    time_columns_first(b_, Kind::diagnostic);
    text_ = b_.column("text");
    severity_ = b_.column("severity");
    source_ = b_.column("source");
    global_pid_ = read_column(b_, shape.global_id);
    event_.kind = Kind::diagnostic;
    event_.placement = Placement::process;
    event_.instant = true;
    prepare(t, b_.select_list(), f, shape);
  }
  Kind kind() const override { return Kind::diagnostic; }
  bool read_row() override {
    read_interval(true);
    event_.dur = 0;
    read_optional(global_pid_, event_.has_global_id, event_.global_id);
    event_.name = stmt_.optional_text(text_).value_or("[diagnostic]");
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "severity", severity_);
    optional_int(o, "source", source_);
  }

 private:
  SelectBuilder b_;
  int text_, severity_, source_, global_pid_;
};

// CPU samples (COMPOSITE_EVENTS, nsys's --sample): one instant per sample on a "(samples)" track beside its thread,
// named after the innermost frame of its stack (SAMPLING_CALLCHAINS: "[no stack]" when it has none), the whole stack
// in its args.
class CpuSampleSource final : public EventSource {
 public:
  CpuSampleSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                  const ReportContext& r)
      : EventSource(db, catalog, r), b_(t), stacks_(db, catalog, kStackTable) {
    const Shape shape = shape_of(Kind::cpu_sample);
    time_columns_first(b_, Kind::cpu_sample);
    global_tid_ = read_column(b_, shape.global_id);
    cpu_ = b_.column("cpu");
    state_ = b_.column("threadState");
    cycles_ = b_.column("cpuCycles");
    // Older exports declare id INT (not a rowid alias): the stack is found by the id column.
    std::string id_sql = catalog.schema().qualified(t.name) + "." + quote_identifier(t.has("id") ? "id" : "rowid");
    id_ = b_.expression(id_sql);
    innermost_sql_ = CallchainReader::innermost_symbol_sql(catalog, kStackTable, id_sql);
    innermost_ = b_.expression(innermost_sql_);
    event_.kind = Kind::cpu_sample;
    event_.placement = Placement::cpu_samples;
    event_.instant = true;
    prepare(t, b_.select_list(), f, shape);
  }
  Kind kind() const override { return Kind::cpu_sample; }
  // The name is the innermost frame's symbol (a StringIds id, possibly dangling) or kNoStack when there is none.
  // (string_expression_* keep rows whose symbol is NULL: here those are named kNoStack, so the name is re-checked.)
  std::string name_condition(const NameMatch& m, Binds& binds) const override {
    return string_expression_condition(innermost_sql_, m, binds);
  }
  std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                Binds& binds) const override {
    return string_expression_in(innermost_sql_, names, binds);
  }
  bool read_row() override {
    read_interval(true);
    event_.dur = 0;
    read_optional(global_tid_, event_.has_global_id, event_.global_id);
    event_.name = name_from_string_id(innermost_, name_scratch_).value_or(kNoStack);
    return true;
  }
  void write_args(ArgsSink& o) const override {
    optional_int(o, "cpu", cpu_);
    if (auto state = stmt_.optional_int64(state_)) {
      if (const std::string* label = catalog_.thread_state_label(*state)) o.string("thread_state", *label);
      else o.integer("thread_state", *state);
    }
    optional_int(o, "cpu_cycles", cycles_);
    o.stack("stack", stacks_.read(stmt_.int64(id_)));
  }

 private:
  static constexpr const char* kStackTable = "SAMPLING_CALLCHAINS";
  SelectBuilder b_;
  mutable CallchainReader stacks_;
  std::string innermost_sql_;  // the StringIds id of the innermost frame's symbol, as SQL over the row
  int global_tid_, cpu_, state_, cycles_, id_, innermost_;
  std::string name_scratch_;
};

// A table whose rows this export gives no way to place (e.g. CUDA events without a timestamp before 2023.4): no
// events, but its rows are counted as skipped so the trace says what it could not show.
class UnplaceableRows final : public EventSource {
 public:
  UnplaceableRows(sqlite3* db, const ProfileCatalog& catalog, Kind kind, const std::string& table)
      : EventSource(db, catalog), kind_(kind) {
    Statement count(db, "SELECT count(*) FROM " + catalog.schema().qualified(table));
    if (count.step()) skipped_ = static_cast<uint64_t>(count.int64(0));
  }
  Kind kind() const override { return kind_; }
  bool next() override { return false; }
  bool read_row() override { return false; }
  void write_args(ArgsSink&) const override {}

 private:
  Kind kind_;
};

using OpenReader = std::unique_ptr<EventSource> (*)(sqlite3*, const ProfileCatalog&, const TableInfo&,
                                                    const ScanFilter&, const ReportContext&, Kind);

template <class Source>
std::unique_ptr<EventSource> open_reader(sqlite3* db, const ProfileCatalog& c, const TableInfo& t, const ScanFilter& f,
                                         const ReportContext& r, Kind kind) {
  if constexpr (std::is_constructible_v<Source, sqlite3*, const ProfileCatalog&, const TableInfo&, const ScanFilter&,
                                        const ReportContext&, Kind>)
    return std::make_unique<Source>(db, c, t, f, r, kind);
  else
    return std::make_unique<Source>(db, c, t, f, r);
}

// Each kind's reader (its tables and columns: export_model.def). nullptr for the derived kinds, which are made by
// nsystrace (make_projection_source), never read. A switch with no default: a kind added without a reader here is a
// -Wswitch warning, and a stored kind without one fails its ExportModel test.
constexpr OpenReader reader_of(Kind kind) {
  switch (kind) {
    case Kind::nvtx: return open_reader<NvtxSource>;
    case Kind::cuda_api: return open_reader<CallSource>;
    case Kind::kernel: return open_reader<KernelSource>;
    case Kind::memcpy: return open_reader<MemcpySource>;
    case Kind::memset: return open_reader<MemsetSource>;
    case Kind::sync: return open_reader<SyncSource>;
    case Kind::nvtx_kernel: return nullptr;
    case Kind::osrt: return open_reader<CallSource>;
    case Kind::sched: return open_reader<SchedSource>;
    case Kind::cuda_event: return open_reader<CudaEventSource>;
    case Kind::diagnostic: return open_reader<DiagnosticSource>;
    case Kind::graph: return open_reader<GraphSource>;
    case Kind::cudnn: return open_reader<CallSource>;
    case Kind::cublas: return open_reader<CallSource>;
    case Kind::mpi: return open_reader<MpiSource>;
    case Kind::cuda_graph: return open_reader<CallSource>;
    case Kind::gpu_metric: return open_reader<GpuMetricSource>;
    case Kind::cpu_sample: return open_reader<CpuSampleSource>;
    case Kind::cuda_memory: return open_reader<CudaMemorySource>;
  }
  return nullptr;
}
// (Not a static_assert: comparing function addresses is not a constant expression in a sanitizer build. The
// switch above warns of a kind left out, and ExportModel's tests open every stored kind's reader.)

void open_one(std::vector<std::unique_ptr<EventSource>>& out, sqlite3* db, const ProfileCatalog& catalog,
              const ScanFilter& filter, const ReportContext& report, const RowSource& source) {
  const Kind kind = source.kind;
  const KindSpec& spec = kind_spec(kind);
  if (!filter.wants(kind)) return;
  const TableInfo* t = catalog.schema().table(source.table);
  if (t == nullptr) return;  // absent table = no events (nsys creates tables lazily)
  if (spec.time_may_be_absent && !t->has(spec.time)) {
    out.push_back(std::make_unique<UnplaceableRows>(db, catalog, kind, source.table));
    return;
  }
  for (const char* column : required_columns(kind)) {
    if (t->has(column)) continue;
    Statement any(db, "SELECT 1 FROM " + catalog.schema().qualified(source.table) + " LIMIT 1");
    if (!any.step()) return;  // an empty table, whatever its columns
    throw Error(fmt::format("nsystrace: table {} has no column '{}' (an export schema this version does not know?), "
                            "so its rows cannot be placed on a timeline",
                            source.table, column));
  }
  if (filter.pid) {
    std::optional<int64_t> pid = pid_in_report(*filter.pid, report.index);
    if (!pid) return;  // another report's process
    bool pid_is_gpu = *pid >= kGpuPidBase;
    if (pid_is_gpu != is_gpu(kind)) return;  // a GPU pid cannot match CPU events and vice versa
  }
  OpenReader open = reader_of(kind);
  if (open == nullptr) throw Error(fmt::format("nsystrace: internal: kind '{}' has no reader", kind_name(kind)));
  std::unique_ptr<EventSource> reader = open(db, catalog, *t, filter, report, kind);
  reader->set_tag(source.tag);
  out.push_back(std::move(reader));
}

}  // namespace

std::optional<int64_t> pid_in_report(int64_t chrome_pid, int report) {
  if (chrome_pid < 0 || chrome_pid / kReportPidStride != report) return std::nullopt;
  return chrome_pid % kReportPidStride;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

std::unique_ptr<EventSource> open_source(sqlite3* db, const ProfileCatalog& catalog, const ScanFilter& filter,
                                         const ReportContext& report, Kind kind, int tag) {
  std::vector<std::unique_ptr<EventSource>> out;
  if (filter.impossible) return nullptr;
  for (const RowSource& source : kRowSources)
    if (source.table != nullptr && source.kind == kind && source.tag == tag) open_one(out, db, catalog, filter, report, source);
  return out.empty() ? nullptr : std::move(out.front());
}

std::vector<std::unique_ptr<EventSource>> open_sources(sqlite3* db, const ProfileCatalog& catalog,
                                                       const ScanFilter& filter, const ReportContext& report) {
  std::vector<std::unique_ptr<EventSource>> out;
  if (filter.impossible) return out;
  for (const RowSource& source : kRowSources)
    if (source.table != nullptr) open_one(out, db, catalog, filter, report, source);  // derived: not read
  return out;
}

}  // namespace nsystrace
