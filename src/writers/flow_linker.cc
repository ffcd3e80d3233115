#include "src/writers/flow_linker.h"

namespace nsystrace {

FlowLinker::Link FlowLinker::link(std::optional<Kind> kind, const FlowEnds& ends, int64_t ts, uint64_t endpoint) {
  Link out;
  if (!kind || !ends.has_correlation || !ends.has_global_tid) return out;
  // (report, vm, pid) scopes correlation ids: the process part of a global id has at most 40 bits.
  int64_t process = (static_cast<int64_t>(ends.report) << 42) | (ends.global_tid >> 24);
  if (*kind == Kind::cuda_api) {
    if (process >= 0) out.recorded = api_calls_.insert(process, ends.correlation_id, ApiCall{endpoint, ts});
    return out;
  }
  if (!launches_gpu_work(*kind)) return out;
  const ApiCall* call = api_calls_.find(process, ends.correlation_id);
  if (call == nullptr || call->ts > ts) return out;
  ++flows_;
  out.launched_by = call;
  return out;
}

}  // namespace nsystrace
