// Flow arrows from each CUDA API call to the GPU work it launched (kernels, memcpys, memsets, CUDA graph launches),
// matched on (report, process, correlation id): correlation ids are unique within a process only. Beside the
// writers, not in any one of them: a writer hands each event with its own endpoint (a 64-bit value meaning what the
// writer wants: Chrome packs (pid, tid), Perfetto a track uuid) and gets back, for GPU work, the endpoint and time of
// the call that launched it. The call must come first (it always starts before its work on one clock).
#pragma once
#include <cstdint>
#include <optional>

#include "src/writers/api_call_index.h"
#include "src/model/event.h"

namespace nsystrace {

struct FlowEnds {
  bool has_correlation = false;
  int64_t correlation_id = 0;
  bool has_global_tid = false;
  int64_t global_tid = 0;  // globalTid (CPU) / globalPid (GPU): its process part scopes the correlation id
  int report = 0;
};

class FlowLinker {
 public:
  struct Link {
    bool recorded = false;                // an API call, the first with its (report, process, correlation id)
    const ApiCall* launched_by = nullptr;  // GPU work: the call that launched it (among the rows seen)
  };
  // Records an API call, or finds the launch of GPU work.
  Link link(std::optional<Kind> kind, const FlowEnds& ends, int64_t ts, uint64_t endpoint);
  uint64_t flows() const { return flows_; }

  static bool launches_gpu_work(Kind k) {
    return k == Kind::kernel || k == Kind::memcpy || k == Kind::memset || k == Kind::graph;
  }

 private:
  // State the trace must keep: 24 bytes per CUDA API call, for the whole trace.
  ApiCallIndex api_calls_;
  uint64_t flows_ = 0;
};

}  // namespace nsystrace
