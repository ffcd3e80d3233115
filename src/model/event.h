// The vocabulary shared by the readers, the track layout, the trace_events table and the Chrome writer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/model/export_model.h"

namespace nsystrace {

class StatementCache;  // src/sqlite/statement.h

// Row kinds (enum Kind), their specs and names: declared once in src/model/export_model.def.
constexpr uint32_t kAllKinds = (1u << kKindCount) - 1;
constexpr uint32_t kind_bit(Kind k) { return 1u << static_cast<int>(k); }
// Kinds nsystrace derives rather than reads (the NVTX GPU projection): trace_events has their rows only when asked
// for with its hidden column `derived`, so a plain query sees each event of the profile once.
constexpr uint32_t derived_kinds() {
  uint32_t mask = 0;
  for (const KindSpec& s : kKindSpecs)
    if (s.origin == Origin::derived) mask |= kind_bit(s.kind);
  return mask;
}
constexpr uint32_t kDerivedKinds = derived_kinds();
constexpr bool is_derived(Kind k) { return (kind_bit(k) & kDerivedKinds) != 0; }

// Where an event is drawn.
enum class Placement : uint8_t {
  cpu_thread,  // its OS thread (globalTid)
  cpu_async,   // NVTX start/end ranges: a track of their own beside their thread (they rarely nest)
  gpu_stream,  // its CUDA stream, under the GPU's process
  gpu_sync,    // the GPU's "CUDA sync" track
  gpu_nvtx,    // NVTX ranges projected on the GPU: one track per GPU and CPU thread
  cpu_sched,   // when a thread ran on which CPU: a track of its own beside the thread
  cpu_nccl,    // NVTX ranges of the NCCL domain: a track of their own beside their thread
  process,     // process-wide events (diagnostics): a "Diagnostics" track of the process
  gpu_metrics, // sampled GPU counters: one process per metrics source (typeId), a counter track per metric
  cpu_samples, // CPU call-stack samples: a "(samples)" track beside their thread
  gpu_memory,  // CUDA memory in use (counter samples): a "CUDA memory" track of the GPU
};

// Chrome pids: OS pids are below 2^24 (nsys keeps 24 bits), so GPU d gets pid kGpuPidBase + d. When several
// reports are converted together, report r (its position in the scan's schema list) adds r * kReportPidStride, so
// ranks keep their processes apart (up to 64 reports).
constexpr int64_t kGpuPidBase = int64_t{1} << 24;
constexpr int64_t kReportPidStride = int64_t{1} << 25;
constexpr int kMaxReports = 64;

// Which pid a GPU device or a GPU metrics source (typeId) is drawn under, within a report: kGpuPidBase + its id
// in 23 bits for a device, kGpuPidBase + 2^23 + its id in 23 bits for a metrics source (NULL reads as 0). The
// track layout places rows with these, and a pushed-down `pid = ?` filters with the same masks
// (EventSource::prepare), so the two cannot disagree.
constexpr int64_t kGpuIdMask = (int64_t{1} << 23) - 1;
constexpr int64_t kGpuMetricsPidBase = kGpuPidBase + (int64_t{1} << 23);
inline int64_t gpu_pid(int64_t device_id) { return kGpuPidBase + (device_id & kGpuIdMask); }
inline int64_t gpu_metrics_pid(int64_t type_id) { return kGpuMetricsPidBase + (type_id & kGpuIdMask); }
// The CUDA device a metrics source (GPU_METRICS.typeId) samples. No column of the export says it; NVIDIA's recipes read
// it as the low byte of typeId (nsys_recipe gpu_metric_util_map: "typeId & 0xFF AS gpu"), and nsys 2025.3's H200
// export confirms it for GPU 0 (typeId 2^48 + 2^32 sampled GPU 0: docs/gpu-model.md).
constexpr int64_t gpu_metrics_device(int64_t type_id) { return type_id & 0xFF; }

// One report (database schema: "main" or an ATTACHed one) of a scan.
struct ReportContext {
  int index = 0;             // position in the scan's schema list
  std::string schema;        // "main", "rank1", ...
  int64_t clock_offset = 0;  // added to every timestamp: (its session start - the earliest of the connection's reports)
  bool labelled = false;     // several reports: process names say which report they come from
  StatementCache* statements = nullptr;  // where readers take and give back their statements, if anywhere
};

// A memcpy's or memset's size and memory kinds as stored: copy_kind an id of ENUM_CUDA_MEMCPY_OPER, the others of
// ENUM_CUDA_MEM_KIND (shown as LabelledId, src/readers/event_sources.h: a label, or the id without one). The
// sources write args' "bytes", "copy_kind", "src_kind", "dst_kind" and "mem_kind" from these, and trace_events'
// hidden columns size_bytes, copy_kind, src_kind, dst_kind and mem_kind read them, so the two cannot disagree.
struct MemoryFields {
  std::optional<int64_t> bytes, copy_kind, src_kind, dst_kind;  // memcpys (bytes: memsets and CUDA memory rows too)
  std::optional<int64_t> mem_kind;                              // memsets and CUDA memory rows
};

// One event as read from its table, before it is placed on a track.
struct SourceEvent {
  Kind kind = Kind::nvtx;
  Placement placement = Placement::cpu_thread;
  std::string_view name;
  int64_t name_id = -1;      // the StringIds id whose text `name` is, or -1: lets writers intern names by id
  int64_t ts = 0;
  int64_t dur = 0;
  bool instant = false;      // NVTX marks: dur is NULL
  int64_t global_id = 0;     // globalTid (CPU events) or globalPid (GPU events)
  bool has_global_id = false;
  int64_t device_id = 0, stream_id = 0;  // GPU placements only
  bool has_correlation = false;
  int64_t correlation_id = 0;
  int64_t source_rowid = 0;  // rowid in its table
  uint8_t tag = 0;           // its source's rowid tag (ROW_SOURCE): rowid = (source_rowid << 5) | tag
  int report = 0;            // ReportContext::index
  const char* cname = nullptr;  // Chrome color name (NVTX ranges with a color)
  // The NVTX domain's name (nvtx and nvtx_kernel rows outside the default domain), owned by the ProfileCatalog; the
  // source writes it as args' "domain" too, so the column and args cannot disagree.
  const std::string* domain = nullptr;
  // Kernels: the StringIds id of the demangled name (its text resolved only when asked: the column, or args'
  // "demangled_name", which reads the same id).
  bool has_demangled_id = false;
  int64_t demangled_id = 0;
  MemoryFields memory;  // memcpys, memsets and CUDA memory rows
  int64_t graph_node_id = 0;  // GPU work of a CUDA graph traced per node: its graphNodeId (0: none)
};

// A track of the timeline, as the track layout makes it: a thread, a CUDA stream, or a track beside them (NVTX
// start/end ranges, NCCL ranges, CPU scheduling, CUDA sync, the NVTX GPU projection, diagnostics, GPU metrics). Slices
// on it that would partially overlap go to extra lanes of it (TraceRow::lane); how a track and its lanes are
// encoded is each writer's business (Chrome: tids; Perfetto: track descriptors).
struct Track {
  int64_t id = 0;             // unique within a scan, in order of first use
  int32_t pid = 0;            // the process it is drawn under: an OS pid, kGpuPidBase + device, ... (see gpu_pid)
  Placement placement = Placement::cpu_thread;
  const std::string* process_name = nullptr;
  std::string name;           // "python3", "Stream 7", "python3 (NVTX start/end)", "CUDA sync", ...
  // An id of this track unique among its process's tracks, when it has a natural one: the OS tid of a thread's own
  // track, the stream id of a stream (unless another process uses the same id on this GPU). Writers use it where
  // they can (Chrome tids) and make up one otherwise.
  bool has_own_id = false;
  int32_t own_id = 0;
  // The thread a thread's own track or a track beside it belongs to (its name and OS tid); empty otherwise.
  std::string thread_name;
  int32_t thread_tid = 0;
  // A track of its thread's own (NCCL's ranges: "NCCL", the domain's name): a format that nests tracks (Perfetto)
  // draws it under its thread with this name; one that cannot (Chrome JSON: a tid per track) uses `name`. Empty for
  // every other track.
  std::string name_under_thread;
};

// One row of trace_events.
struct TraceRow {
  // (report << 56) | (rowid in its source table << 5) | the table's tag: unique and the same in every query.
  int64_t rowid = 0;
  Kind kind = Kind::nvtx;
  std::string_view name;
  int64_t name_id = -1;  // SourceEvent::name_id: the StringIds id (in report `report`) whose text `name` is, or -1
  int64_t ts = 0;
  bool has_dur = false;
  int64_t dur = 0;
  int32_t pid = 0;             // its track's process
  bool has_tid = false;
  int64_t tid = 0;              // the OS thread (CPU rows, NVTX projection) or CUDA stream (GPU rows) it belongs to
  const Track* track = nullptr;
  uint32_t lane = 0;            // 0, or the extra lane of its track it needed to nest
  const std::string* process_name = nullptr;
  bool on_gpu = false, has_stream = false;
  int64_t device_id = 0, stream_id = 0;
  bool has_correlation = false;
  int64_t correlation_id = 0;
  bool has_global_tid = false;
  int64_t global_tid = 0;        // its global_pid is global_pid_of(global_tid)
  int report = 0;                      // which report of the scan (0 for a single one)
  const std::string* schema = nullptr;  // its schema name
  const char* cname = nullptr;          // Chrome reserved color name, or null
  const std::string* domain = nullptr;  // SourceEvent::domain
  bool has_demangled_id = false;        // SourceEvent::demangled_id
  int64_t demangled_id = 0;
  MemoryFields memory;                  // SourceEvent::memory
  int64_t graph_node_id = 0;            // SourceEvent::graph_node_id
};

}  // namespace nsystrace
