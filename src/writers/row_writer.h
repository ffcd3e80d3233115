// One event stream, two formats: a RowWriter consumes the rows of a trace_events scan, in time order, and writes
// one trace format into an OutputBuffer. No reader knows which format it feeds; the SQL functions (chrome_trace*,
// perfetto_trace*) differ only in the writer they make.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/readers/args.h"
#include "src/writers/json_writer.h"
#include "src/writers/perfetto/perfetto_trace_writer.h"
#include "src/timeline/timeline_scan.h"

namespace nsystrace {

class ChromeTraceWriter;

// A row's args, written on demand (in the order they are shown) into whichever sink a format needs.
class RowArgs {
 public:
  virtual ~RowArgs() = default;
  virtual void write(ArgsSink& sink) const = 0;
};

// The args of a scan's current row.
class ScanRowArgs final : public RowArgs {
 public:
  explicit ScanRowArgs(const TimelineScan& scan) : scan_(scan) {}
  void write(ArgsSink& sink) const override { scan_.write_args(sink); }

 private:
  const TimelineScan& scan_;
};

class RowWriter {
 public:
  explicit RowWriter(OutputBuffer& out) : out_(out) {}
  virtual ~RowWriter() = default;
  virtual void add(const TraceRow& row, const RowArgs& args) = 0;
  void add(const TraceRow& row, const TimelineScan& scan) { add(row, ScanRowArgs(scan)); }
  // Every row added so far is written (a writer on another thread is waited for, and its error thrown here): call
  // before reading the counts below for the trace's metadata.
  virtual void drain() {}
  // Ends the trace; other_data: the trace-wide metadata, a JSON object (Chrome's otherData).
  virtual void finish(std::string_view other_data) = 0;
  virtual uint64_t events() const = 0;  // rows added (for progress: also before drain())
  virtual uint64_t bytes_written() const { return out_.total_written(); }  // for progress
  virtual uint64_t flows() const = 0;
  virtual uint64_t clamped_to_zero() const = 0;
  virtual uint64_t clamped_to_latest() const = 0;  // see viewer_time.h
  virtual const std::map<std::string, uint64_t, std::less<>>& kind_counts() const = 0;
  // The Chrome writer behind this one, for explicit-form rows; nullptr for other formats.
  virtual ChromeTraceWriter* chrome() { return nullptr; }

 protected:
  OutputBuffer& out_;
};

enum class TraceFormat { chrome_json, perfetto_protobuf };
// gpu_model: how the Perfetto format writes GPU work (the JSON has one form). realtime_at_zero, time_at_zero:
// Perfetto's clock snapshot (PerfettoTraceWriter); JSON has none.
std::unique_ptr<RowWriter> make_row_writer(TraceFormat format, OutputBuffer& out, GpuModel gpu_model = GpuModel::typed,
                                           std::optional<int64_t> realtime_at_zero = std::nullopt,
                                           int64_t time_at_zero = 0);

}  // namespace nsystrace
