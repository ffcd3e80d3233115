// Places events on Chrome tracks (pid, tid) so that slices on one track always nest. Perfetto and
// chrome://tracing drop a slice that partially overlaps an earlier one on its track; here such a slice goes to
// an extra lane of the same track instead. Events must arrive in (start, longest first) order per track.
//
// Track ids:  CPU thread -> pid = OS pid, tid = OS tid; its NVTX start/end ranges -> a track of their own
// ("<thread> (NVTX start/end)", synthetic tid).   GPU d -> pid = kGpuPidBase + d, tid = CUDA stream id
// (a synthetic id when two processes use the same stream id on one GPU), plus a "CUDA sync" track.
// Lane k >= 1 of a track with base tid b is tid (k << 24) | b, named "<track name> [lane k]"; ids stay below 2^31.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/event.h"
#include "src/lane_fitter.h"
#include "src/profile_catalog.h"

namespace nsystrace {

class TrackLayout {
 public:
  // One catalog per report of the scan (event.report indexes it).
  explicit TrackLayout(std::vector<const ProfileCatalog*> catalogs, std::vector<ReportContext> reports)
      : catalogs_(std::move(catalogs)), reports_(std::move(reports)) {}

  struct Placed {
    int32_t pid, tid;
    const std::string* process_name;
    const std::string* thread_name;
  };
  Placed place(const SourceEvent& ev);

  struct Lane {
    int32_t tid = 0;
    std::string name;
  };

 private:
  struct Process;
  struct Track {
    int32_t pid = 0;
    int32_t base_tid = 0;
    Process* process = nullptr;
    std::vector<Lane> lanes;
    LaneFitter fitter;
  };
  struct Process {
    std::string name;
    int32_t next_free_base = 0xFFFFFF;  // synthetic base tids count down from 2^24 - 1
    int32_t next_overflow = 0;          // tids of lanes beyond 126
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;

  Process& process(int32_t pid, const SourceEvent& ev);
  Track& track_for(const SourceEvent& ev);
  int32_t lane_tid(Track& track, Process& proc, size_t lane);

  const ProfileCatalog& catalog(const SourceEvent& ev) const { return *catalogs_[ev.report]; }
  std::vector<const ProfileCatalog*> catalogs_;
  std::vector<ReportContext> reports_;
  std::map<Key, Track> tracks_;
  std::unordered_map<int32_t, Process> processes_;
  std::map<std::pair<int32_t, int64_t>, int64_t> stream_owner_;  // (gpu pid, stream) -> process key
  Track* last_track_ = nullptr;
  Key last_key_{-1, 0, 0, 0};
};

}  // namespace nsystrace
