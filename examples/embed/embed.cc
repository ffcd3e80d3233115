// Embedding nsystrace in a program: link libnsystrace_static.a and SQLite, register the
// extension for every connection, then use it like any SQL.
//   build/embed_example prof.sqlite   ->  prints the event counts and the size of the trace
#include <sqlite3.h>

#include <cstdio>

#include "ext/nsystrace.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s prof.sqlite\n", argv[0]);
    return 2;
  }
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(sqlite3_nsystrace_init));
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[1], sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "select kind, count(*) from trace_events group by kind "
      "union all select 'trace bytes', length(chrome_trace(*)) from trace_events";
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "%s\n", sqlite3_errmsg(db));
    return 1;
  }
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
    std::printf("%s %lld\n", reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
                static_cast<long long>(sqlite3_column_int64(stmt, 1)));
  if (rc != SQLITE_DONE) std::fprintf(stderr, "%s\n", sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rc == SQLITE_DONE ? 0 : 1;
}
