// One event stream, two formats: a RowWriter consumes the rows of a trace_events scan, in time order, and writes
// one trace format into an OutputBuffer. No reader knows which format it feeds; the SQL functions (chrome_trace*,
// perfetto_trace*) differ only in the writer they make.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "src/writers/json_writer.h"
#include "src/timeline/timeline_scan.h"

namespace nsystrace {

class ChromeTraceWriter;

class RowWriter {
 public:
  virtual ~RowWriter() = default;
  virtual void add(const TraceRow& row, TimelineScan& scan) = 0;  // the scan gives the row's args
  // Ends the trace; other_data: the trace-wide metadata, a JSON object (Chrome's otherData).
  virtual void finish(std::string_view other_data) = 0;
  virtual uint64_t events() const = 0;
  virtual uint64_t flows() const = 0;
  virtual uint64_t clamped_to_zero() const = 0;
  virtual uint64_t clamped_to_latest() const = 0;  // see viewer_time.h
  virtual const std::map<std::string, uint64_t, std::less<>>& kind_counts() const = 0;
  // The Chrome writer behind this one, for explicit-form rows; nullptr for other formats.
  virtual ChromeTraceWriter* chrome() { return nullptr; }
};

enum class TraceFormat { chrome_json, perfetto_protobuf };
std::unique_ptr<RowWriter> make_row_writer(TraceFormat format, OutputBuffer& out);

}  // namespace nsystrace
