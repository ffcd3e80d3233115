// Places events on tracks (Track: which thread, stream or side track, under which process) and lanes, so that slices
// on one lane of a track always nest. Perfetto and chrome://tracing drop a slice that partially overlaps an earlier
// one on its track; here such a slice goes to an extra lane of the same track instead. Events must arrive in
// (start, longest first) order. How tracks and lanes are written is the writers' business.
//
// Processes: a CPU thread's tracks are under its OS pid; GPU d's under gpu_pid(d) (one track per CUDA stream, and
// a "CUDA sync" track); a GPU metrics source's under gpu_metrics_pid(typeId). Beside a thread: its NVTX start/end
// ranges ("<thread> (NVTX start/end)"), NCCL ranges ("<thread> (NCCL)"), CPU scheduling ("<thread> (CPU)").
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/model/event.h"
#include "src/timeline/lane_fitter.h"
#include "src/model/profile_catalog.h"

namespace nsystrace {

// The pid a process's CPU rows are drawn under (trace_events.pid): its OS pid, in report `report` of the scan
// (global_id: a globalTid or globalPid of the process).
inline int64_t os_process_pid(int report, int64_t global_id) {
  return report * kReportPidStride + os_pid_of(global_id);
}

class TrackLayout {
 public:
  // One catalog per report of the scan (event.report indexes it).
  explicit TrackLayout(std::vector<const ProfileCatalog*> catalogs, std::vector<ReportContext> reports)
      : catalogs_(std::move(catalogs)), reports_(std::move(reports)) {}

  struct Placed {
    const Track* track;  // stable for the layout's life
    uint32_t lane;
  };
  Placed place(const SourceEvent& ev);
  // The track `ev` was placed on, or nullptr when no row of its track was placed: a lookup, which places nothing.
  const Track* find(const SourceEvent& ev) const;
  // Its track only, for rows handed over out of time order (no lanes are fitted: they would be wrong; lane 0).
  Placed place_without_lanes(const SourceEvent& ev) { return Placed{&track_for(ev).track, 0}; }
  // Empty again, as new on the same reports (a join's inner scan restarted at every outer row): keeps only its
  // reports and the tables' allocations. A layout of one track is set aside, by its key: a join's lookups mostly find
  // one row each, on a few hundred threads, and when a later scan's first track is one set aside it is taken back as
  // it was (its lanes emptied), which is what building it again on an empty layout gives.
  void reset();
  // Pids under which processes of different machines (the upper bits of globalTid: vm ids) are drawn together: the
  // pid space has no room for a machine, so such processes share one. Said in the trace (otherData), never silent.
  const std::set<int32_t>& pids_shared_by_machines() const { return shared_pids_; }

 private:
  struct TrackState {
    Track track;
    LaneFitter lanes;
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;

  const std::string* process(int32_t pid, const SourceEvent& ev);
  Key key_of(const SourceEvent& ev) const;
  TrackState& track_for(const SourceEvent& ev);
  void clear();
  bool take_back(const Key& key);

  const ProfileCatalog& catalog(const SourceEvent& ev) const { return *catalogs_[ev.report]; }
  std::vector<const ProfileCatalog*> catalogs_;
  std::vector<ReportContext> reports_;
  std::map<Key, TrackState> tracks_;
  std::unordered_map<int32_t, std::string> processes_;  // pid -> name
  std::map<std::pair<int32_t, int64_t>, int64_t> stream_owner_;  // (gpu pid, stream) -> process key
  std::unordered_map<int32_t, int64_t> pid_owner_;  // pid of an OS process -> the first process key drawn under it
  std::set<int32_t> shared_pids_;
  TrackState* last_track_ = nullptr;
  Key last_key_{-1, 0, 0, 0};
  // A one-track layout set aside by reset(): the nodes of its maps' entries (a node keeps its element's address, so
  // Track::process_name stays valid), empty while taken back. At most kMaxSetAside keys.
  struct SetAside {
    decltype(tracks_)::node_type track;
    decltype(processes_)::node_type process;
    decltype(stream_owner_)::node_type stream;
    decltype(pid_owner_)::node_type pid;
  };
  static constexpr size_t kMaxSetAside = 4096;
  std::map<Key, SetAside> set_aside_;
};

}  // namespace nsystrace
