#include "src/writers/row_writer.h"

#include "src/writers/chrome/chrome_trace_writer.h"
#include "src/writers/perfetto/perfetto_trace_writer.h"

namespace nsystrace {

namespace {

class ChromeRows final : public RowWriter {
 public:
  explicit ChromeRows(OutputBuffer& out) : RowWriter(out), w_(out) {}
  void add(const TraceRow& r, const RowArgs& args) override {
    ChromeTrackIds::Ids ids = w_.track_ids().of(*r.track, r.lane);
    std::string_view process_name = r.process_name ? std::string_view(*r.process_name) : std::string_view();
    std::string_view thread_name = *ids.name;
    ChromeEvent ev;
    ev.kind_id = r.kind;
    ev.kind = kind_name(r.kind);
    ev.name = r.name;
    ev.ts = r.ts;
    ev.has_dur = r.has_dur;
    ev.dur = r.dur;
    ev.pid = r.pid;
    ev.tid = ids.tid;
    ev.process_name = r.process_name ? &process_name : nullptr;
    ev.thread_name = &thread_name;
    args_.clear();
    JsonArgs json(args_);
    if (kind_spec(r.kind).extent == Extent::counter) {
      // A counter sample's args are its series: only its value (the row's other args stay in trace_events).
      struct ValueOnly final : IgnoringArgs {
        explicit ValueOnly(ArgsSink& to) : to_(to) {}
        ArgsSink& integer(std::string_view k, int64_t v) override {
          if (k == "value") to_.integer(k, v);
          return *this;
        }
        ArgsSink& real(std::string_view k, double v) override {
          if (k == "value") to_.real(k, v);
          return *this;
        }
        ArgsSink& to_;
      } value(json);
      args.write(value);
    } else {
      args.write(json);
    }
    json.close();
    ev.args = args_;
    ev.flow = FlowEnds{r.has_correlation, r.correlation_id, r.has_global_tid, r.global_tid, r.report};
    if (r.cname) ev.cname = r.cname;
    w_.add(ev);
  }
  void finish(std::string_view other_data) override { w_.finish(other_data); }
  uint64_t events() const override { return w_.events(); }
  uint64_t flows() const override { return w_.flows(); }
  uint64_t clamped_to_zero() const override { return w_.clamped_to_zero(); }
  uint64_t clamped_to_latest() const override { return w_.clamped_to_latest(); }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const override { return w_.kind_counts(); }
  ChromeTraceWriter* chrome() override { return &w_; }

 private:
  ChromeTraceWriter w_;
  std::string args_;  // the current row's args as JSON object text
};

class PerfettoRows final : public RowWriter {
 public:
  PerfettoRows(OutputBuffer& out, GpuModel gpu_model, std::optional<int64_t> realtime_at_zero, int64_t time_at_zero)
      : RowWriter(out), w_(out, gpu_model, realtime_at_zero, time_at_zero) {}
  void add(const TraceRow& r, const RowArgs& args) override {
    w_.add(r, [&](ArgsSink& sink) { args.write(sink); });
  }
  void finish(std::string_view other_data) override { w_.finish(other_data); }
  uint64_t events() const override { return w_.events(); }
  uint64_t flows() const override { return w_.flows(); }
  uint64_t clamped_to_zero() const override { return w_.clamped_to_zero(); }
  uint64_t clamped_to_latest() const override { return w_.clamped_to_latest(); }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const override { return w_.kind_counts(); }

 private:
  PerfettoTraceWriter w_;
};

}  // namespace

std::unique_ptr<RowWriter> make_row_writer(TraceFormat format, OutputBuffer& out, GpuModel gpu_model,
                                           std::optional<int64_t> realtime_at_zero, int64_t time_at_zero) {
  if (format == TraceFormat::perfetto_protobuf)
    return std::make_unique<PerfettoRows>(out, gpu_model, realtime_at_zero, time_at_zero);
  return std::make_unique<ChromeRows>(out);
}

}  // namespace nsystrace
