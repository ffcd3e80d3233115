// src/model/export_model.def against every real export in ../shared/fixtures/real (nsys 2020 -> 2026.2): the NVTX event
// types are the numbers nsys gives those names (ENUM_NSYS_EVENT_TYPE, 2022.4+), and every declared table that holds
// rows has the columns its kind requires. Without ../shared the suite skips with a visible message.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>

#include "src/model/event.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

std::vector<std::string> real_exports() {  // whole paths
  std::vector<std::string> out;
  for (const std::string& name : testdb::real_exports()) out.push_back(testdb::shared_fixtures_dir() + "/" + name);
  return out;
}

bool has_table(testdb::Db& db, const std::string& table) {
  return db.integer("select count(*) from sqlite_schema where type = 'table' and name = '" + table + "'") > 0;
}

TEST(ExportModelConformance, NvtxEventTypesAreNsysOwn) {
  std::vector<std::string> exports = real_exports();
  if (exports.empty()) GTEST_SKIP() << "no real exports (../shared/fixtures/real)";
  int with_enum = 0;
  for (const std::string& path : exports) {
    testdb::Db db(path);
    if (!has_table(db, "ENUM_NSYS_EVENT_TYPE")) continue;  // before 2022.4
    ++with_enum;
    for (const NvtxEventTypeSpec& t : kNvtxEventTypes)
      EXPECT_EQ(db.text("select name from ENUM_NSYS_EVENT_TYPE where id = " + std::to_string(t.number)), t.nsys_name)
          << path;
  }
  EXPECT_GT(with_enum, 0);
}

TEST(ExportModelConformance, DeclaredTablesHaveTheRequiredColumns) {
  std::vector<std::string> exports = real_exports();
  if (exports.empty()) GTEST_SKIP() << "no real exports (../shared/fixtures/real)";
  int checked = 0;
  for (const std::string& path : exports) {
    testdb::Db db(path);
    for (const RowSource& source : kRowSources) {
      if (source.table == nullptr || !has_table(db, source.table)) continue;
      if (db.integer(std::string("select count(*) from (select 1 from ") + source.table + " limit 1)") == 0) continue;
      const KindSpec& k = kind_spec(source.kind);
      for (const char* column : required_columns(source.kind)) {
        bool has = db.integer(std::string("select count(*) from pragma_table_info('") + source.table +
                              "') where name = '" + column + "'") > 0;
        if (k.time_may_be_absent && std::string_view(column) == k.time) continue;  // declared: rows skipped
        ++checked;
        EXPECT_TRUE(has) << path << ": " << source.table << " has no " << column;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace nsystrace
