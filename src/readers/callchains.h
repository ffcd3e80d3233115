// Call stacks as nsys exports them: one row per frame (id, stackDepth, symbol, module, kernelMode, unresolved, ...)
// in SAMPLING_CALLCHAINS (CPU samples, by COMPOSITE_EVENTS.id), OSRT_CALLCHAINS (OS runtime calls, by
// OSRT_API.callchainId) and CUDA_CALLCHAINS (CUDA API calls, by CUPTI_ACTIVITY_KIND_RUNTIME.callchainId).
#pragma once
#include <cstdint>
#include <deque>
#include <string>

#include "src/readers/args.h"
#include "src/model/profile_catalog.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

class CallchainReader {
 public:
  // Reads `table` of the catalog's schema; when the export lacks it, every stack is empty (available() false).
  CallchainReader(sqlite3* db, const ProfileCatalog& catalog, const char* table);
  bool available() const { return static_cast<bool>(stmt_); }
  // The stack of one callchain id, innermost frame first; valid until the next read. Its symbols and modules are
  // the StringIds texts ("[missing string N]" for a dangling id, "" for NULL): frames are never left out or
  // invented, and depths the export lacks are counted in missing_depths.
  const Stack& read(int64_t id);
  // "(SELECT symbol FROM <table> WHERE id = <id_sql> ORDER BY stackDepth LIMIT 1)": the StringIds id of a stack's
  // innermost frame, for naming rows in SQL. "NULL" when the export lacks the table.
  static std::string innermost_symbol_sql(const ProfileCatalog& catalog, const char* table, const std::string& id_sql);

 private:
  const ProfileCatalog& catalog_;
  Statement stmt_;
  Stack stack_;
  std::deque<std::string> scratch_;  // placeholder texts of the current stack (stable addresses)
};

}  // namespace nsystrace
