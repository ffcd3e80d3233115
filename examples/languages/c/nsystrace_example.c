/* nsystrace from C, the way a C host loads an extension: sqlite3_load_extension() of build/nsystrace.so.
 * Run from the clone after the quick start:
 *   cc examples/languages/c/nsystrace_example.c -lsqlite3 -o build/nsystrace_example_c && build/nsystrace_example_c
 * Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
 * of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints each row of the statement as its columns' text joined by '|' (the sqlite3 shell's list mode). */
static int print_rows(sqlite3* db, sqlite3_stmt* stmt) {
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(stmt); i++) {
      const unsigned char* text = sqlite3_column_text(stmt, i);
      printf("%s%s", i ? "|" : "", text ? (const char*)text : "");
    }
    printf("\n");
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) fprintf(stderr, "%s\n", sqlite3_errmsg(db));
  return rc == SQLITE_DONE ? 0 : 1;
}

/* Prepares sql (NULL: the error is printed), binding text to its first parameter when given. */
static sqlite3_stmt* prepare(sqlite3* db, const char* sql, const char* text) {
  sqlite3_stmt* stmt = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
    fprintf(stderr, "%s\n", sqlite3_errmsg(db));
    return NULL;
  }
  if (text) sqlite3_bind_text(stmt, 1, text, -1, SQLITE_STATIC);
  return stmt;
}

/* The whole of a file, NUL-terminated (NULL when it cannot be read). */
static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char* text = malloc(size + 1);
  if (text && fread(text, 1, size, f) == (size_t)size) {
    text[size] = 0;
  } else {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

int main(void) {
  sqlite3* db = NULL;
  char* error = NULL;
  if (sqlite3_open_v2("build/example.sqlite", &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
      sqlite3_enable_load_extension(db, 1) != SQLITE_OK ||
      sqlite3_load_extension(db, "build/nsystrace", NULL, &error) != SQLITE_OK) {
    fprintf(stderr, "%s\n", error ? error : sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_enable_load_extension(db, 0); /* the SQL function load_extension() stays off */
  int failed = 0;
  printf("# sqlite_version\n");
  failed |= print_rows(db, prepare(db, "select sqlite_version()", NULL));
  printf("# kinds\n");
  failed |= print_rows(db, prepare(db, "select kind, count(*) from trace_events group by kind order by kind", NULL));

  printf("# top_kernels\n");
  char* top_kernels = read_file("sql/top_kernels.sql");
  if (!top_kernels) {
    fprintf(stderr, "cannot read sql/top_kernels.sql: run from the clone\n");
    return 1;
  }
  failed |= print_rows(db, prepare(db, top_kernels, NULL));
  free(top_kernels);

  const char* trace = "build/gpu0_kernels_c.pftrace";
  printf("# trace %s\n", trace);
  failed |= print_rows(db, prepare(db,
      "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", trace));

  printf("# nvtx forward\n");
  failed |= print_rows(db, prepare(db,
      "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"
      " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid", "forward"));
  sqlite3_close(db);
  return failed;
}
