#include "src/model/profile_indexes.h"

#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
bool has_index_on_start(sqlite3* db, const ExportSchema& schema, const std::string& table) {
  Statement lists(db, "SELECT name FROM pragma_index_list(?1, ?2)");
  lists.bind(1, table);
  lists.bind(2, schema.schema());
  while (lists.step()) {
    Statement first(db, "SELECT name FROM pragma_index_info(?1, ?2) WHERE seqno = 0");
    first.bind(1, lists.text(0));
    first.bind(2, schema.schema());
    if (first.step() && first.text(0) == "start") return true;
  }
  return false;
}
}  // namespace

std::vector<std::string> create_start_indexes(sqlite3* db, const ExportSchema& schema) {
  std::vector<std::string> created;
  for (const char* const* table = kEventTables; *table; ++table) {
    const TableInfo* t = schema.table(*table);
    if (t == nullptr || !t->has("start") || has_index_on_start(db, schema, t->name)) continue;
    std::string index = "nsystrace_" + t->name + "_start";
    // Names come from our own list of nsys tables; the schema name is quoted like any identifier.
    Statement create(db, "CREATE INDEX IF NOT EXISTS " + quote_identifier(schema.schema()) + "." +
                             quote_identifier(index) + " ON " + quote_identifier(t->name) + "(start)");
    create.step();
    created.push_back(index);
  }
  return created;
}

}  // namespace nsystrace
