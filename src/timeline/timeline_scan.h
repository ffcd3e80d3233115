// The whole timeline of one export as a stream of trace_events rows: a k-way merge of the per-table readers in
// time order, each event placed on its track as it passes. This is what a trace_events cursor walks.
#pragma once
#include <functional>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "src/readers/event_sources.h"
#include "src/model/nvtx_projection.h"
#include "src/timeline/track_layout.h"

namespace nsystrace {

class ProfilePlacement;

// How a scan of several sources uses `threads` threads: its largest tables each read on a thread of its own, and its
// rows encoded on another (the writer thread) or on SQLite's. candidate_rows: the rows of the tables that may be read
// elsewhere, largest first; all_rows: the scan's.
struct ThreadPlan {
  size_t readers = 0;  // the first `readers` candidates
  bool writer_thread = false;
};
ThreadPlan plan_threads(const std::vector<uint64_t>& candidate_rows, uint64_t all_rows, int threads);

class TimelineScan {
 public:
  // One report (database schema) of the scan; several are merged on one timeline.
  struct Report {
    std::shared_ptr<const ProfileCatalog> catalog;
    ReportContext context;
    // Whether the scan reads its events. A scan is given every report of the connection, so that a report's number
    // (its pids and rowids), its label and its clock are the same whichever reports a query reads.
    bool read = true;
  };
  // projection: gives a schema's NVTX GPU projection (computed on first use, cached by the caller) for
  // 'nvtx_kernel' rows; with a window (the scan's ts bounds on that report's clock), one that holds at least every
  // range with a row in it.
  using ProjectionProvider = std::function<std::shared_ptr<const NvtxProjection>(
      const std::string& schema, const std::optional<ProjectionWindow>& window)>;
  // Reads the reports named in filter.schemas (all of them when it is empty).
  // threads (nsystrace_option 'threads'): above 1, the largest tables of a scan that reads whole tables are read on
  // threads of their own (src/readers/prefetched_source.h), at most `threads` of them; the rows are the same.
  TimelineScan(sqlite3* db, std::vector<Report> reports, const ScanFilter& filter,
               const ProjectionProvider& projection = nullptr, int threads = 1);
  // The reports of a connection (main first, then the ATTACHed ones in order) on one clock whose time 0 is the
  // earliest session start among them (TARGET_INFO_SESSION_START_TIME): each report's times are shifted by (its
  // session start - that origin), so no report is drawn before 0 and the report that started first keeps its own
  // times, as a report alone does. Numbers, labels and clocks depend on the connection's reports only, not on the
  // ones a query reads (`read`, all when empty). A report read without a session start beside reports that have
  // one cannot be placed: an Error naming its schema and file (db gives the files).
  static std::vector<Report> align_reports(sqlite3* db,
                                           std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> schemas,
                                           const std::vector<std::string>& read = {});

  // Starts over on `filter` when it differs from this scan's only in the values of its correlation_id /
  // global_tid / global_pid sets and every reader can restart (EventSource::restart): the rows are those a new scan
  // on `filter` gives. False (and the scan unchanged) otherwise: then build a new one.
  bool restart(const ScanFilter& filter);

  bool eof() const { return current_ == nullptr; }
  void next();
  const TraceRow& row() const { return row_; }
  // The replay of a CUDA graph traced per node that the current row opens, if any: the row is GPU work of a graph
  // node, starts at its replay's first node's start, and is the first such row of its replay in this scan. The trace
  // writers draw the replay as a slice of its own (kind graph, named after its launch call) on the row's track and
  // lane, just before the row: *slice gets it. The replay is not a trace_events row (docs/sql-reference.md).
  const GraphReplay* replay_opened(TraceRow* slice);
  // The current row's args as JSON object text, built on first request; only for a scan opened with
  // ScanFilter::args (else an Error: reopen the scan with args, as the trace aggregates do).
  std::string_view args();
  // The current kernel row's demangled name (its report's string; a placeholder for a dangling id), or nothing.
  std::optional<std::string_view> demangled_name(std::string& scratch) const;
  // The current row's memory kinds (TraceRow::memory), labelled as its report's catalog has them (LabelledId,
  // src/readers/event_sources.h); nullopt for none.
  std::optional<LabelledId> copy_kind() const;
  std::optional<LabelledId> memory_kind(std::optional<int64_t> id) const;  // one of the row's MemoryFields
  void write_args(ArgsSink& args) const;  // the same, typed, into any sink
  // The current row's duration as NVIDIA's nsys stats reports count it: dur, except for an NVTX range never closed,
  // which they end at its report's last NVTX timestamp (args' "last_nvtx_ts") where the timeline draws it to the end
  // of the profile. Read without the args.
  std::optional<int64_t> nsys_dur() const;
  bool reads_args() const { return filter_.args; }
  const ScanFilter& filter() const { return filter_; }  // the one it was opened (or last restarted) with
  int64_t row_number() const { return row_number_; }  // 1 for the first row
  const ProfileCatalog& catalog() const { return *reports_[0].catalog; }
  std::shared_ptr<const ProfileCatalog> shared_catalog() const { return reports_[0].catalog; }
  const std::vector<Report>& reports() const { return reports_; }
  // Rows of each kind that were read but could not be placed (no start time).
  uint64_t skipped(Kind kind) const;
  // Rows of each kind drawn with dur 0 because their end was missing or before their start.
  uint64_t invalid_ends(Kind kind) const;
  // About how many rows the scan yields, for progress: 0 (unknown) when constraints other than kind and report
  // narrow it.
  uint64_t estimated_rows() const;
  // Whether a conversion of this scan encodes its rows on a thread of its own (src/writers/row_pipeline.h): decided
  // with the readers' threads, from the `threads` the scan was opened with (read_on_threads()).
  bool wants_a_writer_thread() const { return writer_thread_; }
  const std::set<int32_t>& pids_shared_by_machines() const { return layout_.pids_shared_by_machines(); }
  // Its rows take their track and lane from the whole profile's placement (src/timeline/profile_placement.h) instead
  // of placing them among its own rows only: for a query that reads lanes or track names under constraints that
  // drop rows of a track (ScanFilter::keeps_placement). nullptr: its own placement.
  void use_placement(std::shared_ptr<const ProfilePlacement> placement);
  // The layout of the rows it placed, once it has read them all (a ProfilePlacement keeps it).
  TrackLayout take_layout() && { return std::move(layout_); }

 private:
  uint64_t sum_over(Kind kind, uint64_t (EventSource::*count)() const) const;  // over the sources of a kind
  void pick();
  // pick()'s comparison of every live source's head: the earliest becomes current_, the next earliest the runner-up.
  void choose_among_sources();
  // Whether current_'s new head still sorts before the runner-up's (the others have not moved since the comparison).
  bool current_still_first() const;
  // ScanFilter::order kind by kind: the sources' indices, grouped by kind in the order the rows are handed over.
  void group_sources_by_kind(RowOrder order);
  void read_on_threads(const ScanFilter& filter, const std::vector<int>& report_of_source, int threads);
  // The pushed-down name constraints, applied exactly to the name each row is given: the readers' SQL only narrows
  // what they read (a superset), so the rows handed out are exactly those the query selects, and a LIMIT counts
  // true rows.
  bool names_match(std::string_view name);

  sqlite3* db_;
  // The replays opened: (report, process key, correlation id, device, stream).
  std::set<std::tuple<int, int64_t, int64_t, int64_t, int64_t>> replays_opened_;
  std::vector<Report> reports_;
  std::vector<std::unique_ptr<EventSource>> sources_;
  std::vector<bool> live_;
  // Kind by kind only: the sources of each kind (read together, each as stored), the kinds in the order handed
  // over, and the one being read.
  std::vector<std::vector<size_t>> kind_groups_;
  size_t kind_group_ = 0;
  bool writer_thread_ = false;
  TrackLayout layout_;
  std::shared_ptr<const ProfilePlacement> placement_;
  EventSource* current_ = nullptr;
  size_t current_index_ = 0;
  // Positions among the candidates compared (ties go to the earlier), and the runner-up's source (kNoRunnerUp: none).
  static constexpr size_t kNoRunnerUp = SIZE_MAX;
  size_t current_position_ = 0, runner_up_ = kNoRunnerUp, runner_up_position_ = 0;
  TraceRow row_;
  std::string args_;
  bool args_ready_ = false;
  int64_t row_number_ = 0;
  std::vector<std::vector<NameMatch>> names_;
  std::optional<int64_t> limit_;
  bool narrowed_ = false;  // ScanFilter::narrows_rows(): no estimate of the rows from the tables' sizes
  NameMatcher name_matcher_;
  ScanFilter filter_;  // the filter it was opened (or last restarted) with
};

}  // namespace nsystrace
