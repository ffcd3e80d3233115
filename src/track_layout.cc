#include "src/track_layout.h"

#include <fmt/format.h>

namespace nsystrace {

namespace {
// Placements drawn under the event's own OS process (the others are under a GPU or a GPU metrics source).
bool in_os_process(Placement p) {
  return p == Placement::cpu_thread || p == Placement::cpu_async || p == Placement::cpu_sched ||
         p == Placement::cpu_nccl || p == Placement::process;
}
}  // namespace

TrackLayout::Process& TrackLayout::process(int32_t pid, const SourceEvent& ev) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second;
  Process p;
  if (in_os_process(ev.placement)) {
    const std::string* name = catalog(ev).process_name(process_key_of(ev.global_id));
    p.name = name ? *name : fmt::format("Process {}", os_pid_of(ev.global_id));
  } else if (ev.placement == Placement::gpu_metrics) {
    const std::string* type_name = catalog(ev).gpu_metrics_type_name(ev.device_id);
    p.name = type_name ? fmt::format("GPU metrics: {}", *type_name) : fmt::format("GPU metrics (type {})", ev.device_id);
  } else {
    const std::string* gpu = catalog(ev).gpu_name(ev.device_id);
    p.name = gpu ? fmt::format("GPU {} ({})", ev.device_id, *gpu) : fmt::format("GPU {}", ev.device_id);
  }
  const ReportContext& report = reports_[ev.report];
  if (report.labelled) p.name = fmt::format("[{}] {}", report.schema, p.name);  // ranks side by side
  return processes_.emplace(pid, std::move(p)).first->second;
}

TrackLayout::Track& TrackLayout::track_for(const SourceEvent& ev) {
  Key key;
  int space = static_cast<int>(ev.placement) * kMaxReports + ev.report;  // reports never share a track
  switch (ev.placement) {
    case Placement::cpu_thread:
    case Placement::cpu_async:
    case Placement::cpu_sched:
    case Placement::cpu_nccl: key = Key{space, ev.global_id, 0, 0}; break;
    case Placement::gpu_stream: key = Key{space, ev.device_id, process_key_of(ev.global_id), ev.stream_id}; break;
    case Placement::gpu_sync:
    case Placement::gpu_metrics: key = Key{space, ev.device_id, 0, 0}; break;
    case Placement::gpu_nvtx: key = Key{space, ev.device_id, ev.global_id, 0}; break;
    case Placement::process: key = Key{space, process_key_of(ev.global_id), 0, 0}; break;
  }
  if (last_track_ != nullptr && key == last_key_) return *last_track_;
  auto it = tracks_.find(key);
  if (it == tracks_.end()) {
    Track t;
    std::string name;
    int64_t report_base = ev.report * kReportPidStride;
    if (ev.placement == Placement::gpu_metrics) {
      // One process per metrics source, after the GPUs (pids 2^24 + 2^23 + typeId).
      t.pid = static_cast<int32_t>(report_base + gpu_metrics_pid(ev.device_id));
      process(t.pid, ev);
      t.base_tid = 0;
      name = "Counters";
    } else if (ev.placement == Placement::process) {
      t.pid = static_cast<int32_t>(report_base + os_pid_of(ev.global_id));
      t.base_tid = process(t.pid, ev).next_free_base--;
      name = "Diagnostics";
    } else if (in_os_process(ev.placement)) {  // a thread's own track, or one beside it
      t.pid = static_cast<int32_t>(report_base + os_pid_of(ev.global_id));
      Process& proc = process(t.pid, ev);
      int32_t tid = os_tid_of(ev.global_id);
      const std::string* tn = catalog(ev).thread_name(ev.global_id);
      name = tn ? *tn : fmt::format("Thread {}", tid);
      if (ev.placement == Placement::cpu_thread) {
        t.base_tid = tid;
      } else {
        t.base_tid = proc.next_free_base--;
        name += ev.placement == Placement::cpu_async  ? " (NVTX start/end)"
                : ev.placement == Placement::cpu_nccl ? " (NCCL)"
                                                      : " (CPU)";
      }
    } else {
      t.pid = static_cast<int32_t>(report_base + gpu_pid(ev.device_id));
      Process& proc = process(t.pid, ev);
      if (ev.placement == Placement::gpu_sync) {
        t.base_tid = proc.next_free_base--;
        name = "CUDA sync";
      } else if (ev.placement == Placement::gpu_nvtx) {
        t.base_tid = proc.next_free_base--;
        const std::string* tn = catalog(ev).thread_name(ev.global_id);
        name = fmt::format("NVTX (GPU projection): {} (tid {})", tn ? *tn : "thread", os_tid_of(ev.global_id));
      } else {
        int64_t owner = process_key_of(ev.global_id);
        auto [claim, fresh] = stream_owner_.emplace(std::make_pair(t.pid, ev.stream_id), owner);
        bool own_id = (fresh || claim->second == owner) && ev.stream_id >= 0 && ev.stream_id < 0xF00000;
        t.base_tid = own_id ? static_cast<int32_t>(ev.stream_id) : proc.next_free_base--;
        name = own_id ? fmt::format("Stream {}", ev.stream_id)
                      : fmt::format("Stream {} (pid {})", ev.stream_id, os_pid_of(ev.global_id));
      }
    }
    t.process = &processes_.find(t.pid)->second;
    t.lanes.emplace_back();
    t.lanes[0].tid = t.base_tid;
    t.lanes[0].name = std::move(name);
    it = tracks_.emplace(key, std::move(t)).first;
  }
  last_key_ = key;
  last_track_ = &it->second;
  return it->second;
}

int32_t TrackLayout::lane_tid(Track& track, Process& proc, size_t lane) {
  if (lane < 127) return static_cast<int32_t>((static_cast<int64_t>(lane) << 24) | track.base_tid);
  return static_cast<int32_t>((int64_t{127} << 24) | (proc.next_overflow++ & 0xFFFFFF));
}

TrackLayout::Placed TrackLayout::place(const SourceEvent& ev) {
  Track& track = track_for(ev);
  int64_t end;
  if (__builtin_add_overflow(ev.ts, ev.dur, &end)) end = INT64_MAX;
  size_t lane = track.fitter.fit(ev.ts, end, ev.instant);
  Process& proc = *track.process;
  if (lane == track.lanes.size()) {  // a new lane was opened
    track.lanes.emplace_back();
    Lane& l = track.lanes[lane];
    l.tid = lane_tid(track, proc, lane);
    l.name = fmt::format("{} [lane {}]", track.lanes[0].name, lane);
  }
  const Lane& l = track.lanes[lane];
  return Placed{track.pid, l.tid, &proc.name, &l.name};
}

}  // namespace nsystrace
