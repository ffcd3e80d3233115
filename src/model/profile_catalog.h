// Everything about an export that is not a timeline event: strings, processes, threads, GPUs, NVTX domains and
// categories, enum labels and the export's metadata. Loaded once per scan (and cached by the glue while the
// database is unchanged); every table and column is optional.
#pragma once
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/model/export_schema.h"
#include "src/model/graph_nodes.h"

namespace nsystrace {

// Export metadata that identifies a person or a machine (the host, the user, file paths that may hold a home
// directory): left out of traces unless the user asks for it, because traces get shared.
bool is_identifying_metadata(std::string_view key, std::string_view value);


// nsys serializes thread and process ids as (host/vm id << 48) | (pid << 24) | tid.
inline int32_t os_pid_of(int64_t global_id) { return static_cast<int32_t>((global_id >> 24) & 0xFFFFFF); }
inline int32_t os_tid_of(int64_t global_id) { return static_cast<int32_t>(global_id & 0xFFFFFF); }
// The process part of a globalTid/globalPid (vm id and pid): the scope of correlation ids.
inline int64_t process_key_of(int64_t global_id) { return global_id >> 24; }
// The globalPid of a globalTid (its tid bits cleared; a globalPid is its own): trace_events.global_pid.
constexpr int64_t kProcessIdMask = ~int64_t{0xFFFFFF};
inline int64_t global_pid_of(int64_t global_id) { return global_id & kProcessIdMask; }

class StringTable {
 public:
  void load(sqlite3* db, const ExportSchema& schema);
  const std::string* find(int64_t id) const;  // nullptr for a dangling id
  size_t size() const { return count_; }

 private:
  std::vector<std::string> dense_;                  // when ids are compact (the usual case)
  std::vector<bool> present_;
  std::unordered_map<int64_t, std::string> sparse_;  // otherwise
  size_t count_ = 0;
};

constexpr const char* kUnnamedNvtxRange = "[unnamed NVTX range]";
constexpr const char* kMissingStringPrefix = "[missing string ";  // "[missing string N]": see string_or_placeholder

class ProfileCatalog {
 public:
  static std::shared_ptr<ProfileCatalog> load(sqlite3* db, const std::string& schema);

  const ExportSchema& schema() const { return schema_; }
  const StringTable& strings() const { return strings_; }
  // The text of a StringIds id, or "[missing string N]" (written to scratch) for an id StringIds lacks: sliced
  // exports keep rows whose strings were cut away.
  std::string_view string_or_placeholder(int64_t id, std::string& scratch) const;
  // An NVTX range's name: its inline text, else its registered string (textId), else kUnnamedNvtxRange.
  std::string_view nvtx_range_name(std::optional<std::string_view> text, std::optional<int64_t> text_id,
                                   std::string& scratch) const;

  // Names; nullptr when the export does not say.
  const std::string* process_name(int64_t process_key) const;
  const std::string* thread_name(int64_t global_tid) const;
  const std::string* gpu_name(int64_t device_id) const;
  // The device's compute capability as an architecture name ("sm_90" for 9.0), where the export records it.
  const std::string* gpu_arch(int64_t device_id) const { return find(gpu_archs_, device_id); }
  // A CUDA graph node's creation (CUDA_GRAPH_NODE_EVENTS), by its process's key (process_key_of) and graphNodeId.
  const GraphNodeCreation* graph_node(int64_t process_key, int64_t node_id) const {
    return graph_nodes_.find(process_key, node_id);
  }
  // A replay of a CUDA graph traced per node on a stream, by its process's key, launch correlation id, device and
  // stream: read on first use (a
  // pass over the GPU activity tables' graph node rows) on `db`, the caller's connection.
  const GraphReplay* graph_replay(sqlite3* db, int64_t process_key, int64_t correlation, int64_t device,
                                  int64_t stream) const;
  // nsys numbers NVTX domains, and categories within them, per process: `global_id` is the globalTid of the event
  // (or a globalPid), the domain is looked up in its process. Their names are read from NVTX_EVENTS on first use
  // (a pass over the whole table, which only scans that place or show NVTX ranges need): on `db`, the caller's
  // connection (a prefetching thread's), or, without it, on the connection the catalog was loaded on (SQLite's
  // thread only).
  const std::string* nvtx_domain(int64_t global_id, int64_t domain_id) const {
    return nvtx_domain(db_, global_id, domain_id);
  }
  const std::string* nvtx_domain(sqlite3* db, int64_t global_id, int64_t domain_id) const;
  const std::string* nvtx_category(int64_t global_id, int64_t domain_id, int64_t category) const {
    return nvtx_category(db_, global_id, domain_id, category);
  }
  const std::string* nvtx_category(sqlite3* db, int64_t global_id, int64_t domain_id, int64_t category) const;
  const std::string* memcpy_kind_label(int64_t id) const { return find(memcpy_kinds_, id); }
  const std::string* memory_kind_label(int64_t id) const { return find(memory_kinds_, id); }
  const std::string* sync_type_label(int64_t id) const { return find(sync_types_, id); }
  const std::string* gpu_metrics_type_name(int64_t type_id) const { return find(gpu_metric_types_, type_id); }
  const std::string* thread_state_label(int64_t id) const { return find(thread_states_, id); }

  const std::vector<std::pair<std::string, std::string>>& export_metadata() const { return export_metadata_; }
  std::optional<int64_t> session_start_utc_ns() const { return session_start_utc_ns_; }
  const std::map<int64_t, std::string>& gpus() const { return gpus_; }

  // Latest timestamp of any event (where never-closed NVTX ranges end). Computed on first use: it scans.
  int64_t profile_end(sqlite3* db) const;
  // Latest timestamp (start or end) of any NVTX_EVENTS row, definitions included: where NVIDIA's nvtx_sum ends a
  // range never closed. nullopt without NVTX rows. Computed on first use.
  std::optional<int64_t> last_nvtx_timestamp(sqlite3* db) const;

  // The GPU a CUDA context of a process runs on: the device its kernels, memcpys and memsets ran on (context ids are
  // numbered per process). nsys 2026 writes deviceId 0 on the synchronization rows of contexts on other GPUs, so
  // those rows are placed by their context. `recorded` (the row's own deviceId) when the context ran no such work,
  // or ran it on several devices. The map is built on first use (one pass over those tables).
  int64_t context_device(sqlite3* db, int64_t global_pid, int64_t context_id, int64_t recorded) const;

  // How the rows of an event table (those meeting `where`) are stored, as read in rowid order: in time order
  // ((time, end descending) order) but for a few "stragglers" (their rowids, in rowid order), or not nearly enough
  // (nearly_sorted false). Found by one pass over the table on first use, then kept: later scans of the table,
  // filtered or not, read as stored at once (a filtered subsequence of the rows is in order but for those
  // stragglers too).
  //
  // A table that is not nearly sorted is mostly a few interleaved runs, each in time order: from nsys 2025.6, the
  // CUDA API calls of each thread (or buffer) are stored one block after another. Its `runs` then cut the rows,
  // in rowid order, into runs in time order, listed by their first rows' times; a scan merges them, reading as
  // stored. `runs` is empty when they would need more than kMaxOpenRuns read at once (the table is sorted).
  // The order readers yield: by time, the longest first (an open end is INT64_MAX) at equal times.
  static bool sorts_before(int64_t start, int64_t end, int64_t other_start, int64_t other_end) {
    return start < other_start || (start == other_start && end > other_end);
  }
  struct SortedRun {
    int64_t first_rowid, last_rowid;  // the rows from first_rowid to last_rowid, in rowid order
    int64_t start, end;               // the first row's time and end (INT64_MAX for none): the run's earliest
  };
  static constexpr size_t kMaxOpenRuns = 64;
  struct StoredOrder {
    bool nearly_sorted = true;
    std::vector<int64_t> stragglers;
    std::vector<SortedRun> runs;  // when not nearly sorted; ordered by (start, end descending, first_rowid)
  };
  const StoredOrder& stored_order(sqlite3* db, const std::string& table, const std::string& time,
                                  const std::string& end, const std::string& where) const;

  // The number of rows of a table (qualified name), counted on first use and kept: the totals progress reports.
  uint64_t row_count(sqlite3* db, const std::string& table) const;
  // About as many: the span of its rowids (exports number their rows densely), two seeks instead of a pass over
  // the table (count(*) reads every page: 0.1 s for the NVTX_EVENTS of a 500 MB export). For plans and progress,
  // never for a size to allocate: a table whose rowids lie far apart has far fewer rows.
  uint64_t row_estimate(sqlite3* db, const std::string& table) const;

  // An event table's (value of `column`, rowid) pairs, sorted: built by one pass over the table on first use and
  // kept (16 bytes a row), so the join from GPU work to the call that launched it reads only the rows it needs.
  // Exports carry no such index. A reader keeps the reference (it lives as long as the catalog) for its lookups.
  struct ValueRowid {
    int64_t value, rowid;
    bool operator<(const ValueRowid& o) const { return value != o.value ? value < o.value : rowid < o.rowid; }
  };
  using CorrelationIndex = std::vector<ValueRowid>;
  const CorrelationIndex& correlation_index(sqlite3* db, const std::string& table, const std::string& column) const;
  // The rowids (sorted) of the rows whose value is one of `values`.
  static std::vector<int64_t> rowids_with(const CorrelationIndex& index, const std::vector<int64_t>& values);

 private:
  static const std::string* find(const std::map<int64_t, std::string>& m, int64_t id) {
    auto it = m.find(id);
    return it == m.end() ? nullptr : &it->second;
  }
  void load_processes_and_threads(sqlite3* db);
  void load_gpus(sqlite3* db);
  void load_nvtx_definitions(sqlite3* db) const;  // once (nvtx_definitions_once_)
  // key -> label from a table of labels (the ENUM_* tables: id -> label), when it has both columns.
  void load_labels(sqlite3* db, const char* table, const char* key, const char* label,
                   std::map<int64_t, std::string>& out);
  void load_export_metadata(sqlite3* db);

  ExportSchema schema_;
  StringTable strings_;
  std::unordered_map<int64_t, std::string> processes_;  // process_key -> name
  std::unordered_map<int64_t, std::string> threads_;    // globalTid -> name
  std::map<int64_t, std::string> gpus_;                 // deviceId -> "NVIDIA H100 80GB HBM3"
  std::map<int64_t, std::string> gpu_archs_;            // deviceId -> "sm_90"
  GraphNodeCreations graph_nodes_;
  sqlite3* db_ = nullptr;  // the connection it was loaded on
  mutable std::once_flag nvtx_definitions_once_;
  mutable std::map<std::pair<int64_t, int64_t>, std::string> nvtx_domains_;  // (globalPid, domainId) -> name
  struct CategoryKey {
    int64_t global_pid, domain, category;
    bool operator<(const CategoryKey& o) const {
      return std::tie(global_pid, domain, category) < std::tie(o.global_pid, o.domain, o.category);
    }
  };
  mutable std::map<CategoryKey, std::string> nvtx_categories_;
  std::map<int64_t, std::string> memcpy_kinds_, memory_kinds_, sync_types_, gpu_metric_types_, thread_states_;
  std::vector<std::pair<std::string, std::string>> export_metadata_;
  std::optional<int64_t> session_start_utc_ns_;
  // The values computed on first use that readers ask for at row time, possibly from a prefetching thread
  // (src/readers/prefetched_source.h): computed under this mutex.
  mutable std::mutex row_time_mutex_;
  mutable std::optional<int64_t> profile_end_;
  mutable std::optional<GraphReplays> graph_replays_;
  mutable std::optional<std::optional<int64_t>> last_nvtx_timestamp_;
  static constexpr int64_t kSeveralDevices = INT64_MIN;  // a context seen on more than one device
  mutable std::optional<std::map<std::pair<int64_t, int64_t>, int64_t>> context_devices_;  // (globalPid, context)
  mutable std::map<std::string, StoredOrder> stored_order_;  // by table and condition
  mutable std::map<std::string, CorrelationIndex> correlation_index_;  // by table and column
  mutable std::map<std::string, uint64_t> row_counts_;
  mutable std::map<std::string, uint64_t> row_estimates_;
};

// The event tables a timeline is made of (also scanned for the profile's end).
extern const char* const kEventTables[];

// Registers the aggregate nsystrace_in_stored_order(time, end) on a connection (the extension's init does): 1 when
// every row with a time sorts at or after the one before it in the order SQLite reads the table (ProfileCatalog::
// sorts_before), else 0. SQLite runs it over a whole table in one step, without handing each row out: stored_order()
// asks it first and reads the rows one by one only for a table out of order (or where it is not registered).
int register_stored_order_check(sqlite3* db);

}  // namespace nsystrace
