// The NVTX projection as it was computed before the sweep (one (range, operation) pair per enclosed launch:
// quadratic in the nesting depth), kept verbatim as the reference of the differential tests. Not used by the
// extension.
#include "tests/support/reference_projection.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include <fmt/format.h>

#include "src/model/export_model.h"
#include "src/util/progress.h"
#include "src/sqlite/statement.h"

namespace nsystrace {
namespace {


// Time order, the longest first at equal starts (the enclosing range before the ranges it encloses).
bool starts_before(const ProjectedRange& x, const ProjectedRange& y) {
  if (x.start != y.start) return x.start < y.start;
  if (x.end != y.end) return x.end > y.end;
  return x.nvtx_rowid < y.nvtx_rowid;
}

// The ranges of one thread, sorted by (start, end descending, rowid), with a max-end segment tree.
class ThreadRanges {
 public:
  std::vector<uint32_t> order;  // indices into the range list

  void build(const MappedArray<ProjectedRange>& all) {
    auto by_start = [&](size_t a, size_t b) { return starts_before(all[a], all[b]); };
    // Exports store NVTX rows nearly in time order, and then a thread's list usually needs no sort at all.
    if (!std::is_sorted(order.begin(), order.end(), by_start)) std::sort(order.begin(), order.end(), by_start);
    starts_.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) starts_[i] = all[order[i]].start;
    size_ = 1;
    while (size_ < order.size()) size_ <<= 1;
    max_end_.assign(2 * size_, INT64_MIN);
    for (size_t i = 0; i < order.size(); ++i) max_end_[size_ + i] = all[order[i]].end;
    for (size_t i = size_ - 1; i >= 1; --i) max_end_[i] = std::max(max_end_[2 * i], max_end_[2 * i + 1]);
  }
  // Positions p < limit (in `order`) whose range ends at or after `end`.
  void ending_after(size_t limit, int64_t end, std::vector<size_t>& out) const {
    out.clear();
    if (limit > 0) collect(1, 0, size_, limit, end, out);
  }
  // The last position p < limit whose range ends at or after `end` (the innermost enclosing range), or -1.
  long last_ending_after(size_t limit, int64_t end) const { return last(1, 0, size_, limit, end); }
  // Number of ranges starting at or before t.
  size_t started_by(int64_t t) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), t) - starts_.begin());
  }

 private:
  void collect(size_t node, size_t lo, size_t hi, size_t limit, int64_t end, std::vector<size_t>& out) const {
    if (lo >= limit || max_end_[node] < end) return;
    if (hi - lo == 1) {
      out.push_back(lo);
      return;
    }
    size_t mid = (lo + hi) / 2;
    collect(2 * node, lo, mid, limit, end, out);
    collect(2 * node + 1, mid, hi, limit, end, out);
  }
  long last(size_t node, size_t lo, size_t hi, size_t limit, int64_t end) const {
    if (lo >= limit || max_end_[node] < end) return -1;
    if (hi - lo == 1) return static_cast<long>(lo);
    size_t mid = (lo + hi) / 2;
    long right = last(2 * node + 1, mid, hi, limit, end);
    return right >= 0 ? right : last(2 * node, lo, mid, limit, end);
  }
  std::vector<int64_t> starts_;
  std::vector<int64_t> max_end_;
  size_t size_ = 1;
};

enum OpKind : int { kKernelOp = 0, kMemcpyOp = 1, kMemsetOp = 2, kGraphOp = 3 };

[[noreturn]] void beyond_int64(const ProjectedRange& r, const char* what, int64_t from, int64_t to) {
  throw Error(fmt::format("nsystrace: NVTX projection: the {} of the NVTX range at NVTX_EVENTS rowid {} (GPU work "
                          "from {} to {} ns) is beyond 64-bit nanoseconds: the export's GPU timestamps are corrupt",
                          what, r.nvtx_rowid, from, to));
}

// a + b, or an Error naming the range when it does not fit.
int64_t checked_add(const ProjectedRange& r, const char* what, int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) beyond_int64(r, what, r.gpu_start, r.gpu_end);
  return sum;
}

// to - from (to >= from), or an Error naming the range when it does not fit.
int64_t checked_span(const ProjectedRange& r, const char* what, int64_t from, int64_t to) {
  int64_t span;
  if (__builtin_sub_overflow(to, from, &span)) beyond_int64(r, what, from, to);
  return span;
}

struct Op {
  int64_t start, end, device;
  int kind;
};

}  // namespace

std::vector<ReferenceRange> reference_projection(sqlite3* db, const ProfileCatalog& catalog) {
  const bool progress = false;
  struct Result {
    MappedArray<ProjectedRange> ranges_;
    std::vector<DeviceExtent> device_pool_;
  };
  auto result = std::make_unique<Result>();
  auto finish = [&] {
    std::vector<ReferenceRange> out;
    for (const ProjectedRange& r : result->ranges_) {
      ReferenceRange rr{r, {}};
      for (uint32_t d = 0; d < r.device_count; ++d) rr.devices.push_back(result->device_pool_[r.first_device + d]);
      out.push_back(rr);
    }
    return out;
  };
  const ExportSchema& schema = catalog.schema();
  const TableInfo* nvtx = schema.table("NVTX_EVENTS");
  const TableInfo* runtime = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (nvtx == nullptr || runtime == nullptr || !nvtx->has("eventType") || !nvtx->has("globalTid")) return finish();

  // 1. The ranges that can own work: closed on the thread they were opened on.
  MappedArray<ProjectedRange> all;  // the big one: no doubling, and shrunk in place once only the kept remain
  uint64_t nvtx_rows = catalog.row_count(db, schema.qualified("NVTX_EVENTS"));
  all.reserve(static_cast<size_t>(nvtx_rows));
  {
    Progress reading(progress, "NVTX projection: reading NVTX ranges", "rows", nvtx_rows);
    uint64_t read = 0;
    SelectBuilder b(*nvtx);
    int rowid = b.expression("rowid"), start = b.column("start"), end = b.column("end"), tid = b.column("globalTid"),
        end_tid = b.column("endGlobalTid"), type = b.column("eventType"), domain = b.column("domainId");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified("NVTX_EVENTS") +
                        " WHERE " + nvtx_types_condition(kNvtxRanges) +
                        " AND start IS NOT NULL AND globalTid IS NOT NULL");
    while (s.step()) {
      reading.update(++read);
      ProjectedRange r;
      r.global_tid = s.int64(tid);
      std::optional<int64_t> ended_on = s.optional_int64(end_tid);
      if (ended_on && *ended_on != r.global_tid) continue;  // ended on another thread
      r.nvtx_rowid = s.int64(rowid);
      r.start = s.int64(start);
      std::optional<int64_t> stored_end = s.optional_int64(end);
      r.unclosed = !stored_end;
      r.end = r.unclosed ? catalog.profile_end(db) : std::max(r.start, *stored_end);
      int64_t event_type = s.int64(type);
      r.start_end = nvtx_type_is(event_type, NvtxRole::start_end_range);
      r.domain_id = static_cast<int32_t>(s.int64(domain));  // NULL: the default domain, 0
      all.push_back(r);
    }
    reading.finish(read);
  }
  if (all.empty()) return finish();

  // Per-device extents while building: a pool of linked entries, a range's list headed by first_device (index + 1,
  // 0 for none).
  struct DeviceLink {
    DeviceExtent extent;
    uint32_t next;
  };
  MappedArray<DeviceLink> pool;

  std::unordered_map<int64_t, ThreadRanges> threads;
  for (size_t i = 0; i < all.size(); ++i) threads[all[i].global_tid].order.push_back(static_cast<uint32_t>(i));
  for (auto& [tid, t] : threads) t.build(all);

  // 2. Nesting: the ranges enclosing one are those before it in sort order that end at or after its end. Its depth
  // is their number (a Fenwick tree over the ends seen so far), its parent the innermost, the last of them (a
  // descent of the max-end tree): O(log n) each, however deep the nesting (leaked ranges nest without bound).
  std::vector<size_t> hits;
  for (auto& [tid, t] : threads) {
    std::vector<int64_t> ends;
    ends.reserve(t.order.size());
    for (uint32_t i : t.order) ends.push_back(all[i].end);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    std::vector<int32_t> fenwick(ends.size() + 1, 0);  // count of seen ends by rank
    auto rank = [&](int64_t e) { return static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), e) - ends.begin()); };
    for (size_t pos = 0; pos < t.order.size(); ++pos) {
      ProjectedRange& r = all[t.order[pos]];
      size_t below = 0;  // seen ranges ending before r
      for (size_t i = rank(r.end); i > 0; i -= i & (~i + 1)) below += static_cast<size_t>(fenwick[i]);
      r.depth = static_cast<int>(pos - below);
      long parent = t.last_ending_after(pos, r.end);
      if (parent >= 0) r.parent_rowid = all[t.order[static_cast<size_t>(parent)]].nvtx_rowid;
      for (size_t i = rank(r.end) + 1; i <= ends.size(); i += i & (~i + 1)) ++fenwick[i];
    }
  }

  // 3. API calls and GPU operations, both sorted by (correlationId, process), merge-joined.
  std::string ops_sql;
  struct OpTable {
    const char* table;
    int kind;
  };
  // Graph launches traced per graph count too (NVIDIA's own projection report leaves them out).
  for (OpTable ot : {OpTable{"CUPTI_ACTIVITY_KIND_KERNEL", kKernelOp}, OpTable{"CUPTI_ACTIVITY_KIND_MEMCPY", kMemcpyOp},
                     OpTable{"CUPTI_ACTIVITY_KIND_MEMSET", kMemsetOp},
                     OpTable{"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", kGraphOp}}) {
    const TableInfo* t = schema.table(ot.table);
    if (t == nullptr || !t->has("correlationId") || !t->has("globalPid") || !t->has("start") || !t->has("end"))
      continue;
    if (!ops_sql.empty()) ops_sql += " UNION ALL ";
    ops_sql += "SELECT correlationId, globalPid >> 24, start, \"end\", " +
               std::string(t->has("deviceId") ? "deviceId" : "0") + ", " + std::to_string(ot.kind) + " FROM " +
               schema.qualified(ot.table) +
               " WHERE correlationId IS NOT NULL AND globalPid IS NOT NULL AND start IS NOT NULL AND \"end\" IS NOT NULL";
  }
  if (ops_sql.empty() || !runtime->has("correlationId") || !runtime->has("globalTid")) return finish();
  Statement ops(db, ops_sql + " ORDER BY 1, 2");
  Statement calls(db, "SELECT correlationId, globalTid >> 24, globalTid, start, \"end\" FROM " +
                          schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME") +
                          " WHERE correlationId IS NOT NULL AND globalTid IS NOT NULL AND start IS NOT NULL AND "
                          "\"end\" IS NOT NULL ORDER BY 1, 2");
  Progress joining(progress, "NVTX projection: CUDA calls joined to their GPU work", "calls",
                   progress ? catalog.row_count(db, schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME")) : 0);
  uint64_t calls_read = 0;
  bool have_op = ops.step(), have_call = calls.step();
  // Every (range, operation interval) pair, for the busy time: a range's operations arrive in correlation order,
  // not time order, so their union is taken once all are known.
  struct Attribution {
    uint32_t range;
    int64_t start, end;
    bool operator<(const Attribution& o) const { return range != o.range ? range < o.range : start < o.start; }
  };
  MappedArray<Attribution> attributions;
  std::vector<Op> group;
  std::vector<uint32_t> owners;
  while (have_op && have_call) {
    std::pair<int64_t, int64_t> call_key{calls.int64(0), calls.int64(1)}, op_key{ops.int64(0), ops.int64(1)};
    if (op_key < call_key) {
      have_op = ops.step();
      continue;
    }
    if (call_key < op_key) {
      have_call = calls.step();
      joining.update(++calls_read);
      continue;
    }
    group.clear();  // every operation of this (correlationId, process): several for a graph launched per node
    while (have_op && std::make_pair(ops.int64(0), ops.int64(1)) == call_key) {
      int64_t op_start = ops.int64(2), op_end = std::max(op_start, ops.int64(3));  // end before start: an instant
      group.push_back(Op{op_start, op_end, ops.int64(4), static_cast<int>(ops.int64(5))});
      have_op = ops.step();
    }
    // The ranges holding any call of this (correlationId, process), each once: some exports record two API rows
    // for one launch (cudaLaunchKernel and its versioned twin cudaLaunchKernel_v7000), and the operations count
    // once per range all the same (gpu_ops = distinct correlation ids).
    owners.clear();
    while (have_call && std::make_pair(calls.int64(0), calls.int64(1)) == call_key) {
      auto t = threads.find(calls.int64(2));
      if (t != threads.end()) {
        int64_t s = calls.int64(3), e = calls.int64(4);
        t->second.ending_after(t->second.started_by(s), e, hits);
        for (size_t pos : hits) owners.push_back(t->second.order[pos]);
      }
      have_call = calls.step();
      joining.update(++calls_read);
    }
    if (owners.size() > 1) {
      std::sort(owners.begin(), owners.end());
      owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
    }
    for (uint32_t index : owners) {
      ProjectedRange& r = all[index];
      ++r.gpu_ops;
      for (const Op& op : group) {
        r.gpu_start = std::min(r.gpu_start, op.start);
        r.gpu_end = std::max(r.gpu_end, op.end);
        r.gpu_op_time = checked_add(r, "GPU operation time", r.gpu_op_time, checked_span(r, "GPU operation time",
                                                                                          op.start, op.end));
        if (op.end > op.start) attributions.push_back(Attribution{index, op.start, op.end});
        r.kernels += op.kind == kKernelOp;
        r.memcpys += op.kind == kMemcpyOp;
        r.memsets += op.kind == kMemsetOp;
        r.graphs += op.kind == kGraphOp;
      }
      for (const Op& op : group) {  // per device: extent
        uint32_t link = r.first_device;
        while (link != 0 && pool[link - 1].extent.device != op.device) link = pool[link - 1].next;
        if (link == 0) {
          pool.push_back(DeviceLink{DeviceExtent{op.device, op.start, op.end, 0}, r.first_device});
          r.first_device = link = static_cast<uint32_t>(pool.size());
        }
        DeviceExtent& d = pool[link - 1].extent;
        d.gpu_start = std::min(d.gpu_start, op.start);
        d.gpu_end = std::max(d.gpu_end, op.end);
      }
      for (uint32_t link = r.first_device; link != 0; link = pool[link - 1].next) {  // this call, once per device
        DeviceExtent& d = pool[link - 1].extent;
        d.ops += std::any_of(group.begin(), group.end(), [&](const Op& op) { return op.device == d.device; });
      }
    }
  }

  joining.finish(calls_read);
  // 4. Busy time: per range, its operations' intervals in start order, merged.
  std::sort(attributions.begin(), attributions.end());
  for (size_t i = 0; i < attributions.size();) {
    const uint32_t range = attributions[i].range;
    ProjectedRange& r = all[range];
    int64_t from = attributions[i].start, to = attributions[i].end;
    for (++i; i < attributions.size() && attributions[i].range == range; ++i) {
      if (attributions[i].start > to) {
        r.gpu_busy_time = checked_add(r, "GPU busy time", r.gpu_busy_time, checked_span(r, "GPU busy time", from, to));
        from = attributions[i].start;
      }
      to = std::max(to, attributions[i].end);
    }
    r.gpu_busy_time = checked_add(r, "GPU busy time", r.gpu_busy_time, checked_span(r, "GPU busy time", from, to));
  }
  attributions.truncate(0);
  // 5. The ranges that own work, in time order.
  threads.clear();
  size_t kept = 0;  // compacted in place: no second copy of the ranges at the peak
  for (size_t i = 0; i < all.size(); ++i) {
    ProjectedRange r = all[i];
    if (r.gpu_ops == 0) continue;
    checked_span(r, "GPU span", r.gpu_start, r.gpu_end);  // so that gpu_span() never overflows
    size_t first = result->device_pool_.size();
    for (uint32_t link = r.first_device; link != 0; link = pool[link - 1].next) {
      const DeviceExtent& d = pool[link - 1].extent;
      checked_span(r, "GPU span on one device", d.gpu_start, d.gpu_end);
      result->device_pool_.push_back(d);
    }
    std::sort(result->device_pool_.begin() + static_cast<long>(first), result->device_pool_.end(),
              [](const DeviceExtent& a, const DeviceExtent& b) { return a.device < b.device; });
    r.first_device = static_cast<uint32_t>(first);
    r.device_count = static_cast<uint32_t>(result->device_pool_.size() - first);
    all[kept++] = r;
  }
  pool.truncate(0);
  all.truncate(kept);
  result->ranges_ = std::move(all);
  if (!std::is_sorted(result->ranges_.begin(), result->ranges_.end(), starts_before))
    std::sort(result->ranges_.begin(), result->ranges_.end(), starts_before);
  return finish();
}

}  // namespace nsystrace
