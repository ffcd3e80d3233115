#include "src/timeline/track_layout.h"

#include <fmt/format.h>

namespace nsystrace {

namespace {
// Placements drawn under the event's own OS process (the others are under a GPU or a GPU metrics source).
bool in_os_process(Placement p) {
  return p == Placement::cpu_thread || p == Placement::cpu_async || p == Placement::cpu_sched ||
         p == Placement::cpu_nccl || p == Placement::cpu_samples || p == Placement::process;
}
}  // namespace

const std::string* TrackLayout::process(int32_t pid, const SourceEvent& ev) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return &it->second;
  std::string name;
  if (in_os_process(ev.placement)) {
    const std::string* known = catalog(ev).process_name(process_key_of(ev.global_id));
    name = known ? *known : fmt::format("Process {}", os_pid_of(ev.global_id));
  } else if (ev.placement == Placement::gpu_metrics) {
    const std::string* type_name = catalog(ev).gpu_metrics_type_name(ev.device_id);
    name = type_name ? fmt::format("GPU metrics: {}", *type_name) : fmt::format("GPU metrics (type {})", ev.device_id);
  } else {
    const std::string* gpu = catalog(ev).gpu_name(ev.device_id);
    name = gpu ? fmt::format("GPU {} ({})", ev.device_id, *gpu) : fmt::format("GPU {}", ev.device_id);
  }
  const ReportContext& report = reports_[ev.report];
  if (report.labelled) name = fmt::format("[{}] {}", report.schema, name);  // ranks side by side
  return &processes_.emplace(pid, std::move(name)).first->second;
}

TrackLayout::Key TrackLayout::key_of(const SourceEvent& ev) const {
  int space = static_cast<int>(ev.placement) * kMaxReports + ev.report;  // reports never share a track
  switch (ev.placement) {
    case Placement::cpu_thread:
    case Placement::cpu_async:
    case Placement::cpu_sched:
    case Placement::cpu_nccl:
    case Placement::cpu_samples: return Key{space, ev.global_id, 0, 0};
    case Placement::gpu_stream: return Key{space, ev.device_id, process_key_of(ev.global_id), ev.stream_id};
    case Placement::gpu_sync:
    case Placement::gpu_memory:
    case Placement::gpu_metrics: return Key{space, ev.device_id, 0, 0};
    case Placement::gpu_nvtx: return Key{space, ev.device_id, ev.global_id, 0};
    case Placement::process: return Key{space, process_key_of(ev.global_id), 0, 0};
  }
  return Key{space, 0, 0, 0};
}

const Track* TrackLayout::find(const SourceEvent& ev) const {
  auto it = tracks_.find(key_of(ev));
  return it == tracks_.end() ? nullptr : &it->second.track;
}

TrackLayout::TrackState& TrackLayout::track_for(const SourceEvent& ev) {
  const Key key = key_of(ev);
  if (last_track_ != nullptr && key == last_key_) return *last_track_;
  if (tracks_.empty() && take_back(key)) {
    last_key_ = key;
    last_track_ = &tracks_.begin()->second;
    return *last_track_;
  }
  auto it = tracks_.find(key);
  if (it == tracks_.end()) {
    Track t;
    t.id = static_cast<int64_t>(tracks_.size());
    t.placement = ev.placement;
    int64_t report_base = ev.report * kReportPidStride;
    if (ev.placement == Placement::gpu_metrics) {
      // One process per metrics source, after the GPUs.
      t.pid = static_cast<int32_t>(report_base + gpu_metrics_pid(ev.device_id));
      t.name = "Counters";
      t.has_own_id = true;
      t.own_id = 0;
    } else if (ev.placement == Placement::process) {
      t.pid = static_cast<int32_t>(os_process_pid(ev.report, ev.global_id));
      t.name = "Diagnostics";
    } else if (in_os_process(ev.placement)) {  // a thread's own track, or one beside it
      t.pid = static_cast<int32_t>(os_process_pid(ev.report, ev.global_id));
      auto [owner, fresh] = pid_owner_.emplace(t.pid, process_key_of(ev.global_id));
      if (!fresh && owner->second != process_key_of(ev.global_id)) shared_pids_.insert(t.pid);
      int32_t tid = os_tid_of(ev.global_id);
      const std::string* tn = catalog(ev).thread_name(ev.global_id);
      t.thread_name = tn ? *tn : fmt::format("Thread {}", tid);
      t.thread_tid = tid;
      t.name = t.thread_name;
      if (ev.placement == Placement::cpu_thread) {
        t.has_own_id = true;
        t.own_id = tid;
      } else {
        if (ev.placement == Placement::cpu_nccl) t.name_under_thread = "NCCL";  // the domain's name
        t.name += ev.placement == Placement::cpu_async    ? " (NVTX start/end)"
                  : ev.placement == Placement::cpu_nccl   ? " (NCCL)"
                  : ev.placement == Placement::cpu_samples ? " (samples)"
                                                          : " (CPU)";
      }
    } else {
      t.pid = static_cast<int32_t>(report_base + gpu_pid(ev.device_id));
      if (ev.placement == Placement::gpu_sync) {
        t.name = "CUDA sync";
      } else if (ev.placement == Placement::gpu_memory) {
        t.name = "CUDA memory";
      } else if (ev.placement == Placement::gpu_nvtx) {
        const std::string* tn = catalog(ev).thread_name(ev.global_id);
        t.name = fmt::format("NVTX (GPU projection): {} (tid {})", tn ? *tn : "thread", os_tid_of(ev.global_id));
      } else {
        int64_t owner = process_key_of(ev.global_id);
        auto [claim, fresh] = stream_owner_.emplace(std::make_pair(t.pid, ev.stream_id), owner);
        bool own_id = (fresh || claim->second == owner) && ev.stream_id >= 0 && ev.stream_id < 0xF00000;
        t.has_own_id = own_id;
        t.own_id = own_id ? static_cast<int32_t>(ev.stream_id) : 0;
        t.name = own_id ? fmt::format("Stream {}", ev.stream_id)
                        : fmt::format("Stream {} (pid {})", ev.stream_id, os_pid_of(ev.global_id));
      }
    }
    t.process_name = process(t.pid, ev);
    it = tracks_.emplace(key, TrackState{std::move(t), LaneFitter()}).first;
  }
  last_key_ = key;
  last_track_ = &it->second;
  return it->second;
}

TrackLayout::Placed TrackLayout::place(const SourceEvent& ev) {
  TrackState& state = track_for(ev);
  int64_t end;
  if (__builtin_add_overflow(ev.ts, ev.dur, &end)) end = INT64_MAX;
  size_t lane = state.lanes.fit(ev.ts, end, ev.instant);
  return Placed{&state.track, static_cast<uint32_t>(lane)};
}

void TrackLayout::reset() {
  // One track, of one process, placed on an empty layout: the processes, stream and pid owners hold only what placing
  // its first event gave, so taking all of it back later equals building it again.
  if (tracks_.size() == 1 && processes_.size() == 1 && stream_owner_.size() <= 1 && pid_owner_.size() <= 1 &&
      shared_pids_.empty()) {
    const Key key = tracks_.begin()->first;
    auto slot = set_aside_.find(key);
    if (slot == set_aside_.end() && set_aside_.size() < kMaxSetAside) slot = set_aside_.emplace(key, SetAside{}).first;
    if (slot != set_aside_.end() && slot->second.track.empty()) {
      SetAside& s = slot->second;
      s.track = tracks_.extract(tracks_.begin());
      s.process = processes_.extract(processes_.begin());
      if (!stream_owner_.empty()) s.stream = stream_owner_.extract(stream_owner_.begin());
      if (!pid_owner_.empty()) s.pid = pid_owner_.extract(pid_owner_.begin());
    }
  }
  clear();
}

bool TrackLayout::take_back(const Key& key) {
  auto slot = set_aside_.find(key);
  if (slot == set_aside_.end() || slot->second.track.empty()) return false;
  SetAside& s = slot->second;
  s.track.mapped().lanes.clear();
  tracks_.insert(std::move(s.track));
  processes_.insert(std::move(s.process));
  if (!s.stream.empty()) stream_owner_.insert(std::move(s.stream));
  if (!s.pid.empty()) pid_owner_.insert(std::move(s.pid));
  return true;
}

void TrackLayout::clear() {
  tracks_.clear();
  processes_.clear();
  stream_owner_.clear();
  pid_owner_.clear();
  shared_pids_.clear();
  last_track_ = nullptr;
  last_key_ = Key{-1, 0, 0, 0};
}

}  // namespace nsystrace
