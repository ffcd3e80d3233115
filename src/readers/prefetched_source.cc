#include "src/readers/prefetched_source.h"

#include <pthread.h>

#include <atomic>

#include <fmt/format.h>

#include "src/readers/recorded_args.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
std::atomic<uint64_t> g_prefetch_min_rows{100000};
}

uint64_t prefetch_min_rows() { return g_prefetch_min_rows.load(std::memory_order_relaxed); }
void set_prefetch_min_rows(uint64_t rows) { g_prefetch_min_rows.store(rows, std::memory_order_relaxed); }

std::unique_ptr<ReaderConnection> ReaderConnection::open(sqlite3* db, const std::string& schema) {
  const char* file = sqlite3_db_filename(db, schema.c_str());
  if (file == nullptr || *file == '\0' || schema == "temp") return nullptr;  // in memory: nothing else can open it
  if (sqlite3_get_autocommit(db) == 0) return nullptr;  // a transaction: db may see its own uncommitted writes
  try {
    Statement mode(db, "PRAGMA " + quote_identifier(schema) + ".journal_mode");
    if (!mode.step() || mode.text(0) == "wal") return nullptr;  // another connection may see another snapshot
  } catch (const Error&) {
    return nullptr;
  }
  sqlite3* reader = nullptr;
  // Read-only; for a schema other than main, an in-memory main (read-only too, so the ATTACH is) and the file
  // ATTACHed under the schema's name, which the readers' SQL names.
  const bool main = schema == "main";
  int rc = sqlite3_open_v2(main ? file : ":memory:", &reader, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  auto connection = std::unique_ptr<ReaderConnection>(new ReaderConnection(reader));  // closes it, even on failure
  if (rc != SQLITE_OK) return nullptr;
  // Pages mapped rather than read a syscall at a time (this connection is ours alone: no user setting changes).
  try {
    Statement(reader, "PRAGMA mmap_size = 1099511627776").step();
  } catch (const Error&) {
  }
  if (!main) {
    try {
      Statement attach(reader, "ATTACH DATABASE ? AS " + quote_identifier(schema));
      attach.bind(1, std::string(file));
      attach.step();
    } catch (const Error&) {
      return nullptr;
    }
  }
  // It must be able to read now (another connection holding the file exclusively, a locking_mode db set, ...):
  // otherwise the tables are read on SQLite's thread, as without threads.
  try {
    Statement probe(reader, "SELECT count(*) FROM " + quote_identifier(schema) + ".sqlite_schema");
    if (!probe.step()) return nullptr;
  } catch (const Error&) {
    return nullptr;
  }
  return connection;
}

ReaderConnection::~ReaderConnection() { sqlite3_close_v2(db_); }

PrefetchedSource::PrefetchedSource(std::unique_ptr<EventSource> reader, std::unique_ptr<ReaderConnection> connection,
                                   sqlite3* main_db, const ProfileCatalog& catalog, const ReportContext& report,
                                   bool args)
    : EventSource(main_db, catalog, report),
      connection_(std::move(connection)),
      reader_(std::move(reader)),
      kind_(reader_->kind()),
      estimated_rows_(reader_->estimated_rows()),
      args_(args) {
  event_.tag = static_cast<uint8_t>(reader_->tag());
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "nsystrace-read");
    run();
  });
}

PrefetchedSource::~PrefetchedSource() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  sqlite3_interrupt(connection_->get());  // a statement of the thread's stops at its next step
  space_.notify_all();
  thread_.join();
}

void PrefetchedSource::run() {
  auto batch = std::make_unique<Batch>();
  auto hand_over = [&]() -> bool {  // false: the scan is gone
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [this] { return queue_.size() < kBatchesAhead || stopping_; });
    if (stopping_) return false;
    queue_.push_back(std::move(batch));
    if (!free_.empty()) {
      batch = std::move(free_.back());
      free_.pop_back();
    }
    lock.unlock();
    ready_.notify_one();
    if (!batch) batch = std::make_unique<Batch>();
    return true;
  };
  try {
    for (;;) {
      batch->rows.reserve(kBatchRows);
      while (batch->rows.size() < kBatchRows) {
        if (!reader_->next()) {
          batch->last = true;
          batch->skipped_at_end = reader_->skipped();
          break;
        }
        const SourceEvent& e = reader_->event();
        Row& r = batch->rows.emplace_back();
        r.event = e;
        r.name_at = static_cast<uint32_t>(batch->bytes.size());
        r.name_size = static_cast<uint32_t>(e.name.size());
        r.name_null = e.name.data() == nullptr;
        batch->bytes.append(e.name.data(), e.name.size());
        r.args_at = static_cast<uint32_t>(batch->bytes.size());
        if (args_) {
          ArgsRecorder recorder(batch->bytes);
          reader_->write_args(recorder);
        }
        r.args_size = static_cast<uint32_t>(batch->bytes.size() - r.args_at);
        r.end_invalid = reader_->end_invalid();
        r.end_was_null = reader_->end_was_null();
        r.stored_end = reader_->stored_end();
        r.skipped = reader_->skipped();
        r.invalid_ends = reader_->invalid_ends();
        if (batch->bytes.size() >= (size_t{1} << 30)) break;  // offsets are 32-bit
      }
      bool last = batch->last;
      if (!hand_over() || last) return;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  ready_.notify_one();
}

void PrefetchedSource::take_batch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (current_) {  // give the consumed batch back to the thread
    current_->rows.clear();
    current_->bytes.clear();
    current_->last = false;
    current_->skipped_at_end = 0;
    free_.push_back(std::move(current_));
  }
  ready_.wait(lock, [this] { return !queue_.empty() || error_; });
  if (queue_.empty()) std::rethrow_exception(error_);  // rows before the error were all handed out first
  current_ = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  space_.notify_one();
  position_ = 0;
}

bool PrefetchedSource::next() {
  if (finished_) return false;
  if (current_ && position_ + 1 < current_->rows.size()) {
    ++position_;
  } else {
    if (current_ && current_->last) {
      finished_ = true;
      skipped_ = current_->skipped_at_end;  // the reader's count as it ended: rows skipped after its last event
      return false;
    }
    take_batch();
    if (current_->rows.empty()) {  // only the last batch can be empty
      finished_ = true;
      skipped_ = current_->skipped_at_end;
      return false;
    }
  }
  const Row& r = current_->rows[position_];
  event_ = r.event;
  event_.name = r.name_null ? std::string_view() : std::string_view(current_->bytes.data() + r.name_at, r.name_size);
  end_invalid_ = r.end_invalid;
  end_was_null_ = r.end_was_null;
  stored_end_ = r.stored_end;
  skipped_ = r.skipped;
  invalid_ends_ = r.invalid_ends;
  return true;
}

void PrefetchedSource::write_args(ArgsSink& args) const {
  const Row& r = current_->rows[position_];
  std::string_view recorded(current_->bytes.data() + r.args_at, r.args_size);
  if (!args.take_recorded(recorded)) replay_args(recorded, args);
}

}  // namespace nsystrace
