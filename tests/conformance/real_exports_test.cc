// Conformance over every real export in ../shared/fixtures/real (nsys 2020 -> 2026.2), through the built .so:
// each converts; per-kind counts equal the source tables; kernel (ts, dur) pairs in the JSON equal the profile's
// exactly; the JSON parses; no partial overlap on any track; every track has metadata; flows are paired.
// Without ../shared the suite skips with a visible message (CTest reports it as skipped, not passed).
#include <gtest/gtest.h>

#include <algorithm>
#include <dirent.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <unistd.h>

#include "src/model/export_model.h"
#include "tests/support/differential.h"
#include "tests/support/perfetto_tools.h"
#include "tests/support/test_db.h"
#include "tests/support/trace_check.h"

namespace {

std::vector<std::string> real_exports() { return testdb::real_exports(); }

const char* const kKinds[] = {"kernel", "memcpy", "memset", "sync", "cuda_api", "nvtx", "osrt", "sched", "cuda_event",
                              "diagnostic", "cpu_sample"};

// What the profile itself says: rows per kind, counted straight from the source tables.
std::map<std::string, int64_t> source_counts(testdb::Db& db) {
  auto has = [&](const char* t) {
    return db.integer(std::string("select count(*) from sqlite_schema where type='table' and name='") + t + "'") > 0;
  };
  auto count = [&](const char* t, const char* where = "1") -> int64_t {
    return has(t) ? db.integer(std::string("select count(*) from ") + t + " where " + where) : 0;
  };
  auto has_column = [&](const char* t, const char* c) {
    return db.integer(std::string("select count(*) from pragma_table_info('") + t + "') where name = '" + c + "'") > 0;
  };
  return {{"kernel", count("CUPTI_ACTIVITY_KIND_KERNEL")},
          {"memcpy", count("CUPTI_ACTIVITY_KIND_MEMCPY")},
          {"memset", count("CUPTI_ACTIVITY_KIND_MEMSET")},
          {"sync", count("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")},
          {"cuda_api", count("CUPTI_ACTIVITY_KIND_RUNTIME")},
          {"nvtx", count("NVTX_EVENTS", "eventType in (34, 59, 60, 70, 71)")},
          {"osrt", count("OSRT_API")},
          {"sched", count("SCHED_EVENTS", "isSchedIn = 1")},  // a slice per sched-in, ended by the next record
          // CUDA events without a timestamp (before 2023.4) cannot be placed: counted as skipped instead.
          {"cuda_event", has("CUPTI_ACTIVITY_KIND_CUDA_EVENT") && has_column("CUPTI_ACTIVITY_KIND_CUDA_EVENT", "timestamp")
                             ? count("CUPTI_ACTIVITY_KIND_CUDA_EVENT") : 0},
          {"diagnostic", count("DIAGNOSTIC_EVENT")},
          {"cpu_sample", count("COMPOSITE_EVENTS")}};
}

class RealExport : public ::testing::TestWithParam<std::string> {
 protected:
  // The checks but the whole conversion run on a sample of the exports under the sanitizers (the matrix's ASan run
  // converts every export completely); the Release pass runs each on every export.
  void skip_unless_sampled() {
    if (std::string why = testdb::not_sampled_under_sanitizers(GetParam(), real_exports()); !why.empty())
      GTEST_SKIP() << why;
  }
};
// The same exports through Perfetto's importer: under the sanitizers a sample, since what they check is the trace,
// which the Release pass checks on every export, not the memory of the process.
class RealExportInPerfetto : public RealExport {
 protected:
  void SetUp() override { skip_unless_sampled(); }
};

TEST_P(RealExport, ConvertsCompletelyAndExactly) {
  std::string path = testdb::shared_fixtures_dir() + "/" + GetParam();
  testdb::Db db(path, /*load_shared_object=*/true);
  auto expected = source_counts(db);

  // trace_events: one row per source row, per kind.
  for (const char* kind : kKinds) {
    int64_t rows = db.integer(std::string("select count(*) from trace_events where derived in (0, 1) and kind='") + kind + "'");
    EXPECT_EQ(rows, expected[kind]) << kind;
  }

  std::string json = db.text("select chrome_trace(*) from trace_events where derived in (0, 1)");
  testtrace::TraceSummary t = testtrace::check_trace(json);
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  for (const char* kind : kKinds) EXPECT_EQ(t.per_cat[kind], expected[kind]) << "JSON slices of kind " << kind;
  // Rows that cannot be placed are accounted for in otherData, never silently missing.
  bool events_without_time =
      db.integer("select count(*) from sqlite_schema where name = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT'") > 0 &&
      db.integer("select count(*) from pragma_table_info('CUPTI_ACTIVITY_KIND_CUDA_EVENT') where name = 'timestamp'") == 0;
  if (events_without_time) {
    const testjson::Value* skipped = t.root.get("otherData")->get("skipped_rows_without_start");
    ASSERT_NE(skipped, nullptr);
    EXPECT_EQ(skipped->integer("cuda_event"), db.integer("select count(*) from CUPTI_ACTIVITY_KIND_CUDA_EVENT"));
  }
  // One 'nvtx_kernel' slice per (nvtx_kernel_ranges row, device it used).
  EXPECT_EQ(t.per_cat["nvtx_kernel"],
            db.integer("select coalesce(sum(length(devices) - length(replace(devices, ',', '')) + 1), 0) "
                       "from nvtx_kernel_ranges"));

  // Kernel (ts, dur) in the JSON, decoded digit for digit, equal the profile's (start, end - start).
  std::vector<std::pair<int64_t, int64_t>> from_json, from_profile;
  for (const auto& s : t.slices)
    if (s.cat == "kernel") from_json.emplace_back(s.ts_ns, s.dur_ns);
  if (expected["kernel"] > 0) {
    for (const auto& r : db.rows("select start, end - start from CUPTI_ACTIVITY_KIND_KERNEL"))
      from_profile.emplace_back(std::stoll(r[0]), std::stoll(r[1]));
  }
  std::sort(from_json.begin(), from_json.end());
  std::sort(from_profile.begin(), from_profile.end());
  EXPECT_EQ(from_json, from_profile);
}

// The hidden columns that args carry (domain, demangled_name, size_bytes and the memory kinds) are args' on every
// row, read with args or without (testdiff::check_columns_args_carry).
TEST_P(RealExport, ColumnsArgsCarryAreArgs) {
  skip_unless_sampled();
  if (IsSkipped()) return;
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  for (const auto& f : testdiff::check_columns_args_carry(db)) ADD_FAILURE() << f;
}

// The call_* columns are the launch join, the earliest call taken (testdiff::check_call_columns).
TEST_P(RealExport, CallColumnsAreTheLaunchJoin) {
  skip_unless_sampled();
  if (IsSkipped()) return;
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  for (const auto& f : testdiff::check_call_columns(db)) ADD_FAILURE() << f;
}

// An independent, plain-SQL statement of NVIDIA's definition of the NVTX GPU projection (see
// src/model/nvtx_projection.h), for comparison row by row: (rowid, gpu_start, gpu_end, gpu_ops, kernels) per range that
// launched work, and the sum and the union of its operations' intervals (gpu_op_time, gpu_busy_time). Built from
// the tables the export has; "" when it cannot have any row.
std::string reference_projection_sql(testdb::Db& db) {
  auto has = [&](const std::string& t) {
    return db.integer("select count(*) from sqlite_schema where type = 'table' and name = '" + t + "'") > 0;
  };
  if (!has("NVTX_EVENTS") || !has("CUPTI_ACTIVITY_KIND_RUNTIME")) return "";
  std::string ops, ends;
  for (auto [table, is_kernel] : {std::pair<const char*, int>{"CUPTI_ACTIVITY_KIND_KERNEL", 1},
                                  {"CUPTI_ACTIVITY_KIND_MEMCPY", 0}, {"CUPTI_ACTIVITY_KIND_MEMSET", 0},
                                  {"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", 0}}) {
    if (!has(table)) continue;
    ops += std::string(ops.empty() ? "" : " union all ") + "select correlationId as corr, globalPid >> 24 as proc, start, \"end\", " +
           std::to_string(is_kernel) + " as is_kernel from " + table;
  }
  if (ops.empty()) return "";
  for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}) {
    if (!has(t)) continue;
    ends += std::string(ends.empty() ? "" : " union all ") + "select max(start) as t from " + t +
            " union all select max(\"end\") from " + t;
  }
  return "with profile_end(t) as (select max(t) from (" + ends + ")), "
         "ranges as (select rowid as id, start, coalesce(\"end\", (select t from profile_end)) as \"end\", globalTid "
         "  from NVTX_EVENTS where eventType in (59, 60, 70, 71) and globalTid is not null "
         "  and (endGlobalTid is null or endGlobalTid = globalTid)), "
         "ops as (" + ops + "), "
         "calls as (select globalTid, start, \"end\", correlationId as corr, globalTid >> 24 as proc "
         "  from CUPTI_ACTIVITY_KIND_RUNTIME), "
         "work as materialized (select distinct r.id, c.corr, o.start, o.\"end\", o.is_kernel from ranges r "
         "  join calls c on c.globalTid = r.globalTid and c.start >= r.start and c.\"end\" <= r.\"end\" "
         "  join ops o on o.corr = c.corr and o.proc = c.proc), "
         // Busy time: an island of overlapping operations starts where an operation starts after every earlier
         // one (in start order) has ended.
         "marked as (select id, start, \"end\", coalesce(start > max(\"end\") over (partition by id order by start, "
         "  \"end\" rows between unbounded preceding and 1 preceding), 1) as new_island from work where \"end\" > start), "
         "islands as (select id, start, \"end\", sum(new_island) over (partition by id order by start, \"end\" "
         "  rows unbounded preceding) as island from marked), "
         "busy as materialized (select id, sum(e - s) as busy from (select id, min(start) as s, max(\"end\") as e from islands "
         "  group by id, island) group by id), "
         "totals as (select id, min(start) as s, max(\"end\") as e, count(distinct corr) as ops, sum(is_kernel) as k, "
         "  sum(max(0, \"end\" - start)) as op_time from work group by id) "
         "select id, s, e, ops, k, op_time, coalesce(busy, 0) from totals left join busy using (id) order by id";
}

TEST_P(RealExport, NvtxProjectionMatchesAPlainSqlStatementOfTheDefinition) {
  skip_unless_sampled();
  if (IsSkipped()) return;
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  std::string reference = reference_projection_sql(db);
  auto ours = db.rows("select rowid, gpu_start, gpu_end, gpu_ops, kernels, gpu_op_time, gpu_busy_time "
                      "from nvtx_kernel_ranges order by rowid");
  if (reference.empty()) {
    EXPECT_TRUE(ours.empty());
    return;
  }
  auto expected = db.rows(reference);
  EXPECT_EQ(ours.size(), expected.size());
  EXPECT_EQ(ours, expected);
  std::printf("%s: %zu NVTX ranges with GPU work\n", GetParam().c_str(), ours.size());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 7);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// A profile made from one of our fixtures (tests/fixtures/<name>.sql) in dir.
std::string fixture_profile(testdb::TempDir& dir, const std::string& name) {
  std::string profile = dir.file(name + ".sqlite");
  testdb::Db make(profile, false, true);
  make.exec_file(testdb::source_dir() + "/tests/fixtures/" + name + ".sql");
  return profile;
}

// Perfetto's importer on both formats of a whole trace (`select ..._file(...) from trace_events where derived in
// (0, 1)`): it must run to its end (exit 0; a crash or abort fails) and report no stat of severity error or
// data_loss (import-stats lists only those). Returns its answers for the JSON and the protobuf.
std::pair<testjson::Value, testjson::Value> import_both_formats(const std::string& tools, testdb::Db& db,
                                                                testdb::TempDir& dir, const std::string& what) {
  std::pair<testjson::Value, testjson::Value> out;
  std::string json = dir.file("trace.json"), proto = dir.file("trace.pftrace");
  db.integer("select chrome_trace_file('" + json + "') from trace_events where derived in (0, 1)");
  db.integer("select perfetto_trace_file('" + proto + "') from trace_events where derived in (0, 1)");
  for (auto [file, answer] : {std::pair{&json, &out.first}, std::pair{&proto, &out.second}}) {
    std::string said = tp::run(tools + "/import-stats " + *file + " 2>&1");
    try {
      *answer = testjson::parse(said);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": Perfetto's importer did not finish on " << *file << ":\n" << said;
      continue;
    }
    const testjson::Value* stats = answer->get("stats");
    if (stats == nullptr || !stats->items.empty())
      ADD_FAILURE() << what << ": Perfetto dropped or changed events of " << *file << ": " << said;
  }
  return out;
}

// Perfetto's own importer (the one ui.perfetto.dev runs) is the judge: it takes every event of both traces, drops or
// changes none (its stats show no error or data_loss row), and holds as many slices and flows as we wrote.
TEST_P(RealExportInPerfetto, PerfettoImportsEveryEvent) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::TempDir dir("nsystrace_perfetto");
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  auto [js, ps] = import_both_formats(tools, db, dir, GetParam());
  std::string json = db.text("select chrome_trace(*) from trace_events where derived in (0, 1)");
  testtrace::TraceSummary t = testtrace::check_trace(json);
  const testjson::Value* other = t.root.get("otherData");
  ASSERT_NE(other, nullptr);
  // Every event is a slice or an instant, except the counter kinds' samples (counter values): which kinds those are
  // is the model's declaration (export_model.def's extent), not a list kept here.
  int64_t events = 0;
  for (const auto& [kind, n] : other->get("event_counts")->members) {
    std::optional<nsystrace::Kind> k = nsystrace::kind_from_name(kind);
    if (!k) ADD_FAILURE() << "event_counts names a kind the model does not declare: " << kind;
    else if (nsystrace::kind_spec(*k).extent != nsystrace::Extent::counter) events += std::stoll(n.text);
  }
  EXPECT_EQ(js.integer("slices"), events);
  EXPECT_EQ(js.integer("flows"), other->integer("flows"));
  EXPECT_EQ(ps.integer("flows"), other->integer("flows"));
}

// The Perfetto protobuf trace of the same rows as the JSON holds, as Perfetto's importer reads them: nothing
// dropped or changed (stats), and the same slices (ts, dur, name, category), flows and counter values; on the whole
// export and on filtered queries (one kind, a ts window, one GPU).
TEST_P(RealExportInPerfetto, PerfettoProtobufHoldsWhatTheJsonHolds) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::TempDir dir("nsystrace_pf");
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  int64_t first = db.integer("select coalesce(min(ts), 0) from trace_events where kind != 'nvtx_kernel'");
  int64_t last = db.integer("select coalesce(max(ts), 0) from trace_events where kind != 'nvtx_kernel'");
  std::vector<std::string> filters = {"", "where kind = 'cuda_api'",
                                      "where ts between " + std::to_string(first + (last - first) / 3) + " and " +
                                          std::to_string(first + (last - first) / 2),
                                      "where pid = 16777216"};
  // CPU samples are instants in the JSON, Perfetto's own stack samples in the protobuf (compared below). GPU work
  // is in Perfetto's GPU compute model in the protobuf (gpu_slice: no category, its kind in the "description" arg).
  const std::string slices =
      "select ts, dur, name, category from slice where category != 'cpu_sample' order by ts, dur, name, category";
  // The protobuf's times are wall-clock times (the default): the session start plus the JSON's.
  const std::string start = std::to_string(tp::session_start_ns(db));
  const std::string proto_slices =
      "select ts - " + start + " as ts, dur, name, coalesce(category, extract_arg(arg_set_id, 'description')) as "
      "category from slice where category is null or category != 'cpu_sample' order by ts, dur, name, category";
  for (const std::string& where : filters) {
    if (db.integer("select count(*) from trace_events " + where) == 0) continue;
    std::string json = dir.file("t.json.gz"), proto = dir.file("t.pftrace");
    db.integer("select chrome_trace_file('" + json + "') from trace_events " + where);
    db.integer("select perfetto_trace_file('" + proto + "') from trace_events " + where);
    testjson::Value js = testjson::parse(tp::run(tools + "/import-stats " + json));
    testjson::Value ps = testjson::parse(tp::run(tools + "/import-stats " + proto));
    EXPECT_EQ(ps.get("stats")->items.size(), 0u) << where << ": Perfetto dropped or changed events";
    // (Not tracks_with_slices: Perfetto's JSON importer folds a tid-0 row into its process's main thread, where the
    // protobuf keeps it on the "Thread 0" track it is laid out on.)
    int64_t samples = db.integer("select count(*) from trace_events " + where + (where.empty() ? " where " : " and ") +
                                 "kind = 'cpu_sample'");
    EXPECT_EQ(tp::integer(tools, json, "select count(*) from slice where category = 'cpu_sample'"), samples) << where;
    EXPECT_EQ(tp::integer(tools, proto, "select count(*) from stack_sample"), samples) << where;
    EXPECT_EQ(ps.integer("slices") + samples, js.integer("slices")) << where;
    for (const char* key : {"flows", "counter_values"}) EXPECT_EQ(ps.str(key), js.str(key)) << where << ": " << key;
    EXPECT_EQ(tp::query(tools, proto, proto_slices), tp::query(tools, json, slices))
        << where;
    if (where.empty()) {
      auto size = [](const std::string& f) {
        std::ifstream in(f, std::ios::binary | std::ios::ate);
        return static_cast<int64_t>(in.tellg());
      };
      std::string plain = dir.file("t.json");
      db.integer("select chrome_trace_file('" + plain + "') from trace_events where derived in (0, 1)");
      std::printf("%s: protobuf %lld bytes, JSON %lld bytes (%.0f%%), %s slices, %s flows\n", GetParam().c_str(),
                  static_cast<long long>(size(proto)), static_cast<long long>(size(plain)),
                  100.0 * static_cast<double>(size(proto)) / static_cast<double>(size(plain)), ps.str("slices").c_str(),
                  ps.str("flows").c_str());
    }
  }
}

// Every call stack in trace_events is exactly its callchain table's frames, in stackDepth order (innermost first),
// with their symbol and module texts and flags: CPU samples (SAMPLING_CALLCHAINS by COMPOSITE_EVENTS.id), OS runtime
// and CUDA API backtraces (OSRT_CALLCHAINS, CUDA_CALLCHAINS by callchainId). Compared both ways with EXCEPT, from a
// plain SQL statement over the raw tables.
TEST_P(RealExport, StacksAreTheExportsFrames) {
  skip_unless_sampled();
  if (IsSkipped()) return;
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  auto has = [&](const std::string& t) {
    return db.integer("select count(*) from sqlite_schema where type='table' and name='" + t + "'") > 0;
  };
  struct Chains {
    const char* kind; const char* events; const char* chains; const char* key; const char* arg;
  };
  int checked = 0;
  for (const Chains& c : {Chains{"cpu_sample", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS", "id", "stack"},
                          Chains{"osrt", "OSRT_API", "OSRT_CALLCHAINS", "callchainId", "backtrace"},
                          Chains{"cuda_api", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA_CALLCHAINS", "callchainId", "backtrace"}}) {
    if (!has(c.events) || !has(c.chains)) continue;
    ++checked;
    std::string kind = c.kind, arg = c.arg, events = c.events, chains = c.chains, key = c.key;
    // trace_events' rowid is (source rowid << 5) | tag: its row of the event table.
    std::string ours = "select e." + key + ", f.key, json_extract(f.value, '$.symbol'), json_extract(f.value, '$.module'), "
                       "coalesce(json_extract(f.value, '$.kernel'), 0), coalesce(json_extract(f.value, '$.unresolved'), 0) "
                       "from trace_events t cross join " + events + " e on e.rowid = (t.rowid >> 5) & 72057594037927935, "
                       "json_each(t.args, '$." + arg + "') f where t.kind = '" + kind + "'";
    std::string raw = "select e." + key + ", row_number() over (partition by e.rowid order by c.stackDepth) - 1, s.value, "
                      "m.value, coalesce(c.kernelMode, 0) != 0, coalesce(c.unresolved, 0) != 0 from " + events +
                      " e join " + chains + " c on c.id = e." + key + " left join StringIds s on s.id = c.symbol "
                      "left join StringIds m on m.id = c.module where e." + key + " != 0";
    int64_t frames = db.integer("select count(*) from (" + ours + ")");
    EXPECT_EQ(frames, db.integer("select count(*) from (" + raw + ")")) << kind;
    EXPECT_EQ(db.integer("select count(*) from (" + ours + " except " + raw + ")"), 0) << kind;
    EXPECT_EQ(db.integer("select count(*) from (" + raw + " except " + ours + ")"), 0) << kind;
    EXPECT_GT(frames, 0) << kind;
    std::printf("%s: %lld %s frames equal %s's\n", GetParam().c_str(), static_cast<long long>(frames), kind.c_str(),
                chains.c_str());
  }
  if (checked == 0) GTEST_SKIP() << "no call stacks in this export";
}

// Perfetto's importer holds every CPU sample as a stack sample of its thread, and the deepest stack frame by frame.
TEST_P(RealExportInPerfetto, PerfettoHoldsEverySampleWithItsStack) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::Db db(testdb::shared_fixtures_dir() + "/" + GetParam(), /*load_shared_object=*/true);
  if (db.integer("select count(*) from sqlite_schema where name in ('COMPOSITE_EVENTS', 'SAMPLING_CALLCHAINS')") < 2)
    GTEST_SKIP() << "no CPU samples in this export";
  testdb::TempDir dir("nsystrace_samples");
  std::string proto = dir.file("t.pftrace");
  db.integer("select perfetto_trace_file('" + proto + "') from trace_events where derived in (0, 1)");
  int64_t samples = tp::integer(tools, proto, "select count(*) from stack_sample");
  EXPECT_EQ(samples, db.integer("select count(*) from COMPOSITE_EVENTS"));
  // The deepest stack (the first of them in time), outermost frame first, as Perfetto reads it back.
  int64_t id = db.integer("select c.id from SAMPLING_CALLCHAINS c join COMPOSITE_EVENTS e on e.id = c.id "
                          "order by c.stackDepth desc, e.start, e.globalTid limit 1");
  int64_t ts = db.integer("select start from COMPOSITE_EVENTS where id = " + std::to_string(id)) + tp::session_start_ns(db);
  int64_t tid = db.integer("select globalTid & 16777215 from COMPOSITE_EVENTS where id = " + std::to_string(id));
  std::string expected = "\"name\",\"module\"\n";
  for (const auto& r : db.rows("select s.value, m.value from SAMPLING_CALLCHAINS c join StringIds s on s.id = c.symbol "
                               "join StringIds m on m.id = c.module where c.id = " + std::to_string(id) +
                               " order by c.stackDepth desc"))
    expected += "\"" + r[0] + "\",\"" + (r[1].rfind('/', 0) == 0 ? "" : "/") + r[1] + "\"\n";  // Perfetto: paths from "/"
  std::string got = tp::query(tools, proto, "with recursive a(id, parent_id, frame_id, depth) as (select c.id, c.parent_id, c.frame_id, c.depth "
                       "from stack_profile_callsite c where c.id = (select s.callsite_id from stack_sample s join "
                       "stack_sample_task_context tc on tc.id = s.task_context_id join thread t using (utid) where s.ts = " +
                       std::to_string(ts) + " and t.tid = " + std::to_string(tid) + " limit 1) union all select c.id, "
                       "c.parent_id, c.frame_id, c.depth from stack_profile_callsite c join a on c.id = a.parent_id) "
                       "select f.name as name, m.name as module from a join stack_profile_frame f on f.id = a.frame_id "
                       "left join stack_profile_mapping m on m.id = f.mapping order by a.depth");
  EXPECT_EQ(got, expected);
  std::printf("%s: %lld stack samples; the deepest stack (%zu frames) equal frame by frame\n", GetParam().c_str(),
              static_cast<long long>(samples),
              static_cast<size_t>(std::count(expected.begin(), expected.end(), '\n') - 1));
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExport, ::testing::ValuesIn(real_exports()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExport);
INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExportInPerfetto,
                         ::testing::ValuesIn(real_exports()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExportInPerfetto);

// Our own fixtures (tests/fixtures/*.sql: hostile values, odd schemas, every kind) through Perfetto's importer in both
// formats, as the real exports above: whatever a profile holds, both traces import whole.
std::vector<std::string> our_fixtures() {  // the fixtures' names, without the example
  std::vector<std::string> out;
  for (const std::string& script : testdb::fixture_scripts())
    if (script.rfind("tests/fixtures/", 0) == 0) out.push_back(script.substr(15, script.size() - 15 - 4));
  return out;
}

class OurFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OurFixture, PerfettoImportsBothFormatsWhole) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::TempDir dir("nsystrace_fixture");
  testdb::Db db(fixture_profile(dir, GetParam()), /*load_shared_object=*/true);
  std::string error = db.error_of("select count(*) from trace_events");
  if (!error.empty()) GTEST_SKIP() << GetParam() << " is no export trace_events reads (" << error << "): no trace";
  if (db.integer("select count(*) from trace_events where derived in (0, 1)") == 0)
    GTEST_SKIP() << GetParam() << " has no event: no trace to import";
  import_both_formats(tools, db, dir, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OurFixture, ::testing::ValuesIn(our_fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(RealExports, FixturesArePresent) {
  if (testdb::shared_fixtures_dir().empty())
    GTEST_SKIP() << "../shared/fixtures/real not found: conformance over real exports NOT run "
                    "(set NSYSTRACE_SHARED_FIXTURES to its path)";
  EXPECT_FALSE(real_exports().empty());
}

// Prints the files x kinds table of what the trace holds (CTest runs each test in its own process, so this one
// converts every file again; `ctest -R SummaryTable -V` shows it).
TEST(RealExports, SummaryTable) {
  if (real_exports().empty()) GTEST_SKIP() << "../shared/fixtures/real not found: no table to print";
  if (testdb::sanitizer_stride() > 1) GTEST_SKIP() << "the table of every export is the Release pass's";
  std::printf("\n%-46s %7s %7s %7s %6s %8s %7s %6s %6s %5s %5s %6s %6s %8s\n", "file", "kernel", "memcpy", "memset",
              "sync", "cuda_api", "nvtx", "nvtx_k", "osrt", "sched", "event", "diag", "flows", "KB");
  for (const auto& file : real_exports()) {
    testdb::Db db(testdb::shared_fixtures_dir() + "/" + file, /*load_shared_object=*/true);
    std::string json = db.text("select chrome_trace(*) from trace_events where derived in (0, 1)");
    testtrace::TraceSummary t = testtrace::check_trace(json);
    EXPECT_TRUE(t.problems.empty()) << file;
    std::printf("%-46s %7ld %7ld %7ld %6ld %8ld %7ld %6ld %6ld %5ld %5ld %6ld %6ld %8zu\n", file.c_str(),
                (long)t.per_cat["kernel"], (long)t.per_cat["memcpy"], (long)t.per_cat["memset"], (long)t.per_cat["sync"],
                (long)t.per_cat["cuda_api"], (long)t.per_cat["nvtx"], (long)t.per_cat["nvtx_kernel"],
                (long)t.per_cat["osrt"], (long)t.per_cat["sched"], (long)t.per_cat["cuda_event"],
                (long)t.per_cat["diagnostic"], (long)t.flow_starts, json.size() >> 10);
  }
}

}  // namespace

#include "tests/support/differential.h"

namespace {
// Pushdown, differentially, on every real export: as it is, or with a covering (start, end) index on every event
// table (tools users run add such indexes; they change SQLite's plans): each export one way, every other export
// each way (the index's parity), as the query grid shares its shapes among the exports.
class RealExportDifferential : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

std::vector<std::tuple<std::string, bool>> exports_each_one_way() {
  std::vector<std::tuple<std::string, bool>> out;
  const auto all = real_exports();
  for (size_t i = 0; i < all.size(); ++i) out.emplace_back(all[i], i % 2 == 1);
  return out;
}

TEST_P(RealExportDifferential, PushedDownEqualsFilteredBySqlite) {
  auto [file, covering] = GetParam();
  if (std::string why = testdb::not_sampled_under_sanitizers(file, real_exports()); !why.empty()) GTEST_SKIP() << why;
  testdb::TempDir dir("nsystrace_diff");
  std::string copy = dir.file("export.sqlite");
  {
    std::ifstream in(testdb::shared_fixtures_dir() + "/" + file, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  testdb::Db db(copy, /*load_shared_object=*/true, /*writable=*/covering);
  if (covering) testdiff::add_covering_indexes(db);
  // Five values of each column (a heavy export: fewer, at least two; testdb::work_weight).
  testdiff::Report r = testdiff::check_pushdown(db, std::max<size_t>(2, 5 / testdb::work_weight(db)));
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  std::printf("%s%s: %d pushed-down queries compared\n", file.c_str(), covering ? " (covering indexes)" : "", r.queries);
}

std::string differential_name(const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
  std::string n = std::get<0>(info.param).substr(0, std::get<0>(info.param).size() - 7);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + (std::get<1>(info.param) ? "_with_covering_index" : "");
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, RealExportDifferential,
                         ::testing::ValuesIn(exports_each_one_way()),
                         differential_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealExportDifferential);
}  // namespace

namespace {
// GPU metrics: no real export we have holds them, so our fixture (built from NVIDIA's documented columns) goes through
// Perfetto's importer in both formats: the same counter samples, named by metric, nothing dropped.
TEST(PerfettoImporter, GpuMetricsAreTheSameCountersInBothFormats) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::TempDir dir("nsystrace_metrics");
  testdb::Db db(fixture_profile(dir, "gpu_metrics"), /*load_shared_object=*/true);
  std::string json = dir.file("m.json"), proto = dir.file("m.pftrace");
  db.integer("select chrome_trace_file('" + json + "') from trace_events where derived in (0, 1)");
  db.integer("select perfetto_trace_file('" + proto + "') from trace_events where derived in (0, 1)");
  for (const std::string& f : {json, proto}) {
    testjson::Value stats = testjson::parse(tp::run(tools + "/import-stats " + f));
    EXPECT_EQ(stats.get("stats")->items.size(), 0u) << f;
    EXPECT_EQ(stats.str("counter_values"), "3") << f;
  }
  // Values and times; the JSON importer names a counter "<event name> <arg>", the protobuf track by the metric.
  const std::string q = "select replace(t.name, ' value', ''), c.ts, c.value from counter c join counter_track t "
                        "on t.id = c.track_id order by 2, 1";
  std::string from_proto = tp::query(tools, proto, q);
  EXPECT_EQ(from_proto, tp::query(tools, json, q));
  EXPECT_NE(from_proto.find("\"SMs Active\",2000,75"), std::string::npos) << from_proto;
}
}  // namespace

namespace {
// CPU samples through Perfetto's importer, on our hand-checked fixture (tests/fixtures/cpu_samples.sql): every sample
// a stack sample of its thread (the one recorded before 0 at 0), the flame graph totals and self counts of thread
// "main" as the fixture's header computes them, and the API calls' backtraces as their slices' callstacks.
TEST(PerfettoImporter, CpuSamplesAreAFlameGraph) {
  std::string tools = tp::tools_dir();
  SKIP_WITHOUT_PERFETTO(tools);
  testdb::TempDir dir("nsystrace_flame");
  testdb::Db db(fixture_profile(dir, "cpu_samples"), /*load_shared_object=*/true);
  std::string proto = dir.file("s.pftrace");
  db.integer("select perfetto_trace_file('" + proto + "') from trace_events where derived in (0, 1)");
  auto tp = [&](const std::string& q) { return tp::query(tools, proto, q); };
  EXPECT_EQ(testjson::parse(tp::run(tools + "/import-stats " + proto)).get("stats")->items.size(), 0u);
  const std::string samples = "select s.id, s.ts, s.callsite_id, t.tid, t.name as thread from stack_sample s join "
                              "stack_sample_task_context tc on tc.id = s.task_context_id join thread t using (utid)";
  EXPECT_EQ(tp("select ts, tid, thread, callsite_id is null as no_stack from (" + samples + ") order by ts"),
            "\"ts\",\"tid\",\"thread\",\"no_stack\"\n0,101,\"main\",0\n1000,101,\"main\",0\n2000,101,\"main\",0\n"
            "3000,101,\"main\",0\n4000,101,\"main\",0\n5000,102,\"Thread 102\",0\n6000,101,\"main\",0\n");
  // Total: the samples whose stack holds the function; self: those where it is the innermost frame.
  std::string flame = tp("with recursive a(sample, callsite) as (select id, callsite_id from (" + samples +
                         ") where tid = 101 and callsite_id is not null union all select a.sample, c.parent_id from a "
                         "join stack_profile_callsite c on c.id = a.callsite where c.parent_id is not null) "
                         "select f.name, count(distinct a.sample) as total, (select count(*) from (" + samples +
                         ") s join stack_profile_callsite c on c.id = s.callsite_id where s.tid = 101 and c.frame_id = "
                         "f.id) as self from a join stack_profile_callsite c on c.id = a.callsite join "
                         "stack_profile_frame f on f.id = c.frame_id where f.name != '[no stack]' group by f.name "
                         "order by f.name");
  EXPECT_EQ(flame, "\"name\",\"total\",\"self\"\n\"0x7f00dead\",1,1\n\"do_syscall_64\",1,1\n\"main\",5,0\n"
                   "\"matmul\",2,2\n\"read\",1,0\n\"step\",4,1\n");
  // A sample without frames keeps its place, with one frame saying so (Perfetto leaves out samples without a stack).
  EXPECT_EQ(tp("select f.name from stack_sample s join stack_profile_callsite c on c.id = s.callsite_id join "
               "stack_profile_frame f on f.id = c.frame_id where s.ts = 6000"),
            "\"name\"\n\"[no stack]\"\n");
  EXPECT_EQ(tp("select ec.cpu_mode from stack_sample s join stack_sample_execution_context ec on ec.id = "
               "s.execution_context_id where s.ts = 3000"),
            "\"cpu_mode\"\n\"kernel\"\n");
  // The calls' backtraces: the slice's callstack, outermost frame first.
  EXPECT_EQ(tp("with recursive a(slice, callsite, depth) as (select e.slice_id, e.callsite_id, 0 from "
               "__intrinsic_track_event_callstacks e union all select a.slice, c.parent_id, a.depth + 1 from a join "
               "stack_profile_callsite c on c.id = a.callsite where c.parent_id is not null), named as (select a.slice, "
               "a.depth, f.name as fn from a join stack_profile_callsite c on c.id = a.callsite join stack_profile_frame "
               "f on f.id = c.frame_id) select s.name, (select group_concat(fn, ' < ' order by depth) from named where "
               "named.slice = s.id) as stack from slice s where s.id in (select slice from named) order by s.ts"),
            "\"name\",\"stack\"\n\"read\",\"read < step < main\"\n\"cudaLaunchKernel\",\"cudaLaunchKernel < step < main\"\n");
}
}  // namespace
