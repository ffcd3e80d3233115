#include "src/writers/perfetto/perfetto_trace_writer.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/model/profile_catalog.h"
#include "src/sqlite/statement.h"
#include "src/writers/gpu_counters.h"
#include "src/writers/viewer_time.h"

namespace nsystrace {

namespace {
// Field numbers, from Perfetto's perfetto_trace.proto (v58).
namespace Trace { constexpr uint32_t packet = 1; }
namespace Packet {
constexpr uint32_t timestamp = 8, track_event = 11, trusted_packet_sequence_id = 10, interned_data = 12,
                   sequence_flags = 13, clock_snapshot = 6, trace_packet_defaults = 59, track_descriptor = 60,
                   chrome_events = 5, stack_sample = 135, gpu_render_stage_event = 53, gpu_counter_event = 52,
                   gpu_info = 128;
constexpr uint64_t kSeqIncrementalStateCleared = 1;
}  // namespace Packet
namespace Event {
constexpr uint32_t category_iids = 3, debug_annotations = 4, legacy_event = 6, type = 9, name_iid = 10,
                   track_uuid = 11, counter_value = 30, double_counter_value = 44, callstack_iid = 56;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
constexpr uint32_t gpu_correlation = 3000;  // GpuTrackEvent's extension of TrackEvent (gpu_track_event.proto)
}  // namespace Event
namespace GpuCorrelation { constexpr uint32_t render_stage_submission_event_ids = 1; }
namespace Legacy { constexpr uint32_t bind_id = 8, flow_direction = 13; constexpr uint64_t kFlowIn = 1, kFlowOut = 2; }
namespace Annotation {
constexpr uint32_t name_iid = 1, bool_value = 2, uint_value = 3, int_value = 4, double_value = 5,
                   array_values = 12, string_value_iid = 17;
}
namespace Interned {
constexpr uint32_t event_categories = 1, event_names = 2, debug_annotation_names = 3, debug_annotation_string_values = 29,
                   function_names = 5, frames = 6, callstacks = 7, mapping_paths = 17, mappings = 19;
constexpr uint32_t iid = 1, name = 2, str = 2;  // EventCategory/EventName/DebugAnnotationName: name; InternedString: str
}  // namespace Interned
// The GPU compute model (gpu_render_stage_event.proto; compute_kernels and compute_arg_names extend InternedData:
// gpu_interned_data.proto).
namespace GpuInterned {
constexpr uint32_t graphics_contexts = 23, gpu_specifications = 24, gpu_counter_descriptors = 47, compute_kernels = 1000,
                   compute_arg_names = 1001;
}
namespace RenderStage {
constexpr uint32_t event_id = 1, duration = 2, context = 5, gpu_id = 11, hw_queue_iid = 13, stage_iid = 14,
                   kernel_iid = 19, name_iid = 20, launch = 21;
}
namespace Launch { constexpr uint32_t grid_size = 1, workgroup_size = 2, args = 3; }
namespace Dim3 { constexpr uint32_t x = 1, y = 2, z = 3; }
namespace ComputeArg {
constexpr uint32_t name_iid = 1, int_value = 3, uint_value = 4, double_value = 5, string_value_iid = 7;
}
namespace StageSpec {
constexpr uint32_t iid = 1, name = 2, description = 3, category = 4;
constexpr uint64_t kOther = 0, kCompute = 2;
}
namespace CounterDescriptor {  // InternedGpuCounterDescriptor, and its GpuCounterDescriptor
constexpr uint32_t iid = 1, counter_descriptor = 2, gpu_id = 3, specs = 1;
}
namespace CounterSpec {
constexpr uint32_t counter_id = 1, name = 2, description = 3, numerator_units = 7, value_direction = 11;
constexpr uint64_t kPercent = 37, kForwardsLooking = 2;
}
namespace CounterEvent {
constexpr uint32_t counter_descriptor_iid = 4, counters = 2, counter_id = 1, int_value = 2, double_value = 3;
}
// GPU counter ids and descriptor iids (one space for each on the counters' sequence): utilization's counter is 1 and
// its descriptors 1 + the GPU's index; the other GPU counters' ids are 2 + their index (a one- or two-byte varint in
// every sample), their descriptors' (one per set of counters sampled together) 2^32 + the set's number.
constexpr uint32_t kUtilizationCounter = 1, kMetricCounterIdBase = 2;
constexpr uint64_t kMetricDescriptorIidBase = uint64_t{1} << 32;
namespace GpuInfo { constexpr uint32_t gpus = 1, name = 1; }
namespace GraphicsContext { constexpr uint32_t iid = 1, pid = 2, api = 3; constexpr uint64_t kCuda = 4; }
namespace ComputeKernel { constexpr uint32_t iid = 1, name = 2, demangled_name = 3, arch = 4; }
namespace Frame { constexpr uint32_t iid = 1, function_name_id = 2, mapping_id = 3; }
namespace Mapping { constexpr uint32_t iid = 1, path_string_ids = 7; }
namespace Callstack { constexpr uint32_t iid = 1, frame_ids = 2; }
namespace Sample {
constexpr uint32_t task_context = 1, execution_context = 3, callstack_iid = 6;
constexpr uint32_t task_pid = 2, task_tid = 3, exec_cpu = 2, exec_mode = 3;
constexpr uint64_t kModeUser = 1, kModeKernel = 2;
}  // namespace Sample
namespace Descriptor {
constexpr uint32_t uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5, counter = 8, child_ordering = 11,
                   sibling_order_rank = 12, sibling_merge_behavior = 15;
constexpr uint64_t kExplicitOrder = 3, kMergeNone = 2;
}  // namespace Descriptor
namespace ProcessDesc { constexpr uint32_t pid = 1, legacy_sort_index = 3, process_name = 6; }
namespace ThreadDesc { constexpr uint32_t pid = 1, tid = 2, thread_name = 5; }
namespace Clock {
constexpr uint32_t clocks = 1, primary_trace_clock = 2, clock_id = 1, timestamp = 2, is_incremental = 3;
constexpr uint64_t kRealtime = 1, kBoottime = 6, kIncremental = 64;  // 64: the first sequence-scoped clock id
// The trace's own clock (its time, as trace_events.ts): a global custom clock id (128 and up are not
// sequence-scoped). Not BOOTTIME, which Perfetto shares between the traces of one machine (docs/job.md, Clocks).
constexpr uint64_t kSession = 128;
}  // namespace Clock
namespace Defaults { constexpr uint32_t timestamp_clock_id = 58; }
namespace Metadata { constexpr uint32_t metadata = 2, name = 1, json_value = 5; }

constexpr uint32_t kSequence = 1;
constexpr uint32_t kCounterSequence = 2;  // GPU utilization (write_utilization)

// Perfetto's GPU id of a device: apart per report (ranks side by side each have a GPU 0).
int32_t perfetto_gpu_id(int report, int64_t device) {
  return static_cast<int32_t>(report * (kGpuIdMask + 1) + (device & kGpuIdMask));
}
constexpr size_t kFlushBytes = 1 << 16;
// SplitMix64's finalizer: nearby inputs (session starts a few ns apart) give unrelated outputs.
uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

}  // namespace

// Typed args as DebugAnnotations of the current TrackEvent; names and string values interned.
class PerfettoTraceWriter::Annotations final : public ArgsSink {
 public:
  // skip: an integer arg left out (see add_row).
  Annotations(PerfettoTraceWriter& w, std::string_view skip, Kind kind) : w_(w), skip_(skip), kind_(kind) {}
  ArgsSink& integer(std::string_view key, int64_t v) override {
    if (key == skip_) return ++position_, *this;  // keeps the positions of the args after it
    return one(key, Annotation::int_value, static_cast<uint64_t>(v));
  }
  ArgsSink& unsigned_integer(std::string_view key, uint64_t v) override { return one(key, Annotation::uint_value, v); }
  ArgsSink& boolean(std::string_view key, bool v) override { return one(key, Annotation::bool_value, v ? 1 : 0); }
  ArgsSink& real(std::string_view key, double v) override {
    open(key);
    w_.packet_.double_field(Annotation::double_value, v);
    return close();
  }
  ArgsSink& string(std::string_view key, std::string_view v) override {
    uint64_t iid = w_.intern(w_.arg_strings_, v, Interned::debug_annotation_string_values);
    return one(key, Annotation::string_value_iid, iid);
  }
  // A null: the annotation's name without a value, which Perfetto reads as it reads a JSON null (no arg). A
  // legacy_json_value "null" makes its importer abort (v58).
  ArgsSink& null(std::string_view key) override {
    open(key);
    return close();
  }
  ArgsSink& triple(std::string_view key, int64_t a, int64_t b, int64_t c) override {
    open(key);
    for (int64_t v : {a, b, c}) {
      w_.packet_.begin(Annotation::array_values);
      w_.packet_.int_field(Annotation::int_value, v);
      w_.packet_.end();
    }
    return close();
  }
  // An API call's backtrace: the slice's own callstack (Perfetto shows it with the slice and can aggregate it).
  ArgsSink& stack(std::string_view key, const Stack& stack) override {
    callstack = w_.callstack_iid(stack);
    if (stack.missing_depths != 0) integer(missing_depths_key(key), stack.missing_depths);
    return *this;
  }
  uint64_t callstack = 0;  // the interned callstack of the event, 0 for none

 private:
  void open(std::string_view key) {
    w_.packet_.begin(Event::debug_annotations);
    w_.packet_.varint_field(Annotation::name_iid, name_iid(key));
  }
  ArgsSink& close() {
    w_.packet_.end();
    return *this;
  }
  ArgsSink& one(std::string_view key, uint32_t field, uint64_t value) {
    open(key);
    w_.packet_.varint_field(field, value);
    return close();
  }
  // The iid of an arg's name. Rows of a kind name their args in the same order, so the name this kind had at this
  // position last time is tried first (its stored text compared): no hashing for almost every arg. Its address is
  // tried next (the readers' names are literals, unless the row was recorded on another thread).
  uint64_t name_iid(std::string_view key) {
    std::vector<KeyGuess>& guesses = w_.key_guesses_[static_cast<int>(kind_)];
    if (position_ < guesses.size()) {
      const KeyGuess& g = guesses[position_];
      if (g.size == key.size() && std::memcmp(g.stored, key.data(), key.size()) == 0) return ++position_, g.iid;
    } else {
      guesses.resize(position_ + 1);
    }
    auto [iid, fresh] = w_.arg_names_.intern_by_address(key);
    if (fresh) w_.write_interned(Interned::debug_annotation_names, iid, key);
    guesses[position_++] = KeyGuess{w_.arg_names_.stored(iid), static_cast<uint32_t>(key.size()), iid};
    return iid;
  }
  PerfettoTraceWriter& w_;
  std::string_view skip_;
  Kind kind_;
  size_t position_ = 0;  // of the next arg
};

// A GPU render stage event's args: grid and block as the launch's grid and workgroup sizes, the demangled name kept
// for the interned kernel, the CUDA context id kept for the event's context, every other arg a typed
// ExtraComputeArg of the launch (names interned as InternedComputeArgName, string values as the debug annotations'
// interned strings). Written inside the event's open ComputeKernelLaunch.
class PerfettoTraceWriter::ComputeArgs final : public ArgsSink {
 public:
  ComputeArgs(PerfettoTraceWriter& w, std::string_view skip) : w_(w), skip_(skip) {}
  ArgsSink& integer(std::string_view key, int64_t v) override {
    if (key == skip_) return *this;
    if (key == "context_id") {  // the event's context, and its "context" arg (add_gpu_work)
      context_id = v;
      return *this;
    }
    if (key == "bytes") bytes = v;
    return one(key, ComputeArg::int_value, static_cast<uint64_t>(v));
  }
  ArgsSink& unsigned_integer(std::string_view key, uint64_t v) override { return one(key, ComputeArg::uint_value, v); }
  ArgsSink& boolean(std::string_view key, bool v) override { return one(key, ComputeArg::int_value, v ? 1 : 0); }
  ArgsSink& real(std::string_view key, double v) override {
    open(key);
    w_.packet_.double_field(ComputeArg::double_value, v);
    return close();
  }
  ArgsSink& string(std::string_view key, std::string_view v) override {
    // The kernel's names and architecture describe the kernel (InternedComputeKernel), not this launch.
    if (key == "demangled_name" || key == "mangled_name" || key == "arch") {
      std::string& to = key == "demangled_name" ? demangled : key == "mangled_name" ? mangled : arch;
      to.assign(v.data(), v.size());
      (key == "demangled_name" ? has_demangled : key == "mangled_name" ? has_mangled : has_arch) = true;
      return *this;
    }
    uint64_t iid = w_.intern(w_.arg_strings_, v, Interned::debug_annotation_string_values);
    return one(key, ComputeArg::string_value_iid, iid);
  }
  ArgsSink& null(std::string_view) override { return *this; }  // no value: no arg (as Perfetto reads a JSON null)
  ArgsSink& triple(std::string_view key, int64_t a, int64_t b, int64_t c) override {
    uint32_t field = key == "grid" ? Launch::grid_size : key == "block" ? Launch::workgroup_size : 0;
    auto fits = [](int64_t v) { return v >= 0 && v <= int64_t{UINT32_MAX}; };
    if (field != 0 && fits(a) && fits(b) && fits(c)) {  // Dim3 holds uint32s
      w_.packet_.begin(field);
      w_.packet_.varint_field(Dim3::x, static_cast<uint64_t>(a));
      w_.packet_.varint_field(Dim3::y, static_cast<uint64_t>(b));
      w_.packet_.varint_field(Dim3::z, static_cast<uint64_t>(c));
      w_.packet_.end();
      return *this;
    }
    std::string k(key);
    one(k + ".x", ComputeArg::int_value, static_cast<uint64_t>(a));
    one(k + ".y", ComputeArg::int_value, static_cast<uint64_t>(b));
    return one(k + ".z", ComputeArg::int_value, static_cast<uint64_t>(c));
  }
  ArgsSink& stack(std::string_view, const Stack&) override { return *this; }  // GPU work has no call stack

  ArgsSink& one(std::string_view key, uint32_t field, uint64_t value) {
    open(key);
    w_.packet_.varint_field(field, value);
    return close();
  }
  std::optional<int64_t> context_id, bytes;
  std::string demangled, mangled, arch;
  bool has_demangled = false, has_mangled = false, has_arch = false;

 private:
  void open(std::string_view key) {
    w_.packet_.begin(Launch::args);
    auto [iid, fresh] = w_.compute_arg_names_.intern_by_address(key);
    if (fresh) w_.write_interned(GpuInterned::compute_arg_names, iid, key);
    w_.packet_.varint_field(ComputeArg::name_iid, iid);
  }
  ArgsSink& close() {
    w_.packet_.end();
    return *this;
  }
  PerfettoTraceWriter& w_;
  std::string_view skip_;
};

PerfettoTraceWriter::PerfettoTraceWriter(OutputBuffer& out, GpuModel gpu_model,
                                         std::optional<int64_t> realtime_at_zero, int64_t time_at_zero)
    : out_(out),
      gpu_model_(gpu_model),
      time_at_zero_(std::max<int64_t>(time_at_zero, 0)),  // a ClockSnapshot's timestamps are unsigned
      latest_ts_(kLatestViewerTs - time_at_zero_) {
  // The clocks (docs/job.md, Clocks). The trace's time is the session clock (primary_trace_clock), reading
  // time_at_zero at time 0 (0: nsys's nanoseconds since the session start); packets give it as deltas on a
  // sequence-scoped incremental clock that starts at 0. REALTIME and BOOTTIME both read the session start at 0:
  // REALTIME places the trace in wall-clock time (a manifest's REALTIME rendezvous), and BOOTTIME, which Perfetto
  // assumes equal in all the traces of one machine (every trace of a hand-packed archive), then reads wall-clock
  // time in each of them, so such traces line up too. Without a session start, BOOTTIME reads 0 at time 0.
  const bool has_realtime = realtime_at_zero && *realtime_at_zero >= 0;  // a ClockSnapshot's timestamps are unsigned
  // Perfetto links flow ids (and GPU event ids) across every trace of one machine: the ranks of one host, packed
  // into one archive, would link each other's arrows if each trace counted from 1. A trace with a session start
  // counts from a base drawn from it (bits 32 to 61; the own event ids keep bit 62).
  if (has_realtime) {
    const uint64_t base = (mix64(static_cast<uint64_t>(*realtime_at_zero)) & ((uint64_t{1} << 30) - 1)) << 32;
    next_flow_ += base;
    next_own_event_id_ += base;
  }
  const std::pair<uint64_t, int64_t> readings[] = {
      {Clock::kSession, time_at_zero_},
      {Clock::kBoottime, has_realtime ? *realtime_at_zero : 0},
      {Clock::kRealtime, has_realtime ? *realtime_at_zero : -1},
      {Clock::kIncremental, 0}};
  packet_.begin(Trace::packet);
  packet_.varint_field(Packet::trusted_packet_sequence_id, kSequence);
  packet_.begin(Packet::clock_snapshot);
  for (auto [id, at_zero] : readings) {
    if (at_zero < 0) continue;  // REALTIME without a session start
    packet_.begin(Clock::clocks);
    packet_.varint_field(Clock::clock_id, id);
    packet_.varint_field(Clock::timestamp, static_cast<uint64_t>(at_zero));
    if (id == Clock::kIncremental) packet_.bool_field(Clock::is_incremental, true);
    packet_.end();
  }
  packet_.varint_field(Clock::primary_trace_clock, Clock::kSession);
  packet_.end();
  packet_.end();
  // The sequence's state: cleared here, then every packet's timestamp is on the incremental clock.
  packet_.begin(Trace::packet);
  packet_.varint_field(Packet::trusted_packet_sequence_id, kSequence);
  packet_.varint_field(Packet::sequence_flags, Packet::kSeqIncrementalStateCleared);
  packet_.begin(Packet::trace_packet_defaults);
  packet_.varint_field(Defaults::timestamp_clock_id, Clock::kIncremental);
  packet_.end();
  packet_.end();
  out_.append(packet_.data());
  packet_.clear();
}

void PerfettoTraceWriter::begin_packet(int64_t ts) {
  // The clock only moves forward (rows come in time order, viewer_time() keeps it): a delta that is negative or
  // does not fit would be a wrong time in the trace, so it is an error instead.
  int64_t delta;
  if (__builtin_sub_overflow(ts, last_ts_, &delta) || delta < 0)
    throw Error(fmt::format("nsystrace: perfetto trace: an event at {} ns comes after one at {} ns (rows out of time "
                            "order)",
                            ts, last_ts_));
  packet_.begin(Trace::packet);
  packet_.varint_field(Packet::timestamp, static_cast<uint64_t>(delta));
  last_ts_ = ts;
  packet_.varint_field(Packet::trusted_packet_sequence_id, kSequence);
}

void PerfettoTraceWriter::end_packet() {
  if (interned_.size() > 0) {
    packet_.bytes_field(Packet::interned_data, interned_.data());
    interned_.clear();
  }
  packet_.end();
  maybe_flush();
}

void PerfettoTraceWriter::maybe_flush() {
  if (packet_.size() >= kFlushBytes) {
    out_.append(packet_.data());
    packet_.clear();
    out_.maybe_drain();
  }
}

void PerfettoTraceWriter::begin_counter_packet(int64_t ts) {
  packet_.begin(Trace::packet);
  // On the session clock, which reads time_at_zero_ at the trace's time 0; a utilization sample after the last busy
  // millisecond can fall past the window (latest_ts_), and is drawn at its end.
  packet_.varint_field(Packet::timestamp, static_cast<uint64_t>(std::min(ts, latest_ts_) + time_at_zero_));
  packet_.varint_field(Packet::trusted_packet_sequence_id, kCounterSequence);
  if (!counter_sequence_started_) {
    counter_sequence_started_ = true;
    packet_.varint_field(Packet::sequence_flags, Packet::kSeqIncrementalStateCleared);
  }
}

// An interned descriptor of GPU counters: their specs (id, name, description, unit) and the GPU they are grouped
// with, in the current counter packet's interned data.
void PerfettoTraceWriter::write_gpu_counter_descriptor(uint64_t iid, int32_t gpu_id,
                                                       const std::vector<const CounterSpecText*>& specs) {
  packet_.begin(Packet::interned_data);
  packet_.begin(GpuInterned::gpu_counter_descriptors);
  packet_.varint_field(CounterDescriptor::iid, iid);
  packet_.begin(CounterDescriptor::counter_descriptor);
  for (const CounterSpecText* spec : specs) {
    packet_.begin(CounterDescriptor::specs);
    packet_.varint_field(CounterSpec::counter_id, spec->counter_id);
    packet_.bytes_field(CounterSpec::name, spec->name);
    packet_.bytes_field(CounterSpec::description, spec->description);
    if (spec->unit != 0) packet_.varint_field(CounterSpec::numerator_units, spec->unit);  // 0: MeasureUnit NONE
    packet_.varint_field(CounterSpec::value_direction, CounterSpec::kForwardsLooking);  // a value holds from its time
    packet_.end();
  }
  packet_.end();
  packet_.int_field(CounterDescriptor::gpu_id, gpu_id);
  packet_.end();
  packet_.end();
}

// The current counter packet's GpuCounterEvent: one value (written by write_value) of one counter, and closes the
// packet.
template <class WriteValue>
void PerfettoTraceWriter::write_gpu_counter_value(uint64_t descriptor_iid, uint64_t counter_id,
                                                  WriteValue write_value) {
  packet_.begin(Packet::gpu_counter_event);
  packet_.varint_field(CounterEvent::counter_descriptor_iid, descriptor_iid);
  packet_.begin(CounterEvent::counters);
  packet_.varint_field(CounterEvent::counter_id, counter_id);
  write_value();
  packet_.end();
  packet_.end();
  packet_.end();
}

// A counter row as a GPU counter of its GPU, one counter per (kind, report, source, name), on the counters'
// sequence: an nsys GPU metric on the GPU its source samples (gpu_counters.h), in its unit; CUDA memory in use on its
// device, in bytes. Samples of one GPU at one time share a packet (counter_batch_).
void PerfettoTraceWriter::add_gpu_counter(const TraceRow& row, int64_t ts, const ArgsSource& args) {
  struct Value final : IgnoringArgs {
    bool has = false, is_int = false;
    int64_t i = 0;
    double d = 0;
    ArgsSink& integer(std::string_view k, int64_t v) override {
      if (k == "value") has = is_int = true, i = v;
      return *this;
    }
    ArgsSink& real(std::string_view k, double v) override {
      if (k == "value") has = true, d = v;
      return *this;
    }
  } value;
  args.write(value);
  if (!value.has) return;  // a sample without a value (the JSON writes none either)
  const bool metric = row.kind == Kind::gpu_metric;
  metric_key_.first =
      (static_cast<int64_t>(row.kind) << 48) | (static_cast<int64_t>(row.report) << 32) | (row.device_id & 0xFFFFFFFF);
  metric_key_.second.assign(row.name.data(), row.name.size());  // reused: no allocation per sample
  CounterBatch& batch = counter_batch_;
  const size_t position = batch.open && batch.ts == ts ? batch.samples.size() : 0;  // in the batch it would join
  uint64_t index = 0;
  bool fresh = false;
  if (position < last_batch_counters_.size() &&
      counter_entries_[last_batch_counters_[position]]->first == metric_key_) {
    index = last_batch_counters_[position];
  } else {
    auto [it, inserted] = metric_counters_.try_emplace(metric_key_, metric_counters_.size());
    index = it->second;
    fresh = inserted;
    if (fresh) counter_entries_.push_back(it);
  }
  const int32_t gpu_id = perfetto_gpu_id(row.report, metric ? gpu_metrics_device(row.device_id) : row.device_id);
  if (fresh) {
    constexpr uint64_t kBytes = 7;  // MeasureUnit BYTE
    counter_specs_.push_back(CounterSpecText{
        static_cast<uint32_t>(kMetricCounterIdBase + index), std::string(row.name),
        metric ? fmt::format("nsys GPU metric (GPU_METRICS typeId {}{}{})", row.device_id, row.process_name ? ", " : "",
                             row.process_name ? std::string_view(*row.process_name) : "")
               : std::string("Bytes of CUDA memory of this kind allocated on this GPU and not freed "
                             "(CUDA_GPU_MEMORY_USAGE_EVENTS)"),
        metric ? metric_unit(row.name).perfetto : kBytes});
  }
  bool repeated = false;  // a second sample of a counter at one time: a packet of its own, in the rows' order
  for (const CounterSample& s : batch.samples) repeated = repeated || s.counter == index;
  if (batch.open && (batch.ts != ts || batch.gpu_id != gpu_id || repeated)) flush_counter_batch();
  batch.open = true;
  batch.ts = ts;
  batch.gpu_id = gpu_id;
  batch.samples.push_back(CounterSample{index, value.is_int, value.i, value.d});
}

// The batch's samples as one packet: one GpuCounterEvent with a value per counter, under the interned descriptor of
// exactly its set of counters (written with the set's first batch; Perfetto finds a counter's spec in the
// descriptor its event names, and draws a counter on the same track whichever descriptor names it).
void PerfettoTraceWriter::flush_counter_batch() {
  CounterBatch& batch = counter_batch_;
  if (!batch.open) return;
  batch.set.clear();
  for (const CounterSample& s : batch.samples) batch.set.push_back(s.counter);
  std::sort(batch.set.begin(), batch.set.end());
  auto [set, fresh] = counter_set_iids_.try_emplace(batch.set, kMetricDescriptorIidBase + counter_set_iids_.size());
  begin_counter_packet(batch.ts);
  if (fresh) {
    std::vector<const CounterSpecText*> specs;
    for (uint64_t counter : batch.set) specs.push_back(&counter_specs_[counter]);
    write_gpu_counter_descriptor(set->second, batch.gpu_id, specs);
  }
  packet_.begin(Packet::gpu_counter_event);
  packet_.varint_field(CounterEvent::counter_descriptor_iid, set->second);
  for (const CounterSample& s : batch.samples) {
    packet_.begin(CounterEvent::counters);
    packet_.varint_field(CounterEvent::counter_id, counter_specs_[s.counter].counter_id);
    if (s.is_int) packet_.int_field(CounterEvent::int_value, s.i);
    else packet_.double_field(CounterEvent::double_value, s.d);
    packet_.end();
  }
  packet_.end();
  packet_.end();
  maybe_flush();
  last_batch_counters_.clear();
  for (const CounterSample& s : batch.samples) last_batch_counters_.push_back(s.counter);
  batch.open = false;
  batch.samples.clear();
}

// GPU utilization samples: GpuCounterEvents on sequence kCounterSequence, at absolute timestamps on the session clock
// (the trace's default clock, from time_at_zero_; no incremental clock there), each GPU's counter described in the
// packet of its first sample.
void PerfettoTraceWriter::write_utilization() {
  for (const GpuUtilization::Sample& u : utilization_samples_) {
    const GpuUtilization::GpuKey& gpu = utilization_.gpus()[u.gpu];
    begin_counter_packet(u.ts);
    if (u.gpu >= utilization_described_.size()) utilization_described_.resize(u.gpu + 1, false);
    if (!utilization_described_[u.gpu]) {
      utilization_described_[u.gpu] = true;
      static const CounterSpecText kUtilization{
          kUtilizationCounter, GpuUtilization::kName,
          "Share of each millisecond during which kernels, memcpys or memsets ran on this GPU", CounterSpec::kPercent};
      write_gpu_counter_descriptor(u.gpu + 1, perfetto_gpu_id(gpu.report, gpu.device), {&kUtilization});
    }
    write_gpu_counter_value(u.gpu + 1, kUtilizationCounter, [&] {
      packet_.double_field(CounterEvent::double_value, GpuUtilization::percent(u.busy_ns));
    });
  }
  utilization_samples_.clear();
  maybe_flush();
}

uint64_t PerfettoTraceWriter::intern(StringInterner& table, std::string_view s, uint32_t interned_field) {
  auto [iid, fresh] = table.intern(s);
  if (fresh) write_interned(interned_field, iid, s);
  return iid;
}

void PerfettoTraceWriter::write_interned(uint32_t interned_field, uint64_t iid, std::string_view s) {
  interned_.begin(interned_field);
  interned_.varint_field(Interned::iid, iid);
  interned_.bytes_field(Interned::name, s);  // the same field number (2) for names and InternedString.str
  interned_.end();
}

uint64_t PerfettoTraceWriter::process_uuid(const Track& track) {
  auto [it, fresh] = processes_.try_emplace(track.pid, 0);
  if (!fresh) return it->second;
  it->second = next_uuid_++;
  begin_packet(last_ts_);
  packet_.begin(Packet::track_descriptor);
  packet_.varint_field(Descriptor::uuid, it->second);
  packet_.begin(Descriptor::process);
  packet_.int_field(ProcessDesc::pid, track.pid);
  if (track.process_name) packet_.bytes_field(ProcessDesc::process_name, *track.process_name);
  packet_.int_field(ProcessDesc::legacy_sort_index, track.pid);  // the JSON's order: CPU processes, then GPUs
  packet_.end();
  packet_.varint_field(Descriptor::child_ordering, Descriptor::kExplicitOrder);
  packet_.end();
  end_packet();
  return it->second;
}

uint64_t PerfettoTraceWriter::track_uuid(const Track& track, uint32_t lane) {
  if (&track != last_track_) {  // rows come in runs on a track
    last_track_ = &track;
    last_track_uuids_ = &tracks_[&track];
  }
  TrackUuids& t = *last_track_uuids_;
  if (lane < t.lanes.size() && t.lanes[lane] != 0) return t.lanes[lane];
  if (lane >= t.lanes.size()) t.lanes.resize(lane + 1, 0);
  // A thread's own track is the thread itself (described once, also for its CPU samples: thread_uuid); every other
  // track (and every extra lane) is named, under its parent.
  if (lane == 0 && track.placement == Placement::cpu_thread && track.has_own_id)
    if (uint64_t uuid = thread_uuid(track, track.own_id); uuid != 0) return t.lanes[0] = uuid;
  // A track of its thread's own (NCCL's ranges) is drawn under the thread, named as it is there ("NCCL"); its extra
  // lanes under it.
  uint64_t thread = track.name_under_thread.empty() ? 0 : thread_uuid(track, track.thread_tid);
  const std::string& name = thread != 0 ? track.name_under_thread : track.name;
  uint64_t parent = lane != 0 ? track_uuid(track, 0) : thread != 0 ? thread : process_uuid(track);
  uint64_t uuid = t.lanes[lane] = next_uuid_++;
  begin_packet(last_ts_);
  packet_.begin(Packet::track_descriptor);
  packet_.varint_field(Descriptor::uuid, uuid);
  packet_.varint_field(Descriptor::parent_uuid, parent);
  packet_.bytes_field(Descriptor::name, lane == 0 ? name : fmt::format("{} [lane {}]", name, lane));
  // Perfetto merges same-named tracks of a process unless told not to: two threads both named "python3" have two
  // "python3 (NVTX start/end)" tracks, which must stay apart (as their tids do in the JSON).
  packet_.varint_field(Descriptor::sibling_merge_behavior, Descriptor::kMergeNone);
  // The JSON's track order in its process: by id (a thread's tid, a stream's id, then the tracks without one), and
  // lanes right after their track.
  int64_t rank = lane == 0 ? (track.has_own_id ? track.own_id : (int64_t{1} << 24) + track.id) : lane;
  packet_.int_field(Descriptor::sibling_order_rank, std::min<int64_t>(rank, INT32_MAX));
  if (lane == 0) packet_.varint_field(Descriptor::child_ordering, Descriptor::kExplicitOrder);
  packet_.end();
  end_packet();
  return uuid;
}

uint64_t PerfettoTraceWriter::thread_uuid(const Track& track, int32_t tid) {
  if (track.pid <= 0 || tid <= 0) return 0;  // not an OS thread Perfetto can describe
  auto [it, fresh] = threads_.try_emplace(std::make_pair(track.pid, tid), 0);
  if (!fresh) return it->second;
  process_uuid(track);
  it->second = next_uuid_++;
  begin_packet(last_ts_);
  packet_.begin(Packet::track_descriptor);
  packet_.varint_field(Descriptor::uuid, it->second);
  packet_.begin(Descriptor::thread);
  packet_.int_field(ThreadDesc::pid, track.pid);
  packet_.int_field(ThreadDesc::tid, tid);
  packet_.bytes_field(ThreadDesc::thread_name, track.thread_name);
  packet_.end();
  packet_.int_field(Descriptor::sibling_order_rank, tid);  // the JSON's order: threads by tid
  packet_.varint_field(Descriptor::child_ordering, Descriptor::kExplicitOrder);
  packet_.end();
  end_packet();
  return it->second;
}

uint64_t PerfettoTraceWriter::frame_iid(const StackFrame& f) {
  key_.assign(f.symbol.data(), f.symbol.size());
  key_.push_back('\0');
  key_.append(f.module.data(), f.module.size());
  auto [iid, fresh_frame] = frames_.intern(key_);
  if (!fresh_frame) return iid;
  uint64_t function = intern(function_names_, f.symbol, Interned::function_names);
  uint64_t mapping = 0;
  if (!f.module.empty()) {
    auto [m, fresh] = mappings_.intern(f.module);
    mapping = m;
    if (fresh) {
      uint64_t path = intern(mapping_paths_, f.module, Interned::mapping_paths);
      interned_.begin(Interned::mappings);
      interned_.varint_field(Mapping::iid, mapping);
      interned_.varint_field(Mapping::path_string_ids, path);
      interned_.end();
    }
  }
  interned_.begin(Interned::frames);
  interned_.varint_field(Frame::iid, iid);
  interned_.varint_field(Frame::function_name_id, function);
  if (mapping != 0) interned_.varint_field(Frame::mapping_id, mapping);
  interned_.end();
  return iid;
}

uint64_t PerfettoTraceWriter::callstack_iid(const Stack& stack) {
  if (stack.frames.empty()) return 0;
  // Perfetto's callstacks run from the outermost frame; nsys's from the innermost.
  frame_ids_.clear();
  for (auto f = stack.frames.rbegin(); f != stack.frames.rend(); ++f) frame_ids_.push_back(frame_iid(*f));
  // Looked up by the frame iids' bytes, in a reused buffer: no allocation per sample for a stack seen before.
  key_.assign(reinterpret_cast<const char*>(frame_ids_.data()), frame_ids_.size() * sizeof(uint64_t));
  auto [iid, fresh] = callstacks_.intern(key_);
  if (!fresh) return iid;
  interned_.begin(Interned::callstacks);
  interned_.varint_field(Callstack::iid, iid);
  for (uint64_t frame : frame_ids_) interned_.varint_field(Callstack::frame_ids, frame);
  interned_.end();
  return iid;
}

// A CPU sample: Perfetto's own stack sample of its thread (so the UI draws it on the thread and aggregates any
// selection into a flame graph), with its cpu and privilege mode (the innermost frame's).
void PerfettoTraceWriter::add_sample(const TraceRow& row, int64_t ts, const ArgsSource& args) {
  struct SampleArgs final : IgnoringArgs {
    PerfettoTraceWriter& w;
    explicit SampleArgs(PerfettoTraceWriter& writer) : w(writer) {}
    std::optional<int64_t> cpu;
    bool kernel = false;
    uint64_t callstack = 0;
    ArgsSink& integer(std::string_view k, int64_t v) override { return k == "cpu" ? (cpu = v, *this) : *this; }
    ArgsSink& stack(std::string_view, const Stack& s) override {
      kernel = !s.frames.empty() && s.frames.front().kernel;
      // Perfetto's importer leaves out a sample without a callstack: one without frames gets a single frame saying so.
      static const Stack none{{StackFrame{kNoStack, {}}}, 0};
      callstack = w.callstack_iid(s.frames.empty() ? none : s);
      return *this;
    }
  } sample(*this);
  const Track& track = *row.track;
  thread_uuid(track, track.thread_tid);  // names the thread
  begin_packet(ts);
  args.write(sample);  // interns the stack into this packet
  packet_.begin(Packet::stack_sample);
  packet_.begin(Sample::task_context);
  packet_.varint_field(Sample::task_pid, static_cast<uint32_t>(track.pid));
  packet_.varint_field(Sample::task_tid, static_cast<uint32_t>(track.thread_tid));
  packet_.end();
  if (sample.cpu && *sample.cpu >= 0) {
    packet_.begin(Sample::execution_context);
    packet_.varint_field(Sample::exec_cpu, static_cast<uint64_t>(*sample.cpu));
    packet_.varint_field(Sample::exec_mode, sample.kernel ? Sample::kModeKernel : Sample::kModeUser);
    packet_.end();
  }
  if (sample.callstack != 0) packet_.varint_field(Sample::callstack_iid, sample.callstack);
  packet_.end();
  end_packet();
}

void PerfettoTraceWriter::end_slices_until(int64_t ts) {
  while (!ends_.empty() && ends_.top().end <= ts) {
    PendingEnd e = ends_.top();
    ends_.pop();
    begin_packet(e.end);
    packet_.begin(Packet::track_event);
    packet_.varint_field(Event::type, Event::kSliceEnd);
    packet_.varint_field(Event::track_uuid, e.uuid);
    packet_.end();
    end_packet();
  }
}

void PerfettoTraceWriter::add_row(const TraceRow& row, const ArgsSource& args) {
  ++events_;
  ++by_kind_[static_cast<int>(row.kind)];
  ViewerTime drawn = viewer_time(row.ts, row.has_dur, row.dur, latest_ts_);
  const int64_t ts = drawn.ts, dur = drawn.dur;
  const bool clamped = drawn.moved();
  clamped_ += drawn.before_zero;
  clamped_late_ += drawn.after_latest;
  if (GpuUtilization::counts(row.kind) && row.has_dur) {
    note_gpu(perfetto_gpu_id(row.report, row.device_id), *row.track);
    utilization_.add(row.pid, row.report, row.device_id, ts, dur, utilization_samples_);
    if (!utilization_samples_.empty()) write_utilization();
  }
  end_slices_until(ts);

  if (kind_spec(row.kind).extent == Extent::counter) {  // a sample of a GPU counter (GPU metrics, CUDA memory)
    add_gpu_counter(row, ts, args);
    return;
  }

  if (row.kind == Kind::cpu_sample) {
    add_sample(row, ts, args);
    return;
  }

  const bool typed_gpu_work = gpu_model_ == GpuModel::typed && is_gpu_work(row.kind);
  uint64_t uuid = typed_gpu_work ? 0 : track_uuid(*row.track, row.lane);
  FlowLinker::Link link = flows_.link(row.kind, FlowEnds{row.has_correlation, row.correlation_id, row.has_global_tid,
                                                         row.global_tid, row.report},
                                      row.ts, next_flow_);
  if (typed_gpu_work) {
    uint64_t event_id = link.launched_by ? link.launched_by->endpoint : next_own_event_id_++;
    add_gpu_work(row, ts, dur, clamped, event_id, link.launched_by != nullptr, args);
    return;
  }
  uint64_t& category = category_iids_[static_cast<int>(row.kind)];
  begin_packet(ts);
  packet_.begin(Packet::track_event);
  packet_.varint_field(Event::type, row.has_dur ? Event::kSliceBegin : Event::kInstant);
  packet_.varint_field(Event::track_uuid, uuid);
  if (category == 0) category = intern(categories_, kind_name(row.kind), Interned::event_categories);
  packet_.varint_field(Event::category_iids, category);
  // By the export's string id where the name is a registered string (no hashing), else by its text.
  auto [name_iid, fresh_name] =
      row.name_id >= 0 ? names_.intern_registered(row.report, row.name_id, row.name) : names_.intern(row.name);
  if (fresh_name) write_interned(Interned::event_names, name_iid, row.name);
  packet_.varint_field(Event::name_iid, name_iid);
  // Perfetto keeps one copy of each distinct arg set: a value unique to every event makes every set distinct and
  // costs its memory on every event (a third of the import's, on a large profile). Two such values are left out
  // where the trace shows them otherwise: a correlation id where a flow arrow draws the link (the API call that
  // flows out, the GPU work an arrow reaches), and nvtx_kernel's nvtx_rowid (a join key of trace_events and
  // nvtx_kernel_ranges, nothing a viewer can use). trace_events and the JSON keep both.
  std::string_view skip = row.kind == Kind::nvtx_kernel              ? "nvtx_rowid"
                          : (link.recorded || link.launched_by) ? "correlation_id"
                                                                : "";
  Annotations annotations(*this, skip, row.kind);
  if (clamped) {
    annotations.integer("recorded_ts_ns", row.ts);
    if (row.has_dur) annotations.integer("recorded_dur_ns", row.dur);
  }
  args.write(annotations);
  if (annotations.callstack != 0) packet_.varint_field(Event::callstack_iid, annotations.callstack);
  if (link.recorded || link.launched_by) {  // an API call's flow out, or the GPU work's flow in
    uint64_t bind_id = link.recorded ? next_flow_++ : link.launched_by->endpoint;
    packet_.begin(Event::legacy_event);
    packet_.varint_field(Legacy::bind_id, bind_id);
    packet_.varint_field(Legacy::flow_direction, link.recorded ? Legacy::kFlowOut : Legacy::kFlowIn);
    packet_.end();
    // The typed model's GPU work is no TrackEvent: its arrow comes from the call's GpuCorrelation, whose id is the
    // work's event_id. The call does not know yet which kind of work it launched (a graph launch stays a slice and
    // takes the legacy flow): it writes both, and Perfetto draws the one that finds its other end.
    if (link.recorded && gpu_model_ == GpuModel::typed) {
      packet_.begin(Event::gpu_correlation);
      packet_.varint_field(GpuCorrelation::render_stage_submission_event_ids, bind_id);
      packet_.end();
    }
  }
  packet_.end();
  end_packet();
  if (row.has_dur) {
    int64_t end;  // within [0, latest_ts_] (viewer_time), unless a row breaks that promise
    if (__builtin_add_overflow(ts, dur, &end) || dur < 0)
      throw Error(fmt::format("nsystrace: perfetto trace: '{}' at {} ns has a duration of {} ns, which no trace can "
                              "hold", row.name, row.ts, row.dur));
    ends_.push(PendingEnd{end, ++begun_, uuid});
  }
}

bool PerfettoTraceWriter::is_gpu_work(Kind k) { return k == Kind::kernel || k == Kind::memcpy || k == Kind::memset; }

uint64_t PerfettoTraceWriter::hw_queue_iid(const Track& track) {
  auto [it, fresh] = hw_queues_.try_emplace(&track, 0);
  if (!fresh) return it->second;
  it->second = next_spec_iid_++;
  // Named as the stream's track is ("Stream 7", or "Stream 7 (pid 123)" when processes share the id on this GPU),
  // described by its GPU's name.
  interned_.begin(GpuInterned::gpu_specifications);
  interned_.varint_field(StageSpec::iid, it->second);
  interned_.bytes_field(StageSpec::name, track.name);
  if (track.process_name) interned_.bytes_field(StageSpec::description, *track.process_name);
  interned_.end();
  return it->second;
}

uint64_t PerfettoTraceWriter::stage_iid(Kind kind) {
  uint64_t& iid = stage_iids_[static_cast<int>(kind)];
  if (iid != 0) return iid;
  iid = next_spec_iid_++;
  // Kernels are COMPUTE (what Perfetto's GPU compute views list as kernel launches); copies and memsets OTHER. The
  // description (the slice's "description" arg) is the trace_events kind: a slice's category in the other form.
  interned_.begin(GpuInterned::gpu_specifications);
  interned_.varint_field(StageSpec::iid, iid);
  interned_.bytes_field(StageSpec::name, kind == Kind::kernel ? "Kernel" : kind == Kind::memcpy ? "Memcpy" : "Memset");
  interned_.bytes_field(StageSpec::description, kind_name(kind));
  interned_.varint_field(StageSpec::category, kind == Kind::kernel ? StageSpec::kCompute : StageSpec::kOther);
  interned_.end();
  return iid;
}

// The context written for GPU work: a CUDA context of the process that launched it. Perfetto knows a context by
// its id alone (gpu_context), and nsys numbers contexts per process: a contextId another process took first gets an
// id above 2^32 (its real one stays in the "context" arg). Work without a contextId gets its process's own.
uint64_t PerfettoTraceWriter::gpu_context(const TraceRow& row, std::optional<int64_t> context_id) {
  if (!row.has_global_tid) return 0;
  int32_t pid = static_cast<int32_t>(row.report * kReportPidStride + os_pid_of(row.global_tid));
  auto key = std::make_tuple(row.report, pid, context_id.value_or(-1));
  auto [it, fresh] = contexts_.try_emplace(key, 0);
  if (!fresh) return it->second;
  uint64_t id = context_id && *context_id > 0 ? static_cast<uint64_t>(*context_id) : 0;
  if (id == 0 || context_owner_.count(id) != 0) id = next_synthetic_context_++;
  context_owner_.emplace(id, pid);
  it->second = id;
  interned_.begin(GpuInterned::graphics_contexts);
  interned_.varint_field(GraphicsContext::iid, id);
  interned_.int_field(GraphicsContext::pid, pid);
  interned_.varint_field(GraphicsContext::api, GraphicsContext::kCuda);
  interned_.end();
  return id;
}

void PerfettoTraceWriter::add_gpu_work(const TraceRow& row, int64_t ts, int64_t dur, bool clamped, uint64_t event_id,
                                       bool skip_correlation, const ArgsSource& args) {
  const Track& track = *row.track;
  begin_packet(ts);
  packet_.begin(Packet::gpu_render_stage_event);
  packet_.varint_field(RenderStage::event_id, event_id);
  packet_.varint_field(RenderStage::duration, static_cast<uint64_t>(dur));
  packet_.varint_field(RenderStage::hw_queue_iid, hw_queue_iid(track));
  packet_.varint_field(RenderStage::stage_iid, stage_iid(row.kind));
  const int32_t gpu_id = perfetto_gpu_id(row.report, row.device_id);
  note_gpu(gpu_id, track);
  packet_.int_field(RenderStage::gpu_id, gpu_id);
  auto [name_iid, fresh_name] =
      row.name_id >= 0 ? names_.intern_registered(row.report, row.name_id, row.name) : names_.intern(row.name);
  if (fresh_name) write_interned(Interned::event_names, name_iid, row.name);
  packet_.varint_field(RenderStage::name_iid, name_iid);
  packet_.begin(RenderStage::launch);
  ComputeArgs launch(*this, skip_correlation ? "correlation_id" : "");
  launch.one("device", ComputeArg::int_value, static_cast<uint64_t>(row.device_id));
  launch.one("stream", ComputeArg::int_value, static_cast<uint64_t>(row.stream_id));
  if (clamped) {
    launch.one("recorded_ts_ns", ComputeArg::int_value, static_cast<uint64_t>(row.ts));
    launch.one("recorded_dur_ns", ComputeArg::int_value, static_cast<uint64_t>(row.dur));
  }
  args.write(launch);
  if (launch.context_id) launch.one("context", ComputeArg::int_value, static_cast<uint64_t>(*launch.context_id));
  // A copy's bandwidth, as nsys shows it: bytes per second of its duration.
  if (row.kind == Kind::memcpy && launch.bytes && row.dur > 0)
    launch.real("bandwidth_bytes_per_s", static_cast<double>(*launch.bytes) * 1e9 / static_cast<double>(row.dur));
  packet_.end();
  if (uint64_t context = gpu_context(row, launch.context_id); context != 0)
    packet_.varint_field(RenderStage::context, context);
  if (row.kind == Kind::kernel) {
    // Its name is the raw symbol (mangledName) where the export has it, else the short name the slice shows;
    // Perfetto shows them as the args kernel_name, kernel_demangled_name and arch.
    const std::string_view name = launch.has_mangled ? std::string_view(launch.mangled) : row.name;
    kernel_key_.assign(name.data(), name.size());
    for (const auto* part : {&launch.demangled, &launch.arch}) {
      kernel_key_.push_back('\0');
      kernel_key_.append(*part);
    }
    kernel_key_.push_back(static_cast<char>(launch.has_demangled | launch.has_arch << 1));
    auto [kernel_iid, fresh] = compute_kernels_.intern(kernel_key_);
    if (fresh) {
      interned_.begin(GpuInterned::compute_kernels);
      interned_.varint_field(ComputeKernel::iid, kernel_iid);
      interned_.bytes_field(ComputeKernel::name, name);
      if (launch.has_demangled) interned_.bytes_field(ComputeKernel::demangled_name, launch.demangled);
      if (launch.has_arch) interned_.bytes_field(ComputeKernel::arch, launch.arch);
      interned_.end();
    }
    packet_.varint_field(RenderStage::kernel_iid, kernel_iid);
  }
  packet_.end();
  end_packet();
}

void PerfettoTraceWriter::note_gpu(int32_t gpu_id, const Track& track) {
  if (track.process_name && gpu_names_.count(gpu_id) == 0) gpu_names_.emplace(gpu_id, *track.process_name);
}

// The GPUs' names (Perfetto's gpu table, which names the UI's GPU groups). GpuInfo lists GPUs by position, so it is
// written only when the GPUs are 0, 1, ..., n - 1 (one report, CUDA's device numbering): a list with holes would
// make GPUs that do not exist.
void PerfettoTraceWriter::write_gpu_info() {
  if (gpu_names_.empty() || gpu_names_.begin()->first != 0 ||
      gpu_names_.rbegin()->first != static_cast<int32_t>(gpu_names_.size()) - 1)
    return;
  begin_packet(last_ts_);
  packet_.begin(Packet::gpu_info);
  for (const auto& [id, name] : gpu_names_) {
    packet_.begin(GpuInfo::gpus);
    packet_.bytes_field(GpuInfo::name, name);
    packet_.end();
  }
  packet_.end();
  end_packet();
}

void PerfettoTraceWriter::finish(std::string_view metadata_json) {
  end_slices_until(INT64_MAX);
  flush_counter_batch();
  utilization_.finish(utilization_samples_);
  write_utilization();
  write_gpu_info();
  begin_packet(last_ts_);
  packet_.begin(Packet::chrome_events);
  packet_.begin(Metadata::metadata);
  packet_.bytes_field(Metadata::name, "nsystrace");
  packet_.bytes_field(Metadata::json_value, metadata_json);
  packet_.end();
  packet_.end();
  end_packet();
  out_.append(packet_.data());
  packet_.clear();
}

}  // namespace nsystrace
