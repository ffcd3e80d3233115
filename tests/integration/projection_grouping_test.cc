// nvtx_kernel_ranges hands a GROUP BY over name, domain, schema and range_type its rows already grouped (SQLite then skips its
// sort). Differentially: on every fixture, ATTACHed a second time as another report, a generated grid of
// such queries (every ordered choice of key columns; GROUP BY with aggregates, with HAVING, with ORDER BY of the
// keys ascending and descending, in a join; DISTINCT; each report selection; with and without a WHERE) gives the rows
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

// Every ordered choice of one or more of the key columns.
std::vector<std::vector<std::string>> key_choices() {
  std::vector<std::string> columns = {"domain", "name", "range_type", "schema"};
  std::vector<std::vector<std::string>> out;
  for (int mask = 1; mask < 16; ++mask) {
    std::vector<std::string> chosen;
    for (int i = 0; i < 4; ++i)
      if (mask & (1 << i)) chosen.push_back(columns[static_cast<size_t>(i)]);
    std::sort(chosen.begin(), chosen.end());
    do out.push_back(chosen);
    while (std::next_permutation(chosen.begin(), chosen.end()));
  }
  return out;
}

class ProjectionGrouping : public ::testing::TestWithParam<std::string> {};

TEST_P(ProjectionGrouping, GroupedRowsAreSqlitesGroups) {
  testdb::TempDir tmp{"nsystrace_grouping"};
  testdb::Db db;
  testdb::open_with_second_report(db, GetParam(), tmp, "r1");
  const std::vector<std::string> selections = {"", "schema = 'main'", "schema = 'r1'", "schema in ('main', 'r1')",
                                                "schema like '%'"};
  const std::vector<std::string> filters = {"", "gpu_ops > 1 or name like '%a%'"};
  const size_t stride = testdb::sanitizer_stride();
  size_t n = 0, grouped_plans = 0, groups = 0;
  for (const auto& keys : key_choices()) {
    for (int mode = 0; mode < 6; ++mode) {
      for (const std::string& selection : selections) {
        for (const std::string& filter : filters) {
          if (n++ % stride != 0) continue;
          std::string where;
          if (!selection.empty()) where = " where " + selection;
          if (!filter.empty()) where += (where.empty() ? " where (" : " and (") + filter + ")";
          auto query = [&](const std::string& prefix) {
            std::string k = joined(keys, prefix);
            switch (mode) {
              case 0:
                return "select " + k + ", count(*), sum(gpu_ops), min(rowid), max(start), total(gpu_busy_time) "
                       "from nvtx_kernel_ranges" + where + " group by " + k;
              case 1:
                return "select " + k + ", count(*) from nvtx_kernel_ranges" + where + " group by " + k +
                       " having count(*) > 1";
              case 2:
                return "select " + k + ", sum(kernels) from nvtx_kernel_ranges" + where + " group by " + k +
                       " order by " + k;
              case 3:
                return "select distinct " + k + " from nvtx_kernel_ranges" + where;
              case 5: {  // GROUP BY and ORDER BY the same keys, descending: SQLite then skips both sorts
                std::string descending;
                for (const std::string& key : keys) descending += (descending.empty() ? "" : ", ") + prefix + key + " desc";
                return "select " + k + ", sum(kernels) from nvtx_kernel_ranges" + where + " group by " + k +
                       " order by " + descending;
              }
              default:  // the table as the inner loop of a join, filtered once per outer row
                return "select " + k + ", count(*), sum(v.value) from (select 1 as value union all select 2 "
                       "union all select 3) v, nvtx_kernel_ranges" + where + " group by " + k;
            }
          };
          std::string ours = query(""), sorted_by_sqlite = query("+");
          // With an ORDER BY of the keys (one row per group): the rows in the order given. Else as sorted lists.
          std::string order;
          if (mode != 2 && mode != 5) {
            order = " order by ";  // every output column: 1, 2, ...
            size_t columns = keys.size() + (mode == 0 ? 5 : mode == 3 ? 0 : mode == 4 ? 2 : 1);
            for (size_t c = 1; c <= columns; ++c) order += (c > 1 ? ", " : "") + std::to_string(c);
          }
          Rows got = db.rows("select * from (" + ours + ")" + order);
          Rows want = db.rows("select * from (" + sorted_by_sqlite + ")" + order);
          EXPECT_EQ(got, want) << ours;
          groups += got.size();
          // A GROUP BY without an ORDER BY: the table hands over its rows grouped, no sort in the plan.
          if (mode < 2) {
            Rows plan = db.rows("explain query plan " + ours);
            bool sorted = false;
            for (const auto& row : plan) sorted = sorted || row.back().find("TEMP B-TREE") != std::string::npos;
            EXPECT_FALSE(sorted) << ours;
            grouped_plans += !sorted;
          }
        }
      }
    }
  }
  EXPECT_GT(grouped_plans, 0u);
  if (db.integer("select count(*) from nvtx_kernel_ranges") > 0) {
    EXPECT_GT(groups, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, ProjectionGrouping, ::testing::ValuesIn(testdb::fixture_scripts()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(info.param.rfind('/') + 1);
                           return n.substr(0, n.size() - 4);
                         });

}  // namespace
