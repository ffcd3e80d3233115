// Entry point: registers the module and functions on one connection. Non-trivial code lives in src/.
#include <fmt/format.h>

#include <sys/stat.h>

#include <mutex>
#include <set>
#include <string>

#include "ext/connection_state.h"
#include "ext/vtab_support.h"
#include "src/model/profile_indexes.h"
#include "src/sqlite/statement.h"

#ifndef NSYSTRACE_VERSION
#define NSYSTRACE_VERSION "unknown"
#endif

namespace nsystrace {

void ConnectionState::remove_cursor(TraceEventsCursor* c) {
  for (size_t i = 0; i < cursors_.size(); ++i) {
    if (cursors_[i] == c) {
      cursors_.erase(cursors_.begin() + static_cast<long>(i));
      return;
    }
  }
}

namespace {
// The connections this copy of the .so registered on (their states alive), for a second load into one of them.
std::mutex loaded_mutex;
std::set<sqlite3*>& loaded_connections() {
  static std::set<sqlite3*> connections;
  return connections;
}
}  // namespace

ConnectionState::ConnectionState(sqlite3* db) : db_(db) {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  loaded_connections().insert(db);
}

ConnectionState::~ConnectionState() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  loaded_connections().erase(db_);
}

bool ConnectionState::loaded_into(sqlite3* db) {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  return loaded_connections().count(db) != 0;
}

TraceEventsCursor* ConnectionState::latest_cursor(const std::vector<std::string>& plans) const {
  TraceEventsCursor* latest = nullptr;
  for (TraceEventsCursor* c : cursors_)
    if ((latest == nullptr || c->advanced_at > latest->advanced_at) &&
        std::find(plans.begin(), plans.end(), c->plan_idx_str) != plans.end())
      latest = c;
  return latest;
}

bool is_export(const ProfileCatalog& catalog) {
  static constexpr const char* kExportMarkers[] = {
      "StringIds", "META_DATA_EXPORT", "EXPORT_META_DATA", "ThreadNames", "TARGET_INFO_GPU",
      "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "ProcessStreams"};
  for (const char* t : kExportMarkers)
    if (catalog.schema().has(t)) return true;
  return false;
}

std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> ConnectionState::reports() {
  std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>> out;
  // (pragma_database_list, not sqlite3_db_name: that is SQLite 3.39's, and its slot in an older host's API table
  // does not exist.) seq 1 is temp.
  std::vector<std::string> names;
  for (Statement list(db_, "SELECT seq, name FROM pragma_database_list ORDER BY seq"); list.step();)
    if (list.int64(0) != 1) names.emplace_back(list.text(1));
  for (const std::string& name : names) {
    auto c = catalog(name);
    if (is_export(*c)) out.emplace_back(name, std::move(c));
  }
  return out;
}

TraceEventsCursor* ConnectionState::cursor_on(uint64_t token) const {
  for (TraceEventsCursor* c : cursors_)
    if (c->advanced_at == token && c->scan && !c->scan->eof()) return c;
  return nullptr;
}

std::shared_ptr<const ProfilePlacement> ConnectionState::placement(
    const std::vector<std::pair<std::string, std::shared_ptr<const ProfileCatalog>>>& reports) {
  std::vector<std::shared_ptr<const ProfileCatalog>> catalogs;
  for (const auto& r : reports) catalogs.push_back(r.second);
  if (placement_ && catalogs == placement_catalogs_) return placement_;
  StatementCache statements;
  std::vector<TimelineScan::Report> all = TimelineScan::align_reports(db_, reports);
  for (TimelineScan::Report& r : all) r.context.statements = &statements;
  ScanFilter every_row;
  every_row.args = false;
  for (const auto& r : reports) every_row.schemas.push_back(r.first);
  std::unique_ptr<TimelineScan> scan = open_scan(*this, std::move(all), every_row);
  placement_ = place_every_row(*scan);
  placement_catalogs_ = std::move(catalogs);
  return placement_;
}

TraceEventsCursor* ConnectionState::find_cursor(uint64_t id) const {
  for (TraceEventsCursor* c : cursors_)
    if (c->id == id) return c;
  return nullptr;
}

std::shared_ptr<const ProfileCatalog> ConnectionState::catalog(const std::string& schema) {
  // schema_version changes with DDL, data_version with commits by other connections, total_changes with ours.
  std::string q = quote_identifier(schema);
  Statement sv(db_, "PRAGMA " + q + ".schema_version");
  Statement dv(db_, "PRAGMA " + q + ".data_version");
  sv.step();
  dv.step();
  // The file too: DETACH r and ATTACH another rank's export as r, and the cookies above may well be equal (two
  // exports of one nsys version), but the names must be the new file's.
  const char* file = sqlite3_db_filename(db_, schema.c_str());
  struct stat st {};
  if (file != nullptr && *file != '\0') stat(file, &st);
  std::string version = fmt::format("{}/{}/{}|{}|{}/{}/{}.{}", sv.int64(0), dv.int64(0), sqlite3_total_changes(db_),
                                    file ? file : "", static_cast<uint64_t>(st.st_ino),
                                    static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec),
                                    static_cast<int64_t>(st.st_mtim.tv_nsec));
  // Within a write transaction the cookies above do not say whether a change was rolled back (ROLLBACK or ROLLBACK
  // TO a savepoint leaves total_changes as it was), so nothing read from the database then is kept for later.
  if (sqlite3_txn_state(db_, schema.c_str()) == SQLITE_TXN_WRITE) version += fmt::format("|write {}", ++writes_read_);
  auto& slot = catalogs_[schema];
  if (!slot.catalog || slot.version != version) {
    slot.catalog = ProfileCatalog::load(db_, schema);
    slot.projection.reset();
    slot.windowed.reset();
    slot.launch_calls.reset();
    slot.version = version;
  }
  return slot.catalog;
}

void ConnectionState::release_statements() { idle_statements = StatementCache(); }

std::vector<std::string> ConnectionState::database_files() const {
  std::vector<std::string> out;
  Statement s(db_, "SELECT file FROM pragma_database_list");
  while (s.step()) out.emplace_back(s.text(0));
  return out;
}

std::shared_ptr<const NvtxProjection> ConnectionState::projection(const std::string& schema,
                                                                   const std::optional<ProjectionWindow>& window) {
  auto current = catalog(schema);
  auto& slot = catalogs_[schema];
  if (slot.projection) return slot.projection;
  if (window) {
    if (!slot.windowed || !(slot.windowed->window() == window))
      slot.windowed = NvtxProjection::compute(db_, *current, progress, threads, window);
    return slot.windowed;
  }
  slot.projection = NvtxProjection::compute(db_, *current, progress, threads);
  slot.windowed.reset();
  return slot.projection;
}

std::shared_ptr<const LaunchCalls> ConnectionState::launch_calls(const std::string& schema, int64_t clock_offset) {
  auto current = catalog(schema);
  auto& slot = catalogs_[schema];
  if (!slot.launch_calls || slot.launch_calls->clock_offset() != clock_offset)
    slot.launch_calls = LaunchCalls::build(db_, current, clock_offset);
  return slot.launch_calls;
}

namespace {

void version_function(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, NSYSTRACE_VERSION, -1, SQLITE_STATIC);
}

// nsystrace_create_indexes([schema]): WRITES TO THE PROFILE (the only function that does): indexes on
// each event table's time column.
void create_indexes_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  try {
    sqlite3* db = sqlite3_context_db_handle(ctx);
    std::string schema = argc > 0 && sqlite3_value_type(argv[0]) == SQLITE_TEXT ? std::string(text_of(argv[0])) : "main";
    if (sqlite3_db_readonly(db, schema.c_str()) != 0) {
      const char* file = sqlite3_db_filename(db, schema.c_str());
      throw Error(fmt::format("nsystrace_create_indexes(): database '{}' ({}) is open read-only or does not exist; "
                              "this function writes indexes into the profile: open it read-write to use it",
                              schema, file && *file ? file : "in memory"));
    }
    std::vector<std::string> created = create_time_indexes(db, ExportSchema::load(db, schema));
    std::string msg = created.empty() ? std::string("nsystrace: no index created (every event table is indexed)")
                                      : "nsystrace: wrote " + std::to_string(created.size()) + " index(es) into the profile:";
    for (const auto& name : created) msg += " " + name;
    sqlite3_result_text(ctx, msg.c_str(), -1, SQLITE_TRANSIENT);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// nsystrace_option(name [, value]): reads (and with a value, sets) a setting of this connection; returns its value.
// The settings: 'identifying_metadata' (0 or 1, default 0), 'progress' (0 or 1, default: 1 when stderr is a
// terminal), 'threads' (1 to kMaxThreads, default: the cores available), 'wall_clock' (0 or 1, default 1)
// and 'gpu_model' ('typed' or 'slices').
// An option's value when it is an integer, or text that numeric affinity makes one ('4'); read without converting it.
std::optional<int64_t> integer_value(sqlite3_value* v) {
  FilterValue f = filter_value(v, true);
  if (f.numeric != FilterValue::Type::integer) return std::nullopt;
  return f.integer;
}

void option_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  const unsigned char* text = sqlite3_value_text(argv[0]);
  std::string name = text != nullptr ? reinterpret_cast<const char*>(text) : "";
  bool* setting = name == "identifying_metadata" ? &state->identifying_metadata
                  : name == "progress"           ? &state->progress
                  : name == "wall_clock"         ? &state->wall_clock
                                                 : nullptr;
  if (name == "threads") {
    if (argc > 1) {
      std::optional<int64_t> threads = integer_value(argv[1]);
      if (threads && *threads > 1 && sqlite3_threadsafe() == 0) {
        sqlite3_result_error(ctx, "nsystrace_option('threads', value): this SQLite is built without threads "
                                  "(SQLITE_THREADSAFE=0): 1 is the only value", -1);
        return;
      }
      if (!threads || *threads < 1 || *threads > kMaxThreads) {
        sqlite3_result_error(
            ctx, fmt::format("nsystrace_option('threads', value): value must be an integer from 1 to {}", kMaxThreads)
                     .c_str(),
            -1);
        return;
      }
      state->threads = static_cast<int>(*threads);
    }
    sqlite3_result_int(ctx, state->threads);
    return;
  }
  if (name == "totals_memory_mb") {
    if (argc > 1) {
      std::optional<int64_t> mb = integer_value(argv[1]);
      if (!mb || *mb < 0 || *mb > (int64_t{1} << 30)) {
        sqlite3_result_error(ctx, "nsystrace_option('totals_memory_mb', value): value must be an integer from 0 to 2^30",
                             -1);
        return;
      }
      state->totals_memory_mb = *mb;
    }
    sqlite3_result_int64(ctx, state->totals_memory_mb);
    return;
  }
  if (name == "gpu_model") {
    if (argc > 1) {
      std::string_view v = sqlite3_value_type(argv[1]) == SQLITE_TEXT ? text_of(argv[1]) : std::string_view();
      if (v != "typed" && v != "slices") {
        sqlite3_result_error(ctx, "nsystrace_option('gpu_model', value): value must be 'typed' (kernels, memcpys and "
                                  "memsets in Perfetto's GPU compute model) or 'slices' (as slices on stream tracks)",
                             -1);
        return;
      }
      state->gpu_model = v == "typed" ? GpuModel::typed : GpuModel::slices;
    }
    sqlite3_result_text(ctx, state->gpu_model == GpuModel::typed ? "typed" : "slices", -1, SQLITE_STATIC);
    return;
  }
  if (setting == nullptr) {
    sqlite3_result_error(ctx,
                         "nsystrace_option(name [, value]): unknown option; the options are: identifying_metadata "
                         "(1: otherData keeps the export's host, user and file paths; 0, the default: they are left "
                         "out), progress (1: long phases report done/total and the time left on stderr; the "
                         "default is 1 when stderr is a terminal), threads (how many threads a conversion may "
                         "use; the default is the cores available), wall_clock (1, the default: a Perfetto trace's "
                         "times are wall-clock times; 0: the time since the session start), gpu_model ('typed', the default: a Perfetto trace writes GPU "
                         "work in Perfetto's GPU compute model; 'slices': as slices) and totals_memory_mb (the memory "
                         "event_totals hashes its groups in before SQLite groups them instead; 256 by default)",
                         -1);
    return;
  }
  if (argc > 1) {
    std::optional<int64_t> flag = integer_value(argv[1]);
    if (!flag || (*flag != 0 && *flag != 1)) {
      sqlite3_result_error(ctx, fmt::format("nsystrace_option('{}', value): value must be 0 or 1", name).c_str(), -1);
      return;
    }
    *setting = *flag == 1;
  }
  sqlite3_result_int(ctx, *setting ? 1 : 0);
}

// nsystrace_last_trace_file(): the record of the last trace file this connection wrote (ConnectionState::
// last_trace_file), or NULL.
void last_trace_file_function(sqlite3_context* ctx, int, sqlite3_value**) {
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  if (state->last_trace_file.empty()) sqlite3_result_null(ctx);
  else sqlite3_result_text(ctx, state->last_trace_file.c_str(), -1, SQLITE_TRANSIENT);
}

}  // namespace

int register_options(sqlite3* db, ConnectionState* state, std::string* error) {
  int rc = SQLITE_OK;
  for (int n : {1, 2}) {
    if (rc == SQLITE_OK)
      rc = sqlite3_create_function_v2(db, "nsystrace_option", n, SQLITE_UTF8 | SQLITE_DIRECTONLY, state,
                                      option_function, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK)  // says which file this connection wrote: not for a database's views and triggers
    rc = sqlite3_create_function_v2(db, "nsystrace_last_trace_file", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, state,
                                    last_trace_file_function, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) *error = "cannot register nsystrace_option / nsystrace_last_trace_file";
  return rc;
}

}  // namespace nsystrace

extern "C" __attribute__((visibility("default"))) int sqlite3_nsystrace_init(sqlite3* db, char** pzErrMsg,
                                                                           const sqlite3_api_routines* pApi) {
  // One API table per process: a second SQLite library loading the same .so (Python's sqlite3 beside another
  // binding's own SQLite) would redirect the first one's connections through its table. Refused, in its words.
#ifndef SQLITE_CORE  // (the fuzz targets' build: direct calls, no table)
  // Written once, by the first init: our reader and writer threads read the table while other connections load the
  // extension (a write of the same value would still be a data race; ThreadSanitizer's thread_tests found it once the
  // static library, too, called through the table). call_once makes the first write happen-before every later read.
  static std::once_flag table_bound;
  std::call_once(table_bound, [pApi] { SQLITE_EXTENSION_INIT2(pApi); });
  if (sqlite3_api != pApi) {
    if (pzErrMsg != nullptr)
      *pzErrMsg = pApi->mprintf("nsystrace: this process already loaded nsystrace into another SQLite library (%s); "
                                "one process can use it from one SQLite library only", sqlite3_api->libversion());
    return SQLITE_ERROR;
  }
#endif
  using namespace nsystrace;
  std::string error;
  int rc = SQLITE_OK;
  try {
    if (sqlite3_libversion_number() < 3038000) {
      error = fmt::format("nsystrace needs SQLite 3.38 or later; this is {}", sqlite3_libversion());
      rc = SQLITE_ERROR;
    } else if (ConnectionState::loaded_into(db)) {
      // Loaded again into a connection that has it (a binding that loads per cursor or per pool checkout): what the
      // first load registered stays. Registering again would replace the module, destroying the connection's state
      // while cursors of the first may still be open (a use-after-free under SQLite 3.39 and 3.40).
      rc = SQLITE_OK;
    } else {
      rc = sqlite3_create_function_v2(db, "nsystrace_version", 0,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nullptr,
                                      version_function, nullptr, nullptr, nullptr);
      for (int n : {0, 1}) {  // writes to the profile: never from a view or trigger
        if (rc == SQLITE_OK)
          rc = sqlite3_create_function_v2(db, "nsystrace_create_indexes", n, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                          nullptr, create_indexes_function, nullptr, nullptr, nullptr);
      }
      if (rc == SQLITE_OK) rc = register_stored_order_check(db);  // the catalog's check of a table's order
      // The module owns the state (destroyed with the connection, or at once if registration fails); the
      // functions borrow it.
      auto* state = rc == SQLITE_OK ? new ConnectionState(db) : nullptr;
      if (rc == SQLITE_OK) rc = register_trace_events(db, state, &error);
      if (rc == SQLITE_OK) rc = register_chrome_trace(db, state, &error);
      if (rc == SQLITE_OK) rc = register_nvtx_kernel_ranges(db, state, &error);
      if (rc == SQLITE_OK) rc = register_event_totals(db, state, &error);
      if (rc == SQLITE_OK) rc = register_options(db, state, &error);
      if (rc == SQLITE_OK) rc = register_statistics(db, &error);
    }
  } catch (const std::exception& e) {
    error = e.what();
    rc = SQLITE_ERROR;
  }
  if (rc != SQLITE_OK && pzErrMsg != nullptr) {
    if (error.empty()) error = sqlite3_errmsg(db);
    *pzErrMsg = sqlite3_mprintf("nsystrace: %s", error.c_str());
  }
  return rc;
}
