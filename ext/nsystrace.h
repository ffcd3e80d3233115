/* Public entry point of the nsystrace SQLite extension.
 * Loadable: .load ./build/nsystrace   (SQLite calls sqlite3_nsystrace_init)
 * Static (libnsystrace_static.a):
 *   sqlite3_auto_extension((void (*)(void))sqlite3_nsystrace_init);   before opening connections (SQLite hands the
 *   init its API table, through which the library makes every call, as the loadable one does). */
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
