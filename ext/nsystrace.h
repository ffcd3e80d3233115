/* Public entry point of the nsystrace SQLite extension.
 * Loadable: .load ./build/nsystrace   (SQLite calls sqlite3_nsystrace_init)
 * Static (libnsystrace_static.a, built with SQLITE_CORE):
 *   sqlite3_auto_extension((void (*)(void))sqlite3_nsystrace_init);   before opening connections. */
#ifndef NSYSTRACE_H
#define NSYSTRACE_H
#include <sqlite3.h>
#ifdef __cplusplus
extern "C" {
#endif
int sqlite3_nsystrace_init(sqlite3* db, char** pzErrMsg, const struct sqlite3_api_routines* pApi);
#ifdef __cplusplus
}
#endif
#endif
