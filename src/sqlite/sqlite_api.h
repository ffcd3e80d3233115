// Every sqlite3_* call in the project goes through this header. In the loadable extension the calls are macros
// over the API table SQLite hands to sqlite3_nsystrace_init (sqlite3ext.h); with SQLITE_CORE (static library)
// they are direct calls.
#pragma once
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
