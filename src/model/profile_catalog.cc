#include "src/model/profile_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "src/model/event.h"
#include "src/model/export_model.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

// The tables of export_model.def's ROW_SOURCE lines, in merge order: the derived sources come last and have no table
// (nullptr), so the first nullptr ends the list.
const char* const kEventTables[] = {
#define ROW_SOURCE(kind, table, tag) table,
#include "src/model/export_model.def"
    nullptr};

void StringTable::load(sqlite3* db, const ExportSchema& schema) {
  const TableInfo* t = schema.table("StringIds");
  if (t == nullptr || !t->has("id") || !t->has("value")) return;
  std::string from = " FROM " + schema.qualified("StringIds");
  Statement range(db, "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0)" + from);
  range.step();
  int64_t count = range.int64(0), lo = range.int64(1), hi = range.int64(2);
  bool dense = lo >= 0 && hi < count * 2 + 1024;
  Statement rows(db, "SELECT id, value" + from);
  if (dense) {
    dense_.resize(static_cast<size_t>(hi) + 1);
    present_.assign(static_cast<size_t>(hi) + 1, false);
  }
  while (rows.step()) {
    if (rows.is_null(0)) continue;
    int64_t id = rows.int64(0);
    std::string_view v = rows.text(1);
    if (dense && id >= 0 && id <= hi) {
      dense_[id].assign(v);
      if (!present_[id]) ++count_;
      present_[id] = true;
    } else {
      auto [it, inserted] = sparse_.emplace(id, std::string(v));
      if (inserted) ++count_;
    }
  }
}

const std::string* StringTable::find(int64_t id) const {
  if (id >= 0 && static_cast<uint64_t>(id) < present_.size()) return present_[id] ? &dense_[id] : nullptr;
  auto it = sparse_.find(id);
  return it == sparse_.end() ? nullptr : &it->second;
}

std::shared_ptr<ProfileCatalog> ProfileCatalog::load(sqlite3* db, const std::string& schema) {
  auto c = std::make_shared<ProfileCatalog>();
  c->schema_ = ExportSchema::load(db, schema);
  c->strings_.load(db, c->schema_);
  c->load_processes_and_threads(db);
  c->load_gpus(db);
  c->graph_nodes_.load(db, c->schema_, c->strings_);
  c->db_ = db;
  c->load_labels(db, "ENUM_CUDA_MEMCPY_OPER", "id", "label", c->memcpy_kinds_);
  c->load_labels(db, "ENUM_CUDA_MEM_KIND", "id", "label", c->memory_kinds_);
  c->load_labels(db, "ENUM_CUPTI_SYNC_TYPE", "id", "label", c->sync_types_);
  c->load_labels(db, "TARGET_INFO_GPU_METRICS", "typeId", "typeName", c->gpu_metric_types_);
  for (auto& [type_id, name] : c->gpu_metric_types_)  // nsys 2025.3 leaves typeName empty: named by the GPU sampled
    if (name.empty()) {
      const int64_t gpu = gpu_metrics_device(type_id);
      const std::string* gpu_name = c->gpu_name(gpu);
      name = gpu_name ? fmt::format("GPU {} ({})", gpu, *gpu_name) : fmt::format("GPU {}", gpu);
    }
  c->load_labels(db, "ENUM_SAMPLING_THREAD_STATE", "id", "label", c->thread_states_);
  c->load_export_metadata(db);
  return c;
}

void ProfileCatalog::load_processes_and_threads(sqlite3* db) {
  if (const TableInfo* t = schema_.table("ThreadNames"); t && t->has("globalTid") && t->has("nameId")) {
    // Several names for one thread: the one of highest priority wins (read last). Old exports have no priority.
    Statement s(db, "SELECT globalTid, nameId FROM " + schema_.qualified("ThreadNames") +
                        " WHERE globalTid IS NOT NULL" + (t->has("priority") ? " ORDER BY priority" : ""));
    while (s.step())
      if (const std::string* name = strings_.find(s.int64(1))) threads_[s.int64(0)] = *name;
  }
  if (const TableInfo* t = schema_.table("PROCESSES"); t && t->has("globalPid") && t->has("name")) {
    Statement s(db, "SELECT globalPid, name FROM " + schema_.qualified("PROCESSES") +
                        " WHERE globalPid IS NOT NULL AND name IS NOT NULL");
    while (s.step()) processes_[process_key_of(s.int64(0))] = std::string(s.text(1));
  }
  // Legacy exports have no PROCESSES table: a process is named after its main thread (tid == pid).
  for (const auto& [global_tid, name] : threads_) {
    if (os_tid_of(global_tid) == os_pid_of(global_tid)) processes_.emplace(process_key_of(global_tid), name);
  }
}

void ProfileCatalog::load_gpus(sqlite3* db) {
  // 2022.4+: TARGET_INFO_GPU(id, name); up to 2021: TARGET_INFO_GPU(deviceId, name) and TARGET_INFO_CUDA_GPU.
  for (const char* table : {"TARGET_INFO_CUDA_GPU", "TARGET_INFO_GPU"}) {
    const TableInfo* t = schema_.table(table);
    if (t == nullptr || !t->has("name")) continue;
    const char* key = t->has("id") ? "id" : t->has("deviceId") ? "deviceId" : nullptr;
    if (key == nullptr) continue;
    Statement s(db, std::string("SELECT ") + quote_identifier(key) + ", name FROM " + schema_.qualified(table) +
                        " WHERE name IS NOT NULL");
    while (s.step())
      if (!s.is_null(0)) gpus_[s.int64(0)] = std::string(s.text(1));
    // The compute capability: TARGET_INFO_GPU's computeMajor/Minor (2022.4+), TARGET_INFO_CUDA_GPU's
    // computeCapabilityMajor/Minor (up to 2021), by the same device id as the name.
    const char* major = t->has("computeMajor")             ? "computeMajor"
                        : t->has("computeCapabilityMajor") ? "computeCapabilityMajor"
                                                           : nullptr;
    const char* minor = t->has("computeMinor")             ? "computeMinor"
                        : t->has("computeCapabilityMinor") ? "computeCapabilityMinor"
                                                           : nullptr;
    if (major == nullptr || minor == nullptr) continue;
    Statement cc(db, std::string("SELECT ") + quote_identifier(key) + ", " + quote_identifier(major) + ", " +
                         quote_identifier(minor) + " FROM " + schema_.qualified(table));
    while (cc.step())
      if (!cc.is_null(0) && !cc.is_null(1) && !cc.is_null(2) && cc.int64(1) >= 0 && cc.int64(2) >= 0)
        gpu_archs_[cc.int64(0)] = "sm_" + std::to_string(cc.int64(1)) + std::to_string(cc.int64(2));
  }
}

void ProfileCatalog::load_nvtx_definitions(sqlite3* db) const {
  const TableInfo* t = schema_.table("NVTX_EVENTS");
  if (t == nullptr || !t->has("eventType")) return;
  SelectBuilder b(*t);
  int type = b.column("eventType"), text = b.column("text"), text_id = b.column("textId"),
      domain = b.column("domainId"), category = b.column("category"), global_tid = b.column("globalTid");
  // Domain names (text = domain name) and category names (category = id, text = name).
  Statement s(db, "SELECT " + b.select_list() + " FROM " + schema_.qualified("NVTX_EVENTS") +
                      " WHERE " + nvtx_types_condition(kNvtxDefinitions));
  while (s.step()) {
    std::string name;
    if (!s.is_null(text)) {
      name = std::string(s.text(text));
    } else if (!s.is_null(text_id)) {
      const std::string* r = strings_.find(s.int64(text_id));
      if (r == nullptr) continue;
      name = *r;
    } else {
      continue;
    }
    int64_t dom = s.is_null(domain) ? 0 : s.int64(domain);
    // Numbered per process: another process may define the same domainId under another name.
    int64_t process = global_pid_of(s.is_null(global_tid) ? 0 : s.int64(global_tid));
    if (nvtx_type_is(s.int64(type), NvtxRole::domain_name))
      nvtx_domains_[{process, dom}] = std::move(name);
    else if (!s.is_null(category))
      nvtx_categories_[{process, dom, s.int64(category)}] = std::move(name);
  }
}

void ProfileCatalog::load_labels(sqlite3* db, const char* table, const char* key, const char* label,
                                 std::map<int64_t, std::string>& out) {
  const TableInfo* t = schema_.table(table);
  if (t == nullptr || !t->has(key) || !t->has(label)) return;
  Statement s(db, std::string("SELECT ") + quote_identifier(key) + ", " + quote_identifier(label) + " FROM " +
                      schema_.qualified(table));
  while (s.step())
    if (!s.is_null(0) && !s.is_null(1)) out[s.int64(0)] = std::string(s.text(1));
}

namespace {
struct InStoredOrder {  // zeroed by sqlite3_aggregate_context
  bool any, out_of_order;
  int64_t start, end;  // the previous row's
};

void in_stored_order_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* s = static_cast<InStoredOrder*>(sqlite3_aggregate_context(ctx, sizeof(InStoredOrder)));
  if (s == nullptr) return sqlite3_result_error_nomem(ctx);
  if (s->out_of_order || sqlite3_value_type(argv[0]) == SQLITE_NULL) return;  // rows without a time: skipped
  const int64_t start = sqlite3_value_int64(argv[0]);
  const int64_t end = sqlite3_value_type(argv[1]) == SQLITE_NULL ? INT64_MAX : sqlite3_value_int64(argv[1]);
  if (s->any && ProfileCatalog::sorts_before(start, end, s->start, s->end)) s->out_of_order = true;
  s->any = true, s->start = start, s->end = end;
}

void in_stored_order_final(sqlite3_context* ctx) {
  auto* s = static_cast<InStoredOrder*>(sqlite3_aggregate_context(ctx, 0));
  sqlite3_result_int(ctx, s == nullptr || !s->out_of_order);
}
}  // namespace

int register_stored_order_check(sqlite3* db) {
  return sqlite3_create_function_v2(db, "nsystrace_in_stored_order", 2,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nullptr, nullptr,
                                    in_stored_order_step, in_stored_order_final, nullptr);
}

const ProfileCatalog::StoredOrder& ProfileCatalog::stored_order(sqlite3* db, const std::string& table,
                                                                const std::string& time, const std::string& end,
                                                                const std::string& where) const {
  std::string key = table + " WHERE " + where;
  auto it = stored_order_.find(key);
  if (it != stored_order_.end()) return it->second;
  constexpr size_t kMaxStragglers = 4096;
  constexpr size_t kMaxRuns = size_t{1} << 16;  // more: as good as unsorted
  StoredOrder order;
  // A table in order (every export before nsys 2025.6, most after) is found so by SQLite in one step: 0.14 s less
  // wall time for the large export's million GPU metric samples than the reading below, which finds the runs and
  // stragglers of a table out of order.
  std::optional<Statement> in_order;
  try {
    in_order.emplace(db, "SELECT nsystrace_in_stored_order(" + time + ", " + end + ") FROM " + table +
                             " NOT INDEXED WHERE " + where);
  } catch (const Error&) {  // not registered on this connection (the core used without the extension's init)
  }
  if (in_order && in_order->step() && in_order->int64(0) == 1)
    return stored_order_.emplace(key, std::move(order)).first->second;
  Statement check(db, "SELECT " + time + ", " + end + ", rowid FROM " + table + " NOT INDEXED WHERE " + where);
  // One column fetch a row where it can be (each takes the connection's mutex; a table of a million GPU metric
  // samples is read here before it is read for its rows): a point (end NULL) has no end to read, and the rowid is
  // read only for the rare row out of order.
  const bool has_end = end != "NULL";
  bool any = false, finding_runs = true;
  int64_t kept_start = 0, kept_end = 0;  // the last row kept in place: a row sorting before it is a straggler
  int64_t previous_start = 0, previous_end = 0;  // the previous row: a row sorting before it begins a run
  std::vector<std::pair<int64_t, int64_t>> run_last;  // each run's last row's (time, end)
  while (check.step()) {
    std::optional<int64_t> maybe_start = check.optional_int64(0);
    if (!maybe_start) continue;  // rows without a start are skipped wherever they are
    int64_t start = *maybe_start, stop = has_end ? check.optional_int64(1).value_or(INT64_MAX) : INT64_MAX;  // open: the longest
    auto rowid = [&check] { return check.int64(2); };
    if (finding_runs && (!any || sorts_before(start, stop, previous_start, previous_end))) {
      if (order.runs.size() == kMaxRuns) {
        finding_runs = false;
        order.runs.clear();
      } else {
        if (!order.runs.empty()) order.runs.back().last_rowid = rowid() - 1;
        // The first run also holds any rows without a start stored before it.
        order.runs.push_back(SortedRun{any ? rowid() : INT64_MIN, INT64_MAX, start, stop});
        run_last.emplace_back();
      }
    }
    if (finding_runs) run_last.back() = {start, stop};
    previous_start = start;
    previous_end = stop;
    if (order.nearly_sorted) {
      if (!any || !sorts_before(start, stop, kept_start, kept_end)) {
        kept_start = start;
        kept_end = stop;
      } else if (order.stragglers.size() < kMaxStragglers) {
        order.stragglers.push_back(rowid());
      } else {
        order.nearly_sorted = false;
        order.stragglers.clear();
      }
    }
    any = true;
    if (!order.nearly_sorted && !finding_runs) break;
  }
  if (order.nearly_sorted || !finding_runs) {
    order.runs.clear();
  } else {
    // How many runs a merge reads at once: a run is open from when the merge reaches its first row to its last.
    struct Bound {
      int64_t start, end;
      bool closes;
    };
    std::vector<Bound> bounds;
    bounds.reserve(2 * order.runs.size());
    for (size_t i = 0; i < order.runs.size(); ++i) {
      bounds.push_back({order.runs[i].start, order.runs[i].end, false});
      bounds.push_back({run_last[i].first, run_last[i].second, true});
    }
    std::sort(bounds.begin(), bounds.end(), [](const Bound& a, const Bound& b) {
      if (a.start != b.start || a.end != b.end) return sorts_before(a.start, a.end, b.start, b.end);
      return !a.closes && b.closes;  // opened before closed: counted at their widest
    });
    size_t open = 0, most = 0;
    for (const Bound& b : bounds) {
      if (b.closes) --open;
      else most = std::max(most, ++open);
    }
    if (most > kMaxOpenRuns) order.runs.clear();
    std::sort(order.runs.begin(), order.runs.end(), [](const SortedRun& a, const SortedRun& b) {
      if (a.start != b.start || a.end != b.end) return sorts_before(a.start, a.end, b.start, b.end);
      return a.first_rowid < b.first_rowid;
    });
    order.runs.shrink_to_fit();
  }
  return stored_order_.emplace(key, std::move(order)).first->second;
}

uint64_t ProfileCatalog::row_count(sqlite3* db, const std::string& table) const {
  auto it = row_counts_.find(table);
  if (it != row_counts_.end()) return it->second;
  Statement s(db, "SELECT count(*) FROM " + table);
  uint64_t n = s.step() ? static_cast<uint64_t>(s.int64(0)) : 0;
  return row_counts_.emplace(table, n).first->second;
}

uint64_t ProfileCatalog::row_estimate(sqlite3* db, const std::string& table) const {
  if (auto counted = row_counts_.find(table); counted != row_counts_.end()) return counted->second;
  auto it = row_estimates_.find(table);
  if (it != row_estimates_.end()) return it->second;
  Statement s(db, "SELECT (SELECT min(rowid) FROM " + table + "), (SELECT max(rowid) FROM " + table + ")");
  uint64_t n = 0;
  if (s.step() && !s.is_null(0))  // the span + 1 in unsigned arithmetic: rowids may lie anywhere in int64
    n = std::max<uint64_t>(1, static_cast<uint64_t>(s.int64(1)) - static_cast<uint64_t>(s.int64(0)) + 1);
  // Capped where no table's rows reach (2^40), so that the plan's sums of estimates cannot wrap around.
  n = std::min(n, uint64_t{1} << 40);
  return row_estimates_.emplace(table, n).first->second;
}

const ProfileCatalog::CorrelationIndex& ProfileCatalog::correlation_index(sqlite3* db, const std::string& table,
                                                                          const std::string& column) const {
  std::string key = table + "." + column;
  auto it = correlation_index_.find(key);
  if (it == correlation_index_.end()) {
    CorrelationIndex index;
    Statement s(db, "SELECT " + quote_identifier(column) + ", rowid FROM " + table + " WHERE " +
                        quote_identifier(column) + " IS NOT NULL");
    while (s.step()) index.push_back({s.int64(0), s.int64(1)});
    std::sort(index.begin(), index.end());  // nearly sorted already: CUPTI numbers calls in order
    index.shrink_to_fit();
    it = correlation_index_.emplace(key, std::move(index)).first;
  }
  return it->second;
}

std::vector<int64_t> ProfileCatalog::rowids_with(const CorrelationIndex& index, const std::vector<int64_t>& values) {
  std::vector<int64_t> out;
  for (int64_t v : values) {
    auto first = std::lower_bound(index.begin(), index.end(), ValueRowid{v, INT64_MIN});
    for (auto p = first; p != index.end() && p->value == v; ++p) out.push_back(p->rowid);
  }
  if (values.size() > 1) std::sort(out.begin(), out.end());  // one value's rowids are in order in the index
  return out;
}

bool is_identifying_metadata(std::string_view key, std::string_view value) {
  for (std::string_view word : {"HOST", "USER", "PATH"})
    if (key.find(word) != std::string_view::npos) return true;
  for (std::string_view home : {"/home/", "/Users/", "\\Users\\", "/root/"})
    if (value.find(home) != std::string_view::npos) return true;
  return false;
}

void ProfileCatalog::load_export_metadata(sqlite3* db) {
  for (const char* table : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
    const TableInfo* t = schema_.table(table);
    if (t == nullptr || !t->has("name") || !t->has("value")) continue;
    Statement s(db, "SELECT name, value FROM " + schema_.qualified(table));
    while (s.step())
      if (!s.is_null(0)) export_metadata_.emplace_back(std::string(s.text(0)), std::string(s.text(1)));
  }
  if (const TableInfo* t = schema_.table("TARGET_INFO_SESSION_START_TIME"); t && t->has("utcEpochNs")) {
    Statement s(db, "SELECT utcEpochNs FROM " + schema_.qualified("TARGET_INFO_SESSION_START_TIME"));
    if (s.step() && !s.is_null(0)) session_start_utc_ns_ = s.int64(0);
  }
}

const std::string* ProfileCatalog::process_name(int64_t process_key) const {
  auto it = processes_.find(process_key);
  return it == processes_.end() ? nullptr : &it->second;
}

const std::string* ProfileCatalog::thread_name(int64_t global_tid) const {
  auto it = threads_.find(global_tid);
  return it == threads_.end() ? nullptr : &it->second;
}

const std::string* ProfileCatalog::gpu_name(int64_t device_id) const { return find(gpus_, device_id); }

const GraphReplay* ProfileCatalog::graph_replay(sqlite3* db, int64_t process_key, int64_t correlation,
                                                int64_t device, int64_t stream) const {
  std::lock_guard<std::mutex> lock(row_time_mutex_);
  if (!graph_replays_) graph_replays_.emplace().load(db, schema_, strings_);
  return graph_replays_->find(process_key, correlation, device, stream);
}

std::string_view ProfileCatalog::string_or_placeholder(int64_t id, std::string& scratch) const {
  if (const std::string* s = strings_.find(id)) return *s;
  scratch = kMissingStringPrefix + std::to_string(id) + "]";
  return scratch;
}

std::string_view ProfileCatalog::nvtx_range_name(std::optional<std::string_view> text, std::optional<int64_t> text_id,
                                                 std::string& scratch) const {
  if (text) return *text;
  if (text_id) return string_or_placeholder(*text_id, scratch);
  return kUnnamedNvtxRange;
}

const std::string* ProfileCatalog::nvtx_domain(sqlite3* db, int64_t global_id, int64_t domain_id) const {
  std::call_once(nvtx_definitions_once_, [&] { load_nvtx_definitions(db); });
  auto it = nvtx_domains_.find({global_pid_of(global_id), domain_id});
  return it == nvtx_domains_.end() ? nullptr : &it->second;
}

const std::string* ProfileCatalog::nvtx_category(sqlite3* db, int64_t global_id, int64_t domain_id,
                                                 int64_t category) const {
  std::call_once(nvtx_definitions_once_, [&] { load_nvtx_definitions(db); });
  auto it = nvtx_categories_.find({global_pid_of(global_id), domain_id, category});
  return it == nvtx_categories_.end() ? nullptr : &it->second;
}

std::optional<int64_t> ProfileCatalog::last_nvtx_timestamp(sqlite3* db) const {
  std::lock_guard<std::mutex> lock(row_time_mutex_);
  if (last_nvtx_timestamp_) return *last_nvtx_timestamp_;
  std::optional<int64_t> last;
  if (const TableInfo* t = schema_.table("NVTX_EVENTS"); t && t->has("start")) {
    Statement s(db, std::string("SELECT max(start)") + (t->has("end") ? ", max(\"end\")" : ", NULL") + " FROM " +
                        schema_.qualified("NVTX_EVENTS"));
    if (s.step()) {
      for (int col : {0, 1})
        if (!s.is_null(col)) last = std::max(last.value_or(INT64_MIN), s.int64(col));
    }
  }
  last_nvtx_timestamp_ = last;
  return last;
}

int64_t ProfileCatalog::context_device(sqlite3* db, int64_t global_pid, int64_t context_id, int64_t recorded) const {
  std::lock_guard<std::mutex> lock(row_time_mutex_);
  if (!context_devices_) {
    std::map<std::pair<int64_t, int64_t>, int64_t> devices;
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
      const TableInfo* t = schema_.table(table);
      if (t == nullptr || !t->has("globalPid") || !t->has("contextId") || !t->has("deviceId")) continue;
      // Every row rather than SELECT DISTINCT (a temporary B-tree insert per row, twice the pass): a context's
      // rows come in long runs, and a row like the one before it is skipped.
      Statement s(db, "SELECT globalPid, contextId, deviceId FROM " + schema_.qualified(table) +
                          " WHERE globalPid IS NOT NULL AND contextId IS NOT NULL AND deviceId IS NOT NULL");
      bool any = false;
      int64_t pid = 0, context = 0, device = 0;
      while (s.step()) {
        if (any && s.int64(0) == pid && s.int64(1) == context && s.int64(2) == device) continue;
        any = true, pid = s.int64(0), context = s.int64(1), device = s.int64(2);
        auto [it, inserted] = devices.emplace(std::make_pair(global_pid_of(pid), context), device);
        if (!inserted && it->second != device) it->second = kSeveralDevices;
      }
    }
    context_devices_ = std::move(devices);
  }
  auto it = context_devices_->find({global_pid_of(global_pid), context_id});
  return it == context_devices_->end() || it->second == kSeveralDevices ? recorded : it->second;
}

int64_t ProfileCatalog::profile_end(sqlite3* db) const {
  std::lock_guard<std::mutex> lock(row_time_mutex_);
  if (profile_end_) return *profile_end_;
  int64_t end = INT64_MIN;
  for (const char* const* table = kEventTables; *table; ++table) {
    const TableInfo* t = schema_.table(*table);
    const char* time = t == nullptr ? nullptr : t->has("start") ? "start" : t->has("timestamp") ? "timestamp" : nullptr;
    if (time == nullptr) continue;
    std::string sql = std::string("SELECT max(") + time + ")";
    if (t->has("end")) sql += ", max(\"end\")";
    Statement s(db, sql + " FROM " + schema_.qualified(*table));
    if (s.step()) {
      if (!s.is_null(0)) end = std::max(end, s.int64(0));
      if (t->has("end") && !s.is_null(1)) end = std::max(end, s.int64(1));
    }
  }
  profile_end_ = end == INT64_MIN ? 0 : end;
  return *profile_end_;
}

}  // namespace nsystrace
