// trace_events hands a GROUP BY over its columns its rows already grouped (GroupedRows; SQLite then skips its sort),
// unless the query reads args or event. Differentially: on every fixture, ATTACHed a second time as another report,
// a generated grid of such queries (every column as the key, and ordered choices of several; GROUP BY with
// aggregates over every other column, with HAVING, with ORDER BY of the keys ascending and descending, as a join's
// inner loop; DISTINCT; with args read; three report and row selections; with and without a WHERE) gives the rows
// of the same query with its keys written +col, which SQLite cannot hand to the table and groups by sorting.
// Compared in order under an ORDER BY of the keys (SQLite 3.40 trusts the grouped rows' order there), else as
// sorted row lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/test_db.h"

namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string joined(const std::vector<std::string>& parts, const std::string& prefix = "") {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + prefix + p;
  return s;
}

// Every groupable column alone, then ordered choices of two and three of the usual keys.
std::vector<std::vector<std::string>> key_choices() {
  std::vector<std::vector<std::string>> out;
  for (const char* c : {"kind", "name", "ts", "dur", "pid", "tid", "process_name", "thread_name", "device_id",
                        "stream_id", "correlation_id", "global_tid", "lane", "global_pid", "schema", "cname",
                        "domain", "demangled_name", "derived"})
    out.push_back({c});
  for (std::vector<std::string> chosen : std::vector<std::vector<std::string>>{
           {"kind", "name"}, {"domain", "name"}, {"device_id", "name"}, {"name", "schema"}, {"kind", "thread_name"}})
    do out.push_back(chosen);
    while (std::next_permutation(chosen.begin(), chosen.end()));
  out.push_back({"schema", "kind", "name"});
  out.push_back({"domain", "name", "pid"});
  return out;
}

// Aggregates over every column, none depending on the order of a group's rows.
constexpr const char* kEveryColumn =
    "count(*), count(dur), total(dur), min(ts), max(ts), sum(length(name)), max(name), count(tid), total(tid), "
    "total(pid), max(process_name), max(thread_name), total(lane), total(device_id), count(device_id), "
    "total(stream_id), total(correlation_id), count(correlation_id), total(global_tid), total(global_pid), "
    "max(schema), max(cname), count(domain), max(domain), max(demangled_name), sum(derived), max(kind), "
    "min(rowid), max(rowid)";
constexpr size_t kEveryColumnCount = 29;

class TraceEventsGrouping : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceEventsGrouping, GroupedRowsAreSqlitesGroups) {
  testdb::TempDir tmp{"nsystrace_grouping"};
  testdb::Db db;
  testdb::open_with_second_report(db, GetParam(), tmp, "r1");
  const std::vector<std::string> selections = {"", "schema = 'r1'", "derived in (0, 1) and schema in ('main', 'r1')"};
  const std::vector<std::string> filters = {"", "dur > 1000 or name like '%a%'"};
  const size_t stride = testdb::sanitizer_stride();
  size_t n = 0, grouped_plans = 0, groups = 0;
  for (const auto& keys : key_choices()) {
    for (int mode = 0; mode < 7; ++mode) {
      for (const std::string& selection : selections) {
        for (const std::string& filter : filters) {
          if (n++ % stride != 0) continue;
          std::string where;
          if (!selection.empty()) where = " where " + selection;
          if (!filter.empty()) where += (where.empty() ? " where (" : " and (") + filter + ")";
          size_t columns = keys.size();
          auto query = [&](const std::string& prefix) {
            std::string k = joined(keys, prefix);
            switch (mode) {
              case 0:
                columns = keys.size() + kEveryColumnCount;
                return "select " + k + ", " + kEveryColumn + " from trace_events" + where + " group by " + k;
              case 1:
                columns = keys.size() + 1;
                return "select " + k + ", count(*) from trace_events" + where + " group by " + k +
                       " having count(*) > 1";
              case 2:
                columns = keys.size() + 1;
                return "select " + k + ", total(dur) from trace_events" + where + " group by " + k + " order by " + k;
              case 3:
                columns = keys.size();
                return "select distinct " + k + " from trace_events" + where;
              case 6: {  // GROUP BY and ORDER BY the same keys, descending: SQLite then skips both sorts
                columns = keys.size() + 1;
                std::string descending;
                for (const std::string& key : keys) descending += (descending.empty() ? "" : ", ") + prefix + key + " desc";
                return "select " + k + ", count(*) from trace_events" + where + " group by " + k + " order by " +
                       descending;
              }
              case 4:  // the table as the inner loop of a join, filtered once per outer row
                columns = keys.size() + 2;
                return "select " + k + ", count(*), sum(v.value) from (select 1 as value union all select 2) v, "
                       "trace_events" + where + " group by " + k;
              default:  // args read: SQLite sorts (a row's args come from the live scan)
                columns = keys.size() + 1;
                return "select " + k + ", sum(length(args)) from trace_events" + where + " group by " + k;
            }
          };
          std::string ours = query(""), sorted_by_sqlite = query("+");
          // With an ORDER BY of the keys (one row per group): the rows in the order given. Else as sorted lists.
          std::string order;
          if (mode != 2 && mode != 6) {
            order = " order by ";  // every output column: 1, 2, ...
            for (size_t c = 1; c <= columns; ++c) order += (c > 1 ? ", " : "") + std::to_string(c);
          }
          Rows got = db.rows("select * from (" + ours + ")" + order);
          Rows want = db.rows("select * from (" + sorted_by_sqlite + ")" + order);
          EXPECT_EQ(got, want) << ours;
          groups += got.size();
          // A GROUP BY without an ORDER BY: grouped by the table, no sort in the plan; with args, SQLite's sort.
          if (mode < 2 || mode == 5) {
            Rows plan = db.rows("explain query plan " + ours);
            bool sorted = false;
            for (const auto& row : plan) sorted = sorted || row.back().find("TEMP B-TREE") != std::string::npos;
            EXPECT_EQ(sorted, mode == 5) << ours;
            grouped_plans += !sorted;
          }
        }
      }
    }
  }
  EXPECT_GT(grouped_plans, 0u);
  if (db.integer("select count(*) from trace_events") > 0) {
    EXPECT_GT(groups, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, TraceEventsGrouping, ::testing::ValuesIn(testdb::fixture_scripts()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(info.param.rfind('/') + 1);
                           return n.substr(0, n.size() - 4);
                         });

}  // namespace
