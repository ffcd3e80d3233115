#include "src/writers/row_pipeline.h"

#include "src/readers/recorded_args.h"

#include <pthread.h>

#include <cstring>

namespace nsystrace {

namespace {

class RecordedArgs final : public RowArgs {
 public:
  explicit RecordedArgs(std::string_view bytes) : bytes_(bytes) {}
  void write(ArgsSink& sink) const override { replay_args(bytes_, sink); }

 private:
  std::string_view bytes_;
};

}  // namespace

PipelinedRowWriter::PipelinedRowWriter(std::unique_ptr<RowWriter> inner, OutputBuffer& out)
    : RowWriter(out), inner_(std::move(inner)), current_(std::make_unique<Batch>()) {
  current_->rows.reserve(kBatchRows);
  worker_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "nsystrace-write");  // as `top -H` and perf show it
    run();
  });
}

PipelinedRowWriter::~PipelinedRowWriter() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = abandon_ = true;
  }
  work_.notify_one();
  worker_.join();
}

const std::string* PipelinedRowWriter::own_string(const std::string* s) {
  if (s == nullptr) return nullptr;
  // Rows come in runs of a process and report: the last few strings answer most lookups without hashing.
  for (const auto& [from, copy] : recent_strings_)
    if (from == s) return copy;
  auto [it, fresh] = string_copies_.try_emplace(s, nullptr);
  if (fresh) it->second = &strings_.emplace_back(*s);
  recent_strings_[next_recent_++ % recent_strings_.size()] = {s, it->second};
  return it->second;
}

const Track* PipelinedRowWriter::own_track(const Track* track) {
  if (track == last_track_) return last_track_copy_;  // rows come in runs on a track
  auto [it, fresh] = track_copies_.try_emplace(track, nullptr);
  if (fresh) {
    Track& copy = tracks_.emplace_back(*track);
    copy.process_name = own_string(track->process_name);
    it->second = &copy;
  }
  last_track_ = track;
  last_track_copy_ = it->second;
  return it->second;
}

void PipelinedRowWriter::add(const TraceRow& row, const RowArgs& args) {
  Batch& b = *current_;
  Record& r = b.rows.emplace_back();
  r.row = row;
  r.row.track = row.track ? own_track(row.track) : nullptr;
  r.row.process_name = own_string(row.process_name);
  r.row.schema = own_string(row.schema);
  r.name_at = static_cast<uint32_t>(b.bytes.size());
  r.name_size = static_cast<uint32_t>(row.name.size());
  b.bytes.append(row.name.data(), row.name.size());
  r.args_at = static_cast<uint32_t>(b.bytes.size());
  ArgsRecorder recorder(b.bytes);
  args.write(recorder);
  r.args_size = static_cast<uint32_t>(b.bytes.size() - r.args_at);
  ++added_;
  // Offsets are 32-bit: a batch hands over well before 4 GB of names and args.
  if (b.rows.size() == kBatchRows || b.bytes.size() >= (size_t{1} << 30)) hand_over();
}

void PipelinedRowWriter::hand_over() {
  std::unique_lock<std::mutex> lock(mutex_);
  space_.wait(lock, [this] { return queue_.size() < kBatchesAhead || error_; });
  if (error_) std::rethrow_exception(error_);
  queue_.push_back(std::move(current_));
  if (!free_.empty()) {
    current_ = std::move(free_.back());
    free_.pop_back();
  }
  lock.unlock();
  work_.notify_one();
  if (!current_) {
    current_ = std::make_unique<Batch>();
    current_->rows.reserve(kBatchRows);
  }
}

void PipelinedRowWriter::run() {
  for (;;) {
    std::unique_ptr<Batch> batch;
    bool write;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty() || abandon_) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
      write = !error_;  // after an error, batches are only given back (the SQLite thread throws it)
    }
    if (write) {
      try {
        replay(*batch);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      written_.store(inner_->bytes_written(), std::memory_order_relaxed);
    }
    batch->rows.clear();
    batch->bytes.clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(std::move(batch));
    }
    space_.notify_one();
  }
}

void PipelinedRowWriter::replay(Batch& batch) {
  for (Record& r : batch.rows) {
    r.row.name = std::string_view(batch.bytes.data() + r.name_at, r.name_size);
    inner_->add(r.row, RecordedArgs(std::string_view(batch.bytes.data() + r.args_at, r.args_size)));
  }
}

void PipelinedRowWriter::drain() {
  if (drained_) return;
  if (!current_->rows.empty()) hand_over();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  worker_.join();
  drained_ = true;
  if (error_) std::rethrow_exception(error_);
}

void PipelinedRowWriter::finish(std::string_view other_data) {
  drain();
  inner_->finish(other_data);
}

}  // namespace nsystrace
