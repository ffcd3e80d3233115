/* What language bindings do to a loadable extension, done from C (issue 47, "hosts do unexpected things"):
 *   - load it twice into one connection, and into a second connection of the same process, from the same path and
 *     from a copy at another path (two bindings shipping their own copy: two copies of the code in one process);
 *   - use two connections from two host threads at once (each made on the main thread, as a pool hands them out),
 *     the conversions on threads of their own too;
 *   - close the connection with a statement still mid-scan (sqlite3_close_v2, as garbage-collected bindings do),
 *     and with sqlite3_close, which must refuse while a statement lives; after the last connection closes SQLite
 *     unloads the .so, and loading it again must work.
 * Each must give the same answers, crash nothing, leave no thread behind; under ASan (tests/run_all.sh pass 2) no
 * leak, under TSan (pass 3) no race.
 *
 *   host_lifecycle_test NSYSTRACE.so SOURCE_DIR
 * With NSYSTRACE_EXPECT_SQLITE=3.x.y in the environment (tests/hosts/run_matrix.sh) it first checks that this is the
 * SQLite it runs on. Ends with "host_lifecycle: N passed, N failed"; exit status 0 only when none failed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int passed, failed;

static void check(int ok, const char* what, ...) {
  va_list args;
  va_start(args, what);
  if (ok) {
    ++passed;
  } else {
    ++failed;
    fputs("FAILED: ", stdout);
    vprintf(what, args);
    putchar('\n');
  }
  va_end(args);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  if (text != NULL && fread(text, 1, (size_t)size, f) == (size_t)size) {
    text[size] = '\0';
  } else {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

static int threads_now(void) {  /* this process's threads (/proc/self/task) */
  DIR* dir = opendir("/proc/self/task");
  int n = 0;
  struct dirent* entry;
  while (dir != NULL && (entry = readdir(dir)) != NULL) n += entry->d_name[0] != '.';
  if (dir != NULL) closedir(dir);
  return n;
}

/* The threads left once every joined thread is gone. pthread_join returns when the kernel clears the thread's id,
 * which it does before it removes the thread from /proc/self/task: a joined thread can still be listed for a moment.
 * Wait up to 5 s for the count to come down to `expected`; a thread left running never goes. */
static int threads_settled(int expected) {
  int n = threads_now();
  for (int waited_ms = 0; n > expected && waited_ms < 5000; waited_ms += 10) {
    usleep(10 * 1000);
    n = threads_now();
  }
  return n;
}

static void* note_thread_id(void* arg) {
  *(long*)arg = (long)syscall(SYS_gettid);
  return arg;
}

static void wait_until_gone(long thread_id) {  /* a joined thread, until /proc/self/task forgets it (up to 5 s) */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld", thread_id);
  for (int waited_ms = 0; access(path, F_OK) == 0 && waited_ms < 5000; waited_ms += 10) usleep(10 * 1000);
}

static sqlite3* open_profile(const char* path) {
  sqlite3* db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    printf("FAILED: cannot open %s: %s\n", path, sqlite3_errmsg(db));
    exit(1);
  }
  return db;
}

/* sqlite3_load_extension as the bindings call it; returns SQLite's status, the message in error (or ""). */
static int load(sqlite3* db, const char* so, char* error, size_t size) {
  char* message = NULL;
  sqlite3_enable_load_extension(db, 1);
  int rc = sqlite3_load_extension(db, so, NULL, &message);
  snprintf(error, size, "%s", message ? message : "");
  sqlite3_free(message);
  return rc;
}

/* The first column of the first row as an integer; -1 (and the message in error) when the query fails. */
static long long integer(sqlite3* db, const char* sql, char* error, size_t size) {
  sqlite3_stmt* stmt = NULL;
  long long value = -1;
  error[0] = '\0';
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    value = sqlite3_column_int64(stmt, 0);
  } else {
    snprintf(error, size, "%s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(stmt);
  return value;
}

/* The questions each connection is asked, with the answers of the bundled example (examples/example_profile.sql:
 * 1080 kernels, 960 NVTX ranges projected on the GPUs) or, for the traces, the answers of the first connection. */
static const char* const kKernels = "select count(*) from trace_events where kind = 'kernel'";
static const char* const kProjected = "select count(*) from nvtx_kernel_ranges";
static const char* const kChromeBytes =
    "select length(chrome_trace(*)) from trace_events where kind in ('kernel', 'nvtx')";
static const char* const kPerfettoBytes = "select length(perfetto_trace(*)) from trace_events where derived in (0, 1)";
static const char* const kTotals = "select sum(events) from event_totals";

struct Answers {
  long long kernels, projected, chrome, perfetto, totals;
};

static struct Answers ask(sqlite3* db, char* error, size_t size) {
  struct Answers a;
  a.kernels = integer(db, kKernels, error, size);
  if (a.kernels >= 0) a.projected = integer(db, kProjected, error, size);
  if (a.kernels >= 0 && a.projected >= 0) a.chrome = integer(db, kChromeBytes, error, size);
  if (a.kernels >= 0 && a.projected >= 0 && a.chrome >= 0) a.perfetto = integer(db, kPerfettoBytes, error, size);
  if (a.kernels >= 0 && a.projected >= 0 && a.chrome >= 0 && a.perfetto >= 0)
    a.totals = integer(db, kTotals, error, size);
  return a;
}

static int same(struct Answers a, struct Answers b) {
  return a.kernels == b.kernels && a.projected == b.projected && a.chrome == b.chrome && a.perfetto == b.perfetto &&
         a.totals == b.totals;
}

struct Worker {
  sqlite3* db;
  struct Answers expected;
  int rounds, mismatches;
  char error[512];
};

static void* work(void* arg) {
  struct Worker* w = arg;
  for (int round = 0; round < w->rounds; ++round) {
    struct Answers got = ask(w->db, w->error, sizeof w->error);
    if (w->error[0] != '\0' || !same(got, w->expected)) ++w->mismatches;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: host_lifecycle_test NSYSTRACE.so SOURCE_DIR\n");
    return 2;
  }
  const char* so = argv[1];
  char error[512], path[4096];
  printf("host_lifecycle: SQLite %s\n", sqlite3_libversion());
  const char* expected_version = getenv("NSYSTRACE_EXPECT_SQLITE");
  if (expected_version != NULL && *expected_version != '\0')
    check(strcmp(sqlite3_libversion(), expected_version) == 0, "runs on SQLite %s, expected %s",
          sqlite3_libversion(), expected_version);

  /* The bundled example profile, made into a temporary directory, with a copy of the .so beside it. */
  char dir[] = "/tmp/nsystrace_hosts_XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;
  char profile[4200], copy[4200];
  snprintf(profile, sizeof profile, "%s/example.sqlite", dir);
  /* The copy keeps the name: SQLite finds the entry point from it (sqlite3_nsystrace_init). */
  snprintf(copy, sizeof copy, "%s/copy/nsystrace.so", dir);
  snprintf(path, sizeof path, "%s/examples/example_profile.sql", argv[2]);
  char* script = read_file(path);
  sqlite3* maker = NULL;
  if (script == NULL || sqlite3_open(profile, &maker) != SQLITE_OK ||
      sqlite3_exec(maker, script, NULL, NULL, NULL) != SQLITE_OK) {
    printf("FAILED: cannot make %s from %s: %s\n", profile, path, maker ? sqlite3_errmsg(maker) : "");
    return 1;
  }
  sqlite3_close(maker);
  free(script);
  char command[9000];
  snprintf(command, sizeof command, "mkdir '%s/copy' && cp '%s' '%s'", dir, so, copy);
  if (system(command) != 0) {
    printf("FAILED: %s\n", command);
    return 1;
  }
  /* A thread started and joined first: ThreadSanitizer starts a thread of its own with the process's first
   * pthread_create, which must not count as one the extension left behind. */
  pthread_t first_thread;
  long first_thread_id = 0;
  pthread_create(&first_thread, NULL, note_thread_id, &first_thread_id);
  pthread_join(first_thread, NULL);
  wait_until_gone(first_thread_id);
  const int threads_at_start = threads_now();

  /* 1. Loaded twice into one connection: the second load replaces what the first registered. */
  sqlite3* a = open_profile(profile);
  check(load(a, so, error, sizeof error) == SQLITE_OK, "first load: %s", error);
  struct Answers first = ask(a, error, sizeof error);
  check(error[0] == '\0' && first.kernels == 1080 && first.projected == 960 && first.chrome > 0 &&
            first.perfetto > 0 && first.totals > 0,
        "first answers: kernels %lld (1080), projected %lld (960), chrome %lld, perfetto %lld, totals %lld: %s",
        first.kernels, first.projected, first.chrome, first.perfetto, first.totals, error);
  check(load(a, so, error, sizeof error) == SQLITE_OK, "second load into the same connection: %s", error);
  check(same(ask(a, error, sizeof error), first) && error[0] == '\0',
        "same answers after the second load: %s", error);
  /* Loading while one of its own statements is mid-scan: SQLite refuses to replace functions in use (a clear
   * SQLITE_BUSY error) or replaces them; either way the statement finishes and nothing crashes. */
  sqlite3_stmt* scanning = NULL;
  sqlite3_prepare_v2(a, "select name from trace_events", -1, &scanning, NULL);
  check(sqlite3_step(scanning) == SQLITE_ROW, "a scan's first row: %s", sqlite3_errmsg(a));
  int rc = load(a, so, error, sizeof error);
  check(rc == SQLITE_OK || strstr(error, "nsystrace") != NULL || strstr(error, "active statements") != NULL,
        "a load during a scan fails clearly or works (rc %d): %s", rc, error);
  while ((rc = sqlite3_step(scanning)) == SQLITE_ROW) {
  }
  check(rc == SQLITE_DONE, "the scan finishes after the load: %s", sqlite3_errmsg(a));
  sqlite3_finalize(scanning);
  check(same(ask(a, error, sizeof error), first) && error[0] == '\0', "same answers after it: %s", error);

  /* 2. A second connection, same path (one copy of the code, loaded twice), and a third from a copy of the .so
   * (a second copy of the code in the process). */
  sqlite3* b = open_profile(profile);
  check(load(b, so, error, sizeof error) == SQLITE_OK, "load into a second connection: %s", error);
  check(same(ask(b, error, sizeof error), first) && error[0] == '\0', "the second connection's answers: %s", error);
  sqlite3* c = open_profile(profile);
  check(load(c, copy, error, sizeof error) == SQLITE_OK, "load of a copy at another path: %s", error);
  check(same(ask(c, error, sizeof error), first) && error[0] == '\0', "the copy's answers: %s", error);

  /* 3. Two host threads, one connection each (made on this thread), at once; the conversions use threads of their
   * own on one, one thread on the other. */
  integer(a, "select nsystrace_option('threads', 4)", error, sizeof error);
  integer(c, "select nsystrace_option('threads', 1)", error, sizeof error);
  struct Worker workers[2] = {{a, first, 3, 0, ""}, {c, first, 3, 0, ""}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, work, &workers[i]);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < 2; ++i)
    check(workers[i].mismatches == 0, "host thread %d: %d of %d rounds differed: %s", i, workers[i].mismatches,
          workers[i].rounds, workers[i].error);

  /* 4. Closed with the connection. sqlite3_close refuses while a statement lives; sqlite3_close_v2 with a scan
   * mid-way leaves a zombie that closes when the statement is finalized. */
  sqlite3_stmt* mid_scan = NULL;
  sqlite3_prepare_v2(b, "select kind, name, ts from trace_events", -1, &mid_scan, NULL);
  check(sqlite3_step(mid_scan) == SQLITE_ROW, "a scan's first row before the close: %s", sqlite3_errmsg(b));
  check(sqlite3_close(b) == SQLITE_BUSY, "sqlite3_close with live statements says SQLITE_BUSY");
  check(sqlite3_close_v2(b) == SQLITE_OK, "sqlite3_close_v2 with live statements");
  check(sqlite3_step(mid_scan) == SQLITE_ROW, "the zombie connection's scan goes on");
  sqlite3_finalize(mid_scan);  /* the connection closes now */
  check(sqlite3_close(a) == SQLITE_OK, "close the first connection");
  check(sqlite3_close(c) == SQLITE_OK, "close the copy's connection");
  const int threads_left = threads_settled(threads_at_start);
  check(threads_left == threads_at_start, "no thread left behind: %d now, %d before", threads_left, threads_at_start);

  /* Every connection that loaded it is closed, so SQLite has unloaded the .so (and its copy): load it again. */
  sqlite3* again = open_profile(profile);
  check(load(again, so, error, sizeof error) == SQLITE_OK, "load after every connection closed: %s", error);
  check(same(ask(again, error, sizeof error), first) && error[0] == '\0', "answers after the reload: %s", error);
  check(sqlite3_close(again) == SQLITE_OK, "close after the reload");

  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  if (system(command) != 0) printf("note: could not remove %s\n", dir);
  printf("host_lifecycle: %d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
