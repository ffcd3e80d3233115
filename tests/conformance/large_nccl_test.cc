// NCCL's NVTX ranges in the large real export ../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite (nsys
// 2025.3.2, NCCL 2.28.3, one rank): its 33 ranges of NCCL's domain, compared with plain SQL over NVTX_EVENTS, are on
// their thread in trace_events, on a track of their thread named "NCCL" in the Perfetto protobuf and on the tid of
// their own named "<thread> (NCCL)" in the Chrome JSON, both as Perfetto's trace processor imports them. The export
// holds NCCL's payload schemas but no payload value (docs/limits.md): no range gets payload args. Only the NVTX rows
// are converted (the export's 1.1M GPU metric samples are left out). Skipped, visibly, without ../shared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/mini_json.h"
#include "tests/support/perfetto_tools.h"
#include "tests/support/test_db.h"

namespace {

using Rows = std::vector<std::vector<std::string>>;

// Per name of NCCL's ranges, "name,count,sum of starts - first start,sum of durations,tid", from the raw tables:
// NCCL's domain is the one its domain-create row (eventType 75) names 'NCCL'.
Rows raw_nccl_ranges(testdb::Db& db) {
  return db.rows(
      "select coalesce(e.text, s.value), count(*), sum(e.start), sum(e.\"end\" - e.start), e.globalTid % 16777216 "
      "from NVTX_EVENTS e left join StringIds s on s.id = e.textId where e.eventType in (59, 70) and e.domainId in "
      "(select domainId from NVTX_EVENTS where eventType = 75 and text = 'NCCL') group by 1, 5 order by 1");
}

class LargeNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testdb::large_export();
    if (path_.empty()) GTEST_SKIP() << "../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite not found: NOT checked";
  }
  std::string path_;
};

TEST_F(LargeNccl, RangesAreOnTheirThreadWithoutPayloadArgs) {
  testdb::Db db(path_, /*load_shared_object=*/true);
  Rows raw = raw_nccl_ranges(db);
  ASSERT_EQ(raw.size(), 4u);  // ncclAllReduce (30), ncclCommDestroy, ncclCommFinalize, ncclCommInitRankConfig
  EXPECT_EQ(raw[0][1], "30");
  // trace_events: the same ranges at the same times (the export's own clock: no other report), on their thread's tid.
  EXPECT_EQ(db.rows("select name, count(*), sum(ts), sum(dur), tid from trace_events where kind = 'nvtx' and "
                    "json_extract(args, '$.domain') = 'NCCL' group by name, tid order by name"),
            raw);
  EXPECT_EQ(db.rows("select distinct thread_name from trace_events where kind = 'nvtx' and "
                    "json_extract(args, '$.domain') = 'NCCL'"),
            (Rows{{"python3 (NCCL)"}}));
  // What docs/limits.md says of this export: NCCL's schemas, no payload value; so no range has payload args.
  EXPECT_EQ(db.rows("select (select count(*) from NVTX_PAYLOAD_SCHEMAS), (select count(*) from "
                    "NVTX_PAYLOAD_SCHEMA_ENTRIES), count(binaryData), count(jsonText), count(jsonTextId) from NVTX_EVENTS"),
            (Rows{{"4", "12", "0", "0", "0"}}));
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'nvtx' and args like '%payload%'"), 0);
}

// Both formats, as Perfetto's trace processor imports them: no error stat; per name, the same ranges as the raw
// tables, in the protobuf on a thread track named "NCCL" of the ranges' thread, in the JSON on a thread of their own
// named "python3 (NCCL)".
TEST_F(LargeNccl, BothFormatsDrawThemUnderTheDomainsName) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: NOT checked";
  testdb::Db db(path_, /*load_shared_object=*/true);
  testdb::TempDir dir("nsystrace_large_nccl");
  std::string pftrace = dir.file("t.pftrace"), json = dir.file("t.json");
  db.integer("select perfetto_trace_file('" + pftrace + "') from trace_events where kind = 'nvtx'");
  db.integer("select chrome_trace_file('" + json + "') from trace_events where kind = 'nvtx'");
  Rows raw = raw_nccl_ranges(db);
  // The session's start on the UTC clock the traces are on (a protobuf's clock snapshot; the JSON's times are
  // relative to the same time 0 the export's are).
  const int64_t start = db.integer("select utcEpochNs from TARGET_INFO_SESSION_START_TIME");
  auto lines = [&](const std::string& trace, int64_t zero, const std::string& track) {
    return tp::lines(tools, trace,
                    "select s.name || ',' || count(*) || ',' || sum(s.ts - " + std::to_string(zero) + ") || ',' || "
                    "sum(s.dur) || ',' || th.tid from slice s join thread_track t on t.id = s.track_id join thread th "
                    "using (utid) where " + track + " and s.name like 'nccl%' group by s.name, th.tid order by s.name");
  };
  std::vector<std::string> expected;
  for (const auto& r : raw) expected.push_back(r[0] + "," + r[1] + "," + r[2] + "," + r[3] + "," + r[4]);
  for (const std::string& trace : {pftrace, json}) {
    testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + trace));
    EXPECT_EQ(stats.get("stats")->items.size(), 0u) << trace << ": " << tp::run(tools + "/import-stats " + trace);
  }
  // The protobuf: on the thread itself (tid 817, python3), on its track named NCCL.
  EXPECT_EQ(lines(pftrace, start, "t.name = 'NCCL' and th.name = 'python3'"), expected);
  // The JSON: a tid of its own, named after the thread and the domain; its times are the same, in microseconds.
  std::vector<std::string> in_json;
  for (const auto& r : raw) in_json.push_back(r[0] + "," + r[1] + "," + r[2] + "," + r[3]);
  std::vector<std::string> got = tp::lines(
      tools, json,
      "select s.name || ',' || count(*) || ',' || sum(s.ts) || ',' || sum(s.dur) from slice s join thread_track t "
      "on t.id = s.track_id join thread th using (utid) where th.name = 'python3 (NCCL)' and s.name like 'nccl%' "
      "group by s.name order by s.name");
  EXPECT_EQ(got, in_json);
}

// The decoded payloads of tests/fixtures/nccl_payloads.sql as Perfetto's trace processor imports both formats (no
// export of ../shared needed, only the tools): no error stat, and per all-reduce its fields in the args table. Perfetto
// writes a debug annotation's '[' and ']' as '_' in its key; the protobuf keeps a communicator id above 2^63 - 1
// exactly (an unsigned value); the JSON importer reads that number as a double, so it is not compared there
// (docs/limits.md: what viewers show).
TEST(NcclPayloadFixture, ArgsAreWhatPerfettosImporterReads) {
  std::string tools = tp::tools_dir();
  if (tools.empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: NOT checked";
  testdb::TempDir dir("nsystrace_nccl_payloads");
  std::string pftrace = dir.file("t.pftrace"), json = dir.file("t.json");
  {
    testdb::Db db;
    db.exec_file(testdb::source_dir() + "/tests/fixtures/nccl_payloads.sql");
    db.integer("select perfetto_trace_file('" + pftrace + "') from trace_events");
    db.integer("select chrome_trace_file('" + json + "') from trace_events");
  }
  for (const std::string& trace : {pftrace, json}) {
    testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + trace));
    EXPECT_EQ(stats.get("stats")->items.size(), 0u) << trace << ": " << tp::run(tools + "/import-stats " + trace);
  }
  // Per all-reduce: its ts, then the values of `keys` in key order.
  auto fields = [&](const std::string& trace, const std::string& keys) {
    return tp::lines(tools, trace,
                    "select s.ts || ',' || group_concat(a.display_value, ',' order by a.key) from slice s join args a "
                    "using (arg_set_id) where s.name = 'ncclAllReduce' and a.key in (" + keys + ") group by s.id "
                    "order by s.ts");
  };
  EXPECT_EQ(fields(pftrace,
                   "'debug.Message size _bytes_', 'debug.NCCL communicator ID', 'debug.Reduction operation', "
                   "'debug.payload_error'"),
            (std::vector<std::string>{"500,33554432,17297704936375867000,Sum", "700,4096,17297704936375867000,Max",
                                      "900,1024,17297704936375867000,7",
                                      "1000,17297704936375867000,the header announces 24 payload bytes, binaryData "
                                      "holds 12"}));
  EXPECT_EQ(fields(json,
                   "'args.Message size [bytes]', 'args.Reduction operation', 'args.payload_error'"),
            (std::vector<std::string>{"500,33554432,Sum", "700,4096,Max", "900,1024,7",
                                      "1000,the header announces 24 payload bytes, binaryData holds 12"}));
}

}  // namespace
