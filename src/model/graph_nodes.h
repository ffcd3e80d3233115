// What CUDA_GRAPH_NODE_EVENTS says about the nodes of CUDA graphs (nsys records a "Graph Node Creation" instant on the
// creating thread each time a node is made): the node a cloned node was cloned from, and the CUDA API call that made
// the node during stream capture. A graph traced per node (--cuda-graph-trace=node) runs the nodes of its
// instantiated (cloned) graph: their kernels name the clones, whose creation is cudaGraphInstantiate; the call a user
// wrote (the cudaLaunchKernel captured into the graph) made the original node, so a clone reports its original's.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "src/model/export_schema.h"

namespace nsystrace {

class StringTable;

struct GraphNodeCreation {
  std::optional<int64_t> original_id;  // originalGraphNodeId, for a cloned node
  // The CUDA API call (runtime or driver, CUPTI_ACTIVITY_KIND_RUNTIME) on the creating thread whose time holds the
  // creation of the node, or of the node it was cloned from (followed back to a node that is no clone): the
  // innermost such call. None when no recorded call holds it.
  bool has_call = false;
  std::string call_name;
  int64_t call_ts = 0;  // its start, on the export's clock
  std::optional<int64_t> call_correlation_id;
};

class GraphNodeCreations {
 public:
  // Reads CUDA_GRAPH_NODE_EVENTS and the calls around its rows; nothing when the export has no such table.
  void load(sqlite3* db, const ExportSchema& schema, const StringTable& strings);
  // The node `node_id` of the process `process_key` (process_key_of: node ids are a process's), or nullptr when
  // CUDA_GRAPH_NODE_EVENTS does not have it.
  const GraphNodeCreation* find(int64_t process_key, int64_t node_id) const {
    auto it = nodes_.find({process_key, node_id});
    return it == nodes_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::pair<int64_t, int64_t>, GraphNodeCreation> nodes_;  // (process key, graphNodeId)
};

// A replay of a CUDA graph traced per node on one stream: the GPU work of one launch (the kernels, memcpys and memsets
// with a graphNodeId, 0 meaning none, sharing the launch's correlation id in one process) on one (device, stream),
// and the call that launched it. A replay whose nodes ran on several streams has one per stream: each spans only
// its own stream's nodes, so that the stream's other work never overlaps it partially.
struct GraphReplay {
  int64_t start = 0, end = 0;  // its first node's start, its last node's end (an end before its start reads as it)
  int64_t nodes = 0, kernels = 0;
  int64_t first_node_id = 0;
  std::string call_name;  // the launch call's name (the earliest call of the correlation id), or empty
};

class GraphReplays {
 public:
  void load(sqlite3* db, const ExportSchema& schema, const StringTable& strings);
  // The replay of launch `correlation` in the process `process_key` (process_key_of) on (device, stream), or nullptr.
  const GraphReplay* find(int64_t process_key, int64_t correlation, int64_t device, int64_t stream) const {
    auto it = replays_.find({process_key, correlation, device, stream});
    return it == replays_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, GraphReplay> replays_;  // (process, correlation, device, stream)
};

}  // namespace nsystrace
