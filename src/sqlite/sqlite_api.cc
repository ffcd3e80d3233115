#include <sqlite3ext.h>
// Defines the API table pointer (a no-op with SQLITE_CORE); ext/extension.cc fills it in.
SQLITE_EXTENSION_INIT1
