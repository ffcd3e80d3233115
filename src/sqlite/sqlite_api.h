// Every sqlite3_* call in the project goes through this header: macros over the API table SQLite hands to
// sqlite3_nsystrace_init (sqlite3ext.h), in the loadable extension and the static library alike (the same objects);
// with SQLITE_CORE (the fuzz targets' build only) they are direct calls.
#pragma once
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
