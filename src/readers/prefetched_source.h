// A reader that reads on a thread of its own. Most of a scan's time is SQLite reading the event tables (its VDBE,
// its B-trees, the column fetches, the page reads), one table per reader; SQLite runs one connection's statements
// one at a time, so a reader on a connection of its own (to the same file, read-only) reads in parallel with the
// others and with the merge.
//
// The thread records what the merge and the writers would ask the reader for, row by row, into batches: the event
// (its name copied), its args (replayed later into whatever sink asks), its end's repair, and the reader's counts
// of rows skipped so far. The merge sees exactly what the same reader on SQLite's thread would have given, in the
// same order, so every trace and every row of trace_events is the same whatever the thread count.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/readers/event_sources.h"

namespace nsystrace {

// A read-only connection to the file behind schema `schema` of db (ATTACHed under the same name, so the readers'
// SQL reads the same tables), or nothing when there is none to open or it would not see what db sees: an in-memory
// or temporary database, a transaction open on db (its own writes), a WAL database (another snapshot), a failure.
class ReaderConnection {
 public:
  static std::unique_ptr<ReaderConnection> open(sqlite3* db, const std::string& schema);
  ~ReaderConnection();
  sqlite3* get() const { return db_; }

 private:
  explicit ReaderConnection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

class PrefetchedSource final : public EventSource {
 public:
  // reader: opened on connection's database, with the scan's filter; main_db: the scan's connection. args: the
  // scan's ScanFilter::args (without them, no args are recorded).
  PrefetchedSource(std::unique_ptr<EventSource> reader, std::unique_ptr<ReaderConnection> connection,
                   sqlite3* main_db, const ProfileCatalog& catalog, const ReportContext& report, bool args);
  // Stops the thread (interrupting its statement) and joins it.
  ~PrefetchedSource() override;
  bool next() override;
  Kind kind() const override { return kind_; }
  void write_args(ArgsSink& args) const override;
  uint64_t estimated_rows() const override { return estimated_rows_; }

  static constexpr size_t kBatchRows = 4096;
  static constexpr size_t kBatchesAhead = 4;

 private:
  struct Row {
    SourceEvent event;
    uint32_t name_at, name_size, args_at, args_size;  // in Batch::bytes
    bool name_null;  // no name at all (a kernel without short or demangled name): NULL in trace_events, not ''
    bool end_invalid, end_was_null;
    int64_t stored_end;
    uint64_t skipped, invalid_ends;  // the reader's counts as it stood on this row
  };
  struct Batch {
    std::vector<Row> rows;
    std::string bytes;
    bool last = false;  // the reader has no more rows after these
    uint64_t skipped_at_end = 0;  // with last: the reader's count of rows skipped, as it ended
  };
  bool read_row() override { return false; }  // never called: next() takes rows from the thread
  void run();
  void take_batch();  // the next batch into current_ (waits for it); throws the thread's error

  std::unique_ptr<ReaderConnection> connection_;  // declared before reader_: outlives its statements
  std::unique_ptr<EventSource> reader_;
  Kind kind_;
  uint64_t estimated_rows_;
  bool args_;
  // The merge's side.
  std::unique_ptr<Batch> current_;
  size_t position_ = 0;
  bool finished_ = false;
  // Shared, under mutex_.
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<std::unique_ptr<Batch>> queue_, free_;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// The smallest table (in rows) worth a thread: below it, a thread and a connection cost more than they save.
// Settable for tests, which read small fixtures.
uint64_t prefetch_min_rows();
void set_prefetch_min_rows(uint64_t rows);

}  // namespace nsystrace
