#include "src/timeline/timeline_scan.h"

#include "src/timeline/profile_placement.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "src/readers/prefetched_source.h"
#include "src/writers/json_writer.h"
#include "src/sqlite/sqlite_api.h"

namespace nsystrace {

namespace {
std::vector<const ProfileCatalog*> catalogs_of(const std::vector<TimelineScan::Report>& reports) {
  std::vector<const ProfileCatalog*> out;
  for (const auto& r : reports) out.push_back(r.catalog.get());
  return out;
}
std::vector<ReportContext> contexts_of(const std::vector<TimelineScan::Report>& reports) {
  std::vector<ReportContext> out;
  for (const auto& r : reports) out.push_back(r.context);
  return out;
}
}  // namespace

std::vector<TimelineScan::Report> TimelineScan::align_reports(
    sqlite3* db, std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> schemas,
    const std::vector<std::string>& read) {
  auto file_of = [db](const std::string& schema) {
    const char* file = sqlite3_db_filename(db, schema.c_str());
    return std::string(file && *file ? file : "in memory");
  };
  auto is_read = [&read](const std::string& schema) {
    return read.empty() || std::find(read.begin(), read.end(), schema) != read.end();
  };
  std::optional<int64_t> origin;        // UTC ns of the trace's time 0
  const std::string* placed = nullptr;  // a report read that has a session start, for the error below
  for (const auto& [schema, catalog] : schemas) {
    std::optional<int64_t> start = catalog->session_start_utc_ns();
    if (!start) continue;
    if (!origin || *start < *origin) origin = start;
    if (!placed && is_read(schema)) placed = &schema;
  }
  std::vector<Report> out;
  for (size_t i = 0; i < schemas.size(); ++i) {
    std::optional<int64_t> start = schemas[i].second->session_start_utc_ns();
    // A zero offset would draw it at an arbitrary place among the others it is read with.
    if (!start && placed && is_read(schemas[i].first))
      throw Error(fmt::format(
          "nsystrace: report '{}' ({}) has no session start (TARGET_INFO_SESSION_START_TIME.utcEpochNs), so it "
          "cannot be placed on one timeline with report '{}' ({}), which has one; convert it alone, or only with "
          "reports that have no session start either",
          schemas[i].first, file_of(schemas[i].first), *placed, file_of(*placed)));
    Report r{std::move(schemas[i].second), ReportContext{}};
    r.context.index = static_cast<int>(i);
    r.context.schema = schemas[i].first;
    r.context.labelled = schemas.size() > 1;
    // Event times count from each report's session start.
    if (start && __builtin_sub_overflow(*start, *origin, &r.context.clock_offset))
      throw Error(fmt::format("nsystrace: report '{}' ({}) has a session start ({} ns) too far from the others' to "
                              "share their timeline", r.context.schema, file_of(r.context.schema), *start));
    out.push_back(std::move(r));
  }
  return out;
}

TimelineScan::TimelineScan(sqlite3* db, std::vector<Report> reports, const ScanFilter& filter,
                           const ProjectionProvider& projection, int threads)
    : db_(db),
      reports_(std::move(reports)),
      layout_(catalogs_of(reports_), contexts_of(reports_)),
      names_(filter.names),
      limit_(filter.limit),
      name_matcher_(db),
      filter_(filter) {
  std::vector<int> report_of_source;  // -1: not a table's reader
  // A window's projections, computed once the readers have started: (source slot, report). Its passes over the
  // calls, operations and ranges run on this thread, and the readers scan their tables on the other cores
  // meanwhile; the whole profile's projection has its own reader thread, and its many rows count in the plan.
  std::vector<std::pair<size_t, size_t>> windowed;
  for (size_t k = 0; k < reports_.size(); ++k) {
    Report& r = reports_[k];
    r.read = filter.schemas.empty() ||
             std::find(filter.schemas.begin(), filter.schemas.end(), r.context.schema) != filter.schemas.end();
    if (!r.read) continue;
    for (auto& s : open_sources(db_, *r.catalog, filter, r.context)) {
      sources_.push_back(std::move(s));
      report_of_source.push_back(r.context.index);
    }
    if (filter.wants(Kind::nvtx_kernel) && projection) {
      report_of_source.push_back(-1);
      if (filter.ts_min || filter.ts_max) {
        windowed.emplace_back(sources_.size(), k);
        sources_.push_back(nullptr);
      } else {
        sources_.push_back(make_projection_source(db_, *r.catalog, projection(r.context.schema, std::nullopt),
                                                  filter, r.context));
      }
    }
  }
  if (threads > 1) read_on_threads(filter, report_of_source, threads);
  for (auto [slot, k] : windowed) {
    const Report& r = reports_[k];
    // A row's ts is its first GPU start plus the report's clock offset (saturated): the GPU starts that can land
    // in [ts_min, ts_max] lie in the same bounds minus the offset (saturated: a superset at the ends).
    ProjectionWindow window{filter.ts_min ? saturating_add(*filter.ts_min, -r.context.clock_offset) : INT64_MIN,
                            filter.ts_max ? saturating_add(*filter.ts_max, -r.context.clock_offset) : INT64_MAX};
    sources_[slot] = make_projection_source(db_, *r.catalog, projection(r.context.schema, window), filter, r.context);
  }
  if (filter.order == RowOrder::kind_ascending || filter.order == RowOrder::kind_descending)
    group_sources_by_kind(filter.order);
  narrowed_ = filter.narrows_rows();
  live_.assign(sources_.size(), false);
  for (size_t i = 0; i < sources_.size(); ++i) live_[i] = sources_[i]->next();
  pick();
}

void TimelineScan::group_sources_by_kind(RowOrder order) {
  std::vector<size_t> by_kind(sources_.size());
  for (size_t i = 0; i < by_kind.size(); ++i) by_kind[i] = i;
  auto name = [this](size_t i) { return std::string_view(kind_name(sources_[i]->kind())); };
  std::stable_sort(by_kind.begin(), by_kind.end(), [&](size_t a, size_t b) {
    return order == RowOrder::kind_descending ? name(a) > name(b) : name(a) < name(b);
  });
  kind_groups_.clear();
  for (size_t k = 0; k < by_kind.size(); ++k) {
    if (k == 0 || sources_[by_kind[k]]->kind() != sources_[by_kind[k - 1]]->kind()) kind_groups_.emplace_back();
    kind_groups_.back().push_back(by_kind[k]);
  }
  kind_group_ = 0;
}

ThreadPlan plan_threads(const std::vector<uint64_t>& candidate_rows, uint64_t all_rows, int threads) {
  ThreadPlan plan;
  if (threads <= 1) return plan;
  // Up to `threads` readers: they wait whenever they are ahead of the merge, so they, this thread and the writer
  // share the cores rather than each needing one.
  size_t readers = std::min(candidate_rows.size(), static_cast<size_t>(threads));
  uint64_t read_elsewhere = 0;
  for (size_t k = 0; k < readers; ++k) read_elsewhere += candidate_rows[k];
  // The writer thread copies every row. Measured on 2 cores (tests/bench/RESULTS.md, "Speed (#24)"), that costs
  // more than it saves when the readers read most rows (stored events: 18% read here; 0.59x of one thread without
  // it, 0.72x with it), and pays when this thread reads or computes much of the scan itself (with the NVTX
  // projection: 37% here; 0.67x with it and one reader, 0.74x with two readers and no writer). So: a writer thread
  // when a core is left for it, or when a third of the rows or more are this thread's; then it is one of `threads`.
  plan.writer_thread = readers + 2 <= static_cast<size_t>(threads) ||
                       3 * (all_rows - std::min(all_rows, read_elsewhere)) >= all_rows;
  if (plan.writer_thread && readers + 1 > static_cast<size_t>(threads)) readers = threads - 1;
  plan.readers = readers;
  return plan;
}

void TimelineScan::read_on_threads(const ScanFilter& filter, const std::vector<int>& report_of_source, int threads) {
  uint64_t all = 0;
  for (const auto& s : sources_)
    if (s) all += s->estimated_rows();  // a window's projection (not computed yet): few rows
  // Only scans that read whole tables (a time window or a process is fine): a name constraint is matched on this
  // connection (LIKE and GLOB mean what they mean here), a correlation or thread list is a few rows, a LIMIT reads
  // ahead of nothing.
  std::vector<size_t> candidates;
  if (filter.names.empty() && !filter.correlations && !filter.global_tids && !filter.global_pids && !filter.limit)
    for (size_t i = 0; i < sources_.size(); ++i)
      if (report_of_source[i] >= 0 && sources_[i]->estimated_rows() >= prefetch_min_rows()) candidates.push_back(i);
  std::stable_sort(candidates.begin(), candidates.end(), [this](size_t a, size_t b) {
    return sources_[a]->estimated_rows() > sources_[b]->estimated_rows();
  });
  std::vector<uint64_t> candidate_rows;
  for (size_t i : candidates) candidate_rows.push_back(sources_[i]->estimated_rows());
  const size_t readers = plan_threads(candidate_rows, all, threads).readers;
  std::vector<uint64_t> started_rows;  // of the readers that did start
  for (size_t k = 0; k < readers; ++k) {
    size_t i = candidates[k];
    const Report& r = reports_[report_of_source[i]];
    std::unique_ptr<ReaderConnection> connection = ReaderConnection::open(db_, r.context.schema);
    if (!connection) break;  // none of this database's tables can be read elsewhere
    ReportContext context = r.context;
    context.statements = nullptr;  // the cursor's cache holds statements of this connection, not of that one
    std::unique_ptr<EventSource> reader =
        open_source(connection->get(), *r.catalog, filter, context, sources_[i]->kind(), sources_[i]->tag());
    if (!reader) continue;
    started_rows.push_back(candidate_rows[k]);
    sources_[i] = std::make_unique<PrefetchedSource>(std::move(reader), std::move(connection), db_, *r.catalog, context,
                                                     filter.args);
  }
  // The writer thread as the readers that started call for (none, in a database read on SQLite's thread only: an
  // in-memory, temporary or WAL one).
  writer_thread_ = plan_threads(started_rows, all, threads).writer_thread;
}

bool TimelineScan::restart(const ScanFilter& filter) {
  // Only the values of the pushed-down id sets may differ: then the same readers, on the same tables, are opened.
  const ScanFilter& was = filter_;
  bool same_shape = was.args == filter.args && was.order == filter.order && !was.impossible && !filter.impossible && was.kinds == filter.kinds &&
                    !filter.wants(Kind::nvtx_kernel) && was.schemas == filter.schemas && !was.ts_min && !was.ts_max &&
                    !filter.ts_min && !filter.ts_max && !was.pid && !filter.pid && was.names.empty() &&
                    filter.names.empty() && !was.limit && !filter.limit && was.inexact == filter.inexact &&
                    was.correlations.has_value() == filter.correlations.has_value() &&
                    was.global_tids.has_value() == filter.global_tids.has_value() &&
                    was.global_pids.has_value() == filter.global_pids.has_value();
  if (!same_shape) return false;
  for (const auto& s : sources_)
    if (!s->restartable()) return false;
  for (auto& s : sources_) s->restart(filter);
  filter_ = filter;
  layout_.reset();  // lanes start empty, as in a new scan
  kind_group_ = 0;
  current_ = nullptr;
  current_index_ = 0;
  row_ = TraceRow();
  replays_opened_.clear();
  args_.clear();
  args_ready_ = false;
  row_number_ = 0;
  narrowed_ = filter.narrows_rows();
  for (size_t i = 0; i < sources_.size(); ++i) live_[i] = sources_[i]->next();
  pick();
  return true;
}

uint64_t TimelineScan::estimated_rows() const {
  if (narrowed_) return 0;
  uint64_t n = 0;
  for (const auto& s : sources_) n += s->estimated_rows();
  return n;
}

void TimelineScan::next() {
  if (current_ == nullptr) return;
  live_[current_index_] = current_->next();
  pick();
}

bool TimelineScan::names_match(std::string_view name) {
  for (const auto& any : names_) {
    bool one = false;
    for (const NameMatch& m : any)
      if ((one = name_matcher_(m, name))) break;
    if (!one) return false;
  }
  return true;
}

// Chooses the earliest head among the sources (longest first at equal start, then source order) and places it.
namespace {
// The merge's order of heads: earlier start, then longer, then the earlier position among the sources compared.
bool head_precedes(const SourceEvent& a, size_t a_position, const SourceEvent& b, size_t b_position) {
  if (a.ts != b.ts) return a.ts < b.ts;
  if (a.dur != b.dur) return a.dur > b.dur;
  return a_position < b_position;
}
}  // namespace

void TimelineScan::choose_among_sources() {
  current_ = nullptr;
  runner_up_ = kNoRunnerUp;
  // Kind by kind: the sources of the current kind only, until every one of them is done.
  const std::vector<size_t>* among = nullptr;
  if (!kind_groups_.empty()) {
    auto any_live = [this](const std::vector<size_t>& group) {
      return std::any_of(group.begin(), group.end(), [this](size_t i) { return live_[i]; });
    };
    while (kind_group_ < kind_groups_.size() && !any_live(kind_groups_[kind_group_])) ++kind_group_;
    if (kind_group_ == kind_groups_.size()) return;
    among = &kind_groups_[kind_group_];
  }
  const size_t candidates = among ? among->size() : sources_.size();
  for (size_t c = 0; c < candidates; ++c) {
    const size_t i = among ? (*among)[c] : c;
    if (!live_[i]) continue;
    const SourceEvent& e = sources_[i]->event();
    if (current_ == nullptr) {
      current_ = sources_[i].get();
      current_index_ = i, current_position_ = c;
    } else if (head_precedes(e, c, current_->event(), current_position_)) {
      runner_up_ = current_index_, runner_up_position_ = current_position_;
      current_ = sources_[i].get();
      current_index_ = i, current_position_ = c;
    } else if (runner_up_ == kNoRunnerUp || head_precedes(e, c, sources_[runner_up_]->event(), runner_up_position_)) {
      runner_up_ = i, runner_up_position_ = c;
    }
  }
}

bool TimelineScan::current_still_first() const {
  if (runner_up_ == kNoRunnerUp) return true;  // no other source was live, and none comes back
  return head_precedes(current_->event(), current_position_, sources_[runner_up_]->event(), runner_up_position_);
}

void TimelineScan::use_placement(std::shared_ptr<const ProfilePlacement> placement) {
  placement_ = std::move(placement);
  if (!placement_ || current_ == nullptr) return;
  // The row picked before the placement was given (a scan picks its first row when it opens or restarts).
  if (const Track* whole = placement_->track(current_->event())) {
    row_.track = whole;
    row_.lane = placement_->lane(row_.rowid);
    row_.pid = whole->pid;
    row_.process_name = whole->process_name;
  }
}

void TimelineScan::pick() {
  args_ready_ = false;
  for (;;) {
    if (limit_ && row_number_ >= *limit_) {
      current_ = nullptr;
      return;
    }
    // Only the source picked last has moved: while its new head still comes first, it is picked again with one
    // comparison (a table read in a run of rows, as GPU metric samples are), else every source is compared.
    if (current_ == nullptr || !live_[current_index_] || !current_still_first()) choose_among_sources();
    if (current_ == nullptr) return;
    if (names_.empty() || names_match(current_->event().name)) break;
    live_[current_index_] = current_->next();  // not a row of this query: never placed, never counted
  }
  ++row_number_;
  const SourceEvent& e = current_->event();
  row_.rowid = (static_cast<int64_t>(e.report) << 56) | (e.source_rowid << 5) | e.tag;
  const Track* whole = placement_ ? placement_->track(e) : nullptr;
  TrackLayout::Placed where = whole != nullptr                    ? TrackLayout::Placed{whole, placement_->lane(row_.rowid)}
                              : filter_.order == RowOrder::time ? layout_.place(e)
                                                                : layout_.place_without_lanes(e);
  row_.report = e.report;
  row_.cname = e.cname;
  row_.domain = e.domain;
  row_.has_demangled_id = e.has_demangled_id;
  row_.demangled_id = e.demangled_id;
  row_.memory = e.memory;
  row_.graph_node_id = e.graph_node_id;
  row_.schema = &reports_[e.report].context.schema;
  row_.kind = e.kind;
  row_.name = e.name;
  row_.name_id = e.name_id;
  row_.ts = e.ts;
  row_.has_dur = !e.instant;
  row_.dur = e.dur;
  row_.track = where.track;
  row_.lane = where.lane;
  row_.pid = where.track->pid;
  row_.process_name = where.track->process_name;
  switch (e.placement) {  // the real thread or stream of the row
    case Placement::gpu_stream:
    case Placement::gpu_sync: row_.has_tid = true, row_.tid = e.stream_id; break;
    case Placement::process:
    case Placement::gpu_memory:
    case Placement::gpu_metrics: row_.has_tid = false, row_.tid = 0; break;
    default: row_.has_tid = true, row_.tid = os_tid_of(e.global_id); break;  // CPU threads, NVTX projection
  }
  row_.has_stream = e.placement == Placement::gpu_stream || e.placement == Placement::gpu_sync;
  row_.on_gpu = row_.has_stream || e.placement == Placement::gpu_nvtx;
  row_.device_id = e.device_id;
  row_.stream_id = e.stream_id;
  row_.has_correlation = e.has_correlation;
  row_.correlation_id = e.correlation_id;
  row_.has_global_tid = e.has_global_id;
  row_.global_tid = e.global_id;
}

const GraphReplay* TimelineScan::replay_opened(TraceRow* slice) {
  if (current_ == nullptr || row_.graph_node_id == 0 || !row_.has_correlation || !row_.has_global_tid ||
      !row_.has_stream)
    return nullptr;
  const Report& report = reports_[row_.report];
  const int64_t process = process_key_of(row_.global_tid);
  const GraphReplay* replay =
      report.catalog->graph_replay(db_, process, row_.correlation_id, row_.device_id, row_.stream_id);
  if (replay == nullptr || row_.ts != saturating_add(replay->start, report.context.clock_offset)) return nullptr;
  if (!replays_opened_.emplace(row_.report, process, row_.correlation_id, row_.device_id, row_.stream_id).second)
    return nullptr;
  *slice = row_;  // its track, lane, process, device, stream, correlation id and global id
  slice->kind = Kind::graph;
  slice->rowid = 0;
  slice->name = replay->call_name.empty() ? std::string_view("CUDA graph replay") : std::string_view(replay->call_name);
  slice->name_id = -1;
  slice->has_dur = true;
  slice->dur = std::max<int64_t>(0, replay->end - replay->start);
  slice->has_demangled_id = false;
  slice->memory = {};
  slice->graph_node_id = 0;
  slice->cname = nullptr;
  slice->domain = nullptr;
  return replay;
}

std::optional<std::string_view> TimelineScan::demangled_name(std::string& scratch) const {
  if (!row_.has_demangled_id) return std::nullopt;
  return reports_[row_.report].catalog->string_or_placeholder(row_.demangled_id, scratch);
}

std::optional<LabelledId> TimelineScan::copy_kind() const {
  return copy_kind_of(*reports_[row_.report].catalog, row_.memory.copy_kind);
}
std::optional<LabelledId> TimelineScan::memory_kind(std::optional<int64_t> id) const {
  return memory_kind_of(*reports_[row_.report].catalog, id);
}

std::optional<int64_t> TimelineScan::nsys_dur() const {
  if (!row_.has_dur) return std::nullopt;
  if (row_.kind == Kind::nvtx && current_ != nullptr && current_->end_was_null()) {
    const Report& report = reports_[row_.report];
    if (std::optional<int64_t> last = report.catalog->last_nvtx_timestamp(db_)) {
      int64_t dur;  // as args' last_nvtx_ts - ts; saturated where timestamps at int64's ends would overflow
      if (__builtin_sub_overflow(saturating_add(*last, report.context.clock_offset), row_.ts, &dur))
        dur = row_.ts > 0 ? INT64_MIN : INT64_MAX;
      return dur;
    }
  }
  return row_.dur;
}

std::string_view TimelineScan::args() {
  if (current_ == nullptr) return {};
  if (!args_ready_) {
    args_.clear();
    JsonArgs json(args_);
    write_args(json);
    json.close();
    args_ready_ = true;
  }
  return args_;
}

void TimelineScan::write_args(ArgsSink& args) const {
  if (current_ == nullptr) return;
  if (!filter_.args)  // its readers left out the columns args show: they would be wrong, not missing
    throw Error("nsystrace: internal: the args of a trace_events scan opened without them were asked for");
  current_->write_args(args);
  if (current_->end_invalid()) {  // say what the profile held
    if (current_->end_was_null()) args.null("invalid_end");
    else args.integer("invalid_end", current_->stored_end());
  }
}

uint64_t TimelineScan::sum_over(Kind kind, uint64_t (EventSource::*count)() const) const {
  uint64_t n = 0;
  for (const auto& s : sources_)
    if (s->kind() == kind) n += ((*s).*count)();
  return n;
}

uint64_t TimelineScan::skipped(Kind kind) const { return sum_over(kind, &EventSource::skipped); }

uint64_t TimelineScan::invalid_ends(Kind kind) const { return sum_over(kind, &EventSource::invalid_ends); }

}  // namespace nsystrace
