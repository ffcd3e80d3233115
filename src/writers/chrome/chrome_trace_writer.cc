#include "src/writers/chrome/chrome_trace_writer.h"

#include "src/writers/viewer_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace nsystrace {

namespace {
// Tracks sort by their base id, extra lanes ((lane << 24) | base) right after their base.
std::pair<int64_t, int64_t> thread_order(int64_t tid) { return {tid & 0xFFFFFF, tid >> 24}; }
}  // namespace

ChromeTrackIds::Ids ChromeTrackIds::of(const Track& track, uint32_t lane) {
  size_t id = static_cast<size_t>(track.id);
  if (id >= tracks_.size()) {
    tracks_.resize(id + 1);
    seen_.resize(id + 1, false);
  }
  PerTrack* state = &tracks_[id];
  if (!seen_[id]) {
    seen_[id] = true;
    state->base = track.has_own_id ? track.own_id : processes_[track.pid].next_free_base--;
  }
  if (lane >= state->lanes.size()) state->lanes.resize(lane + 1, {-1, std::string()});
  auto& [tid, name] = state->lanes[lane];
  if (tid < 0) {
    if (lane == 0) {
      tid = state->base;
      name = track.name;
    } else {
      tid = lane < 127 ? static_cast<int32_t>((static_cast<int64_t>(lane) << 24) | state->base)
                       : static_cast<int32_t>((int64_t{127} << 24) | (processes_[track.pid].next_overflow++ & 0xFFFFFF));
      name = fmt::format("{} [lane {}]", track.name, lane);
    }
    // Lanes of the thread's own track are (k << 24) | tid, k <= 127: this one sorts after them (k 128 and on).
    if (!track.name_under_thread.empty() && track.thread_tid > 0)
      under_thread_[{track.pid, tid}] = {track.thread_tid & 0xFFFFFF, 128, lane};
  }
  return Ids{tid, &name};
}

std::tuple<int64_t, int64_t, int64_t> ChromeTrackIds::order(int64_t pid, int64_t tid) const {
  if (!under_thread_.empty())
    if (auto it = under_thread_.find({pid, tid}); it != under_thread_.end()) return it->second;
  auto [low, high] = thread_order(tid);
  return {low, high, 0};
}

ChromeTraceWriter::ChromeTraceWriter(OutputBuffer& out) : out_(out) { out_.append("{\"traceEvents\":[\n"); }

void ChromeTraceWriter::begin_event() {
  if (!first_) out_.append(",\n", 2);
  first_ = false;
  out_.maybe_drain();
}

void ChromeTraceWriter::add(const ChromeEvent& ev) {
  begin_event();
  ++events_;
  if (last_kind_count_ == nullptr || ev.kind != last_kind_) {
    auto kc = kind_counts_.find(ev.kind);
    if (kc == kind_counts_.end()) kc = kind_counts_.emplace(std::string(ev.kind), 0).first;
    last_kind_ = kc->first;
    last_kind_count_ = &kc->second;
  }
  ++*last_kind_count_;

  // Perfetto drops every event with a negative timestamp (nsys records some before the session start) and every
  // one it reads past 2^63 ns: such an event is drawn inside [0, kLatestViewerTs] and keeps its recorded times in
  // args (viewer_time.h).
  ViewerTime drawn = viewer_time(ev.ts, ev.has_dur, ev.dur);
  const int64_t ts = drawn.ts, dur = drawn.dur;
  const bool clamped = drawn.moved();
  clamped_ += drawn.before_zero;
  clamped_late_ += drawn.after_latest;
  out_.append("{\"name\":");
  append_json_string(out_, ev.name);
  out_.append(",\"cat\":");
  append_json_string(out_, ev.kind);
  // Rows of counter kinds (gpu_metric, cuda_memory) are counter samples; other rows without a duration, instants.
  bool counter = ev.kind_id && kind_spec(*ev.kind_id).extent == Extent::counter;
  if (counter) out_.append(",\"ph\":\"C\",\"ts\":");
  else out_.append(ev.has_dur ? ",\"ph\":\"X\",\"ts\":" : ",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
  append_ns_as_us(out_, ts);
  if (ev.has_dur) {
    out_.append(",\"dur\":");
    append_ns_as_us(out_, dur);
  }
  out_.append(",\"pid\":");
  append_int(out_, ev.pid);
  out_.append(",\"tid\":");
  append_int(out_, ev.tid);
  if (!ev.cname.empty()) {
    out_.append(",\"cname\":");
    append_json_string(out_, ev.cname);
  }
  bool has_args = !ev.args.empty() && ev.args != "{}";
  if (clamped && !counter) {  // a counter's args are its values: its recorded time is not added there
    out_.append(",\"args\":{\"recorded_ts_ns\":");
    append_int(out_, ev.ts);
    if (ev.has_dur) {
      out_.append(",\"recorded_dur_ns\":");
      append_int(out_, ev.dur);
    }
    std::string_view rest = has_args ? ev.args.substr(1) : std::string_view("}");  // after the object's '{'
    size_t first = rest.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && rest[first] != '}') out_.push_back(',');
    out_.append(rest);
  } else if (has_args) {
    out_.append(",\"args\":");
    out_.append(ev.args);
  }
  out_.push_back('}');
  note_track(ev);

  if (ev.kind_id && GpuUtilization::counts(*ev.kind_id) && ev.has_dur) {
    utilization_.add(static_cast<int32_t>(ev.pid), 0, 0, ts, dur, utilization_samples_);  // by pid only
    if (!utilization_samples_.empty()) write_utilization();
  }

  uint64_t endpoint = (static_cast<uint64_t>(ev.pid) << 32) | static_cast<uint32_t>(ev.tid);
  if (const ApiCall* call = flows_.link(ev.kind_id, ev.flow, ev.ts, endpoint).launched_by) {
    uint64_t id = ++flow_ids_;
    flow_event('s', id, static_cast<int64_t>(call->endpoint >> 32), static_cast<int32_t>(call->endpoint), call->ts);
    flow_event('f', id, ev.pid, ev.tid, ev.ts);  // recorded times: flow_event() draws them where add() did
  }
}

void ChromeTraceWriter::flow_event(char phase, uint64_t id, int64_t pid, int64_t tid, int64_t ts) {
  begin_event();
  out_.append("{\"ph\":\"");
  out_.push_back(phase);
  out_.append(phase == 'f' ? "\",\"bp\":\"e\",\"id\":" : "\",\"id\":");
  append_int(out_, static_cast<int64_t>(id));
  out_.append(",\"cat\":\"cuda_launch\",\"name\":\"launch\",\"pid\":");
  append_int(out_, pid);
  out_.append(",\"tid\":");
  append_int(out_, tid);
  out_.append(",\"ts\":");
  append_ns_as_us(out_, viewer_time(ts, false, 0).ts);  // where add() drew the slice it binds to
  out_.push_back('}');
}

void ChromeTraceWriter::write_utilization() {
  for (const GpuUtilization::Sample& u : utilization_samples_) {
    begin_event();
    out_.append("{\"name\":\"");
    out_.append(GpuUtilization::kName);
    out_.append("\",\"cat\":\"gpu_utilization\",\"ph\":\"C\",\"ts\":");
    append_ns_as_us(out_, u.ts);
    out_.append(",\"pid\":");
    append_int(out_, utilization_.gpus()[u.gpu].pid);
    out_.append(",\"args\":{\"value\":");
    out_.append(GpuUtilization::percent_text(u.busy_ns));  // exact: at most 4 decimals
    out_.append("}}");
  }
  utilization_samples_.clear();
}

void ChromeTraceWriter::note_track(const ChromeEvent& ev) {
  if (ev.pid != last_pid_ && processes_.find(ev.pid) == processes_.end())
    processes_.emplace(ev.pid, ev.process_name ? std::string(*ev.process_name) : std::string());
  last_pid_ = ev.pid;
  auto key = std::make_pair(ev.pid, ev.tid);
  if (key == last_thread_) return;
  last_thread_ = key;
  if (threads_.find(key) == threads_.end())
    threads_.emplace(key, ev.thread_name ? std::string(*ev.thread_name) : std::string());
}

void ChromeTraceWriter::finish(std::string_view other_data) {
  utilization_.finish(utilization_samples_);
  write_utilization();
  auto metadata = [&](const char* what, int64_t pid, const int64_t* tid, const char* arg_key, auto write_value) {
    begin_event();
    out_.append("{\"name\":\"");
    out_.append(what);
    out_.append("\",\"ph\":\"M\",\"pid\":");
    append_int(out_, pid);
    if (tid != nullptr) {
      out_.append(",\"tid\":");
      append_int(out_, *tid);
    }
    out_.append(",\"args\":{\"");
    out_.append(arg_key);
    out_.append("\":");
    write_value();
    out_.append("}}");
  };
  int64_t rank = 0;
  for (const auto& process : processes_) {  // std::map: pid order, GPUs (pid >= 2^24) after CPU processes
    const std::string& name = process.second;
    if (!name.empty()) metadata("process_name", process.first, nullptr, "name", [&] { append_json_string(out_, name); });
    metadata("process_sort_index", process.first, nullptr, "sort_index", [&] { append_int(out_, rank); });
    ++rank;
  }
  std::vector<std::pair<std::pair<int64_t, int64_t>, const std::string*>> threads;
  threads.reserve(threads_.size());
  for (const auto& [key, name] : threads_) threads.emplace_back(key, &name);
  std::sort(threads.begin(), threads.end(), [&](const auto& a, const auto& b) {
    if (a.first.first != b.first.first) return a.first.first < b.first.first;
    auto order_a = track_ids_.order(a.first.first, a.first.second), order_b = track_ids_.order(b.first.first, b.first.second);
    return order_a != order_b ? order_a < order_b : a.first.second < b.first.second;
  });
  int64_t index = 0, last_pid = INT64_MIN;
  for (const auto& thread : threads) {
    const auto& key = thread.first;
    const std::string* name = thread.second;
    if (key.first != last_pid) index = 0, last_pid = key.first;
    if (!name->empty())
      metadata("thread_name", key.first, &key.second, "name", [&] { append_json_string(out_, *name); });
    metadata("thread_sort_index", key.first, &key.second, "sort_index", [&] { append_int(out_, index); });
    ++index;
  }
  out_.append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":");
  out_.append(other_data.empty() ? std::string_view("{}") : other_data);
  out_.append("}\n");
}

}  // namespace nsystrace
