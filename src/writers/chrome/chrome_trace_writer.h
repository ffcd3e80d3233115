// Writes Chrome Trace Event JSON ({"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}) for rows handed
// to it one at a time, into an OutputBuffer (kept whole for a SQL value, or drained to a file).
//  - X slices (ph "i" for instants) with ts/dur in microseconds written exactly from integer nanoseconds;
//  - M metadata for every process and track used: names and sort indexes (pid order: CPU processes, then GPUs;
//    tracks by id with their extra lanes right after them);
//  - flow arrows from each CUDA API call to the GPU work it launched, matched on (process, correlation id),
//    when both ends are among the rows. The API call must come first (it always starts before its work);
//  - each GPU's utilization (gpu_utilization.h) as a counter ("C" events "GPU utilization", arg "value": percent) of the
//    GPU's process.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/writers/flow_linker.h"
#include "src/writers/gpu_utilization.h"
#include "src/model/event.h"
#include "src/writers/json_writer.h"

namespace nsystrace {

// Chrome has no tracks, only (pid, tid) pairs with names: here a scan's tracks and lanes become tids. A track's own
// id (OS tid, stream id) when it has one, else an id counted down from 2^24 - 1 in its process; lane k >= 1 of a track
// is tid (k << 24) | base, named "<track> [lane k]", and lanes past 126 get ids of their own. Ids stay below 2^31 and
// sort (by thread_order) right after their track. A track of its thread's own (Track::name_under_thread: NCCL's
// ranges) cannot be drawn under its thread here; its tid and its lanes' are sorted right after the thread's lanes.
class ChromeTrackIds {
 public:
  struct Ids {
    int32_t tid;
    const std::string* name;
  };
  Ids of(const Track& track, uint32_t lane);
  // Where the tid `tid` of process `pid` sorts among the process's tids (its thread_sort_index order).
  std::tuple<int64_t, int64_t, int64_t> order(int64_t pid, int64_t tid) const;

 private:
  // (pid, tid) of a track of its thread's own, or of one of its lanes -> its order: after its thread's lanes.
  std::map<std::pair<int64_t, int64_t>, std::tuple<int64_t, int64_t, int64_t>> under_thread_;
  struct PerTrack {
    int32_t base = 0;
    std::vector<std::pair<int32_t, std::string>> lanes;  // by lane; tid -1 until seen
  };
  struct Process {
    int32_t next_free_base = 0xFFFFFF;
    int32_t next_overflow = 0;
  };
  std::vector<PerTrack> tracks_;  // by Track::id (dense within a scan): no hashing on the per-row path
  std::vector<bool> seen_;
  std::unordered_map<int32_t, Process> processes_;
};

struct ChromeEvent {
  std::optional<Kind> kind_id;  // what the writer dispatches on (explicit-form rows of other kinds have none)
  std::string_view kind;        // becomes "cat"
  std::string_view name;
  int64_t ts = 0;
  bool has_dur = true;
  int64_t dur = 0;
  int64_t pid = 0, tid = 0;
  const std::string_view* process_name = nullptr;  // optional
  const std::string_view* thread_name = nullptr;   // optional
  std::string_view args;                           // a JSON object, or empty
  FlowEnds flow;           // what links an API call to the GPU work it launched
  std::string_view cname;  // Chrome reserved color name, or empty
};

class ChromeTraceWriter {
 public:
  explicit ChromeTraceWriter(OutputBuffer& out);
  void add(const ChromeEvent& ev);
  // other_data: a JSON object (export metadata etc.). Writes metadata events and closes the document.
  void finish(std::string_view other_data);
  uint64_t events() const { return events_; }
  ChromeTrackIds& track_ids() { return track_ids_; }
  uint64_t flows() const { return flows_.flows(); }
  // Events recorded before time 0 (Perfetto drops negative timestamps): drawn at 0, their recorded ts and dur in
  // args (recorded_ts_ns, recorded_dur_ns).
  uint64_t clamped_to_zero() const { return clamped_; }
  // Events starting or ending after kLatestViewerTs (viewer_time.h), drawn up to it, their recorded times in args.
  uint64_t clamped_to_latest() const { return clamped_late_; }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const { return kind_counts_; }

 private:
  void begin_event();
  void note_track(const ChromeEvent& ev);
  void flow_event(char phase, uint64_t id, int64_t pid, int64_t tid, int64_t ts);
  void write_utilization();  // the samples in utilization_samples_

  GpuUtilization utilization_;
  std::vector<GpuUtilization::Sample> utilization_samples_;
  OutputBuffer& out_;
  bool first_ = true;
  uint64_t events_ = 0, flow_ids_ = 0, clamped_ = 0, clamped_late_ = 0;
  std::map<std::string, uint64_t, std::less<>> kind_counts_;
  std::string_view last_kind_;           // a cache in front of kind_counts_: rows come in runs of a kind
  uint64_t* last_kind_count_ = nullptr;
  std::map<int64_t, std::string> processes_;
  int64_t last_pid_ = -1;
  std::map<std::pair<int64_t, int64_t>, std::string> threads_;
  std::pair<int64_t, int64_t> last_thread_{-1, -1};
  FlowLinker flows_;  // endpoints: (pid << 32) | tid
  ChromeTrackIds track_ids_;
};

}  // namespace nsystrace
