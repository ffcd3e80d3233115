#include "src/model/export_schema.h"

#include "src/sqlite/statement.h"

namespace nsystrace {

bool TableInfo::has(std::string_view column) const {
  for (const auto& c : columns)
    if (c == column) return true;
  return false;
}

ExportSchema ExportSchema::load(sqlite3* db, const std::string& schema) {
  ExportSchema out;
  out.schema_ = schema;
  Statement tables(db, "SELECT name FROM " + quote_identifier(schema) +
                           ".sqlite_schema WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%'");
  Statement columns(db, "SELECT name FROM pragma_table_info(?1, ?2)");
  while (tables.step()) {
    TableInfo info;
    info.name = std::string(tables.text(0));
    columns.reset();
    columns.bind(1, info.name);
    columns.bind(2, schema);
    while (columns.step()) info.columns.emplace_back(columns.text(0));
    out.tables_.emplace(info.name, std::move(info));
  }
  return out;
}

const TableInfo* ExportSchema::table(std::string_view name) const {
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : &it->second;
}

std::string ExportSchema::qualified(std::string_view table) const {
  return quote_identifier(schema_) + "." + quote_identifier(table);
}

int SelectBuilder::column(std::string_view name) {
  return expression(table_.has(name) ? quote_identifier(name) : std::string("NULL"));
}

int SelectBuilder::expression(std::string_view sql) {
  if (count_ > 0) list_ += ", ";
  list_ += sql;
  return count_++;
}

}  // namespace nsystrace
