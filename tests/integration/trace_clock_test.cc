// The clock snapshot that begins every Perfetto trace: the trace's own clock (the session clock, primary), BOOTTIME
// and REALTIME at the trace's time 0, and the incremental clock the packets use. By default the trace's clock reads
// wall-clock time (the earliest session start of the reports it holds at time 0), and BOOTTIME reads it in every
// trace: how Perfetto lines up the traces of a job packed by hand (docs/job.md, Clocks; the archive itself is tested
// with Perfetto's importer in tests/python/test_job.py). Decoded from the bytes (tests/support/proto_decode.h).
#include <gtest/gtest.h>

#include <map>

#include "tests/support/proto_decode.h"
#include "tests/support/test_db.h"

namespace {

constexpr uint64_t kRealtime = 1, kBoottime = 6, kIncremental = 64, kSession = 128;

// The example profile's session start (examples/example_profile.sql).
int64_t session_start(testdb::Db& db) {
  return db.integer("select utcEpochNs from TARGET_INFO_SESSION_START_TIME");
}

std::string blob(testdb::Db& db, const std::string& where = "") {
  sqlite3_stmt* s = nullptr;
  std::string sql = "select perfetto_trace(*) from trace_events " + where;
  EXPECT_EQ(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db.get());
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW)
    out.assign(static_cast<const char*>(sqlite3_column_blob(s, 0)), static_cast<size_t>(sqlite3_column_bytes(s, 0)));
  EXPECT_EQ(sqlite3_finalize(s), SQLITE_OK) << sqlite3_errmsg(db.get());
  return out;
}

struct Clocks {
  std::map<uint64_t, uint64_t> at_zero;  // clock id -> its reading in the first packet's snapshot
  uint64_t primary = 0;
  std::string metadata;  // the trace's nsystrace metadata (JSON)
};

Clocks clocks_of(const std::string& trace) {
  Clocks c;
  auto packets = testproto::fields(trace, 1);
  if (packets.empty()) {
    ADD_FAILURE() << "no packet";
    return c;
  }
  // The snapshot comes first: every later packet's time is read through it.
  auto snapshot = testproto::fields(packets[0].bytes, 6);
  EXPECT_EQ(snapshot.size(), 1u) << "the first packet is the clock snapshot";
  if (snapshot.empty()) return c;
  for (const auto& clock : testproto::fields(snapshot[0].bytes, 1)) {
    auto id = testproto::one(clock.bytes, 1).varint;
    EXPECT_TRUE(c.at_zero.emplace(id, testproto::one(clock.bytes, 2).varint).second) << "clock " << id << " twice";
  }
  c.primary = testproto::one(snapshot[0].bytes, 2).varint;
  for (const auto& p : packets)
    for (const auto& ce : testproto::fields(p.bytes, 5))
      for (const auto& m : testproto::fields(ce.bytes, 2)) c.metadata = std::string(testproto::one(m.bytes, 5).bytes);
  return c;
}

TEST(TraceClock, REALTIMEAtTimeZeroIsTheSessionStart) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  int64_t start = session_start(db);
  ASSERT_GT(start, 0);
  // The default: the trace's times are wall-clock times, BOOTTIME too.
  EXPECT_EQ(db.integer("select nsystrace_option('wall_clock')"), 1);
  Clocks c = clocks_of(blob(db));
  EXPECT_EQ(c.primary, kSession);
  EXPECT_EQ(c.at_zero, (std::map<uint64_t, uint64_t>{
                           {kSession, start}, {kRealtime, start}, {kBoottime, start}, {kIncremental, 0}}));
  EXPECT_NE(c.metadata.find("\"realtime_ns_at_time_zero\":" + std::to_string(start)), std::string::npos)
      << c.metadata;
  // wall_clock 0: the trace's times are the session's; BOOTTIME still reads wall-clock time, so such traces packed
  // with others still agree on their machine's BOOTTIME.
  EXPECT_EQ(db.integer("select nsystrace_option('wall_clock', 0)"), 0);
  c = clocks_of(blob(db));
  EXPECT_EQ(c.primary, kSession);
  EXPECT_EQ(c.at_zero, (std::map<uint64_t, uint64_t>{
                           {kSession, 0}, {kRealtime, start}, {kBoottime, start}, {kIncremental, 0}}));
}

// On wall-clock time the viewer's window ends the session start earlier than kLatestViewerTs (viewer_time.h), so
// that no time in the trace, the session start plus the time, passes 2^63: negative_times.sql's mark at INT64_MAX
// is drawn there, its recorded time in args.
TEST(TraceClock, OnWallClockTimeTheLatestTimeStaysWithinInt64) {
  constexpr int64_t kLatest = 9223372036854000000;  // viewer_time.h
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/negative_times.sql");
  int64_t start = session_start(db);
  std::string trace = blob(db, "where name = 'int64 max mark'");
  Clocks c = clocks_of(trace);
  ASSERT_EQ(c.at_zero.at(kSession), uint64_t(start));
  int64_t clock = 0;  // the incremental clock, from 0 at the trace's time 0
  int64_t mark = -1;
  for (const auto& p : testproto::fields(trace, 1)) {
    auto ts = testproto::fields(p.bytes, 8);
    if (ts.empty() || testproto::fields(p.bytes, 11).empty()) continue;  // track events only
    clock += static_cast<int64_t>(ts[0].varint);
    mark = clock;
  }
  EXPECT_EQ(mark, kLatest - start);
  EXPECT_EQ(mark + start, kLatest);
}

TEST(TraceClock, SeveralReportsAreAnchoredAtTheEarliestSessionStart) {
  testdb::TempDir tmp{"nsystrace_clock"};
  for (const char* name : {"rank0", "rank1"}) {
    testdb::Db make(tmp.file(std::string(name) + ".sqlite"), false, true);
    make.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  }
  int64_t start;
  {
    testdb::Db edit(tmp.file("rank1.sqlite"), false, true);
    edit.exec("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs - 3000000000");
    start = session_start(edit);  // rank1 started 3 s before rank0
  }
  testdb::Db db(tmp.file("rank0.sqlite"));
  db.exec("attach '" + tmp.file("rank1.sqlite") + "' as rank1");
  EXPECT_EQ(clocks_of(blob(db, "where schema in ('main', 'rank1')")).at_zero.at(kRealtime), uint64_t(start));
  // main alone keeps its own start: the origin is the connection's, and main's times are shifted by 3 s from it.
  EXPECT_EQ(clocks_of(blob(db, "where schema = 'main'")).at_zero.at(kRealtime), uint64_t(start));
  EXPECT_EQ(db.integer("select min(ts) from trace_events where schema = 'main'") -
                db.integer("select min(ts) from trace_events where schema = 'rank1'"), 3000000000);
}

TEST(TraceClock, WithoutASessionStartTheTraceHasNoREALTIMEAndSaysSo) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/examples/example_profile.sql");
  db.exec("drop table TARGET_INFO_SESSION_START_TIME");
  Clocks c = clocks_of(blob(db));
  EXPECT_EQ(c.at_zero, (std::map<uint64_t, uint64_t>{{kSession, 0}, {kBoottime, 0}, {kIncremental, 0}}));
  EXPECT_NE(c.metadata.find("\"realtime_ns_at_time_zero\":\"unknown: no session start"), std::string::npos)
      << c.metadata;
}

}  // namespace
