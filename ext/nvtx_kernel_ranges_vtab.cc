// nvtx_kernel_ranges: an eponymous read-only table, one row per NVTX range that launched GPU work, with the GPU
// extent of that work (see src/model/nvtx_projection.h for the definition). rowid = the range's rowid in NVTX_EVENTS;
// parent = the rowid of the enclosing range's row.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/sqlite/statement.h"

#include "ext/vtab_support.h"

namespace nsystrace {
namespace {

enum Column {
  kName, kDomain, kStart, kEnd, kGpuStart, kGpuEnd, kGpuOps, kKernels, kMemcpys, kMemsets, kPid, kTid, kGlobalTid,
  kDepth, kParent, kDevices, kRangeType, kUnclosed, kGraphs, kGpuSpan, kGpuOpTime, kGpuBusyTime, kChildren,
  kSchemaColumn
};

constexpr const char* kSchema =
    "CREATE TABLE x(name TEXT, domain TEXT, start INTEGER, \"end\" INTEGER, gpu_start INTEGER, gpu_end INTEGER,"
    " gpu_ops INTEGER, kernels INTEGER, memcpys INTEGER, memsets INTEGER, pid INTEGER, tid INTEGER,"
    " global_tid INTEGER, depth INTEGER, parent INTEGER, devices TEXT, range_type TEXT, unclosed INTEGER,"
    " graphs INTEGER, gpu_span INTEGER, gpu_op_time INTEGER, gpu_busy_time INTEGER, children INTEGER,"
    " schema TEXT HIDDEN)";

const char* range_type_of(const ProjectedRange& r) { return r.start_end ? "start/end" : "push/pop"; }

// The projections of the reports (schemas) the query asks for, read one after the other.
struct Report {
  int number = 0;  // its place among the connection's reports (ConnectionState::reports()), as in trace_events
  std::string schema;
  std::shared_ptr<const ProfileCatalog> catalog;
  std::shared_ptr<const NvtxProjection> projection;
  std::unique_ptr<NvtxRangeNames> names;
  // Each row's number of children (the rows whose parent it is), by its index in the projection. Made at the first
  // `children` asked for: a self-join on parent in SQL costs a sort and an index of the rows, and a search per row
  // asked for costs cache misses when a GROUP BY asks in group order.
  std::vector<uint32_t> children;
  bool children_made = false;
  uint32_t children_of(size_t index) {
    if (!children_made) {
      const auto& ranges = projection->ranges();
      std::vector<std::pair<int64_t, uint32_t>> by_rowid(ranges.size());  // (NVTX rowid, index)
      for (size_t i = 0; i < ranges.size(); ++i) by_rowid[i] = {ranges[i].nvtx_rowid, static_cast<uint32_t>(i)};
      if (!std::is_sorted(by_rowid.begin(), by_rowid.end())) std::sort(by_rowid.begin(), by_rowid.end());
      children.assign(ranges.size(), 0);
      for (const ProjectedRange& r : ranges) {
        if (r.parent_rowid < 0) continue;
        auto it = std::lower_bound(by_rowid.begin(), by_rowid.end(), std::pair<int64_t, uint32_t>{r.parent_rowid, 0});
        if (it != by_rowid.end() && it->first == r.parent_rowid) ++children[it->second];
      }
      children_made = true;
    }
    return children[index];
  }
  // Grouped output only: each row's name, as an index into Cursor::distinct_names (read once, in rowid order).
  std::vector<uint32_t> name_index;
};

struct Cursor {
  sqlite3_vtab_cursor base;  // must stay first
  std::vector<Report> reports;
  size_t report = 0, index = 0;  // the current row: reports[report]'s projection row `index`
  std::string scratch;
  // Grouped output (a GROUP BY over name, domain, schema and range_type only): the rows in group order, as
  // (report, index), and the names they have.
  bool grouped = false;
  std::vector<std::pair<uint32_t, uint32_t>> group_order;
  size_t position = 0;
  std::deque<std::string> distinct_names;  // a deque: the names stay where they are as it grows
  int grouped_idx_num = 0;  // what the grouping was made for
  std::vector<std::string> grouped_schemas;
  const Report& current() const { return reports[report]; }
  const ProjectedRange& row() const { return current().projection->ranges()[index]; }
  // The rowid of the current report's row for an NVTX_EVENTS rowid: report number r adds r << 56, as in trace_events.
  int64_t rowid_of(int64_t nvtx_rowid) const {
    return (static_cast<int64_t>(current().number) << 56) | nvtx_rowid;
  }
  void skip_empty() {
    while (report < reports.size() && index >= reports[report].projection->ranges().size()) {
      ++report;
      index = 0;
    }
  }
  bool eof() const { return grouped ? position >= group_order.size() : report >= reports.size(); }
  void at_position() {
    if (position < group_order.size()) std::tie(report, index) = group_order[position];
    // Rows in group order are far apart in memory (a name recurs at every step of a training loop): the row a few
    // positions ahead, and its entries in the arrays by row, are fetched while this one is read. Half of a grouped
    // scan's time on x200 went to those misses.
    constexpr size_t kAhead = 8;
    if (position + kAhead < group_order.size()) {
      auto [ahead_report, ahead_index] = group_order[position + kAhead];
      const Report& r = reports[ahead_report];
      const char* ahead = reinterpret_cast<const char*>(&r.projection->ranges()[ahead_index]);
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + sizeof(ProjectedRange) - 1);
      if (ahead_index < r.name_index.size()) __builtin_prefetch(&r.name_index[ahead_index]);
      if (ahead_index < r.children.size()) __builtin_prefetch(&r.children[ahead_index]);
    }
  }
  std::string_view name() {
    Report& r = reports[report];
    if (grouped && !r.name_index.empty()) return distinct_names[r.name_index[index]];
    return r.names->name(row().nvtx_rowid);
  }
  const std::string* domain() const {
    const ProjectedRange& r = row();
    return r.domain_id == 0 ? nullptr : current().catalog->nvtx_domain(r.global_tid, r.domain_id);
  }
  std::optional<std::string_view> domain_value() const {  // the same, NULL as nothing
    const std::string* d = domain();
    return d ? std::optional<std::string_view>(*d) : std::nullopt;
  }
  void group(bool keep_names, int terms);
};

// The idxNum bits: which reports (the schema constraint's argument count, or every report), and for grouped output
// the GROUP BY's terms (the columns that make a group, in order), kTermBits bits each from bit kTermShift: the
// column (kTermName, kTermDomain, kTermSchema, kTermRangeType; 0 after the last term) and kTermDescending.
constexpr int kArgcMask = 0xff, kInList = 1 << 8, kGrouped = 1 << 9;
constexpr int kNameUsed = 1 << 13;  // the query reads name: group() keeps each row's, read once
constexpr int kTermShift = 14, kTermBits = 4, kTermColumn = 7, kTermName = 1, kTermDomain = 2, kTermSchema = 3,
              kTermRangeType = 4, kTermDescending = 8, kMaxTerms = 4;
static_assert(kTermShift + kTermBits * kMaxTerms < 31, "the terms fit idxNum");

// Orders the rows of every report so that rows equal in the key columns are adjacent, the groups sorted by the
// terms (idxNum bits from kTermShift) as SQLite sorts them, rows in a group in projection order. For SQLite's GROUP
// BY (sqlite3_vtab_distinct 1), which then needs no sort: grouping 1.9M ranges by name costs a hash of each name,
// where SQLite's sorter took 1.7 s. Sorted, not only together: SQLite 3.40 also passes 1 for "GROUP BY x ORDER BY
// x" and then skips the ORDER BY's sort too.
void Cursor::group(bool keep_names, int terms) {
  grouped = true;
  auto term_column = [terms](int t) { return (terms >> (kTermBits * t)) & kTermColumn; };
  bool key_name = false, key_domain = false, key_schema = false, key_range_type = false;
  for (int t = 0; t < kMaxTerms; ++t) {
    key_name |= term_column(t) == kTermName;
    key_domain |= term_column(t) == kTermDomain;
    key_schema |= term_column(t) == kTermSchema;
    key_range_type |= term_column(t) == kTermRangeType;
  }
  std::unordered_map<std::string_view, uint32_t> name_ids;  // views of distinct_names
  // A group's key: its name, domain, schema and range type as numbers (the same for every row when not a term),
  // each distinct value, NULL included, one number. Domains are numbered by their text (two processes may name
  // theirs alike); the range type is 1 for start/end; schema_and_type is the schema's number * 2 + the type's.
  struct GroupKey {
    uint32_t name = 0, domain = 0, schema_and_type = 0;
    bool operator==(const GroupKey& o) const {
      return name == o.name && domain == o.domain && schema_and_type == o.schema_and_type;
    }
  };
  struct GroupKeyHash {
    size_t operator()(const GroupKey& k) const {
      uint64_t h = (uint64_t{k.name} << 32 | k.domain) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 29) ^ (uint64_t{k.schema_and_type} * 0xC2B2AE3D27D4EB4Full));
    }
  };
  std::unordered_map<GroupKey, uint32_t, GroupKeyHash> group_ids;
  std::unordered_map<std::string_view, uint32_t> domain_numbers;  // by text; NULL is 0
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> members;
  const bool read_names = keep_names || key_name;
  for (report = 0; report < reports.size(); ++report) {
    Report& r = reports[report];
    const auto& ranges = r.projection->ranges();
    if (read_names) r.name_index.resize(ranges.size());
    uint32_t schema_number = 0;  // the first report of its schema's
    if (key_schema)
      while (reports[schema_number].schema != r.schema) ++schema_number;
    // A range's domain number, looked up again only when its process or domain id differs from the last range's.
    std::optional<std::pair<int64_t, int32_t>> last_domain;
    uint32_t domain_number = 0;
    for (index = 0; index < ranges.size(); ++index) {
      GroupKey k;
      if (read_names) {
        std::string_view name = r.names->name(ranges[index].nvtx_rowid);
        auto it = name_ids.find(name);
        if (it == name_ids.end()) {
          distinct_names.emplace_back(name);
          it = name_ids.emplace(distinct_names.back(), static_cast<uint32_t>(distinct_names.size() - 1)).first;
        }
        r.name_index[index] = it->second;
        if (key_name) k.name = it->second;
      }
      if (key_domain) {
        std::pair<int64_t, int32_t> id{global_pid_of(ranges[index].global_tid), ranges[index].domain_id};
        if (last_domain != id) {
          last_domain = id;
          std::optional<std::string_view> text = domain_value();
          domain_number = text ? domain_numbers.try_emplace(*text, static_cast<uint32_t>(domain_numbers.size() + 1))
                                     .first->second
                               : 0;
        }
        k.domain = domain_number;
      }
      k.schema_and_type = schema_number * 2 + (key_range_type && ranges[index].start_end ? 1 : 0);
      auto [g, new_group] = group_ids.try_emplace(k, static_cast<uint32_t>(members.size()));
      if (new_group) members.emplace_back();
      members[g->second].emplace_back(static_cast<uint32_t>(report), static_cast<uint32_t>(index));
    }
  }
  // Each group's values of the terms, from its first row: NULL (a range without a domain) sorts first, texts by bytes.
  std::vector<std::vector<std::optional<std::string_view>>> values(members.size());
  for (size_t g = 0; g < members.size(); ++g) {
    std::tie(report, index) = members[g].front();
    for (int t = 0; t < kMaxTerms; ++t) {
      int column = term_column(t);
      if (column == kTermName) values[g].push_back(distinct_names[reports[report].name_index[index]]);
      else if (column == kTermDomain) values[g].push_back(domain_value());
      else if (column == kTermSchema) values[g].push_back(std::string_view(reports[report].schema));
      else if (column == kTermRangeType) values[g].push_back(std::string_view(range_type_of(row())));
    }
  }
  std::vector<uint32_t> sorted(members.size());
  for (size_t g = 0; g < sorted.size(); ++g) sorted[g] = static_cast<uint32_t>(g);
  std::sort(sorted.begin(), sorted.end(), [&](uint32_t a, uint32_t b) {
    for (size_t t = 0; t < values[a].size(); ++t) {
      const auto &x = values[a][t], &y = values[b][t];
      if (x == y) continue;
      const bool less = !x || (y && *x < *y);  // string_view compares bytes, unsigned
      return ((terms >> (kTermBits * t)) & kTermDescending) ? !less : less;
    }
    return false;
  });
  for (uint32_t g : sorted) group_order.insert(group_order.end(), members[g].begin(), members[g].end());
  position = 0;
  report = index = 0;
  at_position();
}

int x_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  return connect_vtab(db, aux, kSchema, out);
}

// The rows are those of every report on the connection; an = or IN on the hidden column `schema` narrows the reports
// read, exactly (any other constraint on it SQLite applies). A GROUP BY
// over name, domain, schema and range_type alone gets its rows grouped (Cursor::group), so SQLite needs no sort.
int x_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  int argc = 0;
  bool in_list = false;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn != kSchemaColumn || c.op != SQLITE_INDEX_CONSTRAINT_EQ || argc > 0) continue;
    if (std::strcmp(sqlite3_vtab_collation(info, i), "BINARY") != 0) continue;
    if (sqlite3_vtab_in(info, i, -1)) {
      sqlite3_vtab_in(info, i, 1);
      in_list = true;
    }
    info->aConstraintUsage[i].argvIndex = ++argc;
    info->aConstraintUsage[i].omit = 1;
  }
  info->idxNum = argc | (in_list ? kInList : 0);
  // Grouped, not ordered: 1 (GROUP BY) only asks that equal rows be adjacent. Not for a DISTINCT (2): SQLite keeps
  // its own b-tree for it all the same.
  if (info->nOrderBy > 0 && info->nOrderBy <= kMaxTerms && sqlite3_vtab_distinct(info) == 1) {
    int terms = 0;
    bool all_keys = true;  // every term is name, domain, schema or range_type
    for (int i = 0; i < info->nOrderBy && all_keys; ++i) {
      int column = info->aOrderBy[i].iColumn;
      int term = column == kName ? kTermName : column == kDomain ? kTermDomain : column == kSchemaColumn ? kTermSchema
               : column == kRangeType ? kTermRangeType : 0;
      all_keys = term != 0;
      terms |= (term | (info->aOrderBy[i].desc ? kTermDescending : 0)) << (kTermBits * i);
    }
    if (all_keys) {
      info->idxNum |= kGrouped | ((info->colUsed & (uint64_t{1} << kName)) ? kNameUsed : 0) | (terms << kTermShift);
      info->orderByConsumed = 1;
    }
  }
  info->estimatedCost = argc ? 1e4 : 1e5;
  return SQLITE_OK;
}

int x_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new (std::nothrow) Cursor();
  if (c == nullptr) return SQLITE_NOMEM;
  *out = &c->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* base) {
  delete reinterpret_cast<Cursor*>(base);
  return SQLITE_OK;
}

int x_filter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cursor*>(base);
  auto* vtab = reinterpret_cast<ConnectionVtab*>(base->pVtab);
  return guarded(base->pVtab, [&] {
    auto reports_of_connection = vtab->state->reports();
    // Every report of the connection, or those the schema constraint names (a name that is no report names no rows).
    std::vector<std::string> schemas, named;
    if (idx_num & kArgcMask)
      for_each_in(argv[0], [&](sqlite3_value* x) {
        if (sqlite3_value_type(x) != SQLITE_NULL && sqlite3_value_type(x) != SQLITE_BLOB) named.emplace_back(text_of(x));
      }, (idx_num & kInList) != 0);
    for (const auto& r : reports_of_connection)
      if (!(idx_num & kArgcMask) || std::find(named.begin(), named.end(), r.first) != named.end())
        schemas.push_back(r.first);
    if (reports_of_connection.empty()) schemas.push_back("main");  // not an export: its catalog says so below
    (void)argc;
    // The inner loop of a join is filtered again for every outer row: the same grouping is kept, not made again.
    if (c->grouped && idx_num == c->grouped_idx_num && schemas == c->grouped_schemas) {
      c->position = 0;
      c->at_position();
      return SQLITE_OK;
    }
    c->reports.clear();
    c->report = c->index = 0;
    c->grouped = false;
    c->grouped_idx_num = 0;  // no grouping kept until one is whole
    c->group_order.clear();
    c->distinct_names.clear();
    for (const std::string& schema : schemas) {
      Report r;
      r.schema = schema;
      for (size_t i = 0; i < reports_of_connection.size(); ++i)
        if (reports_of_connection[i].first == schema) r.number = static_cast<int>(i);
      try {
        r.catalog = vtab->state->catalog(schema);
        r.projection = vtab->state->projection(schema);
        r.names = std::make_unique<NvtxRangeNames>(vtab->state->db(), *r.catalog);
      } catch (const Error& e) {
        rethrow_naming_the_profile(vtab->state->db(), e, schema);
      }
      c->reports.push_back(std::move(r));
    }
    if (idx_num & kGrouped) {
      c->group((idx_num & kNameUsed) != 0, idx_num >> kTermShift);
      c->grouped_idx_num = idx_num;
      c->grouped_schemas = schemas;
    } else {
      c->skip_empty();
    }
    return SQLITE_OK;
  });
}

int x_next(sqlite3_vtab_cursor* base) {
  auto* c = reinterpret_cast<Cursor*>(base);
  if (c->grouped) {
    ++c->position;
    c->at_position();
    return SQLITE_OK;
  }
  ++c->index;
  c->skip_empty();
  return SQLITE_OK;
}

int x_eof(sqlite3_vtab_cursor* base) { return reinterpret_cast<Cursor*>(base)->eof(); }

int x_column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<Cursor*>(base);
  return guarded(base->pVtab, [&] {
    const ProjectedRange& r = c->row();
    switch (column) {
      case kName: result_text(ctx, c->name()); break;
      case kDomain:
        if (const std::string* d = c->domain()) result_text(ctx, *d);
        break;
      case kStart: sqlite3_result_int64(ctx, r.start); break;
      case kEnd: sqlite3_result_int64(ctx, r.end); break;
      case kGpuStart: sqlite3_result_int64(ctx, r.gpu_start); break;
      case kGpuEnd: sqlite3_result_int64(ctx, r.gpu_end); break;
      case kGpuOps: sqlite3_result_int64(ctx, r.gpu_ops); break;
      case kKernels: sqlite3_result_int64(ctx, r.kernels); break;
      case kMemcpys: sqlite3_result_int64(ctx, r.memcpys); break;
      case kMemsets: sqlite3_result_int64(ctx, r.memsets); break;
      case kPid: sqlite3_result_int64(ctx, os_pid_of(r.global_tid)); break;
      case kTid: sqlite3_result_int64(ctx, os_tid_of(r.global_tid)); break;
      case kGlobalTid: sqlite3_result_int64(ctx, r.global_tid); break;
      case kDepth: sqlite3_result_int64(ctx, r.depth); break;
      case kParent:  // the enclosing range's row of the same report: its rowid, shifted as x_rowid shifts them
        if (r.parent_rowid >= 0) sqlite3_result_int64(ctx, c->rowid_of(r.parent_rowid));
        break;
      case kDevices: {
        c->scratch.clear();
        for (uint32_t i = 0; i < r.device_count; ++i)
          c->scratch += (i ? "," : "") + std::to_string(c->current().projection->devices(r)[i].device);
        result_text(ctx, c->scratch);
        break;
      }
      case kRangeType: sqlite3_result_text(ctx, range_type_of(r), -1, SQLITE_STATIC); break;
      case kUnclosed: sqlite3_result_int(ctx, r.unclosed ? 1 : 0); break;
      case kGraphs: sqlite3_result_int64(ctx, r.graphs); break;
      case kGpuSpan: sqlite3_result_int64(ctx, r.gpu_span()); break;
      case kGpuOpTime: sqlite3_result_int64(ctx, r.gpu_op_time); break;
      case kGpuBusyTime: sqlite3_result_int64(ctx, r.gpu_busy_time); break;
      case kChildren: sqlite3_result_int64(ctx, c->reports[c->report].children_of(c->index)); break;
      case kSchemaColumn: result_text(ctx, c->current().schema); break;
      default: break;
    }
    return SQLITE_OK;
  });
}

// The range's rowid in NVTX_EVENTS (+ r << 56 for report number r of the connection, as in trace_events).
int x_rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  auto* c = reinterpret_cast<Cursor*>(base);
  *rowid = c->rowid_of(c->row().nvtx_rowid);
  return SQLITE_OK;
}

const sqlite3_module kModule =
    read_only_eponymous_module(x_connect, x_best_index, x_open, x_close, x_filter, x_next, x_eof, x_column, x_rowid);

}  // namespace

int register_nvtx_kernel_ranges(sqlite3* db, ConnectionState* state, std::string* error) {
  int rc = sqlite3_create_module_v2(db, "nvtx_kernel_ranges", &kModule, state, nullptr);
  if (rc != SQLITE_OK) *error = "cannot register nvtx_kernel_ranges";
  return rc;
}

}  // namespace nsystrace
