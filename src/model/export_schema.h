// Which tables and columns an export has. Nsight Systems creates tables lazily and moves columns between
// versions, so everything is looked up by name: a missing table is an empty one, a missing column reads as NULL.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/sqlite/sqlite_api.h"

namespace nsystrace {

struct TableInfo {
  std::string name;
  std::vector<std::string> columns;
  bool has(std::string_view column) const;
};

class ExportSchema {
 public:
  // Reads the table list of database `schema` ("main", or an ATTACHed name).
  static ExportSchema load(sqlite3* db, const std::string& schema);

  const std::string& schema() const { return schema_; }
  const TableInfo* table(std::string_view name) const;  // nullptr when absent
  bool has(std::string_view name) const { return table(name) != nullptr; }
  // "schema"."table", quoted, for SQL we build from known names only.
  std::string qualified(std::string_view table) const;

 private:
  std::string schema_;
  std::map<std::string, TableInfo, std::less<>> tables_;
};

// SELECT-list builder over one table: asks for columns by name, selecting NULL for those the export lacks, and
// remembers where each landed in the result row.
class SelectBuilder {
 public:
  explicit SelectBuilder(const TableInfo& table) : table_(table) {}
  int column(std::string_view name);               // result index of "name" (NULL when absent)
  int expression(std::string_view sql);            // result index of a raw expression over known columns
  bool has(std::string_view name) const { return table_.has(name); }
  const std::string& select_list() const { return list_; }

 private:
  const TableInfo& table_;
  std::string list_;
  int count_ = 0;
};

}  // namespace nsystrace
