// chrome_trace_file(): streams the same trace as chrome_trace(*) to a file (gzip for .gz), never leaves a partial
// file behind, and refuses what chrome_trace(*) refuses. nsystrace_create_indexes(): the one writing function.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_gzip(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while (gz && (n = gzread(gz, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  if (gz) gzclose(gz);
  return out;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Files of this directory whose name starts with prefix.
int count_files(const std::string& dir, const std::string& prefix) {
  int n = 0;
  std::string cmd = "ls " + dir;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[4096];
    while (fgets(line, sizeof line, p))
      if (std::string(line).rfind(prefix, 0) == 0) ++n;
    pclose(p);
  }
  return n;
}

class TraceFileTest : public ::testing::Test {
 protected:
  void SetUp() override { db.exec_file(testdb::source_dir() + "/examples/example_profile.sql"); }
  testdb::Db db;
  testdb::TempDir tmp{"nsystrace_test"};
  const std::string dir = tmp.path();
};

TEST_F(TraceFileTest, WritesTheSameTraceAsTheTextForm) {
  std::string text = db.text("select chrome_trace(*) from trace_events");
  std::string path = dir + "/trace.json";
  int64_t bytes = db.integer("select chrome_trace_file('" + path + "') from trace_events");
  EXPECT_EQ(read_file(path), text);
  EXPECT_EQ(bytes, static_cast<int64_t>(text.size()));
}

TEST_F(TraceFileTest, GzipsWhenTheNameEndsInGz) {
  std::string where = " from trace_events where kind in ('kernel', 'nvtx') and ts < 2070000000";
  std::string text = db.text("select chrome_trace(*)" + where);
  std::string path = dir + "/trace.json.gz";
  int64_t bytes = db.integer("select chrome_trace_file('" + path + "', 0)" + where);
  std::string unzipped = read_gzip(path);
  EXPECT_EQ(unzipped, text);
  EXPECT_LT(bytes, static_cast<int64_t>(text.size()) / 3);  // it is compressed
  auto t = testtrace::check_trace(unzipped);
  EXPECT_TRUE(t.problems.empty());
}

TEST_F(TraceFileTest, NoRowsOrNoPathWritesNothingAndSaysSo) {
  std::string path = dir + "/none.json";
  EXPECT_NE(db.error_of("select chrome_trace_file('" + path + "') from trace_events where name = 'nope'")
                .find("selected no rows, so no file was written"),
            std::string::npos);
  EXPECT_NE(db.error_of("select chrome_trace_file('" + dir + "/no/such/dir/x.json') from trace_events")
                .find("cannot create"),
            std::string::npos);
  EXPECT_NE(db.error_of("select chrome_trace_file(42) from trace_events").find("path must be a file name"),
            std::string::npos);
  EXPECT_FALSE(exists(path));
  EXPECT_EQ(count_files(dir, ""), 0);
}

TEST_F(TraceFileTest, AnInterruptedRunLeavesNoFile) {
  std::string path = dir + "/cut.json";
  int calls = 0;
  // Interrupt the statement part-way through the scan.
  sqlite3_progress_handler(db.get(), 1000, [](void* n) { return ++*static_cast<int*>(n) > 50 ? 1 : 0; }, &calls);
  std::string err = db.error_of("select chrome_trace_file('" + path + "') from trace_events");
  sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
  EXPECT_FALSE(err.empty());
  EXPECT_FALSE(exists(path));
  EXPECT_EQ(count_files(dir, "cut.json"), 0);  // no .partial file left either
}

TEST_F(TraceFileTest, RefusesRowsItCannotSeeLikeTheTextForm) {
  std::string path = dir + "/sorted.json";
  EXPECT_NE(db.error_of("select chrome_trace_file('" + path + "') from (select * from trace_events order by ts desc)")
                .find("sorted, grouped"),
            std::string::npos);
  EXPECT_FALSE(exists(path));
}

TEST_F(TraceFileTest, CannotBeCalledFromAView) {
  db.exec("create view v as select chrome_trace_file('" + dir + "/v.json') from trace_events");
  EXPECT_NE(db.error_of("select * from v").find("unsafe use of chrome_trace_file"), std::string::npos);
}

TEST(CreateIndexes, WritesOnlyWhenAskedAndMakesWindowsCheap) {
  testdb::TempDir dir("nsystrace_idx");
  std::string path = dir.file("profile.sqlite");
  {
    sqlite3* raw = nullptr;
    sqlite3_open(path.c_str(), &raw);
    char* err = nullptr;
    std::string sql = read_file(testdb::source_dir() + "/examples/example_profile.sql");
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(raw);
  }
  // Pages a narrow ts window reads, from SQLite's page cache counters.
  auto pages_read = [](testdb::Db& db) {
    int hit = 0, miss = 0, hw = 0;
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_HIT, &hit, &hw, 1);
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_MISS, &miss, &hw, 1);
    db.rows("select * from trace_events where ts between 2050000000 and 2050100000 and kind in "
            "('kernel', 'memcpy', 'memset', 'sync', 'cuda_api', 'nvtx')");
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_HIT, &hit, &hw, 0);
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_MISS, &miss, &hw, 0);
    return hit + miss;
  };
  int before = 0;
  {
    testdb::Db ro(path);  // read-only: the function refuses, nothing is written
    EXPECT_NE(ro.error_of("select nsystrace_create_indexes()").find("read-only"), std::string::npos);
    ro.integer("select count(*) from trace_events where kind = 'memset'");  // catalog loaded
    before = pages_read(ro);
  }
  testdb::Db writer(path, /*load_shared_object=*/false, /*writable=*/true);
  EXPECT_NE(writer.text("select nsystrace_create_indexes()").find("wrote 6 index(es) into the profile"),
            std::string::npos);
  EXPECT_NE(writer.text("select nsystrace_create_indexes()").find("no index created"), std::string::npos);
  testdb::Db ro(path);
  ro.integer("select count(*) from trace_events where kind = 'memset'");
  int after = pages_read(ro);
  EXPECT_LT(after * 3, before) << "pages read for a narrow window: " << before << " without index, " << after
                               << " with";
}

}  // namespace
