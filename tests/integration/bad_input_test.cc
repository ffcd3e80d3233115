// Bad input: files that are not exports, broken exports and hostile values give a clear error or a valid trace
// that accounts for every row; never a crash, never a partial trace passed off as whole, never a write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

std::string temp_path(const char* name) {
  static const testdb::TempDir dir("nsystrace_bad");  // removed when the test process exits
  return dir.file(name);
}

TEST(BadInput, AFileThatIsNotADatabaseIsSqlitesOwnClearError) {
  // SQLite refuses the file when it prepares the query, before the extension runs: its message is the answer.
  std::string path = temp_path("notes.sqlite");
  std::ofstream(path) << "these are my notes, not a database\n";
  testdb::Db db(path);
  std::string err = db.error_of("select count(*) from trace_events");
  EXPECT_NE(err.find("file is not a database"), std::string::npos) << err;
}

TEST(BadInput, ATruncatedExportIsAnErrorNotAShortTrace) {
  std::string path = temp_path("cut.sqlite");
  {
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  }
  // Cut the file in half: pages of the event tables are gone.
  std::FILE* f = std::fopen(path.c_str(), "r+");
  std::fseek(f, 0, SEEK_END);
  long size = std::ftell(f);
  std::fclose(f);
  ASSERT_EQ(truncate(path.c_str(), size / 2), 0);
  testdb::Db db(path);
  std::string err = db.error_of("select chrome_trace(*) from trace_events");
  EXPECT_FALSE(err.empty()) << "a truncated export must not convert silently";
  EXPECT_NE(err.find("malformed"), std::string::npos) << err;
}

// When the schema survives but an event table's pages are damaged, the error comes from our scan and names the
// profile (a user may have several ATTACHed). (When SQLite cannot even read the schema, as in the test above, it
// fails while preparing the statement, before nsystrace runs: its own message, without the file name.)
TEST(BadInput, DamagedEventPagesGiveAnErrorNamingTheProfile) {
  std::string path = temp_path("damaged.sqlite");
  int64_t root = 0, page_size = 0;
  {
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    root = make.integer("select rootpage from sqlite_schema where name = 'CUPTI_ACTIVITY_KIND_KERNEL'");
    page_size = make.integer("pragma page_size");
  }
  ASSERT_GT(root, 1);
  std::FILE* f = std::fopen(path.c_str(), "r+");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>((root - 1) * page_size), SEEK_SET);
  std::string garbage(static_cast<size_t>(page_size), '\xa5');
  std::fwrite(garbage.data(), 1, garbage.size(), f);
  std::fclose(f);
  testdb::Db db(path);
  for (const char* sql : {"select chrome_trace(*) from trace_events", "select count(*) from trace_events",
                          "select count(*) from nvtx_kernel_ranges"}) {
    std::string err = db.error_of(sql);
    EXPECT_NE(err.find("malformed"), std::string::npos) << sql << ": " << err;
    EXPECT_NE(err.find("[profile: " + path + "]"), std::string::npos) << sql << ": " << err;
  }
}

TEST(BadInput, ASqliteFileThatIsNotAnExport) {
  testdb::Db db;
  db.exec("create table customers(id, name)");
  EXPECT_NE(db.error_of("select chrome_trace(*) from trace_events").find("is not an Nsight Systems export"),
            std::string::npos);
}

TEST(BadInput, AFutureSchemaWithExtraColumnsConvertsAndOneWithoutEndIsRefused) {
  testdb::Db db;
  db.exec("create table StringIds(id integer primary key, value text);"
          "insert into StringIds values (1, 'k');"
          "create table CUPTI_ACTIVITY_KIND_KERNEL(futureA, start, futureB, end, deviceId, streamId, shortName, zz);"
          "insert into CUPTI_ACTIVITY_KIND_KERNEL values ('x', 100, 'y', 200, 0, 7, 1, 'z');");
  EXPECT_EQ(db.rows("select name, ts, dur from trace_events"),
            (std::vector<std::vector<std::string>>{{"k", "100", "100"}}));
  db.exec("create table CUPTI_ACTIVITY_KIND_MEMSET(start, finish, deviceId); insert into CUPTI_ACTIVITY_KIND_MEMSET values (1, 2, 0);");
  std::string err = db.error_of("select count(*) from trace_events");
  EXPECT_NE(err.find("CUPTI_ACTIVITY_KIND_MEMSET has no column 'end'"), std::string::npos) << err;
  // An empty table with an unknown layout is just empty.
  testdb::Db empty;
  empty.exec("create table StringIds(id, value); create table CUPTI_ACTIVITY_KIND_MEMSET(start, finish);");
  EXPECT_EQ(empty.integer("select count(*) from trace_events"), 0);
}

TEST(BadInput, HostileValuesAreConvertedOrAccountedFor) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/hostile.sql");
  // 8 kernel rows: 7 on the timeline, 1 without a start counted in otherData.
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'kernel'"), 7);
  std::string json = db.text("select chrome_trace(*) from trace_events");
  auto t = testtrace::check_trace(json);
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  const testjson::Value* other = t.root.get("otherData");
  EXPECT_EQ(other->get("skipped_rows_without_start")->str("kernel"), "1");
  EXPECT_EQ(other->get("rows_with_invalid_end")->str("kernel"), "2");
  EXPECT_EQ(db.text("select args from trace_events where ts = 100"), "{\"demangled_name\":\"k\",\"invalid_end\":90}");
  EXPECT_EQ(db.text("select args from trace_events where ts = 200"), "{\"demangled_name\":\"k\",\"invalid_end\":null}");
  // INT64 limits stay exact: past the latest time a viewer holds (viewer_time.h), in the recorded times in args.
  EXPECT_NE(json.find("\"ts\":9223372036854000,\"dur\":0,\"pid\":16777216,\"tid\":7,\"args\":{\"recorded_ts_ns\":"
                      "9223372036854775000,\"recorded_dur_ns\":807,"),
            std::string::npos);
  // (INT64_MIN is before 0: drawn at 0 with its exact recorded times in args.)
  EXPECT_NE(json.find("\"ts\":0,\"dur\":0,\"pid\":16777216,\"tid\":7,\"args\":{\"recorded_ts_ns\":-9223372036854775808,"
                      "\"recorded_dur_ns\":808,"),
            std::string::npos);
  // Invalid UTF-8 becomes U+FFFD in the JSON; control characters are escaped; the 3 MB name survives whole.
  EXPECT_NE(json.find("\"name\":\"cuda\\ufffd\\ufffdcall\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"\\u0001\\u0008ok\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"\\ufffd(a\""), std::string::npos);
  EXPECT_NE(json.find(std::string(3000000, 'x')), std::string::npos);
  EXPECT_EQ(t.per_cat["kernel"], 7);
}

TEST(BadInput, SeveralConnectionsReadOneFileAtOnce) {
  std::string path = temp_path("shared.sqlite");
  {
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  }
  testdb::Db a(path), b(path);
  std::string expected = a.text("select chrome_trace(*) from trace_events");
  // Interleave two scans step by step on two connections.
  sqlite3_stmt* sa = nullptr;
  sqlite3_stmt* sb = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(a.get(), "select kind, ts from trace_events", -1, &sa, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_prepare_v2(b.get(), "select kind, ts from trace_events", -1, &sb, nullptr), SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(sa) == SQLITE_ROW && sqlite3_step(sb) == SQLITE_ROW) {
    EXPECT_EQ(sqlite3_column_int64(sa, 1), sqlite3_column_int64(sb, 1));
    ++rows;
  }
  sqlite3_finalize(sa);
  sqlite3_finalize(sb);
  EXPECT_EQ(rows, a.integer("select count(*) from trace_events"));
  EXPECT_EQ(b.text("select chrome_trace(*) from trace_events"), expected);
}

}  // namespace
