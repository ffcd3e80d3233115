#include "src/nvtx_projection.h"

#include <algorithm>
#include <climits>

#include "src/statement.h"

namespace nsystrace {
namespace {

// The ranges of one thread, sorted by (start, end descending, rowid), with a max-end segment tree.
class ThreadRanges {
 public:
  std::vector<size_t> order;  // indices into the range list

  void build(const std::vector<ProjectedRange>& all) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const auto& x = all[a];
      const auto& y = all[b];
      if (x.start != y.start) return x.start < y.start;
      if (x.end != y.end) return x.end > y.end;
      return x.nvtx_rowid < y.nvtx_rowid;
    });
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
  std::vector<int64_t> starts_;
  std::vector<int64_t> max_end_;
  size_t size_ = 1;
};

enum OpKind : int { kKernelOp = 0, kMemcpyOp = 1, kMemsetOp = 2 };

struct Op {
  int64_t start, end, device;
  int kind;
};

}  // namespace

std::shared_ptr<const NvtxProjection> NvtxProjection::compute(sqlite3* db, const ProfileCatalog& catalog) {
  auto result = std::make_shared<NvtxProjection>();
  const ExportSchema& schema = catalog.schema();
  const TableInfo* nvtx = schema.table("NVTX_EVENTS");
  const TableInfo* runtime = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (nvtx == nullptr || runtime == nullptr || !nvtx->has("eventType") || !nvtx->has("globalTid")) return result;

  // 1. The ranges that can own work: closed on the thread they were opened on.
  std::vector<ProjectedRange> all;
  {
    SelectBuilder b(*nvtx);
    int rowid = b.expression("rowid"), start = b.column("start"), end = b.column("end"), tid = b.column("globalTid"),
        end_tid = b.column("endGlobalTid"), type = b.column("eventType"), text = b.column("text"),
        text_id = b.column("textId"), domain = b.column("domainId");
    Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified("NVTX_EVENTS") +
                        " WHERE eventType IN (59, 60, 70, 71) AND start IS NOT NULL AND globalTid IS NOT NULL");
    while (s.step()) {
      if (!s.is_null(end_tid) && s.int64(end_tid) != s.int64(tid)) continue;  // ended on another thread
      ProjectedRange r;
      r.nvtx_rowid = s.int64(rowid);
      r.start = s.int64(start);
      r.unclosed = s.is_null(end);
      r.end = r.unclosed ? catalog.profile_end(db) : std::max(r.start, s.int64(end));
      r.global_tid = s.int64(tid);
      r.start_end = s.int64(type) == 60 || s.int64(type) == 71;
      r.domain_id = s.is_null(domain) ? 0 : s.int64(domain);
      if (!s.is_null(text)) {
        r.name = std::string(s.text(text));
      } else if (!s.is_null(text_id)) {
        const std::string* v = catalog.strings().find(s.int64(text_id));
        r.name = v ? *v : "[missing string " + std::to_string(s.int64(text_id)) + "]";
      } else {
        r.name = "[unnamed NVTX range]";
      }
      all.push_back(std::move(r));
    }
  }
  if (all.empty()) return result;

  std::unordered_map<int64_t, ThreadRanges> threads;
  for (size_t i = 0; i < all.size(); ++i) threads[all[i].global_tid].order.push_back(i);
  for (auto& [tid, t] : threads) t.build(all);

  // 2. Nesting: the parent is the innermost range enclosing this one on its thread (earlier in sort order).
  std::vector<size_t> hits;
  for (auto& [tid, t] : threads) {
    for (size_t pos = 0; pos < t.order.size(); ++pos) {
      ProjectedRange& r = all[t.order[pos]];
      t.ending_after(pos, r.end, hits);
      r.depth = static_cast<int>(hits.size());
      if (!hits.empty()) r.parent_rowid = all[t.order[hits.back()]].nvtx_rowid;
    }
  }

  // 3. API calls and GPU operations, both sorted by (correlationId, process), merge-joined.
  std::string ops_sql;
  struct OpTable {
    const char* table;
    int kind;
  };
  for (OpTable ot : {OpTable{"CUPTI_ACTIVITY_KIND_KERNEL", kKernelOp}, OpTable{"CUPTI_ACTIVITY_KIND_MEMCPY", kMemcpyOp},
                     OpTable{"CUPTI_ACTIVITY_KIND_MEMSET", kMemsetOp}}) {
    const TableInfo* t = schema.table(ot.table);
    if (t == nullptr || !t->has("correlationId") || !t->has("globalPid") || !t->has("start") || !t->has("end"))
      continue;
    if (!ops_sql.empty()) ops_sql += " UNION ALL ";
    ops_sql += "SELECT correlationId, globalPid >> 24, start, \"end\", " +
               std::string(t->has("deviceId") ? "deviceId" : "0") + ", " + std::to_string(ot.kind) + " FROM " +
               schema.qualified(ot.table) +
               " WHERE correlationId IS NOT NULL AND globalPid IS NOT NULL AND start IS NOT NULL AND \"end\" IS NOT NULL";
  }
  if (ops_sql.empty() || !runtime->has("correlationId") || !runtime->has("globalTid")) return result;
  Statement ops(db, ops_sql + " ORDER BY 1, 2");
  Statement calls(db, "SELECT correlationId, globalTid >> 24, globalTid, start, \"end\" FROM " +
                          schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME") +
                          " WHERE correlationId IS NOT NULL AND globalTid IS NOT NULL AND start IS NOT NULL AND "
                          "\"end\" IS NOT NULL ORDER BY 1, 2");
  bool have_op = ops.step(), have_call = calls.step();
  std::vector<Op> group;
  while (have_op && have_call) {
    std::pair<int64_t, int64_t> call_key{calls.int64(0), calls.int64(1)}, op_key{ops.int64(0), ops.int64(1)};
    if (op_key < call_key) {
      have_op = ops.step();
      continue;
    }
    if (call_key < op_key) {
      have_call = calls.step();
      continue;
    }
    group.clear();  // every operation of this (correlationId, process): several for a graph launched per node
    while (have_op && std::make_pair(ops.int64(0), ops.int64(1)) == call_key) {
      group.push_back(Op{ops.int64(2), ops.int64(3), ops.int64(4), static_cast<int>(ops.int64(5))});
      have_op = ops.step();
    }
    while (have_call && std::make_pair(calls.int64(0), calls.int64(1)) == call_key) {
      auto t = threads.find(calls.int64(2));
      if (t != threads.end()) {
        int64_t s = calls.int64(3), e = calls.int64(4);
        t->second.ending_after(t->second.started_by(s), e, hits);
        for (size_t pos : hits) {
          ProjectedRange& r = all[t->second.order[pos]];
          ++r.gpu_ops;
          for (const Op& op : group) {
            r.gpu_start = std::min(r.gpu_start, op.start);
            r.gpu_end = std::max(r.gpu_end, op.end);
            r.kernels += op.kind == kKernelOp;
            r.memcpys += op.kind == kMemcpyOp;
            r.memsets += op.kind == kMemsetOp;
          }
          for (const Op& op : group) {  // per device: extent, and this correlation id once
            auto d = std::find_if(r.devices.begin(), r.devices.end(), [&](const DeviceExtent& x) { return x.device == op.device; });
            if (d == r.devices.end()) {
              r.devices.push_back(DeviceExtent{op.device, op.start, op.end, 0});
              d = r.devices.end() - 1;
            }
            d->gpu_start = std::min(d->gpu_start, op.start);
            d->gpu_end = std::max(d->gpu_end, op.end);
          }
          for (auto& d : r.devices) {
            bool here = std::any_of(group.begin(), group.end(), [&](const Op& op) { return op.device == d.device; });
            d.ops += here;
          }
        }
      }
      have_call = calls.step();
    }
  }

  // 4. The ranges that own work, in time order.
  for (auto& r : all) {
    if (r.gpu_ops == 0) continue;
    std::sort(r.devices.begin(), r.devices.end(), [](const DeviceExtent& a, const DeviceExtent& b) { return a.device < b.device; });
    result->ranges_.push_back(std::move(r));
  }
  std::sort(result->ranges_.begin(), result->ranges_.end(), [](const ProjectedRange& x, const ProjectedRange& y) {
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;
    return x.nvtx_rowid < y.nvtx_rowid;
  });
  return result;
}

}  // namespace nsystrace
