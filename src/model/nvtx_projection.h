// NVTX ranges projected onto the GPU work they launched, as Nsight Systems defines it (nvtx_gpu_proj_trace):
//  - ranges: push/pop and start/end ranges (eventType 59, 60, 70, 71) that end on the thread they started on;
//    a range never closed extends to the last timestamp of the profile;
//  - GPU operations: kernels, memcpys and memsets (and graph launches traced per graph), each tied to the CUDA API
//    call with the same correlationId in the same process;
//  - an operation belongs to every range that contains its API call entirely (both ends inclusive) on the same
//    thread; gpu_start/gpu_end = min start / max end of its operations; gpu_ops = distinct correlation ids.
//    An operation stored with its end before its start counts as an instant at its start (trace_events draws it
//    so): a projected range never ends before it starts.
//  - time that does not fit in int64 nanoseconds (a span, a sum: only corrupt timestamps get there) is an Error
//    naming the range, never a wrapped or clipped value.
//  - beside NVIDIA's span, the sum of the operations' durations and the union of their intervals (the time the GPU
//    was busy with them).
//
// How: the ranges are held in memory, per thread, sorted by start with a max-end segment tree (whether a call lies in
// any range, and each range's depth and parent, in O(log n)). The CUDA API calls that lie in a range are joined in
// memory to the GPU operations of their (correlationId, process). Then, per thread, sweeps add up each range's
// totals without ever listing (range, operation) pairs (an unclosed range holds every later launch of its thread:
// n such ranges would make n^2 pairs): Fenwick trees over the calls' ends for the counts, sums, first start and last
// end, and a union of the GPU intervals labelled with the latest call start painted over them for the busy time.
// Time O((ranges + calls + ops) log n), memory linear in them. The threads are independent and can run at once.
//
// For a window of GPU start times (a `ts` window of trace_events), only the ranges that can have a row in it are
// projected: those holding a call whose GPU work starts in the window, each with the same totals as in the
// projection of the whole report.
#pragma once
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/util/mapped_array.h"
#include "src/model/profile_catalog.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

// Every span below (gpu_end - gpu_start) fits in int64: compute() checks it, and fails on work beyond that.
struct DeviceExtent {
  int64_t device = 0;
  int64_t gpu_start = 0, gpu_end = 0;
  int64_t ops = 0;  // distinct correlation ids with work on this device
  int64_t gpu_span() const { return gpu_end - gpu_start; }
};

// Kept compact (about 100 bytes): the projection of a profile with millions of NVTX ranges stays in memory. The
// name is not kept: it is read back from NVTX_EVENTS by rowid when a row is produced (NvtxRangeNames).
struct ProjectedRange {
  int64_t nvtx_rowid = 0;
  int64_t start = 0, end = 0;
  int64_t global_tid = 0;
  int64_t parent_rowid = -1;  // NVTX rowid of the innermost enclosing range, -1 for none
  int64_t gpu_start = INT64_MAX, gpu_end = INT64_MIN;  // the span of its operations (NVIDIA's projected range)
  int64_t gpu_op_time = 0;    // the sum of its operations' durations (two concurrent kernels count twice)
  int64_t gpu_busy_time = 0;  // the union of their intervals: the time at least one of them ran
  uint32_t gpu_ops = 0, kernels = 0, memcpys = 0, memsets = 0, graphs = 0;
  int32_t domain_id = 0;
  int32_t depth = 0;
  uint32_t first_device = 0, device_count = 0;  // a slice of NvtxProjection::devices(), sorted by device
  bool unclosed = false, start_end = false;
  int64_t gpu_span() const { return gpu_end - gpu_start; }  // NVIDIA's projected duration
};

// GPU start times, on the report's own clock, both ends inclusive.
struct ProjectionWindow {
  int64_t first_gpu_start = INT64_MIN, last_gpu_start = INT64_MAX;
  bool operator==(const ProjectionWindow& o) const {
    return first_gpu_start == o.first_gpu_start && last_gpu_start == o.last_gpu_start;
  }
};

class NvtxProjection {
 public:
  // progress: report each phase's progress on stderr (see Progress). threads: how many threads may add up the
  // ranges' totals (the result is the same). window: project only the ranges with work starting in it on a GPU
  // (their own rows and values are those of the whole projection; other ranges may be left out).
  static std::shared_ptr<const NvtxProjection> compute(sqlite3* db, const ProfileCatalog& catalog,
                                                       bool progress = false, int threads = 1,
                                                       const std::optional<ProjectionWindow>& window = std::nullopt);
  // Ranges with at least one GPU operation, in (start, end descending, rowid) order.
  const MappedArray<ProjectedRange>& ranges() const { return ranges_; }
  const DeviceExtent* devices(const ProjectedRange& r) const { return device_pool_.data() + r.first_device; }
  // The window it was computed for (none: the whole report).
  const std::optional<ProjectionWindow>& window() const { return window_; }

 private:
  std::optional<ProjectionWindow> window_;
  MappedArray<ProjectedRange> ranges_;
  std::vector<DeviceExtent> device_pool_;
};

// Reads NVTX range names back by rowid (text, or the registered string of textId).
class NvtxRangeNames {
 public:
  NvtxRangeNames(sqlite3* db, const ProfileCatalog& catalog);
  std::string_view name(int64_t nvtx_rowid);  // valid until the next call for another rowid

 private:
  static constexpr int64_t kForwardSteps = 64;  // a row further on than this is sought, not stepped to
  const ProfileCatalog& catalog_;
  Statement stmt_;  // rows from a rowid on, in rowid order
  std::string scratch_;
  ForwardPosition at_;  // where stmt_ stands
};

}  // namespace nsystrace
