// The one operation that writes to a profile, and only when a user asks for it: indexes on the time column of the
// event tables (`start`, or `timestamp` where the model says so), which turn a narrow ts window into a range lookup
// instead of a full scan.
#pragma once
#include <string>
#include <vector>

#include "src/model/profile_catalog.h"

namespace nsystrace {

// Creates "nsystrace_<TABLE>_<column>" on every event table of `schema` that has its kind's time column
// (export_model.def) and no index starting with that column yet. Returns the names of the indexes created (empty
// when there was nothing to do).
std::vector<std::string> create_time_indexes(sqlite3* db, const ExportSchema& schema);

}  // namespace nsystrace
