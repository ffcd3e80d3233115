#include "src/readers/callchains.h"

#include <fmt/format.h>

namespace nsystrace {

namespace {
// The columns a callchain table cannot do without; the others read as NULL when absent.
const TableInfo* callchain_table(const ProfileCatalog& catalog, const char* table) {
  const TableInfo* t = catalog.schema().table(table);
  if (t == nullptr) return nullptr;
  for (const char* column : {"id", "stackDepth", "symbol"})
    if (!t->has(column))
      throw Error(fmt::format("nsystrace: table {} has no column '{}' (an export schema this version does not know?), "
                              "so its call stacks cannot be read",
                              table, column));
  return t;
}
}  // namespace

CallchainReader::CallchainReader(sqlite3* db, const ProfileCatalog& catalog, const char* table) : catalog_(catalog) {
  const TableInfo* t = callchain_table(catalog, table);
  if (t == nullptr) return;
  SelectBuilder b(*t);
  b.column("stackDepth");
  b.column("symbol");
  b.column("module");
  b.column("kernelMode");
  b.column("unresolved");
  stmt_ = Statement(db, "SELECT " + b.select_list() + " FROM " + catalog.schema().qualified(table) +
                            " WHERE id = ? ORDER BY stackDepth");
}

const Stack& CallchainReader::read(int64_t id) {
  stack_.frames.clear();
  stack_.missing_depths = 0;
  scratch_.clear();
  if (!stmt_) return stack_;
  stmt_.reset();
  stmt_.bind(1, id);
  int64_t deepest = -1;
  auto text = [&](int col) -> std::string_view {
    std::optional<int64_t> string_id = stmt_.optional_int64(col);
    if (!string_id) return {};
    std::string& scratch = scratch_.emplace_back();
    std::string_view s = catalog_.string_or_placeholder(*string_id, scratch);
    if (scratch.empty()) scratch_.pop_back();  // a registered string: the catalog's own text
    return s;
  };
  while (stmt_.step()) {
    StackFrame f;
    f.symbol = text(1);
    f.module = text(2);
    f.kernel = stmt_.optional_int64(3).value_or(0) != 0;
    f.unresolved = stmt_.optional_int64(4).value_or(0) != 0;
    stack_.frames.push_back(f);
    if (std::optional<int64_t> depth = stmt_.optional_int64(0)) deepest = std::max(deepest, *depth);
  }
  int64_t stored = static_cast<int64_t>(stack_.frames.size());
  if (deepest + 1 > stored) stack_.missing_depths = deepest + 1 - stored;
  return stack_;
}

std::string CallchainReader::innermost_symbol_sql(const ProfileCatalog& catalog, const char* table,
                                                  const std::string& id_sql) {
  if (callchain_table(catalog, table) == nullptr) return "NULL";
  return "(SELECT symbol FROM " + catalog.schema().qualified(table) + " WHERE id = " + id_sql +
         " ORDER BY stackDepth LIMIT 1)";
}

}  // namespace nsystrace
