// The one operation that writes to a profile, and only when a user asks for it: indexes on `start` for the event
// tables, which turn a narrow ts window into a range lookup instead of a full scan.
#pragma once
#include <string>
#include <vector>

#include "src/model/profile_catalog.h"

namespace nsystrace {

// Creates "nsystrace_<TABLE>_start" on every event table of `schema` that has a start column and no index
// starting with start yet. Returns the names of the indexes created (empty when there was nothing to do).
std::vector<std::string> create_start_indexes(sqlite3* db, const ExportSchema& schema);

}  // namespace nsystrace
