#include "src/flow_linker.h"

namespace nsystrace {

const ApiCall* FlowLinker::link(std::optional<Kind> kind, const FlowEnds& ends, int64_t ts, uint64_t endpoint) {
  if (!kind || !ends.has_correlation || !ends.has_global_tid) return nullptr;
  // (report, vm, pid) scopes correlation ids: the process part of a global id has at most 40 bits.
  int64_t process = (static_cast<int64_t>(ends.report) << 42) | (ends.global_tid >> 24);
  if (*kind == Kind::cuda_api) {
    if (process >= 0) api_calls_.insert(process, ends.correlation_id, ApiCall{endpoint, ts});
    return nullptr;
  }
  if (!launches_gpu_work(*kind)) return nullptr;
  const ApiCall* call = api_calls_.find(process, ends.correlation_id);
  if (call == nullptr || call->ts > ts) return nullptr;
  ++flows_;
  return call;
}

}  // namespace nsystrace
