// Perfetto's own trace format (protobuf TracePackets with TrackEvents) for trace_events rows handed to it in time
// order, written into an OutputBuffer (kept whole for a BLOB, or drained to a file). The second consumer of the placed
// rows beside the Chrome writer; what it writes, as Perfetto reads it, is what the JSON of the same rows holds:
//  - processes (OS processes, GPUs) as process tracks, named; a thread's own track as a thread
//    track (ThreadDescriptor); every other track (CUDA streams, CUDA sync, the tracks beside a thread, the NVTX GPU
//    projection, diagnostics) as a named track of its process; a track's extra lanes as child tracks of it, named
//    "<track> [lane k]"; processes and tracks in the JSON's order (sort indexes, sibling ranks);
//  - each slice as a SLICE_BEGIN and a SLICE_END packet, instants as INSTANT; its kind as the category; its args as
//    typed debug annotations (ints stay ints);
//  - flows from a CUDA API call to the GPU work it launched (legacy bind ids, one arrow per GPU operation);
//  - events recorded before 0 at 0, and those after the latest time a viewer holds at it, with their recorded
//    times in args (viewer_time.h), as in the JSON;
//  - the trace-wide metadata (the JSON's otherData) as trace metadata (ChromeEventBundle.metadata "nsystrace");
//  - with GpuModel::typed (the default), kernels, memcpys and memsets in Perfetto's GPU compute model instead of
//    slices: GpuRenderStageEvents on one hardware queue per (GPU, stream), with their kernel (InternedComputeKernel),
//    launch (ComputeKernelLaunch) and CUDA context (InternedGraphicsContext); the launching call's arrow as a
//    GpuCorrelation. docs/gpu-model.md says what is written and why;
//  - each GPU's utilization (gpu_utilization.h) as a GPU counter of that GPU (GpuCounterEvent, with an
//    InternedGpuCounterDescriptor: percent), on a second sequence of its own with absolute timestamps (a bucket's
//    value is known only once the rows have passed it; Perfetto sorts the sequences together); nsys GPU metrics as
//    GPU counters of the GPU their source samples, with their units (gpu_counters.h), and CUDA memory in use as a
//    GPU counter (bytes) of its device, on the same sequence.
// Compact: names, categories, arg names and string arg values are interned; every packet is written in time order
// on one sequence, so timestamps are deltas on an incremental clock (a few bytes each) and track uuids small ints.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/readers/args.h"
#include "src/model/event.h"
#include "src/writers/flow_linker.h"
#include "src/writers/gpu_utilization.h"
#include "src/writers/json_writer.h"
#include "src/writers/perfetto/protobuf_writer.h"
#include "src/writers/perfetto/string_interner.h"

namespace nsystrace {

// How GPU work (kernels, memcpys, memsets) is written: Perfetto's GPU compute model (gpu_slice), or TrackEvent slices
// on stream tracks as in the JSON. nsystrace_option('gpu_model', 'typed' | 'slices').
enum class GpuModel { typed, slices };

class PerfettoTraceWriter {
 public:
  // gpu_model: how GPU work is written. realtime_at_zero: the REALTIME (UTC ns) of the trace's time 0, the earliest
  // session start of the reports it holds; without it (no session start) the trace relates its clock to no
  // wall-clock time. time_at_zero: the trace's clock's reading at time 0: 0 (its times are the session's), or
  // REALTIME's (nsystrace_option('wall_clock', 1): its times are wall-clock times).
  explicit PerfettoTraceWriter(OutputBuffer& out, GpuModel gpu_model = GpuModel::typed,
                               std::optional<int64_t> realtime_at_zero = std::nullopt, int64_t time_at_zero = 0);
  // A row and its args (written on demand into the sink given).
  template <class WriteArgs>
  void add(const TraceRow& row, WriteArgs&& write_args) {
    ArgsThunk<WriteArgs> thunk(write_args);
    add_row(row, thunk);
  }
  // Ends every open slice and writes the metadata (a JSON object, the JSON trace's otherData).
  void finish(std::string_view metadata_json);

  uint64_t events() const { return events_; }
  uint64_t flows() const { return flows_.flows(); }
  uint64_t clamped_to_zero() const { return clamped_; }
  uint64_t clamped_to_latest() const { return clamped_late_; }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const {
    for (int k = 0; k < kKindCount; ++k)
      if (by_kind_[k] != 0) kind_counts_[kind_name(static_cast<Kind>(k))] = by_kind_[k];
    return kind_counts_;
  }

 private:
  struct ArgsSource {
    virtual ~ArgsSource() = default;
    virtual void write(ArgsSink& sink) const = 0;
  };
  template <class F>
  struct ArgsThunk final : ArgsSource {
    explicit ArgsThunk(F& f) : f_(f) {}
    void write(ArgsSink& sink) const override { f_(sink); }
    F& f_;
  };
  class Annotations;  // an ArgsSink writing DebugAnnotations, interning as it goes

  class ComputeArgs;  // an ArgsSink writing a GPU render stage event's launch args

  void add_row(const TraceRow& row, const ArgsSource& args);
  // GPU work in the typed model (GpuModel::typed): one GpuRenderStageEvent. event_id: the launching call's
  // GpuCorrelation id, or one of its own.
  void add_gpu_work(const TraceRow& row, int64_t ts, int64_t dur, bool clamped, uint64_t event_id,
                    bool skip_correlation, const ArgsSource& args);
  static bool is_gpu_work(Kind k);  // the kinds the typed model writes
  uint64_t hw_queue_iid(const Track& track);
  uint64_t stage_iid(Kind kind);
  uint64_t gpu_context(const TraceRow& row, std::optional<int64_t> context_id);
  // Every pending slice end at or before `ts`, in time order (the innermost first at equal times).
  void end_slices_until(int64_t ts);
  void begin_packet(int64_t ts);
  void end_packet();  // appends the packet, with any interned data it introduced, to the output
  void maybe_flush();  // hands the written packets to the output when they are many
  void write_utilization();  // the samples in utilization_samples_, on the counters' sequence
  void begin_counter_packet(int64_t ts);  // a packet on the counters' sequence at the trace's time ts
  void add_gpu_counter(const TraceRow& row, int64_t ts, const ArgsSource& args);  // a counter kind's row
  void flush_counter_batch();  // the samples gathered in counter_batch_, as one packet
  // A GPU counter's spec, as an InternedGpuCounterDescriptor lists it.
  struct CounterSpecText {
    uint32_t counter_id;
    std::string name, description;
    uint64_t unit;  // Perfetto's MeasureUnit (0: none)
  };
  // An interned descriptor of one or more counters (of one GPU), in the current packet's interned data.
  void write_gpu_counter_descriptor(uint64_t iid, int32_t gpu_id, const std::vector<const CounterSpecText*>& specs);
  template <class WriteValue>
  void write_gpu_counter_value(uint64_t descriptor_iid, uint64_t counter_id, WriteValue write_value);
  uint64_t process_uuid(const Track& track);
  uint64_t track_uuid(const Track& track, uint32_t lane);
  uint64_t thread_uuid(const Track& track, int32_t tid);  // 0 when the track's thread is no OS thread
  uint64_t frame_iid(const StackFrame& frame);
  uint64_t callstack_iid(const Stack& stack);  // 0 for an empty stack
  void add_sample(const TraceRow& row, int64_t ts, const ArgsSource& args);
  uint64_t intern(StringInterner& table, std::string_view s, uint32_t interned_field);
  // Writes an InternedData entry (iid, string) into the current packet's interned data.
  void write_interned(uint32_t interned_field, uint64_t iid, std::string_view s);

  OutputBuffer& out_;
  const GpuModel gpu_model_;
  int64_t time_at_zero_ = 0;  // what sequences with absolute timestamps (the counters') add to a row's ts
  int64_t latest_ts_;         // the viewer's window ends here on the trace's time (viewer_time.h)
  ProtoWriter packet_;
  ProtoWriter interned_;  // InternedData entries new in the current packet
  int64_t last_ts_ = 0;   // the incremental clock
  uint64_t next_uuid_ = 1;
  std::unordered_map<int32_t, uint64_t> processes_;  // pid -> process track uuid
  std::map<std::pair<int32_t, int32_t>, uint64_t> threads_;  // (pid, tid) -> thread track uuid
  struct TrackUuids {
    std::vector<uint64_t> lanes;  // uuid by lane, 0 until described
    uint64_t rank = 0;
  };
  std::unordered_map<const Track*, TrackUuids> tracks_;  // node-based: an entry's address is stable
  const Track* last_track_ = nullptr;
  TrackUuids* last_track_uuids_ = nullptr;
  // By kind, by position among a row's args: the arg name there last time (see Annotations::name_iid).
  struct KeyGuess {
    const char* stored = nullptr;  // the interner's copy of the name
    uint32_t size = 0;
    uint64_t iid = 0;
  };
  std::vector<KeyGuess> key_guesses_[kKindCount];
  // The ends of the slices begun and not yet ended: (end, order) with the latest begun first at equal ends.
  struct PendingEnd {
    int64_t end;
    uint64_t order;
    uint64_t uuid;
    bool operator>(const PendingEnd& o) const { return end != o.end ? end > o.end : order < o.order; }
  };
  std::priority_queue<PendingEnd, std::vector<PendingEnd>, std::greater<>> ends_;
  uint64_t begun_ = 0;
  StringInterner names_, arg_names_, arg_strings_, categories_;
  // Call stacks: function names and module paths, mappings (by module), frames (by symbol and module), callstacks
  // (by their frame iids).
  StringInterner function_names_, mapping_paths_, mappings_, frames_, callstacks_;
  std::vector<uint64_t> frame_ids_;
  uint64_t category_iids_[kKindCount] = {};  // in front of categories_: by kind
  std::string key_;                          // the lookup key of intern(), frame_iid() and callstack_iid()
  // Counter rows: ((kind << 48) | (report << 32) | typeId or device, name) -> its index in counter_specs_.
  std::map<std::pair<int64_t, std::string>, uint64_t, std::less<>> metric_counters_;
  std::pair<int64_t, std::string> metric_key_;
  struct CounterSample {
    uint64_t counter;  // index in counter_specs_
    bool is_int;
    int64_t i;
    double d;
  };
  // The samples of one GPU at one time, written as one packet when a sample of another time or GPU comes (nsys
  // samples its GPU metrics 22 or so at a time: one timestamp, one packet header, one descriptor iid for them all).
  struct CounterBatch {
    bool open = false;
    int64_t ts = 0;
    int32_t gpu_id = 0;
    std::vector<CounterSample> samples;
    std::vector<uint64_t> set;  // the batch's counters, sorted: the key of its descriptor
  } counter_batch_;
  std::vector<CounterSpecText> counter_specs_;
  std::vector<decltype(metric_counters_)::const_iterator> counter_entries_;  // by index: its entry there
  // The counters of the last batch written, in order: a GPU's metrics come in the same order at every timestamp, so
  // the k-th sample of a batch is usually the k-th counter of the one before (one comparison, not a map lookup).
  std::vector<uint64_t> last_batch_counters_;
  std::map<std::vector<uint64_t>, uint64_t> counter_set_iids_;  // a set of counters -> its descriptor's iid
  FlowLinker flows_;  // endpoints: bind ids of the calls' flows
  uint64_t next_flow_ = 1;
  uint64_t events_ = 0, clamped_ = 0, clamped_late_ = 0;
  uint64_t by_kind_[kKindCount] = {};  // events by kind: counted per row without a lookup
  mutable std::map<std::string, uint64_t, std::less<>> kind_counts_;  // by_kind_ by name, made on request
  std::map<int32_t, int32_t> process_ranks_;
  // The typed GPU model's interned state: hardware queues (by stream track) and render stages share one iid space;
  // CUDA contexts by (report, launching pid, contextId) -> the id written (their contextId unless another process
  // took it first); kernels by (name, demangled name); launch arg names.
  uint64_t next_spec_iid_ = 1;
  std::unordered_map<const Track*, uint64_t> hw_queues_;
  uint64_t stage_iids_[kKindCount] = {};
  std::map<std::tuple<int, int32_t, int64_t>, uint64_t> contexts_;
  std::map<uint64_t, int32_t> context_owner_;  // context id written -> its pid
  uint64_t next_synthetic_context_ = uint64_t{1} << 32;
  StringInterner compute_kernels_, compute_arg_names_;
  std::string kernel_key_;
  uint64_t next_own_event_id_ = uint64_t{1} << 62;
  GpuUtilization utilization_;
  std::vector<GpuUtilization::Sample> utilization_samples_;
  std::vector<bool> utilization_described_;  // by GPU index: its counter descriptor written
  bool counter_sequence_started_ = false;
  // The GPUs of the typed model and the utilization counters: Perfetto's gpu id -> the name of the GPU's process
  // ("GPU 0 (NVIDIA H100 80GB HBM3)"), written as GpuInfo at the end (write_gpu_info).
  std::map<int32_t, std::string> gpu_names_;
  void note_gpu(int32_t gpu_id, const Track& track);
  void write_gpu_info();  // GPU work no call launched: ids apart from the flows' bind ids  // pid -> its rank among the processes seen (Chrome's order)
};

}  // namespace nsystrace
