#include "src/model/graph_nodes.h"

#include <algorithm>
#include <climits>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/model/profile_catalog.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
struct Call {
  int64_t start, end, name_id;
  std::optional<int64_t> correlation;
};
// How far back from the latest call that starts before an instant a holding call is looked for: calls on one thread
// nest only as a runtime call around the driver calls it makes, a few deep.
constexpr int kNestingLookBack = 64;
// How many clones back an original is followed (a clone of a clone; a cycle would be a damaged export).
constexpr int kMaxCloneChain = 16;
}  // namespace

void GraphNodeCreations::load(sqlite3* db, const ExportSchema& schema, const StringTable& strings) {
  const TableInfo* t = schema.table("CUDA_GRAPH_NODE_EVENTS");
  if (t == nullptr || !t->has("graphNodeId") || !t->has("start") || !t->has("globalTid")) return;
  struct Made {
    int64_t global_tid, ts;
  };
  std::map<std::pair<int64_t, int64_t>, Made> made;  // each node's first creation event
  SelectBuilder b(*t);
  int tid = b.column("globalTid"), node = b.column("graphNodeId"), original = b.column("originalGraphNodeId"),
      start = b.column("start");
  Statement s(db, "SELECT " + b.select_list() + " FROM " + schema.qualified("CUDA_GRAPH_NODE_EVENTS") +
                      " WHERE graphNodeId IS NOT NULL AND globalTid IS NOT NULL AND start IS NOT NULL"
                      " ORDER BY start, rowid");
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  while (s.step()) {
    std::pair<int64_t, int64_t> key{process_key_of(s.int64(tid)), s.int64(node)};
    GraphNodeCreation& n = nodes_[key];
    if (!n.original_id) n.original_id = s.optional_int64(original);
    made.try_emplace(key, Made{s.int64(tid), s.int64(start)});
    first_ts = std::min(first_ts, s.int64(start));
    last_ts = std::max(last_ts, s.int64(start));
  }
  if (made.empty()) return;

  // The creating threads' calls around those times, by thread in order of start.
  std::unordered_map<int64_t, std::vector<Call>> calls;
  for (const auto& [key, m] : made) calls.try_emplace(m.global_tid);
  const TableInfo* r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (r != nullptr && r->has("globalTid") && r->has("start") && r->has("end") && r->has("nameId")) {
    SelectBuilder rb(*r);
    int rtid = rb.column("globalTid"), rstart = rb.column("start"), rend = rb.column("end"),
        rname = rb.column("nameId"), rcorr = rb.column("correlationId");
    Statement q(db, "SELECT " + rb.select_list() + " FROM " + schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME") +
                        " WHERE start <= ?1 AND \"end\" >= ?2 AND nameId IS NOT NULL ORDER BY start, rowid");
    q.bind(1, last_ts);
    q.bind(2, first_ts);
    while (q.step()) {
      auto it = calls.find(q.int64(rtid));
      if (it != calls.end())
        it->second.push_back(Call{q.int64(rstart), q.int64(rend), q.int64(rname), q.optional_int64(rcorr)});
    }
  }
  // The innermost call of the thread that holds `ts`: of the calls started by then, the latest that has not ended.
  auto holding = [&calls](const Made& m) -> const Call* {
    const std::vector<Call>& on = calls[m.global_tid];
    auto after = std::upper_bound(on.begin(), on.end(), m.ts, [](int64_t ts, const Call& c) { return ts < c.start; });
    for (int back = 0; after != on.begin() && back < kNestingLookBack; ++back) {
      --after;
      if (after->end >= m.ts) return &*after;
    }
    return nullptr;
  };
  for (auto& [key, n] : nodes_) {
    std::pair<int64_t, int64_t> creator = key;  // the node, or the original it was cloned from
    for (int step = 0; step < kMaxCloneChain; ++step) {
      auto it = nodes_.find(creator);
      if (it == nodes_.end() || !it->second.original_id || !made.count({key.first, *it->second.original_id})) break;
      creator = {key.first, *it->second.original_id};
    }
    auto m = made.find(creator);
    if (m == made.end()) continue;
    if (const Call* c = holding(m->second)) {
      n.has_call = true;
      const std::string* name = strings.find(c->name_id);
      n.call_name = name ? *name : kMissingStringPrefix + std::to_string(c->name_id) + "]";
      n.call_ts = c->start;
      n.call_correlation_id = c->correlation;
    }
  }
}

void GraphReplays::load(sqlite3* db, const ExportSchema& schema, const StringTable& strings) {
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    const TableInfo* t = schema.table(table);
    if (t == nullptr || !t->has("graphNodeId") || !t->has("correlationId") || !t->has("globalPid") ||
        !t->has("deviceId") || !t->has("streamId"))
      continue;
    const bool kernels = std::string_view(table) == "CUPTI_ACTIVITY_KIND_KERNEL";
    Statement s(db, "SELECT globalPid, correlationId, min(start), max(max(\"end\", start)), count(*), min(graphNodeId), "
                    "deviceId, streamId FROM " + schema.qualified(table) + " WHERE graphNodeId IS NOT NULL AND "
                    "graphNodeId != 0 AND correlationId IS NOT NULL AND globalPid IS NOT NULL AND start IS NOT NULL "
                    "GROUP BY 1, 2, 7, 8");
    while (s.step()) {
      auto [it, fresh] =
          replays_.try_emplace({process_key_of(s.int64(0)), s.int64(1), s.int64(6), s.int64(7)});
      GraphReplay& r = it->second;
      r.start = fresh ? s.int64(2) : std::min(r.start, s.int64(2));
      r.end = fresh ? s.int64(3) : std::max(r.end, s.int64(3));
      r.first_node_id = fresh ? s.int64(5) : std::min(r.first_node_id, s.int64(5));
      r.nodes += s.int64(4);
      if (kernels) r.kernels += s.int64(4);
    }
  }
  if (replays_.empty()) return;
  // The launch calls: the earliest of each (process, correlation id) (by start, then the longest, then the name),
  // as trace_events' call_* columns take it. Correlation ids are numbered in order: only their range is read.
  const TableInfo* r = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (r == nullptr || !r->has("correlationId") || !r->has("globalTid") || !r->has("nameId")) return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::map<std::pair<int64_t, int64_t>, std::vector<GraphReplay*>> by_launch;  // (process, correlation id)
  for (auto& [key, replay] : replays_) {
    lo = std::min(lo, std::get<1>(key)), hi = std::max(hi, std::get<1>(key));
    by_launch[{std::get<0>(key), std::get<1>(key)}].push_back(&replay);
  }
  Statement q(db, "SELECT globalTid, correlationId, nameId, start, \"end\" FROM " +
                      schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME") +
                      " WHERE correlationId BETWEEN ?1 AND ?2 AND globalTid IS NOT NULL AND nameId IS NOT NULL"
                      " ORDER BY rowid");
  q.bind(1, lo);
  q.bind(2, hi);
  struct Best {
    int64_t start, dur;
  };
  std::map<std::pair<int64_t, int64_t>, Best> best;
  while (q.step()) {
    std::pair<int64_t, int64_t> key{process_key_of(q.int64(0)), q.int64(1)};
    auto it = by_launch.find(key);
    if (it == by_launch.end()) continue;
    const std::string* name = strings.find(q.int64(2));
    std::string text = name ? *name : kMissingStringPrefix + std::to_string(q.int64(2)) + "]";
    Best here{q.int64(3), std::max<int64_t>(0, q.int64(4) - q.int64(3))};
    auto [b, fresh] = best.try_emplace(key, here);
    if (!fresh && std::make_tuple(here.start, -here.dur, text) >=
                      std::make_tuple(b->second.start, -b->second.dur, it->second.front()->call_name))
      continue;
    b->second = here;
    for (GraphReplay* replay : it->second) replay->call_name = text;
  }
}

}  // namespace nsystrace
