// chrome_trace_file(): streams the same trace as chrome_trace(*) to a file (gzip for .gz), never leaves a partial
// file behind, and refuses what chrome_trace(*) refuses. nsystrace_create_indexes(): the one writing function.
#include <sched.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "src/sqlite/statement.h"
#include "src/writers/trace_file.h"
#include "tests/support/proto_decode.h"
#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

using testdb::file_contents;

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
  EXPECT_EQ(file_contents(path), text);
  EXPECT_EQ(bytes, static_cast<int64_t>(text.size()));
}

// What the file functions say on stderr, with the stream captured.
std::string stderr_of(const std::function<void()>& run, const std::string& capture) {
  std::fflush(stderr);
  int saved = dup(2);
  FILE* f = std::fopen(capture.c_str(), "w");
  dup2(fileno(f), 2);
  run();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  return file_contents(capture);
}

TEST_F(TraceFileTest, ProgressSaysWhenItIsDoneWhenAskedAndIsASetting) {
  // Asked for by the argument: even a quick run ends with one line, with every event counted.
  int64_t events = db.integer("select count(*) from trace_events");
  std::string said = stderr_of([&] { db.integer("select perfetto_trace_file('" + dir + "/t.pftrace', 1) from trace_events"); },
                               dir + "/stderr.txt");
  EXPECT_EQ(said.rfind("nsystrace: writing " + dir + "/t.pftrace: done, " + std::to_string(events) + " events in ", 0), 0u)
      << said;
  EXPECT_NE(said.find(" MB of protobuf\n"), std::string::npos) << said;
  // Not asked (argument 0; or no argument with the setting off, as when stderr is not a terminal): silent.
  EXPECT_EQ(db.integer("select nsystrace_option('progress', 0)"), 0);
  said = stderr_of([&] {
    db.integer("select chrome_trace_file('" + dir + "/a.json', 0) from trace_events");
    db.integer("select chrome_trace_file('" + dir + "/b.json') from trace_events");
  }, dir + "/stderr2.txt");
  EXPECT_EQ(said, "");
  EXPECT_EQ(db.integer("select nsystrace_option('progress', 1)"), 1);
  EXPECT_EQ(db.integer("select nsystrace_option('progress')"), 1);
  EXPECT_NE(db.error_of("select nsystrace_option('progress', 2)").find("nsystrace_option('progress', value): value must be 0 or 1"),
            std::string::npos);
}

// nsystrace_option('threads'): the cores available by default (this process's affinity), settable from 1 to 256.
TEST_F(TraceFileTest, TheThreadsSettingDefaultsToTheCoresAvailable) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(db.integer("select nsystrace_option('threads')"), CPU_COUNT(&set));
  EXPECT_EQ(db.integer("select nsystrace_option('threads', 1)"), 1);
  EXPECT_EQ(db.integer("select nsystrace_option('threads')"), 1);
  EXPECT_EQ(db.integer("select nsystrace_option('threads', 7)"), 7);
  for (const char* bad : {"0", "257", "'two'", "1.5"})
    EXPECT_NE(db.error_of(std::string("select nsystrace_option('threads', ") + bad + ")")
                  .find("nsystrace_option('threads', value): value must be an integer from 1 to 256"),
              std::string::npos)
        << bad;
  EXPECT_EQ(db.integer("select nsystrace_option('threads')"), 7);
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
    std::string sql = file_contents(testdb::source_dir() + "/examples/example_profile.sql");
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(raw);
  }
  // Pages a narrow ts window reads, from SQLite's page cache counters. What a connection reads once is read first
  // (the catalog, the NVTX domain names: a pass over NVTX_EVENTS, the tables' row estimates): not the window's.
  const std::string kinds = "kind in ('kernel', 'memcpy', 'memset', 'sync', 'cuda_api', 'nvtx')";
  auto pages_read = [&](testdb::Db& db) {
    db.integer("select count(*) from trace_events where " + kinds);
    int hit = 0, miss = 0, hw = 0;
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_HIT, &hit, &hw, 1);
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_MISS, &miss, &hw, 1);
    // (columns that do not depend on placement: a query reading lanes or track names under a lower time bound takes
    // them from the whole profile's placement, made once per connection by a scan of every row)
    db.rows("select kind, name, ts, dur, pid, tid, args from trace_events where ts between 2050000000 and 2050100000 "
            "and " + kinds);
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_HIT, &hit, &hw, 0);
    sqlite3_db_status(db.get(), SQLITE_DBSTATUS_CACHE_MISS, &miss, &hw, 0);
    return hit + miss;
  };
  int before = 0;
  {
    testdb::Db ro(path);  // read-only: the function refuses, nothing is written
    EXPECT_NE(ro.error_of("select nsystrace_create_indexes()").find("read-only"), std::string::npos);
    before = pages_read(ro);
  }
  testdb::Db writer(path, /*load_shared_object=*/false, /*writable=*/true);
  EXPECT_NE(writer.text("select nsystrace_create_indexes()").find("wrote 6 index(es) into the profile"),
            std::string::npos);
  EXPECT_NE(writer.text("select nsystrace_create_indexes()").find("no index created"), std::string::npos);
  testdb::Db ro(path);
  int after = pages_read(ro);
  EXPECT_LT(after * 3, before) << "pages read for a narrow window: " << before << " without index, " << after
                               << " with";
}

}  // namespace

namespace {

// chrome_trace_file() never replaces a database: the profile (even opened read-only), an ATTACHed report, their
// -wal / -journal / -shm files (existing or not), a link to one, or any other SQLite file. One swapped argument
// in a script must not destroy a profile.
TEST(TraceFileGuard, NeverReplacesADatabase) {
  testdb::TempDir dir("nsystrace_guard");
  std::string profile = dir.file("prof.sqlite"), other = dir.file("rank1.sqlite"), stranger = dir.file("notes.db");
  for (const std::string& p : {profile, other, stranger}) {
    testdb::Db make(p, false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  }
  std::string original = file_contents(profile), original_other = file_contents(other), original_stranger = file_contents(stranger);
  ASSERT_EQ(symlink(profile.c_str(), dir.file("link.json").c_str()), 0);
  testdb::Db db("file:" + profile + "?mode=ro");
  db.exec("attach '" + other + "' as rank1");
  struct Case {
    std::string target, says;
  };
  for (const Case& c : {Case{profile, "it is the file of the database"}, Case{other, "it is the file of the database"},
                        Case{profile + "-wal", "it is the wal file of the database"},
                        Case{profile + "-journal", "it is the journal file of the database"},
                        Case{dir.path() + "/../" + dir.path().substr(dir.path().rfind('/') + 1) + "/prof.sqlite-shm",
                             "it is the shm file of the database"},
                        Case{dir.file("link.json"), "it is the file of the database"},
                        Case{stranger, "it is an SQLite database"}}) {
    for (const char* suffix : {"", ", 1"}) {
      std::string err = db.error_of("select chrome_trace_file('" + c.target + "'" + suffix + ") from trace_events");
      EXPECT_NE(err.find("refusing to write '" + c.target + "': " + c.says), std::string::npos) << c.target << ": " << err;
    }
  }
  EXPECT_EQ(file_contents(profile), original);
  EXPECT_EQ(file_contents(other), original_other);
  EXPECT_EQ(file_contents(stranger), original_stranger);
  EXPECT_EQ(count_files(dir.path(), "prof.sqlite-"), 0) << "no -wal/-journal/-shm file was made";
  EXPECT_EQ(count_files(dir.path(), "prof.sqlite.partial"), 0);
  // An ordinary file is still replaced, as users expect of an output file.
  std::string out = dir.file("trace.json");
  { std::ofstream(out) << "old trace"; }
  EXPECT_GT(db.integer("select chrome_trace_file('" + out + "') from trace_events"), 100);
  EXPECT_EQ(file_contents(out).rfind("{\"traceEvents\":[", 0), 0u);
}

TEST_F(TraceFileTest, GzipsWhateverTheCaseOfTheSuffix) {
  std::string text = db.text("select chrome_trace(*) from trace_events where kind = 'kernel'");
  for (const char* name : {"/a.json.GZ", "/b.json.Gz", "/c.json.gZ"}) {
    db.integer("select chrome_trace_file('" + dir + name + "') from trace_events where kind = 'kernel'");
    EXPECT_EQ(file_contents(dir + name).substr(0, 2), "\x1f\x8b") << name;
    EXPECT_EQ(read_gzip(dir + name), text) << name;
  }
}

// Traces get shared: otherData leaves out what identifies a person or machine (the export's host, user, paths;
// the profile's directory) and names what it left out, unless nsystrace_option('identifying_metadata', 1).
TEST(TraceMetadata, IdentifyingMetadataOnlyWhenAskedFor) {
  testdb::TempDir dir("nsystrace_meta");
  std::string path = dir.file("prof.sqlite");
  {
    testdb::Db make(path, false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
    make.exec("insert into META_DATA_EXPORT values ('EXPORT_HOST', 'gpu-node-17'), ('EXPORT_USER', 'alice'), "
              "('EXPORT_PARAM_INPUT_PATH_ABS', '/home/alice/run.nsys-rep'), ('EXPORT_NOTE', 'see /home/alice/x')");
  }
  testdb::Db db(path);
  std::string json = db.text("select chrome_trace(*) from trace_events where kind = 'kernel'");
  std::string tail = json.substr(json.find("\"otherData\""));
  for (const char* secret : {"gpu-node-17", "alice", dir.path().c_str()})
    EXPECT_EQ(tail.find(secret), std::string::npos) << secret;
  EXPECT_NE(tail.find("\"source_file\":\"prof.sqlite\""), std::string::npos);
  EXPECT_NE(tail.find("\"export_left_out\":[\"EXPORT_HOST\",\"EXPORT_USER\",\"EXPORT_PARAM_INPUT_PATH_ABS\",\"EXPORT_NOTE\"]"),
            std::string::npos)
      << tail;
  EXPECT_NE(tail.find("\"EXPORT_PRODUCT_VERSION\""), std::string::npos) << "the rest of the metadata stays";
  EXPECT_EQ(db.integer("select nsystrace_option('identifying_metadata', 1)"), 1);
  tail = db.text("select chrome_trace(*) from trace_events where kind = 'kernel'");
  tail = tail.substr(tail.find("\"otherData\""));
  EXPECT_NE(tail.find("\"EXPORT_HOST\":\"gpu-node-17\""), std::string::npos);
  EXPECT_NE(tail.find("\"source_file\":\"" + path + "\""), std::string::npos);
  EXPECT_EQ(tail.find("export_left_out"), std::string::npos);
  EXPECT_EQ(db.integer("select nsystrace_option('identifying_metadata')"), 1);
  EXPECT_EQ(db.integer("select nsystrace_option('identifying_metadata', 0)"), 0);
  EXPECT_NE(db.error_of("select nsystrace_option('colour')").find("unknown option"), std::string::npos);
  EXPECT_NE(db.error_of("select nsystrace_option('identifying_metadata', 'yes')").find("must be 0 or 1"),
            std::string::npos);
}
}  // namespace

namespace {
// SQLITE_DIRECTONLY refuses the writing functions in views and triggers stored in a database file (a profile from
// someone else); a TEMP view, which only this connection can make, may call them, as the README says.
TEST_F(TraceFileTest, ATempViewMayCallIt) {
  db.exec("create temp view t as select chrome_trace_file('" + dir + "/t.json') as bytes from trace_events");
  EXPECT_GT(db.integer("select bytes from t"), 1000);
  EXPECT_TRUE(exists(dir + "/t.json"));
}

// Old exports name threads without a priority column.
TEST(ThreadNamesTable, WithoutAPriorityColumn) {
  testdb::Db db;
  db.exec("create table StringIds(id integer primary key, value text); insert into StringIds values (1,'k'),(2,'th');"
          "create table ThreadNames(nameId, globalTid); insert into ThreadNames values (2, 281476654432356);"
          "create table CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);"
          "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 2, 281476654432356, 1, 1);");
  EXPECT_EQ(db.rows("select name, thread_name from trace_events"), (std::vector<std::vector<std::string>>{{"k", "th"}}));
}

// The temporary file is created exclusively: a link planted at the name it used to have (predictable:
// "<path>.partial-<pid>") or at a name it may have now is never followed, so the link's target is untouched.
TEST_F(TraceFileTest, ALinkPlantedAtTheTemporaryNameIsNeverFollowed) {
  std::string victim = dir + "/victim.txt", path = dir + "/trace.json";
  { std::ofstream(victim) << "precious"; }
  std::string old_name = path + ".partial-" + std::to_string(getpid());
  ASSERT_EQ(symlink(victim.c_str(), old_name.c_str()), 0);
  EXPECT_GT(db.integer("select chrome_trace_file('" + path + "') from trace_events where kind = 'kernel'"), 100);
  EXPECT_GT(db.integer("select perfetto_trace_file('" + path + "') from trace_events where kind = 'kernel'"), 100);
  EXPECT_TRUE(file_contents(victim) == "precious") << "the link's target was overwritten";
  EXPECT_EQ(count_files(dir, "trace.json."), 1) << "only the planted link is left beside the trace";

  // A guessed name of the present scheme: skipped for another, the link and its target left alone.
  uint64_t guesses[] = {0x1234, 0x1234, 0x5678};
  size_t next = 0;
  auto pinned = [&] { return guesses[next++]; };
  std::string guessed = path + "." + std::to_string(getpid()) + ".0000000000001234.partial";
  ASSERT_EQ(symlink(victim.c_str(), guessed.c_str()), 0);
  std::string temp;
  int fd = nsystrace::create_exclusive_temp("chrome_trace_file()", path, temp, pinned);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(temp, path + "." + std::to_string(getpid()) + ".0000000000005678.partial");
  EXPECT_EQ(write(fd, "x", 1), 1);
  close(fd);
  struct stat st;
  ASSERT_EQ(lstat(temp.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_TRUE(file_contents(victim) == "precious") << "the link's target was overwritten";
  unlink(temp.c_str());
  // A name that is taken every time is a clear error naming the file, not an endless loop.
  auto always = [] { return uint64_t{0x1234}; };
  try {
    nsystrace::create_exclusive_temp("chrome_trace_file()", path, temp, always);
    ADD_FAILURE() << "created a file over a link";
  } catch (const nsystrace::Error& e) {
    EXPECT_NE(std::string(e.what()).find("chrome_trace_file(): cannot create '" + guessed + "'"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(file_contents(victim) == "precious") << "the link's target was overwritten";
}

// Two file aggregates on one path in one query each write their own temporary file and rename a whole trace into
// place: the file is exactly one of the two traces (the last renamed), never a mix, and no temporary file is left.
TEST_F(TraceFileTest, TwoWritersOfOnePathLeaveOneWholeTrace) {
  const std::string where = " from trace_events where kind in ('kernel', 'cuda_api')";
  std::string json_alone = dir + "/alone.json", proto_alone = dir + "/alone.pftrace";
  db.integer("select chrome_trace_file('" + json_alone + "')" + where);
  db.integer("select perfetto_trace_file('" + proto_alone + "')" + where);
  std::string json = file_contents(json_alone), proto = file_contents(proto_alone);
  ASSERT_FALSE(json.empty());
  ASSERT_FALSE(proto.empty());
  struct Case {
    std::string calls;
    std::vector<std::string> whole;  // what the file may hold
  };
  const std::string p = dir + "/x.pftrace";
  for (const Case& c : {Case{"perfetto_trace_file('" + p + "'), chrome_trace_file('" + p + "')", {proto, json}},
                        Case{"chrome_trace_file('" + p + "'), perfetto_trace_file('" + p + "')", {proto, json}},
                        Case{"chrome_trace_file('" + p + "'), chrome_trace_file('" + p + "', 0)", {json}},
                        Case{"perfetto_trace_file('" + p + "', 0), perfetto_trace_file('" + p + "')", {proto}}}) {
    std::remove(p.c_str());
    std::string err = db.error_of("select " + c.calls + where);
    EXPECT_EQ(err, "") << c.calls;
    std::string got = file_contents(p);
    EXPECT_TRUE(std::find(c.whole.begin(), c.whole.end(), got) != c.whole.end())
        << c.calls << ": the file is no whole trace (" << got.size() << " bytes)";
    if (got == proto) EXPECT_FALSE(testproto::decode(got).empty());
    else EXPECT_TRUE(testtrace::check_trace(got).problems.empty()) << c.calls;
    EXPECT_EQ(count_files(dir, "x.pftrace."), 0) << c.calls << ": a temporary file was left";
  }
}
}  // namespace

// Gzip on worker threads (nsystrace_option('threads')): the text is cut into fixed chunks deflated on their own and
// concatenated into one gzip member, so the bytes are the same whatever the threads, and a failed or abandoned
// write joins its threads and leaves no file. (This file is part of thread_tests, the ThreadSanitizer pass's binary.)
namespace {
using nsystrace::GzipSettings;
using nsystrace::TraceFile;

using testdb::threads_of_this_process;

// The threads of this process before a test starts its own: ThreadSanitizer starts a thread of its own with the
// process's first other thread, so one is started (and joined) first.
int threads_before() {
  std::thread([] {}).join();
  return threads_of_this_process();
}

// The text of the first gzip member of `gz`, and in *used how many bytes of `gz` the member took.
std::string inflate_member(const std::string& gz, size_t* used) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + 15), Z_OK);  // 16: a gzip wrapper, checked (CRC and length)
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << (z.msg ? z.msg : "");
  *used = gz.size() - z.avail_in;
  inflateEnd(&z);
  return out;
}

bool gzip_t_accepts(const std::string& path) { return std::system(("gzip -t '" + path + "'").c_str()) == 0; }

// Writes `text` to a new TraceFile in pieces of uneven sizes (as a drain hands them over, so chunks are cut across
// writes) and commits it; returns the file's bytes.
std::string write_gzip(const std::string& path, const std::string& text, int threads, GzipSettings settings,
                       bool in_pieces = true) {
  TraceFile f(path, {}, "chrome_trace_file()", threads, settings);
  for (size_t at = 0; at < text.size();) {
    size_t n = in_pieces ? std::min<size_t>(text.size() - at, 1 + (at * 7919) % 10007) : text.size();
    f.write(text.data() + at, n);
    at += n;
  }
  f.commit();
  return file_contents(path);
}

// Text that compresses about as badly as a trace's numbers: pseudo-random digits, words and JSON punctuation.
std::string mixed_text(size_t size, uint32_t seed) {
  std::string s;
  s.reserve(size);
  const char* words[] = {"{\"name\":\"", "kernel", "\",\"ts\":", ",\"dur\":", "},\n", "cudaLaunchKernel", ",\"pid\":"};
  while (s.size() < size) {
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 16) % 3 == 0) s += words[(seed >> 8) % 7];
    else s += static_cast<char>('0' + (seed >> 20) % 10);
  }
  s.resize(size);
  return s;
}

TEST(TraceFileThreads, GzipBytesAreTheSameWhateverTheThreads) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  std::string text = db.text("select chrome_trace(*) from trace_events where derived in (0, 1)");
  ASSERT_GT(text.size(), 500000u);
  testdb::TempDir tmp("nsystrace_gz");
  const GzipSettings small{1, 4096};  // a few hundred chunks of the example's trace
  std::string reference;
  for (int threads : {1, 2, 8}) {
    std::string path = tmp.file("t" + std::to_string(threads) + ".json.gz");
    std::string gz = write_gzip(path, text, threads, small);
    size_t used = 0;
    EXPECT_TRUE(inflate_member(gz, &used) == text) << threads << " threads";
    EXPECT_EQ(used, gz.size()) << "one gzip member, nothing after it";
    EXPECT_TRUE(gzip_t_accepts(path)) << path;
    if (reference.empty()) reference = gz;
    else EXPECT_TRUE(gz == reference) << threads << " threads: other bytes than with 1 thread";
  }
  // However the text is handed over: one write of it all gives the same bytes.
  EXPECT_TRUE(write_gzip(tmp.file("whole.json.gz"), text, 1, small, /*in_pieces=*/false) == reference);
  EXPECT_LT(reference.size(), text.size() / 4) << "the chunks still compress like one stream (the dictionary)";
  // The product's chunks (1 MB): the same again, through the SQL function, at 1, 2 and 8 threads.
  std::string sql_reference;
  for (int threads : {1, 2, 8}) {
    db.integer("select nsystrace_option('threads', " + std::to_string(threads) + ")");
    std::string path = tmp.file("sql" + std::to_string(threads) + ".json.gz");
    int64_t bytes = db.integer("select chrome_trace_file('" + path + "') from trace_events where derived in (0, 1)");
    std::string gz = file_contents(path);
    EXPECT_EQ(bytes, static_cast<int64_t>(gz.size()));
    size_t used = 0;
    EXPECT_TRUE(inflate_member(gz, &used) == text) << threads << " threads";
    EXPECT_TRUE(gzip_t_accepts(path)) << path;
    if (sql_reference.empty()) sql_reference = gz;
    else EXPECT_TRUE(gz == sql_reference) << threads << " threads: other bytes than with 1 thread";
  }
}

// Lengths around the chunk's: empty, a byte, one short of a chunk, exactly one (the last chunk is then empty),
// one over, several; incompressible-ish text too.
TEST(TraceFileThreads, GzipOfAnyLength) {
  testdb::TempDir tmp("nsystrace_gz");
  const GzipSettings small{1, 4096};
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{3 * 4096}, size_t{100003}}) {
    std::string text = mixed_text(size, static_cast<uint32_t>(size));
    std::string one = write_gzip(tmp.file("a.gz"), text, 1, small);
    std::string three = write_gzip(tmp.file("b.gz"), text, 3, small);
    size_t used = 0;
    EXPECT_TRUE(inflate_member(one, &used) == text) << size;
    EXPECT_EQ(used, one.size()) << size;
    EXPECT_TRUE(one == three) << size;
    EXPECT_TRUE(gzip_t_accepts(tmp.file("b.gz"))) << size;
  }
  // Other levels are deflate too (the level is a setting of the code, chosen in tests/bench/RESULTS.md).
  std::string text = mixed_text(50000, 7);
  for (int level : {2, 3, 6}) {
    size_t used = 0;
    EXPECT_TRUE(inflate_member(write_gzip(tmp.file("l.gz"), text, 2, GzipSettings{level, 4096}), &used) == text)
        << level;
  }
}

// A write that fails (the disk full; here the process's file size limit, which fails the same way) is an error
// naming the file; the threads are joined and nothing is left, neither the trace nor its temporary file.
TEST(TraceFileThreads, AFailedWriteLeavesNoFileAndNoThread) {
  testdb::TempDir tmp("nsystrace_gz");
  const int before = threads_before();
  std::string text = mixed_text(4 << 20, 3), path = tmp.file("full.json.gz"), error;
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto saved_signal = std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing us
  struct rlimit low = saved;
  low.rlim_cur = 256 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  try {
    write_gzip(path, text, 4, GzipSettings{1, 65536});
  } catch (const nsystrace::Error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_signal);
  EXPECT_NE(error.find("nsystrace: chrome_trace_file(): writing '" + path + "."), std::string::npos) << error;
  EXPECT_NE(error.find(std::strerror(EFBIG)), std::string::npos) << error;
  EXPECT_EQ(count_files(tmp.path(), ""), 0) << "a file was left";
  EXPECT_EQ(threads_of_this_process(), before) << "a compressing thread was left";
}

// A write abandoned part-way (a refused row, an interrupt: the aggregate goes without commit()) stops the workers
// at once: queued chunks are dropped, running ones finished, every thread joined, the temporary file removed.
TEST(TraceFileThreads, AnAbandonedGzipJoinsItsThreadsAndLeavesNoFile) {
  testdb::TempDir tmp("nsystrace_gz");
  const int before = threads_before();
  std::string text = mixed_text(2 << 20, 5);
  {
    TraceFile f(tmp.file("cut.json.gz"), {}, "chrome_trace_file()", 8, GzipSettings{1, 4096});
    f.write(text.data(), text.size());
    EXPECT_EQ(threads_of_this_process(), before + 7) << "7 workers deflate beside the caller";
    EXPECT_EQ(count_files(tmp.path(), "cut.json.gz."), 1);
  }
  EXPECT_EQ(threads_of_this_process(), before);
  EXPECT_EQ(count_files(tmp.path(), ""), 0);
}

// The same through SQL, on a real export large enough for many chunks: sqlite3_interrupt() half-way through the
// conversion (workers running) leaves no file, no temporary file and no thread; a whole run at 1 and 8 threads
// gives the same bytes, which are chrome_trace(*)'s text.
TEST(TraceFileThreads, AnInterruptedGzipConversionLeavesNoFileAndNoThread) {
  if (testdb::shared_fixtures_dir().empty()) GTEST_SKIP() << "needs ../shared/fixtures/real";
  testdb::Db db(testdb::shared_fixtures_dir() + "/nsysai_h100_2gpu_mfu_before_slice.sqlite");
  testdb::TempDir tmp("nsystrace_gz");
  const std::string where = " from trace_events where derived in (0, 1)";
  std::string text = db.text("select chrome_trace(*)" + where);
  ASSERT_GT(text.size(), 4u << 20) << "several 1 MB chunks";
  const int before = threads_before();
  std::string whole[2];
  int i = 0;
  int64_t ops = 0;  // progress callbacks of a whole run
  for (int threads : {1, 8}) {
    db.integer("select nsystrace_option('threads', " + std::to_string(threads) + ")");
    std::string path = tmp.file("whole" + std::to_string(threads) + ".json.gz");
    sqlite3_progress_handler(db.get(), 1000, [](void* n) { return ++*static_cast<int64_t*>(n), 0; }, &ops);
    db.integer("select chrome_trace_file('" + path + "')" + where);
    sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
    whole[i++] = file_contents(path);
    size_t used = 0;
    EXPECT_TRUE(inflate_member(whole[i - 1], &used) == text) << threads << " threads";
  }
  EXPECT_TRUE(whole[0] == whole[1]) << "1 and 8 threads wrote other bytes";
  ASSERT_GT(ops, 20);
  struct Cut {
    sqlite3* db;
    int64_t at, n;
  } cut{db.get(), ops / 4, 0};  // ops counts two runs: a quarter of it is half-way through one
  sqlite3_progress_handler(db.get(), 1000, [](void* p) {
    auto* c = static_cast<Cut*>(p);
    if (++c->n == c->at) sqlite3_interrupt(c->db);
    return 0;
  }, &cut);
  std::string err = db.error_of("select chrome_trace_file('" + tmp.file("cut.json.gz") + "')" + where);
  sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
  EXPECT_NE(err.find("interrupt"), std::string::npos) << err;
  EXPECT_EQ(count_files(tmp.path(), "cut.json.gz"), 0) << "the trace or its temporary file was left";
  EXPECT_EQ(threads_of_this_process(), before) << "a compressing thread was left";
}
}  // namespace

namespace {
// nsystrace_last_trace_file(): what the last file conversion of the connection wrote, from the writer's own counts
// (the `nsystrace` command's summary): they are what a second scan would count, and a failed conversion leaves
// no record.
TEST_F(TraceFileTest, TheLastTraceFileIsRecordedForASummary) {
  EXPECT_EQ(db.integer("select nsystrace_last_trace_file() is null"), 1) << "nothing written yet";
  struct Case {
    std::string function, file, where;
  };
  for (const Case& c : {Case{"chrome_trace_file", "all.json.gz", "derived in (0, 1)"},
                        Case{"perfetto_trace_file", "some.pftrace", "kind in ('kernel', 'nvtx', 'cuda_api') and "
                                                                    "(device_id = 1 or device_id is null)"},
                        Case{"chrome_trace_file", "cpu.json", "kind = 'cuda_api'"}}) {
    std::string path = dir + "/" + c.file, where = " from trace_events where " + c.where;
    int64_t bytes = db.integer("select " + c.function + "('" + path + "')" + where);
    std::string r = "nsystrace_last_trace_file()";
    EXPECT_EQ(db.text("select json_extract(" + r + ", '$.path')"), path);
    EXPECT_EQ(db.text("select json_extract(" + r + ", '$.format')"),
              c.function == "chrome_trace_file" ? "chrome_json" : "perfetto_protobuf");
    EXPECT_EQ(db.integer("select json_extract(" + r + ", '$.bytes')"), bytes);
    EXPECT_EQ(db.integer("select json_extract(" + r + ", '$.events')"), db.integer("select count(*)" + where));
    EXPECT_EQ(db.text("select json_extract(" + r + ", '$.event_counts')"),
              db.text("select json_group_object(kind, n) from (select kind, count(*) as n" + where +
                      " group by kind order by kind)"))
        << c.where;
    EXPECT_EQ(db.text("select json_extract(" + r + ", '$.gpus')"),
              db.text("select json_group_array(device_id) from (select distinct device_id" + where +
                      " and device_id is not null order by 1)"))
        << c.where;
    EXPECT_GE(db.integer("select json_extract(" + r + ", '$.flows')"), 0);
  }
  EXPECT_EQ(db.text("select json_extract(nsystrace_last_trace_file(), '$.gpus')"), "[]") << "CPU rows only";
  EXPECT_GT(db.integer("select json_extract(nsystrace_last_trace_file(), '$.flows')"), -1);
  // A conversion that fails leaves no record (not the one before it).
  EXPECT_NE(db.error_of("select chrome_trace_file('" + dir + "/none.json') from trace_events where name = 'nope'"), "");
  EXPECT_EQ(db.integer("select nsystrace_last_trace_file() is null"), 1);
}
}  // namespace
