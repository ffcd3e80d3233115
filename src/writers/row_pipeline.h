// A trace written on a second thread while SQLite's thread scans. The scan (SQLite reading the tables, the merge, the
// track layout, reading each row's args) and the writing (interning, encoding, flows, the output and what drains
// it) each take about half of a conversion, and neither needs the other's state, so they overlap.
//
// The SQLite thread records each row into batches: its fields; its name and args copied into the batch (the scan's
// buffers move on with the next row); its track and process name copied once for the whole trace (the scan, which
// owns them, can be closed before the writer has finished). A worker replays the batches, in order, into the
// format's writer: the same calls in the same order, so the trace is the same bytes as when written on one thread.
// A bounded queue keeps memory bounded when the writer is the slower side.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/writers/row_writer.h"

namespace nsystrace {

class PipelinedRowWriter final : public RowWriter {
 public:
  // inner: the format's writer, which from now on is called on the worker only (until drain() returns).
  PipelinedRowWriter(std::unique_ptr<RowWriter> inner, OutputBuffer& out);
  // Stops the worker without writing what it has not written yet (an abandoned trace) and joins it.
  ~PipelinedRowWriter() override;
  void add(const TraceRow& row, const RowArgs& args) override;
  // Waits for the worker to write every row and joins it; throws the error that stopped it, if one did.
  void drain() override;
  void finish(std::string_view other_data) override;
  uint64_t events() const override { return drained_ ? inner_->events() : added_; }
  uint64_t bytes_written() const override { return drained_ ? inner_->bytes_written() : written_.load(std::memory_order_relaxed); }
  // These: after drain().
  uint64_t flows() const override { return inner_->flows(); }
  uint64_t clamped_to_zero() const override { return inner_->clamped_to_zero(); }
  uint64_t clamped_to_latest() const override { return inner_->clamped_to_latest(); }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const override { return inner_->kind_counts(); }

  // Rows per batch, and batches recorded ahead of the writer at most.
  static constexpr size_t kBatchRows = 4096;
  static constexpr size_t kBatchesAhead = 4;

 private:
  struct Record {
    TraceRow row;  // name, track, process_name and schema are re-pointed at the worker's copies
    uint32_t name_at = 0, name_size = 0, args_at = 0, args_size = 0;  // in Batch::bytes
  };
  struct Batch {
    std::vector<Record> rows;
    std::string bytes;  // the rows' names and recorded args
  };
  void run();
  void replay(Batch& batch);
  void hand_over();  // the current batch to the worker; throws the worker's error
  const Track* own_track(const Track* track);
  const std::string* own_string(const std::string* s);

  std::unique_ptr<RowWriter> inner_;
  // The SQLite thread's side.
  std::unique_ptr<Batch> current_;
  uint64_t added_ = 0;
  bool drained_ = false;
  // Copies of what rows point at, made on the SQLite thread before the row is handed over, read by the worker.
  std::deque<Track> tracks_;
  std::deque<std::string> strings_;
  std::unordered_map<const Track*, const Track*> track_copies_;
  std::unordered_map<const std::string*, const std::string*> string_copies_;
  std::array<std::pair<const std::string*, const std::string*>, 4> recent_strings_{};
  size_t next_recent_ = 0;
  const Track* last_track_ = nullptr;
  const Track* last_track_copy_ = nullptr;
  // Shared, under mutex_.
  std::mutex mutex_;
  std::condition_variable work_, space_;
  std::deque<std::unique_ptr<Batch>> queue_, free_;
  bool stopping_ = false, abandon_ = false;
  std::exception_ptr error_;
  std::atomic<uint64_t> written_{0};
  std::thread worker_;
};

}  // namespace nsystrace
