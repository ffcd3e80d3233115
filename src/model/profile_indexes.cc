#include "src/model/profile_indexes.h"

#include "src/model/export_model.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
bool has_index_on(sqlite3* db, const ExportSchema& schema, const std::string& table, const std::string& column) {
  Statement lists(db, "SELECT name FROM pragma_index_list(?1, ?2)");
  lists.bind(1, table);
  lists.bind(2, schema.schema());
  while (lists.step()) {
    Statement first(db, "SELECT name FROM pragma_index_info(?1, ?2) WHERE seqno = 0");
    first.bind(1, lists.text(0));
    first.bind(2, schema.schema());
    if (first.step() && first.text(0) == column) return true;
  }
  return false;
}
}  // namespace

std::vector<std::string> create_time_indexes(sqlite3* db, const ExportSchema& schema) {
  std::vector<std::string> created;
  for (const RowSource& source : kRowSources) {
    const char* time = kind_spec(source.kind).time;
    if (source.table == nullptr || time == nullptr) continue;  // a derived kind: nothing stored to index
    const TableInfo* t = schema.table(source.table);
    if (t == nullptr || !t->has(time) || has_index_on(db, schema, t->name, time)) continue;
    std::string index = "nsystrace_" + t->name + "_" + time;
    // Names come from our own model of nsys tables; the schema name is quoted like any identifier.
    Statement create(db, "CREATE INDEX IF NOT EXISTS " + quote_identifier(schema.schema()) + "." +
                             quote_identifier(index) + " ON " + quote_identifier(t->name) + "(" +
                             quote_identifier(time) + ")");
    create.step();
    created.push_back(index);
  }
  return created;
}

}  // namespace nsystrace
