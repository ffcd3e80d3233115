// Test helpers: connections with the extension registered, fixture scripts, and one-value queries.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

namespace testdb {

// Where the sources are (for tests/fixtures/*.sql) and where ../shared is, or "" when it is absent.
std::string source_dir();
std::string shared_fixtures_dir();
// The large real export ../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite (GPU metrics, NCCL's domain),
// or "" when it is absent.
std::string large_export();
// The file names (*.sqlite) of the real exports in shared_fixtures_dir(), sorted; none when it is absent.
std::vector<std::string> real_exports();
// Under the sanitizers (tests/run_all.sh sets NSYSTRACE_GRID_STRIDE), the slow comparisons run a sample; the Release
// pass runs them all. 1 when it is not set.
size_t sanitizer_stride();
// Whether the running test skips `item` of `all` under the sanitizers, and why ("" when it runs it): every
// stride-th item runs, the sample turned by the test's name so that each item is in some test's sample. The test
// says the reason with GTEST_SKIP, and CTest reports it skipped. (Instantiating only the sample would not do: CTest
// lists the tests without the stride, and a listed instance that is not instantiated runs no test and passes.)
std::string not_sampled_under_sanitizers(const std::string& item, const std::vector<std::string>& all);
// Where `item` is in `all` (all.size() when it is not): the phase of a parameterized test that takes every n-th
// shape or input of a generated set, so that the instances share the set between them.
size_t position_in(const std::vector<std::string>& all, const std::string& item);
class Db;
// How many typical exports' work one real export is: its trace_events rows / 30,000, at least 1 (the H200 PyTorch
// export, 69,063 rows, is 3). The tests that run a share of a generated grid on each export run a share that many
// times smaller on a heavy one, so that one export does not hold up the suite.
size_t work_weight(Db& db);
// Our own profiles, as paths relative to source_dir(): examples/example_profile.sql first, then
// tests/fixtures/*.sql sorted.
std::vector<std::string> fixture_scripts();

// A file's bytes; "" when it cannot be read.
std::string file_contents(const std::string& path);
// The threads this process has now (/proc/self/task), to check that a conversion joined every thread it started.
int threads_of_this_process();

// A new directory under /tmp (/tmp/<prefix>_XXXXXX), removed with everything in it when this object goes away,
// whether the test passed or stopped at a failed assertion.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // throws std::runtime_error when it cannot be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class Db {
 public:
  // An in-memory database with the statically linked extension registered.
  Db();
  // A file, opened read-only unless writable.
  explicit Db(const std::string& path, bool load_shared_object = false, bool writable = false);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  void exec(const std::string& sql);                      // throws std::runtime_error with SQLite's message
  void exec_file(const std::string& path);                // runs a script (a fixture)
  std::string text(const std::string& sql);               // first column of first row ("" for NULL/no row)
  int64_t integer(const std::string& sql);
  std::vector<std::vector<std::string>> rows(const std::string& sql);  // NULL -> "NULL"
  // The error message a query fails with, or "" when it succeeds.
  std::string error_of(const std::string& sql);

 private:
  sqlite3* db_ = nullptr;
};

// A database with the fixture script (a path relative to source_dir()), and the same script run again into a file
// of dir ATTACHed read-only as `second`: a second report with the same rows, as the multi-report grids use.
void open_with_second_report(Db& db, const std::string& script, const TempDir& dir, const std::string& second);

// A progress handler (sqlite3_progress_handler) that counts its calls and, past `at` of them, interrupts the
// statement running: to cut a conversion or a scan part-way.
struct ProgressCut {
  int calls = 0, at = INT32_MAX;
  static int handler(void* p) {
    auto* c = static_cast<ProgressCut*>(p);
    return ++c->calls > c->at ? 1 : 0;
  }
};

}  // namespace testdb
