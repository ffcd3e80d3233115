// Per-connection state shared by the trace_events module and the chrome_trace functions: the open
// trace_events cursors (chrome_trace(*) reads the current row of the one it runs over), the extension's virtual
// tables (as EXPLAIN names them) and cached catalogs.
#pragma once
#include "src/util/threads.h"
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "src/model/nvtx_projection.h"
#include "src/model/profile_catalog.h"
#include "src/sqlite/sqlite_api.h"
#include "src/timeline/launch_calls.h"
#include "src/timeline/profile_placement.h"
#include "src/timeline/scan_plan.h"
#include "src/timeline/timeline_scan.h"
#include "src/writers/perfetto/perfetto_trace_writer.h"

namespace nsystrace {

struct TraceEventsCursor {
  sqlite3_vtab_cursor base;  // must stay first: SQLite hands us &base
  uint64_t id = 0;           // unique per connection
  uint64_t generation = 0;   // bumped by every xFilter (a rescan)
  // When it last moved to a row (xFilter or xNext), on ConnectionState::tick(): unique on the connection, so it
  // names the row (the token trace_events.event hands to the aggregates).
  uint64_t advanced_at = 0;
  // Its rows feed a DISTINCT or GROUP BY (sqlite3_vtab_distinct in xBestIndex): one row stands for a group.
  bool grouped = false;
  StatementCache statements;  // reused by each scan's readers (declared before scan: outlives it)
  // The connection's reports, listed at the cursor's first xFilter and kept for its life: a cursor lives within one
  // statement, during which no ATTACH, DETACH, schema change or other connection's commit can reach the databases
  // it reads, and a join's inner scan restarts at every outer row (listing them costs two PRAGMAs and a stat each).
  bool reports_listed = false;
  std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> reports;
  // Each report's calls (trace_events.call_*), by report number, taken from the connection on first use.
  std::vector<std::shared_ptr<const LaunchCalls>> launch_calls;
  std::unique_ptr<TimelineScan> scan;
  // Its plan (ScanPlan::from_idx) as parsed from the idxNum and idxStr it was last filtered with.
  std::unique_ptr<ScanPlan> plan;
  int plan_idx_num = 0;
  std::string plan_idx_str;
  // The constraint values of its last xFilter, read again in place at the next (read_filter_arguments).
  std::vector<FilterArgument> arguments;
};

class ConnectionState {
 public:
  // Each connection with nsystrace registered is listed for as long as its state lives (loaded_into).
  explicit ConnectionState(sqlite3* db);
  ~ConnectionState();
  ConnectionState(const ConnectionState&) = delete;
  ConnectionState& operator=(const ConnectionState&) = delete;
  // Whether this copy of nsystrace is registered on `db` (a second load into it registers nothing).
  static bool loaded_into(sqlite3* db);
  sqlite3* db() const { return db_; }

  void add_cursor(TraceEventsCursor* c) {
    cursors_.reserve(cursors_.size() + 1);  // may throw: before the id is taken
    c->id = ++next_cursor_id_;
    cursors_.push_back(c);
  }
  uint64_t tick() { return ++clock_; }  // orders the cursors' xFilter and xNext calls
  // The extension's virtual tables connected on this connection (addresses, compared with and never read through),
  // and which one is trace_events: what EXPLAIN's VOpen names.
  void add_vtab(const sqlite3_vtab* v) {
    if (std::find(vtabs_.begin(), vtabs_.end(), v) == vtabs_.end()) vtabs_.push_back(v);
  }
  const std::vector<const sqlite3_vtab*>& vtabs() const { return vtabs_; }
  const sqlite3_vtab* trace_events_vtab = nullptr;
  void remove_cursor(TraceEventsCursor* c);
  bool has_cursors() const { return !cursors_.empty(); }
  // The cursor with one of these plans (idxStr) that moved to a row last (xFilter or xNext): the row a trace
  // aggregate's (*) form is stepped with, where the statement's bytecode shows the step inside the loop of a scan
  // with that plan and nothing between that could move another such cursor (src/sqlite/feeding_loop.h).
  TraceEventsCursor* latest_cursor(const std::vector<std::string>& plans) const;
  TraceEventsCursor* find_cursor(uint64_t id) const;
  // The cursor still on the row of that token (trace_events.event), or nullptr when none is any more.
  TraceEventsCursor* cursor_on(uint64_t token) const;

  // The catalog of database `schema`, reloaded when the database changed since it was read.
  std::shared_ptr<const ProfileCatalog> catalog(const std::string& schema);
  // The connection's reports: its databases that are exports, main first, then the ATTACHed ones in the order they
  // were attached. Every scan numbers reports by their place here (pids, rowids, labels, clock), so a report's rows
  // are the same whichever reports a query reads. A database that is not an export holds no events.
  std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> reports();
  // The NVTX GPU projection of database `schema`, computed on first use (with `threads`) and kept with its catalog.
  // With a window (a trace_events ts window): the whole projection when it is already known, else one of the
  // ranges that can have rows in the window only (the last one asked for is kept).
  std::shared_ptr<const NvtxProjection> projection(const std::string& schema,
                                                   const std::optional<ProjectionWindow>& window = std::nullopt);
  // Where the whole profile places every row of these reports (the connection's), made on first use by a scan of
  // every row and kept until a report changes: the lanes and track names of a query whose constraints drop rows of
  // a track (src/timeline/profile_placement.h).
  std::shared_ptr<const ProfilePlacement> placement(
      const std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>>& reports);
  // The CUDA API calls of database `schema` by (process, correlation id) (trace_events.call_*), on the clock of a
  // scan that shifts the report's times by clock_offset; read on first use and kept with its catalog.
  std::shared_ptr<const LaunchCalls> launch_calls(const std::string& schema, int64_t clock_offset);
  // The files of the connection's databases (main, temp, ATTACHed; "" for in-memory ones): what a trace file
  // must never replace.
  std::vector<std::string> database_files() const;

  // nsystrace_option('identifying_metadata', 1): otherData keeps the export's host, user and paths (left out by
  // default: traces get shared).
  bool identifying_metadata = false;
  // nsystrace_option('progress', 1): long phases (the NVTX projection, writing a trace file) report their progress
  // on stderr. Default: on when stderr is a terminal (the sqlite3 shell), off otherwise (a program, a pipe).
  bool progress = isatty(2) != 0;
  // nsystrace_option('wall_clock', 1), the default: a Perfetto trace's times are wall-clock times (REALTIME: the
  // session start plus trace_events.ts), so any set of traces packed by hand in one archive lines up (docs/job.md,
  // Clocks). 0: they are the time since the (earliest) session start, as trace_events.ts is.
  bool wall_clock = true;
  // nsystrace_option('threads', N): how many threads a conversion may use (1: all on SQLite's thread). Default: the
  // cores this process may run on. The output is the same bytes whatever N is.
  // (1 where SQLite is built without mutexes, SQLITE_THREADSAFE=0: its docs allow it one thread only.)
  int threads = sqlite3_threadsafe() != 0 ? available_cores() : 1;
  // nsystrace_option('gpu_model', 'typed' | 'slices'): how a Perfetto trace writes kernels, memcpys and memsets
  // (docs/gpu-model.md). Default: typed, Perfetto's GPU compute model.
  GpuModel gpu_model = GpuModel::typed;
  // nsystrace_option('totals_memory_mb', N): the memory event_totals may hash its groups in (about 200 bytes and the
  // name a group). Past it (a profile whose names are nearly all distinct: PyTorch's "seq = N" NVTX ranges), the
  // groups are made by SQLite's GROUP BY over trace_events instead, whose sort spills to disk. 0: always by SQLite.
  int64_t totals_memory_mb = 256;
  // What the last chrome_trace_file() / perfetto_trace_file() of this connection wrote, as the JSON object
  // nsystrace_last_trace_file() returns (its events per kind, GPUs, bytes), so a caller can summarize a conversion
  // without a second scan; "" before the first, and from the start of each conversion until it is committed.
  std::string last_trace_file;
  // The statements of the last trace_events cursor closed (reset: none is running, so they hold no lock), handed to
  // the next cursor opened: a correlated subquery over trace_events opens a cursor at every outer row, and preparing
  // its readers' statements again was over half of each evaluation. Kept only while another trace_events cursor is
  // open (the subquery's outer one): the last cursor to close finalizes them, so between statements the extension
  // holds none (an application may finalize every statement it finds with sqlite3_next_stmt before closing, and
  // sqlite3_close() refuses to close while any is left). trace_events' xDisconnect finalizes them too.
  StatementCache idle_statements;
  void release_statements();

 private:
  struct CachedCatalog {
    std::string version;
    std::shared_ptr<const ProfileCatalog> catalog;
    std::shared_ptr<const NvtxProjection> projection;
    std::shared_ptr<const NvtxProjection> windowed;  // the last window's, while the whole one is not known
    std::shared_ptr<const LaunchCalls> launch_calls;
  };
  sqlite3* db_;
  uint64_t next_cursor_id_ = 0, clock_ = 0;
  std::vector<TraceEventsCursor*> cursors_;
  std::vector<const sqlite3_vtab*> vtabs_;
  std::map<std::string, CachedCatalog> catalogs_;
  uint64_t writes_read_ = 0;
  // The last placement made, and the catalogs it was made from (a catalog is reloaded when its database changes).
  std::vector<std::shared_ptr<const ProfileCatalog>> placement_catalogs_;
  std::shared_ptr<const ProfilePlacement> placement_;  // catalogs read within write transactions: each one's version is its own
};

// Whether a database is an Nsight Systems export: it has one of the tables nsys writes.
bool is_export(const ProfileCatalog& catalog);

// Registration (ext/*.cc); each returns an SQLite result code and sets *error on failure.
int register_trace_events(sqlite3* db, ConnectionState* state, std::string* error);
int register_chrome_trace(sqlite3* db, ConnectionState* state, std::string* error);
int register_nvtx_kernel_ranges(sqlite3* db, ConnectionState* state, std::string* error);
int register_event_totals(sqlite3* db, ConnectionState* state, std::string* error);
int register_options(sqlite3* db, ConnectionState* state, std::string* error);
int register_statistics(sqlite3* db, std::string* error);

}  // namespace nsystrace
