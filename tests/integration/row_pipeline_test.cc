// The trace written on a second thread (src/writers/row_pipeline.h): every row replayed in order with its args,
// the writer's error thrown on SQLite's thread, nothing read from the scan once it is gone, and the same bytes for
// any nsystrace_option('threads').
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "src/model/profile_catalog.h"
#include "src/sqlite/sqlite_api.h"
#include "src/readers/prefetched_source.h"
#include "src/timeline/timeline_scan.h"
#include "src/writers/row_pipeline.h"
#include "tests/support/differential.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

// A writer that records what it is given, as text: the calls a format sees.
class RecordingWriter final : public RowWriter {
 public:
  explicit RecordingWriter(OutputBuffer& out, std::vector<std::string>& log, int64_t throw_at = -1)
      : RowWriter(out), log_(log), throw_at_(throw_at) {}
  void add(const TraceRow& row, const RowArgs& args) override {
    if (static_cast<int64_t>(log_.size()) == throw_at_) throw Error("the writer failed at this row");
    std::string json;
    JsonArgs a(json);
    args.write(a);
    a.close();
    log_.push_back(fmt::format("{} {} {} {} {} {}|{}|{}", static_cast<int>(row.kind), row.name, row.ts, row.dur,
                               row.track ? row.track->name : "-", row.process_name ? *row.process_name : "-",
                               row.schema ? *row.schema : "-", json));
    out_.append("x", 1);
  }
  void finish(std::string_view other) override { log_.push_back(std::string(other)); }
  uint64_t events() const override { return log_.size(); }
  uint64_t flows() const override { return 7; }
  uint64_t clamped_to_zero() const override { return 0; }
  uint64_t clamped_to_latest() const override { return 0; }
  const std::map<std::string, uint64_t, std::less<>>& kind_counts() const override { return counts_; }

 private:
  std::vector<std::string>& log_;
  int64_t throw_at_;
  std::map<std::string, uint64_t, std::less<>> counts_;
};

// Args of every type, varying with the row.
class TestArgs final : public RowArgs {
 public:
  explicit TestArgs(int i) : i_(i) {}
  void write(ArgsSink& s) const override {
    s.integer("i", i_).unsigned_integer("u", UINT64_MAX - i_).real("r", i_ / 3.0).boolean("b", i_ % 2 == 0);
    s.string("s", std::string(i_ % 7, 'a' + i_ % 26)).null("n").triple("grid", i_, -i_, 3);
    if (i_ % 5 == 0) {
      Stack stack;
      std::string sym = "f" + std::to_string(i_);
      stack.frames.push_back(StackFrame{sym, "libx.so", true, false});
      stack.frames.push_back(StackFrame{"main", "", false, true});
      stack.missing_depths = i_ % 3;
      s.stack("stack", stack);
    }
  }

 private:
  int i_;
};

struct Rows {
  std::vector<std::unique_ptr<Track>> tracks;
  std::vector<std::unique_ptr<std::string>> strings;
  // Row i on one of a few tracks; its name, track, process name and schema live only until the next row is made
  // (as the scan's buffers do), or until the test frees them (as a closed scan does).
  TraceRow make(int i) {
    auto process = std::make_unique<std::string>("process " + std::to_string(i % 3));
    auto schema = std::make_unique<std::string>(i % 2 ? "main" : "rank1");
    auto track = std::make_unique<Track>();
    track->name = "track " + std::to_string(i % 4);
    track->process_name = process.get();
    name = "name " + std::to_string(i);
    TraceRow row;
    row.kind = static_cast<Kind>(i % kKindCount);
    row.name = name;
    row.ts = 1000 + i;
    row.dur = i % 11;
    row.has_dur = true;
    row.track = track.get();
    row.process_name = process.get();
    row.schema = schema.get();
    tracks.push_back(std::move(track));
    strings.push_back(std::move(process));
    strings.push_back(std::move(schema));
    return row;
  }
  std::string name;
};

constexpr int kRows = static_cast<int>(3 * PipelinedRowWriter::kBatchRows + 17);

TEST(RowPipeline, ReplaysEveryRowInOrderWithItsArgs) {
  OutputBuffer direct_out, piped_out;
  std::vector<std::string> direct, piped;
  RecordingWriter reference(direct_out, direct);
  PipelinedRowWriter pipeline(std::make_unique<RecordingWriter>(piped_out, piped), piped_out);
  Rows a, b;
  for (int i = 0; i < kRows; ++i) {
    reference.add(a.make(i), TestArgs(i));
    pipeline.add(b.make(i), TestArgs(i));
    b.name.assign(b.name.size(), '#');  // the scan's name buffer moves on with the next row
  }
  EXPECT_EQ(pipeline.events(), static_cast<uint64_t>(kRows));
  // The scan is closed before the writer is done: its tracks and strings are gone, so the writer must have copied
  // what it needs (under AddressSanitizer, a read of them is an error).
  b.tracks.clear();
  b.strings.clear();
  pipeline.drain();
  pipeline.finish("{\"end\":1}");
  reference.finish("{\"end\":1}");
  ASSERT_EQ(piped.size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i) ASSERT_EQ(piped[i], direct[i]) << "row " << i;
  EXPECT_EQ(pipeline.events(), static_cast<uint64_t>(kRows + 1));  // the inner writer's count once drained
  EXPECT_EQ(pipeline.bytes_written(), static_cast<uint64_t>(kRows));
  EXPECT_EQ(pipeline.flows(), 7u);
}

TEST(RowPipeline, TheWritersErrorIsThrownOnTheScansThread) {
  OutputBuffer out;
  std::vector<std::string> log;
  PipelinedRowWriter pipeline(std::make_unique<RecordingWriter>(out, log, 5000), out);
  Rows rows;
  std::string error;
  try {
    for (int i = 0; i < kRows; ++i) pipeline.add(rows.make(i), TestArgs(i));
    pipeline.drain();
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "the writer failed at this row");
  EXPECT_EQ(log.size(), 5000u);  // nothing written after the failed row
}

TEST(RowPipeline, AnAbandonedTraceStopsTheWriter) {
  OutputBuffer out;
  std::vector<std::string> log;
  Rows rows;
  {
    PipelinedRowWriter pipeline(std::make_unique<RecordingWriter>(out, log), out);
    for (int i = 0; i < kRows; ++i) pipeline.add(rows.make(i), TestArgs(i));
  }  // destroyed without drain(): joins its worker, whatever it had left
  EXPECT_LE(log.size(), static_cast<size_t>(kRows));
}

using testdb::threads_of_this_process;  // the conversion's own threads: as many after it as before

// The first column of the first row, as bytes (a BLOB or a text).
std::string value_of(testdb::Db& db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    throw std::runtime_error(sqlite3_errmsg(db.get()));
  std::string out;
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    out.assign(static_cast<const char*>(sqlite3_column_blob(s, 0)), static_cast<size_t>(sqlite3_column_bytes(s, 0)));
  std::string err = rc == SQLITE_ROW ? "" : sqlite3_errmsg(db.get());
  sqlite3_finalize(s);
  if (!err.empty()) throw std::runtime_error(err + ": " + sql);
  return out;
}

// Both formats, as a value and as a file, for 1, 2 and 8 threads: the same bytes. Adds the projected rows of the ts
// window it compares to `projected_in_windows` (the callers check that some windows had some).
void expect_same_bytes_for_any_thread_count(testdb::Db& db, const std::string& label, int64_t& projected_in_windows) {
  testdb::TempDir tmp("nsystrace_pipeline");
  const int before = threads_of_this_process();
  const bool rows = db.integer("select count(*) from trace_events where derived in (0, 1)") > 0;
  for (const char* form : {"perfetto_trace(*)", "chrome_trace(*)", "perfetto_trace_file('@')", "chrome_trace_file('@')"}) {
    if (!rows && std::string(form).find('@') != std::string::npos) continue;  // no rows, no file
    std::string reference;
    for (int threads : {1, 2, 8}) {
      db.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
      std::string call = form, trace;
      if (size_t at = call.find('@'); at != std::string::npos) {
        std::string path = tmp.file("t" + std::to_string(threads));
        call.replace(at, 1, path);
        value_of(db, "select " + call + " from trace_events where derived in (0, 1)");
        trace = testdb::file_contents(path);
      } else {
        trace = value_of(db, "select " + call + " from trace_events where derived in (0, 1)");
      }
      ASSERT_FALSE(trace.empty()) << label << " " << form;
      if (threads == 1) reference = trace;
      else EXPECT_TRUE(trace == reference) << label << ": " << form << " with " << threads << " threads differs";
    }
  }
  // Every row of trace_events, as the readers on threads give them.
  std::string reference;
  for (int threads : {1, 2, 8}) {
    db.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
    std::string rows = value_of(db, "select group_concat(json_array(rowid, kind, name, ts, dur, pid, tid, args, "
                                    "correlation_id, global_tid, device_id, stream_id), char(10)) from trace_events "
                                    "where derived in (0, 1)");
    if (threads == 1) reference = rows;
    else EXPECT_TRUE(rows == reference) << label << ": trace_events with " << threads << " threads differs";
  }
  // The middle half of the timeline, with derived rows: a window's projection is computed while the readers run
  // (TimelineScan). A new connection for each thread count, since a connection keeps the projection it computed.
  if (rows) {
    const std::string file = sqlite3_db_filename(db.get(), "main");
    const int64_t first = db.integer("select min(ts) from trace_events where derived in (0, 1)");
    const int64_t last = db.integer("select max(ts) from trace_events where derived in (0, 1)");
    const uint64_t quarter = (static_cast<uint64_t>(last) - static_cast<uint64_t>(first)) / 4;  // up to 2^64 - 1
    const std::string window = std::to_string(first + static_cast<int64_t>(quarter)) + " and " +
                               std::to_string(last - static_cast<int64_t>(quarter));
    projected_in_windows += db.integer("select count(*) from trace_events where ts between " + window +
                                       " and derived = 1");
    std::string window_reference;
    for (int threads : {1, 2, 8}) {
      testdb::Db fresh(file);
      fresh.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
      std::string rows = value_of(fresh, "select group_concat(json_array(rowid, kind, name, ts, dur, pid, tid, args, "
                                         "correlation_id, global_tid, device_id, stream_id), char(10)) from "
                                         "trace_events where ts between " + window + " and derived in (0, 1)");
      if (threads == 1) window_reference = rows;
      else EXPECT_TRUE(rows == window_reference) << label << ": a window with " << threads << " threads differs";
    }
  }
  EXPECT_EQ(threads_of_this_process(), before) << label;
}

using testdb::ProgressCut;

// Every table read on a thread of its own, however small (the default leaves small tables to SQLite's thread).
class ReadersOnThreads {
 public:
  ReadersOnThreads() : saved_(prefetch_min_rows()) { set_prefetch_min_rows(0); }
  ~ReadersOnThreads() { set_prefetch_min_rows(saved_); }

 private:
  uint64_t saved_;
};

// The fixtures as files (a reader on a thread opens its own connection to the file; an in-memory database has none).
std::string fixture_file(const testdb::TempDir& tmp, const std::string& script) {
  std::string path = tmp.file(script.substr(script.rfind('/') + 1) + ".sqlite");
  testdb::Db made(path, false, true);
  made.exec_file(testdb::source_dir() + "/" + script);
  return path;
}

TEST(RowPipeline, AnyThreadCountGivesTheSameBytesOnEveryFixture) {
  ReadersOnThreads every_table;
  testdb::TempDir tmp("nsystrace_fixtures");
  std::vector<std::string> scripts = testdb::fixture_scripts();
  ASSERT_GT(scripts.size(), 10u);
  const size_t stride = testdb::sanitizer_stride();  // under the sanitizers, a sample: every stride-th fixture
  int64_t projected = 0;
  for (size_t i = 0; i < scripts.size(); i += stride) {
    const std::string& script = scripts[i];
    testdb::Db db(fixture_file(tmp, script));
    if (db.integer("select count(*) from sqlite_schema where name = 'StringIds'") == 0) continue;  // not an export
    expect_same_bytes_for_any_thread_count(db, script, projected);
  }
  EXPECT_GT(projected, 0) << "no fixture's window held a projected row: the windowed projection went unchecked";
}

// A kernel with neither a short nor a demangled name has a NULL name, whichever thread reads it (a reader on a thread
// of its own copies names into its batches, where "no name" had become '').
TEST(RowPipeline, ANamelessKernelIsNullOnAnyThreadCount) {
  ReadersOnThreads every_table;
  testdb::TempDir tmp("nsystrace_nameless");
  const std::string path = tmp.file("nameless.sqlite");
  {
    testdb::Db made(path, false, true);
    made.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'k');"
              "create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, shortName);"
              "insert into CUPTI_ACTIVITY_KIND_KERNEL values (10, 20, 0, 7, 1), (30, 40, 0, 7, null), (50, 60, 0, 7, 1)");
  }
  for (int threads : {1, 4}) {
    testdb::Db db(path);
    db.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
    EXPECT_EQ(db.rows("select ts, name is null, quote(name) from trace_events"),
              (std::vector<std::vector<std::string>>{{"10", "0", "'k'"}, {"30", "1", "NULL"}, {"50", "0", "'k'"}}))
        << threads << " threads";
  }
}

// Statements prepared on the connection that read one sorted run of a table (EventSource's merge), as they start.
class RunsRead {
 public:
  explicit RunsRead(sqlite3* db) : db_(db) { sqlite3_trace_v2(db_, SQLITE_TRACE_STMT, &RunsRead::callback, this); }
  ~RunsRead() { sqlite3_trace_v2(db_, 0, nullptr, nullptr); }
  int count() const { return count_; }

 private:
  static int callback(unsigned, void* self, void* stmt, void*) {
    const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(stmt));
    if (sql != nullptr && std::string(sql).find("rowid BETWEEN") != std::string::npos)
      ++static_cast<RunsRead*>(self)->count_;
    return 0;
  }
  sqlite3* db_;
  int count_ = 0;
};

// A table stored as interleaved runs, each in time order (from nsys 2025.6, each thread's CUDA calls are stored as
// blocks): generated tables of 2 to 200 runs, overlapping all at once or about four at a time, with equal times and
// ends within and across runs and rows without a start. Their rows come out in time order, ties in stored order,
// filtered or not, on any thread count; read as stored by a merge of the runs, unless more than
// ProfileCatalog::kMaxOpenRuns overlap (then SQLite sorts the table, and ties may come in any order).
TEST(RowPipeline, TablesStoredInInterleavedRunsAreMergedInTimeOrder) {
  ReadersOnThreads every_table;  // with threads, every table read on a thread of its own (ThreadSanitizer runs this)
  testdb::TempDir tmp("nsystrace_runs");
  std::mt19937_64 rng(20261127);
  int case_number = 0, merged_cases = 0, sorted_cases = 0;
  for (int runs : {2, 3, 7, 64, 65, 200}) {
    for (bool staggered : {false, true}) {
      struct Row {
        std::optional<int64_t> start;
        int64_t end, device, rowid;
      };
      std::vector<Row> rows;
      std::string path = tmp.file("runs" + std::to_string(case_number++) + ".sqlite");
      {
        testdb::Db made(path, false, true);
        made.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'k');"
                  "create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, "
                  "shortName); begin");
        // 16,000 rows: enough out of place that they are not a few stragglers read apart (more than 4,096).
        const int n = 16000 / runs;
        for (int r = 0; r < runs; ++r) {
          // A run spans about n ns. Overlapping: all begin within 50 ns; staggered: each begins n / 4 ns after the
          // one before, so about four overlap at any time.
          int64_t t = staggered ? n / 4 * r + static_cast<int64_t>(rng() % 20) : static_cast<int64_t>(rng() % 50);
          std::string values;
          int64_t end = INT64_MAX;
          for (int i = 0; i < n; ++i) {
            const int64_t step = static_cast<int64_t>(rng() % 3);  // 0: the same time as the row before
            t += step;
            // In time order within the run: of rows with the same time, the longest first.
            end = std::min(step == 0 ? end : INT64_MAX, t + static_cast<int64_t>(rng() % 4));
            Row row{t, end, static_cast<int64_t>(rng() % 2), static_cast<int64_t>(rows.size() + 1)};
            if (rng() % 500 == 0) row.start.reset();  // no start: skipped, wherever it is stored
            rows.push_back(row);
            values += (values.empty() ? "(" : ", (") +
                      (row.start ? std::to_string(*row.start) : std::string("null")) + ", " +
                      std::to_string(row.end) + ", " + std::to_string(row.device) + ", 7, " +
                      std::to_string(row.rowid) + ", 1)";
          }
          made.exec("insert into CUPTI_ACTIVITY_KIND_KERNEL values " + values);
        }
        made.exec("commit");
      }
      const bool merge = staggered || runs <= static_cast<int>(nsystrace::ProfileCatalog::kMaxOpenRuns);
      (merge ? merged_cases : sorted_cases)++;
      for (int device : {-1, 1}) {
        // Time order, longest first, then stored order.
        std::vector<Row> expected;
        for (const Row& r : rows)
          if (r.start && (device < 0 || r.device == device)) expected.push_back(r);
        std::stable_sort(expected.begin(), expected.end(), [](const Row& a, const Row& b) {
          return *a.start < *b.start || (*a.start == *b.start && a.end > b.end);
        });
        std::vector<std::vector<std::string>> want;
        for (const Row& r : expected)
          want.push_back({std::to_string(*r.start), std::to_string(r.end - *r.start), std::to_string(r.rowid)});
        const std::string label = std::to_string(runs) + (staggered ? " staggered" : " overlapping") + " runs" +
                                  (device < 0 ? "" : ", device_id = 1");
        for (int threads : {1, 4}) {
          testdb::Db db(path);
          db.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
          const std::string sql = "select ts, dur, correlation_id from trace_events" +
                                  (device < 0 ? std::string() : " where device_id = 1");
          std::vector<std::vector<std::string>> got;
          if (threads == 1) {
            RunsRead watch(db.get());
            got = db.rows(sql);
            if (merge) EXPECT_GE(watch.count(), 2) << label << ": not read as a merge of runs";
            else EXPECT_EQ(watch.count(), 0) << label << ": merged more runs than kMaxOpenRuns";
          } else {
            got = db.rows(sql);
          }
          if (merge) {
            EXPECT_EQ(got, want) << label << ", " << threads << " threads";
            continue;
          }
          // SQLite's sort: the same rows, in time order; ties in any order.
          ASSERT_EQ(got.size(), want.size()) << label;
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ((std::vector<std::string>{got[i][0], got[i][1]}),
                      (std::vector<std::string>{want[i][0], want[i][1]})) << label << " row " << i;
          auto same_rows = want;
          std::sort(got.begin(), got.end());
          std::sort(same_rows.begin(), same_rows.end());
          EXPECT_EQ(got, same_rows) << label;
        }
      }
    }
  }
  EXPECT_EQ(merged_cases, 10);
  EXPECT_EQ(sorted_cases, 2);
}

// The generated query grid (tests/support/differential.h) with every table read on a thread: each shape still gives
// SQLite's own answer (time windows and pids are applied by the threads' SQL, on their own connections). The grid's
// reference rows are read with threads too; the test above shows those are the rows one thread reads. The fixture
// is a file, ATTACHed a second time as another report.
TEST(RowPipeline, ReadersOnThreadsGiveSqlitesAnswerOnTheQueryGrid) {
  ReadersOnThreads every_table;
  const size_t stride = 16 * testdb::sanitizer_stride();  // a sample: the full grid runs without threads
  testdb::TempDir tmp("nsystrace_fixtures");
  size_t phase = 0;
  for (const std::string& script : testdb::fixture_scripts()) {
    std::string path = fixture_file(tmp, script);
    testdb::Db db(path);
    if (db.integer("select count(*) from sqlite_schema where name = 'StringIds'") == 0) continue;
    db.exec("attach 'file:" + path + "?mode=ro' as r1");
    db.exec("select nsystrace_option('threads', 4)");
    testdiff::Report r = testdiff::check_query_grid(db, 3, stride, phase++ % stride);
    for (const auto& f : r.failures) ADD_FAILURE() << script << ": " << f;
    EXPECT_GT(r.queries, 0) << script;
  }
}

TEST(RowPipeline, AnyThreadCountGivesTheSameBytesOnEveryRealExport) {
  if (testdb::real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real is absent: no real exports to check";
  const size_t stride = testdb::sanitizer_stride();  // under the sanitizers, a sample: every stride-th export
  const std::vector<std::string> exports = testdb::real_exports();
  ReadersOnThreads every_table;
  int64_t projected = 0;
  for (size_t i = 0; i < exports.size(); i += stride) {
    const std::string& name = exports[i];
    testdb::Db db(testdb::shared_fixtures_dir() + "/" + name);
    expect_same_bytes_for_any_thread_count(db, name, projected);
  }
  // (The sanitizers' sample of three exports may hold no NVTX range with GPU work; every export does.)
  if (stride == 1) {
    EXPECT_GT(projected, 0) << "no export's window held a projected row: the windowed projection went unchecked";
  }
}

TEST(RowPipeline, AnInterruptWhileTheWriterRunsLeavesNoFileAndNoThread) {
  if (testdb::real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real is absent: no large export to cut";
  ReadersOnThreads every_table;
  testdb::Db db(testdb::shared_fixtures_dir() + "/nsysai_h100_2gpu_mfu_before_slice.sqlite");
  testdb::TempDir tmp("nsystrace_pipeline");
  db.exec("select nsystrace_option('threads', 4)");
  const int before = threads_of_this_process();
  for (const char* function : {"perfetto_trace_file", "chrome_trace_file"}) {
    // Cut at half the conversion's work, when rows are being written (the progress handler's calls count it).
    ProgressCut cut;
    sqlite3_progress_handler(db.get(), 1000, ProgressCut::handler, &cut);
    for (int warm = 0; warm < 2; ++warm) {  // the second run's count: the first also fills the catalog's caches
      cut.calls = 0;
      db.exec(std::string("select ") + function + "('" + tmp.file("whole") + "') from trace_events");
    }
    const int whole = cut.calls;
    ASSERT_GT(whole, 100) << function;
    cut = ProgressCut{0, whole / 2};
    sqlite3_progress_handler(db.get(), 1000, ProgressCut::handler, &cut);
    std::string path = tmp.file(std::string(function) + ".out");
    std::string err = db.error_of(std::string("select ") + function + "('" + path + "') from trace_events");
    sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
    EXPECT_NE(err.find("interrupted"), std::string::npos) << function << ": " << err;
    EXPECT_GT(cut.calls, whole / 2) << function;
    std::remove(tmp.file("whole").c_str());
    struct stat st;
    EXPECT_NE(stat(path.c_str(), &st), 0) << function;
    EXPECT_EQ(threads_of_this_process(), before) << function;
  }
  std::string listing;
  if (DIR* d = opendir(tmp.path().c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') listing += std::string(e->d_name) + " ";
    closedir(d);
  }
  EXPECT_EQ(listing, "") << "left behind";
}

// event_totals (the rows totalled per kind and name in one scan, ext/event_totals_vtab.cc) with every table read on a
// thread: the same groups in the same order for any thread count, on every fixture and a second report.
TEST(EventTotals, AnyThreadCountGivesTheSameGroupsInTheSameOrder) {
  ReadersOnThreads every_table;
  testdb::TempDir tmp("nsystrace_fixtures");
  const size_t stride = testdb::sanitizer_stride();
  std::vector<std::string> scripts = testdb::fixture_scripts();
  int compared = 0;
  for (size_t i = 0; i < scripts.size(); i += stride) {
    std::string path = fixture_file(tmp, scripts[i]);
    testdb::Db db(path);
    if (db.integer("select count(*) from sqlite_schema where name = 'StringIds'") == 0) continue;
    db.exec("attach 'file:" + path + "?mode=ro' as r1");
    const std::string q = "select schema, kind, name, domain, events, timed, total_ns, min_ns, max_ns from "
                          "event_totals where derived in (0, 1)";  // every report: the query names schema
    std::vector<std::vector<std::string>> one;
    for (int threads : {1, 2, 8}) {
      db.exec("select nsystrace_option('threads', " + std::to_string(threads) + ")");
      auto rows = db.rows(q);
      if (threads == 1) one = rows;
      else EXPECT_EQ(rows, one) << scripts[i] << ": " << threads << " threads";
    }
    if (!one.empty()) ++compared;  // (the empty fixtures have no groups)
  }
  EXPECT_GE(compared, static_cast<int>(scripts.size() / stride / 2)) << "most fixtures have events";
}

// The whole scan runs in event_totals' xFilter, with every table read on a thread of its own connection, so it
// checks now and then that its statement was not interrupted. On a profile of 300,000 NVTX ranges of one name (one
// group: the query's own steps are a few; most of the progress handler's calls come from those checks), an
// interrupt half-way stops it with SQLite's "interrupted" and leaves no thread.
TEST(EventTotals, AnInterruptStopsTheScanAndLeavesNoThread) {
  ReadersOnThreads every_table;
  testdb::TempDir tmp("nsystrace_totals");
  std::string path = fixture_file(tmp, "examples/example_profile.sql");
  {
    testdb::Db made(path, false, true);
    made.exec("insert into NVTX_EVENTS(start, \"end\", eventType, text, globalTid) with recursive n(i) as (select 1 "
              "union all select i + 1 from n where i < 300000) select 1000 + 10 * i, 1005 + 10 * i, 59, 'one name', "
              "(select globalTid from NVTX_EVENTS limit 1) from n");
  }
  testdb::Db db(path);
  db.exec("select nsystrace_option('threads', 4)");
  const int before = threads_of_this_process();
  const std::string q = "select count(*) from event_totals where kind = 'nvtx'";
  ASSERT_EQ(db.integer(q), 1 + db.integer("select count(distinct name) from trace_events where kind = 'nvtx' and "
                                          "name != 'one name'"));
  ProgressCut cut;
  sqlite3_progress_handler(db.get(), 1, ProgressCut::handler, &cut);
  db.exec(q);
  const int whole = cut.calls;
  ASSERT_GT(whole, 200) << "the checks made while scanning: 300,000 rows / 4,096";
  cut = ProgressCut{0, whole / 2};
  std::string err = db.error_of(q);
  sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
  EXPECT_EQ(err.rfind("interrupted", 0), 0u) << err << ": SQLite's own message, as over trace_events";
  EXPECT_EQ(threads_of_this_process(), before);
}

}  // namespace
}  // namespace nsystrace

namespace {
// How the threads are shared (measured in tests/bench/RESULTS.md, "Speed (#24)"): the rows of the 50x profile.
TEST(ThreadPlan, ReadersFirstAndAWriterThreadWhenThisThreadKeepsMuchOfTheWork) {
  using nsystrace::plan_threads;
  const std::vector<uint64_t> nvtx_and_api = {955900, 373300};  // the tables of 100k rows or more, largest first
  const uint64_t stored = 955900 + 373300 + 200500 + 51000 + 13450 + 18300, projected = stored + 481050;
  // Stored events on 2 threads: the two readers read 82% of the rows; a writer thread would cost more than it saves.
  nsystrace::ThreadPlan p = plan_threads(nvtx_and_api, stored, 2);
  EXPECT_EQ(p.readers, 2u);
  EXPECT_FALSE(p.writer_thread);
  // With the NVTX projection (computed on this thread), a third of the rows stay here: one reader and the writer.
  p = plan_threads(nvtx_and_api, projected, 2);
  EXPECT_EQ(p.readers, 1u);
  EXPECT_TRUE(p.writer_thread);
  // A core for each: both readers and the writer.
  p = plan_threads(nvtx_and_api, stored, 4);
  EXPECT_EQ(p.readers, 2u);
  EXPECT_TRUE(p.writer_thread);
  // Nothing to read elsewhere (small tables, or a name constraint): the writer thread alone.
  p = plan_threads({}, stored, 2);
  EXPECT_EQ(p.readers, 0u);
  EXPECT_TRUE(p.writer_thread);
  // One thread: everything here.
  p = plan_threads(nvtx_and_api, stored, 1);
  EXPECT_EQ(p.readers, 0u);
  EXPECT_FALSE(p.writer_thread);
}
}  // namespace
