// perfetto_trace(*) and perfetto_trace_file(): the protobuf trace decoded packet by packet (tests/support/proto_decode,
// independent of the writer) and checked against the trace_events rows it was made from and against the Chrome JSON
// of the same rows. (Perfetto's own importer checks it too: tests/conformance, on every real export.)
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "tests/support/proto_decode.h"
#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

using testproto::Field;

// What the trace says, decoded.
struct Decoded {
  struct Event {
    uint64_t type = 0, track = 0, name_iid = 0, category_iid = 0;
    int64_t ts = 0;  // absolute, ns
    std::map<std::string, Field> args;  // by name
    std::string_view args_bytes;
    uint64_t flow_bind = 0, flow_direction = 0;
  };
  std::vector<Event> events;
  std::map<uint64_t, std::string> names, categories, arg_names, arg_strings;
  std::map<uint64_t, std::string> track_names;  // uuid -> name (thread name for thread tracks)
  std::set<uint64_t> process_tracks, counter_tracks;
  std::map<uint64_t, uint64_t> parents;
  std::string metadata;
  std::vector<std::string> problems;
};

Decoded decode_trace(std::string_view trace) {
  Decoded d;
  int64_t clock = 0;
  bool defaults_seen = false;
  auto define = [&](std::map<uint64_t, std::string>& table, std::string_view entry, const char* what) {
    uint64_t iid = testproto::one(entry, 1).varint;
    std::string name(testproto::one(entry, 2).bytes);
    if (!table.emplace(iid, name).second) d.problems.push_back(std::string(what) + " iid defined twice");
  };
  for (const Field& packet_field : testproto::decode(trace)) {
    if (packet_field.number != 1) {
      d.problems.push_back("a Trace field other than packet");
      continue;
    }
    std::string_view p = packet_field.bytes;
    // Sequence 2 holds the GPU utilization counters (absolute times; checked through Perfetto's importer in
    // tests/conformance/gpu_model_test.cc).
    if (testproto::one(p, 10).varint == 2 && !testproto::fields(p, 52).empty()) continue;
    if (testproto::one(p, 10).varint != 1) d.problems.push_back("a packet off sequence 1");
    for (const Field& f : testproto::fields(p, 59)) defaults_seen = !testproto::fields(f.bytes, 58).empty();
    for (const Field& t : testproto::fields(p, 8)) {
      if (!defaults_seen) d.problems.push_back("a timestamp before the incremental clock is set");
      clock += static_cast<int64_t>(t.varint);
    }
    // Interned data first: a packet may use what it defines.
    for (const Field& in : testproto::fields(p, 12)) {
      for (const Field& e : testproto::decode(in.bytes)) {
        if (e.number == 1) define(d.categories, e.bytes, "category");
        else if (e.number == 2) define(d.names, e.bytes, "name");
        else if (e.number == 3) define(d.arg_names, e.bytes, "arg name");
        else if (e.number == 29) define(d.arg_strings, e.bytes, "arg string");
      }
    }
    for (const Field& td : testproto::fields(p, 60)) {
      uint64_t uuid = testproto::one(td.bytes, 1).varint;
      if (d.track_names.count(uuid) || d.process_tracks.count(uuid)) d.problems.push_back("a track described twice");
      if (auto proc = testproto::fields(td.bytes, 3); !proc.empty()) {
        d.process_tracks.insert(uuid);
        continue;
      }
      if (auto th = testproto::fields(td.bytes, 4); !th.empty()) d.track_names[uuid] = std::string(testproto::one(th[0].bytes, 5).bytes);
      else d.track_names[uuid] = std::string(testproto::one(td.bytes, 2).bytes);
      if (auto parent = testproto::fields(td.bytes, 5); !parent.empty()) d.parents[uuid] = parent[0].varint;
      if (!testproto::fields(td.bytes, 8).empty()) d.counter_tracks.insert(uuid);
    }
    for (const Field& te : testproto::fields(p, 11)) {
      Decoded::Event e;
      e.ts = clock;
      e.type = testproto::one(te.bytes, 9).varint;
      e.track = testproto::one(te.bytes, 11).varint;
      if (!d.track_names.count(e.track)) d.problems.push_back("an event on a track not yet described");
      if (auto n = testproto::fields(te.bytes, 10); !n.empty()) {
        e.name_iid = n[0].varint;
        if (!d.names.count(e.name_iid)) d.problems.push_back("a name iid used before it is defined");
      }
      if (auto c = testproto::fields(te.bytes, 3); !c.empty()) {
        e.category_iid = c[0].varint;
        if (!d.categories.count(e.category_iid)) d.problems.push_back("a category iid used before it is defined");
      }
      for (const Field& a : testproto::fields(te.bytes, 4)) {
        uint64_t name = testproto::one(a.bytes, 1).varint;
        if (!d.arg_names.count(name)) d.problems.push_back("an arg name iid used before it is defined");
        for (const Field& v : testproto::decode(a.bytes))
          if (v.number != 1) e.args[d.arg_names[name]] = v;
      }
      if (auto legacy = testproto::fields(te.bytes, 6); !legacy.empty()) {
        e.flow_bind = testproto::one(legacy[0].bytes, 8).varint;
        e.flow_direction = testproto::one(legacy[0].bytes, 13).varint;
      }
      d.events.push_back(std::move(e));
    }
    for (const Field& ce : testproto::fields(p, 5))
      for (const Field& m : testproto::fields(ce.bytes, 2)) d.metadata = std::string(testproto::one(m.bytes, 5).bytes);
  }
  return d;
}

class PerfettoTrace : public ::testing::Test {
 protected:
  void SetUp() override { db.exec_file(testdb::source_dir() + "/examples/example_profile.sql"); }
  // The trace with GPU work as TrackEvent slices (nsystrace_option('gpu_model', 'slices')), the form this decoder
  // reads and compares with the JSON; the typed GPU model is checked in tests/conformance/gpu_model_test.cc.
  std::string blob(const std::string& where = "") {
    db.exec("select nsystrace_option('gpu_model', 'slices')");
    sqlite3_stmt* s = nullptr;
    std::string sql = "select perfetto_trace(*) from trace_events " + where;
    EXPECT_EQ(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db.get());
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      EXPECT_EQ(sqlite3_column_type(s, 0), SQLITE_BLOB);
      out.assign(static_cast<const char*>(sqlite3_column_blob(s, 0)), static_cast<size_t>(sqlite3_column_bytes(s, 0)));
    }
    sqlite3_finalize(s);
    return out;
  }
  testdb::Db db;
};

TEST_F(PerfettoTrace, EverySliceBeginsAndEndsWhereTheRowsSay) {
  Decoded d = decode_trace(blob());
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  // Begin (1) and instant (3) events, in order, are the rows: (ts, name, kind).
  std::vector<std::vector<std::string>> begun;
  std::map<uint64_t, std::vector<int64_t>> open;  // per track: the begun slices' ends
  int64_t last = INT64_MIN;
  for (const auto& e : d.events) {
    if (e.ts < last) ADD_FAILURE() << "packets out of time order";
    last = e.ts;
    if (e.type == 1 || e.type == 3)
      begun.push_back({std::to_string(e.ts), d.names[e.name_iid], d.categories[e.category_iid]});
  }
  auto rows = db.rows("select ts, name, kind from trace_events where kind != 'gpu_metric'");
  EXPECT_EQ(begun, rows);
  // Every begin has its end at ts + dur, on the same track, nested (the innermost ends first).
  std::vector<std::vector<std::string>> ended;
  std::map<uint64_t, std::vector<std::pair<int64_t, std::string>>> stacks;
  size_t row = 0;
  auto durs = db.rows("select dur from trace_events where kind != 'gpu_metric'");
  for (const auto& e : d.events) {
    if (e.type == 1) {
      stacks[e.track].push_back({e.ts + std::stoll(durs[row][0]), d.names[e.name_iid]});
    } else if (e.type == 2) {
      auto& st = stacks[e.track];
      ASSERT_FALSE(st.empty()) << "an end without a begin";
      EXPECT_EQ(st.back().first, e.ts) << st.back().second << " ends at the wrong time or out of nesting";
      st.pop_back();
    }
    if (e.type == 1 || e.type == 3) ++row;
  }
  for (const auto& [track, st] : stacks) EXPECT_TRUE(st.empty()) << "slices never ended on track " << track;
}

TEST_F(PerfettoTrace, TracksArgsAndFlowsAreWhatTheJsonHolds) {
  Decoded d = decode_trace(blob());
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  // Track names: the JSON's thread names, lanes as "[lane k]" child tracks.
  std::set<std::string> proto_tracks;
  for (const auto& [uuid, name] : d.track_names) proto_tracks.insert(name);
  auto json = testtrace::check_trace(db.text("select chrome_trace(*) from trace_events"));
  std::set<std::string> json_tracks;
  for (const auto& [key, name] : json.thread_names) json_tracks.insert(name);
  EXPECT_EQ(proto_tracks, json_tracks);
  // Args are typed: ints stay ints, strings are interned strings, triples are arrays.
  const Decoded::Event* kernel = nullptr;
  for (const auto& e : d.events)
    if (e.type == 1 && d.categories[e.category_iid] == "kernel") {
      kernel = &e;
      break;
    }
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->args.at("registers_per_thread").number, 4u);  // int_value
  EXPECT_EQ(kernel->args.at("registers_per_thread").varint, 122u);
  EXPECT_EQ(kernel->args.at("demangled_name").number, 17u);  // string_value_iid
  EXPECT_EQ(d.arg_strings.at(kernel->args.at("demangled_name").varint), "ampere_sgemm_128x64_tn");
  // Flows: one flow out per first API call of a correlation id; in, per GPU operation it launched: as many as the
  // JSON's arrows, each to a call that flowed out.
  std::set<uint64_t> out;
  int64_t in = 0;
  for (const auto& e : d.events) {
    if (e.flow_direction == 2) {
      EXPECT_TRUE(out.insert(e.flow_bind).second) << "a flow out twice";
    }
    if (e.flow_direction == 1) {
      ++in;
      EXPECT_TRUE(out.count(e.flow_bind)) << "a flow into GPU work from no call";
    }
  }
  EXPECT_EQ(in, json.flow_starts);
  // The metadata is the JSON's otherData.
  EXPECT_EQ(d.metadata, db.text("select json_extract(chrome_trace(*), '$.otherData') from trace_events"));
}

TEST_F(PerfettoTrace, FileFormWritesTheSameBytesAndFollowsTheSameRules) {
  testdb::TempDir dir("nsystrace_pftrace");
  std::string bytes = blob("where kind in ('kernel', 'nvtx')");
  std::string path = dir.file("t.pftrace");
  EXPECT_EQ(db.integer("select perfetto_trace_file('" + path + "') from trace_events where kind in ('kernel', 'nvtx')"),
            static_cast<int64_t>(bytes.size()));
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), bytes);
  // The same refusals as the Chrome functions: other rows than a scan's, a database as the output.
  EXPECT_NE(db.error_of("select perfetto_trace(*) from (select distinct kind, name from trace_events)")
                .find("perfetto_trace(t.event)"),
            std::string::npos);
  std::string profile = dir.file("p.sqlite");
  {
    testdb::Db make(profile, false, true);
    make.exec("create table t(x)");
  }
  EXPECT_NE(db.error_of("select perfetto_trace_file('" + profile + "') from trace_events").find("refusing to write"),
            std::string::npos);
  EXPECT_NE(db.error_of("select perfetto_trace_file('" + dir.file("none.pftrace") + "') from trace_events where "
                        "name = 'nope'")
                .find("selected no rows"),
            std::string::npos);
}

TEST_F(PerfettoTrace, EmptyAndNegativeTimes) {
  Decoded empty = decode_trace(blob("where kind = 'memset' and ts < 0"));
  EXPECT_TRUE(empty.problems.empty());
  EXPECT_TRUE(empty.events.empty());
  EXPECT_FALSE(empty.metadata.empty());
  db.exec("delete from CUPTI_ACTIVITY_KIND_KERNEL; delete from NVTX_EVENTS; delete from CUPTI_ACTIVITY_KIND_MEMCPY;"
          "delete from CUPTI_ACTIVITY_KIND_MEMSET; delete from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;"
          "update CUPTI_ACTIVITY_KIND_RUNTIME set start = start - 2000100000, end = end - 2000100000");
  Decoded d = decode_trace(blob());
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  int64_t clamped = db.integer("select count(*) from trace_events where ts < 0");
  ASSERT_GT(clamped, 0);
  int64_t seen = 0;
  for (const auto& e : d.events) {
    EXPECT_GE(e.ts, 0);
    if (e.type == 1 && e.args.count("recorded_ts_ns")) {
      ++seen;
      EXPECT_EQ(e.ts, 0);
      EXPECT_LT(static_cast<int64_t>(e.args.at("recorded_ts_ns").varint), 0);
    }
  }
  EXPECT_EQ(seen, clamped);
}


// The protobuf trace of a fixture export, read back as a BLOB.
std::string fixture_trace(testdb::Db& db, const std::string& where = "") {
  db.exec("select nsystrace_option('gpu_model', 'slices')");  // the TrackEvent form (see PerfettoTrace::blob)
  std::string out;
  sqlite3_stmt* s = nullptr;
  std::string sql = "select perfetto_trace(*) from trace_events " + where;
  EXPECT_EQ(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db.get());
  if (sqlite3_step(s) == SQLITE_ROW)
    out.assign(static_cast<const char*>(sqlite3_column_blob(s, 0)), static_cast<size_t>(sqlite3_column_bytes(s, 0)));
  else
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db.get());
  sqlite3_finalize(s);
  return out;
}

// Every DebugAnnotation of the trace, with what it holds: a legacy_json_value (field 9) is never written (Perfetto's
// importer aborts on a JSON null there), a null is the name alone.
std::vector<std::string_view> annotations(std::string_view trace) {
  std::vector<std::string_view> out;
  for (const Field& packet : testproto::decode(trace))
    for (const Field& te : testproto::fields(packet.bytes, 11))
      for (const Field& a : testproto::fields(te.bytes, 4)) out.push_back(a.bytes);
  return out;
}

// CUDA events (nsys 2023.4+) are instants: a timestamp, no end, so no "invalid_end". A NULL end where one is
// required (hostile.sql's kernel at 200) is said with a null arg: in the protobuf, the arg's name without a value.
TEST(PerfettoTraceFixtures, CudaEventsAreInstantsAndANullArgIsANameWithoutValue) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/more_kinds.sql");
  EXPECT_EQ(db.rows("select dur is null, args from trace_events where kind = 'cuda_event'"),
            (std::vector<std::vector<std::string>>{{"1", "{\"event_id\":42,\"correlation_id\":9,\"context_id\":1}"}}));
  std::string json = db.text("select chrome_trace(*) from trace_events");
  EXPECT_EQ(json.find("invalid_end"), std::string::npos);
  EXPECT_EQ(json.find("rows_with_invalid_end"), std::string::npos) << "no row of more_kinds.sql has an invalid end";
  Decoded d = decode_trace(fixture_trace(db, "where kind = 'cuda_event'"));
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, 3u) << "an instant";
  EXPECT_EQ(d.events[0].ts, 900);
  EXPECT_EQ(d.events[0].args.count("invalid_end"), 0u);

  testdb::Db hostile;
  hostile.exec_file(testdb::source_dir() + "/tests/fixtures/hostile.sql");
  std::string trace = fixture_trace(hostile, "where kind = 'kernel'");
  d = decode_trace(trace);
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  uint64_t invalid_end = 0;
  for (const auto& [iid, name] : d.arg_names)
    if (name == "invalid_end") invalid_end = iid;
  ASSERT_NE(invalid_end, 0u);
  int nulls = 0, ints = 0;
  for (std::string_view a : annotations(trace)) {
    EXPECT_TRUE(testproto::fields(a, 9).empty()) << "a legacy_json_value";
    if (testproto::one(a, 1).varint != invalid_end) continue;
    std::vector<Field> all = testproto::decode(a);
    if (all.size() == 1) ++nulls;  // the name alone
    else if (testproto::fields(a, 4).size() == 1 && testproto::one(a, 4).varint == 90) ++ints;
  }
  EXPECT_EQ(nulls, 1);  // [200, NULL]
  EXPECT_EQ(ints, 1);   // [100, 90]
}

// Times at the limits of int64 (hostile.sql, negative_times.sql): every packet in [0, kLatestViewerTs] on a clock
// that never runs backwards, every slice ended no earlier than it began, and what could not be drawn where it was
// recorded keeps its recorded times in args; nothing overflows (UBSan checks this in the sanitized build).
TEST(PerfettoTraceFixtures, ExtremeTimesAreDrawnWithinTheViewersRange) {
  constexpr int64_t kLatest = 9223372036854000000;  // viewer_time.h
  for (const char* fixture : {"hostile", "negative_times"}) {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/" + fixture + ".sql");
    // On the session's time, the window is [0, kLatestViewerTs]; on wall-clock time (the default) it ends the session
    // start earlier (trace_clock_test).
    db.exec("select nsystrace_option('wall_clock', 0)");
    Decoded d = decode_trace(fixture_trace(db));
    for (const auto& p : d.problems) ADD_FAILURE() << fixture << ": " << p;
    std::map<uint64_t, std::vector<int64_t>> open;  // per track: the begin times of its open slices
    int64_t last = 0;
    int moved = 0;
    for (const auto& e : d.events) {
      EXPECT_GE(e.ts, last) << fixture << ": the clock ran backwards";
      last = e.ts;
      EXPECT_GE(e.ts, 0) << fixture;
      EXPECT_LE(e.ts, kLatest) << fixture;
      if (e.type == 1) open[e.track].push_back(e.ts);
      if (e.type == 2) {
        ASSERT_FALSE(open[e.track].empty()) << fixture << ": an end without a begin";
        EXPECT_GE(e.ts, open[e.track].back()) << fixture;
        open[e.track].pop_back();
      }
      if (e.args.count("recorded_ts_ns")) {
        ++moved;
        int64_t recorded = static_cast<int64_t>(e.args.at("recorded_ts_ns").varint);
        EXPECT_TRUE(recorded < 0 || recorded > kLatest || e.ts == kLatest) << fixture << ": " << recorded;
      }
    }
    for (const auto& [track, begun] : open) EXPECT_TRUE(begun.empty()) << fixture << ": a slice never ended";
    EXPECT_EQ(moved, db.integer("select count(*) from trace_events where ts < 0 or ts > " + std::to_string(kLatest) +
                                " or (dur is not null and ts + dur > " + std::to_string(kLatest) + ")"))
        << fixture;
  }
  // The mark at INT64_MAX: at the latest time, its recorded time in args.
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/negative_times.sql");
  db.exec("select nsystrace_option('wall_clock', 0)");
  Decoded d = decode_trace(fixture_trace(db, "where name = 'int64 max mark'"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].ts, kLatest);
  ASSERT_TRUE(d.events[0].args.count("recorded_ts_ns"));
  EXPECT_EQ(static_cast<int64_t>(d.events[0].args.at("recorded_ts_ns").varint), INT64_MAX);
}

// A second report whose session started later is shifted onto the first one's clock: hostile.sql's kernel
// [9223372036854775000, INT64_MAX] then starts at INT64_MAX (saturated) and its end, start + duration, is past
// int64. The writer drew it with a wrapped end before its start, on a clock run backwards by a wrapped delta
// (signed overflow: UBSan stops there in the sanitized build). Now it is drawn at the latest time, its recorded
// times in args.
TEST(PerfettoTraceFixtures, AReportShiftedPastInt64IsDrawnAtTheLatestTime) {
  testdb::TempDir dir("nsystrace_pf_shift");
  for (const char* name : {"main", "late"}) {
    testdb::Db make(dir.file(std::string(name) + ".sqlite"), false, true);
    make.exec_file(testdb::source_dir() + "/tests/fixtures/hostile.sql");
    make.exec(std::string("create table TARGET_INFO_SESSION_START_TIME(utcEpochNs integer); insert into "
                          "TARGET_INFO_SESSION_START_TIME values (") +
              (name == std::string("main") ? "1767225600000000000" : "1767225605000000000") + ")");
  }
  testdb::Db db(dir.file("main.sqlite"));
  db.exec("select nsystrace_option('wall_clock', 0)");  // the window on the session's time, as above
  db.exec("attach 'file:" + dir.file("late.sqlite") + "?mode=ro' as late");
  const std::string where = "where schema = 'late' and kind = 'kernel'";
  ASSERT_EQ(db.integer("select count(*) from trace_events " + where + " and ts = 9223372036854775807 and dur = 807"), 1);
  std::string trace = fixture_trace(db, where);
  Decoded d = decode_trace(trace);
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  constexpr int64_t kLatest = 9223372036854000000;  // viewer_time.h
  int64_t last = 0;
  int at_latest = 0;
  for (const auto& e : d.events) {
    EXPECT_GE(e.ts, last) << "the clock ran backwards";
    last = e.ts;
    EXPECT_LE(e.ts, kLatest);
    if (e.type == 1 && e.ts == kLatest) {
      ++at_latest;
      ASSERT_TRUE(e.args.count("recorded_ts_ns"));
      EXPECT_EQ(static_cast<int64_t>(e.args.at("recorded_ts_ns").varint), INT64_MAX);
      EXPECT_EQ(static_cast<int64_t>(e.args.at("recorded_dur_ns").varint), 807);
    }
  }
  EXPECT_EQ(at_latest, 1);
}

}  // namespace

// NCCL's ranges (tests/fixtures/nccl_payloads.sql) in the protobuf: on a track of their thread named "NCCL" (the
// domain's name), described with the thread as its parent, with their decoded payload as debug annotations: the
// communicator id as an unsigned value, the message size as an integer, the reduction operation by its name.
TEST(PerfettoTraceFixtures, NcclRangesAreOnTheirThreadsNcclTrackWithTheirPayloads) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/nccl_payloads.sql");
  std::string trace = fixture_trace(db);
  Decoded d = decode_trace(trace);
  for (const auto& p : d.problems) ADD_FAILURE() << p;
  // The thread's track (a thread descriptor: tid 100) and the NCCL track whose parent it is.
  uint64_t thread = 0, nccl = 0, nccl_parent = 0;
  for (const Field& packet : testproto::decode(trace))
    for (const Field& td : testproto::fields(packet.bytes, 60)) {
      uint64_t uuid = testproto::one(td.bytes, 1).varint;
      if (auto th = testproto::fields(td.bytes, 4); !th.empty() && testproto::one(th[0].bytes, 2).varint == 100)
        thread = uuid;
      if (auto name = testproto::fields(td.bytes, 2); !name.empty() && name[0].bytes == "NCCL")
        nccl = uuid, nccl_parent = testproto::one(td.bytes, 5).varint;
    }
  ASSERT_NE(thread, 0u);
  ASSERT_NE(nccl, 0u);
  EXPECT_EQ(nccl_parent, thread);
  int on_nccl = 0, on_thread = 0;
  const Decoded::Event* all_reduce = nullptr;
  for (const auto& e : d.events) {
    if (e.type != 1) continue;  // slice begins
    const std::string& name = d.names[e.name_iid];
    if (e.track == nccl) ++on_nccl;
    if (e.track == thread) ++on_thread;
    EXPECT_EQ(e.track == nccl, name.rfind("nccl", 0) == 0) << name;
    if (e.ts == 500) all_reduce = &e;
  }
  EXPECT_EQ(on_nccl, 8);
  EXPECT_EQ(on_thread, 1);  // train step
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->args.at("NCCL communicator ID").number, 3u);  // uint_value
  EXPECT_EQ(all_reduce->args.at("NCCL communicator ID").varint, 17297704936375867000u);
  EXPECT_EQ(all_reduce->args.at("Message size [bytes]").number, 4u);  // int_value
  EXPECT_EQ(all_reduce->args.at("Message size [bytes]").varint, 33554432u);
  const Field& op = all_reduce->args.at("Reduction operation");
  EXPECT_EQ(op.number == 17 ? d.arg_strings.at(op.varint) : std::string(op.bytes), "Sum");
}
