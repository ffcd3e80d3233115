/* host_shell: the part of the sqlite3 command-line shell the SQL-level tests use, compiled against one SQLite
 * amalgamation's header and linked to that SQLite (tests/hosts/build_sqlites.sh). Debian's own shell cannot run on
 * another libsqlite3.so.0: it stops with "SQLite header and source version mismatch", and needs symbols an older
 * SQLite lacks. So the matrix runs the SQL-level tests through this one, built per version.
 *
 *   host_shell [-bail] [-csv] [-separator SEP] DB [-cmd CMD]... [CMD]...
 *
 * CMD is SQL, ".load FILE", ".read FILE" or ".version" (prints sqlite_version()). Without a trailing CMD the script
 * comes from standard input. Output as the shell's list mode ('|' or SEP between columns; NULL as nothing) or its
 * CSV mode; no headers. Unlike the shell, the first error always stops it (as with -bail): exit status 1, with
 * SQLite's message on stderr ("Error: ..."), which is what the tests check for. DB is opened with URI names on. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* separator = "|";
static int csv = 0;

static void print_csv_field(const char* text) {
  /* Quoted when it holds what would break the field, as the shell's CSV mode does. */
  if (strpbrk(text, ",\"\r\n") == NULL) {
    fputs(text, stdout);
    return;
  }
  putchar('"');
  for (const char* p = text; *p; ++p) {
    if (*p == '"') putchar('"');
    putchar(*p);
  }
  putchar('"');
}

/* Runs every statement of a script, printing their rows. Returns 0, or 1 after printing the error. */
static int run_sql(sqlite3* db, const char* sql) {
  while (sql && *sql) {
    sqlite3_stmt* stmt = NULL;
    const char* tail = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, &tail) != SQLITE_OK) {
      fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
      return 1;
    }
    sql = tail;
    if (stmt == NULL) continue; /* only blanks or a comment */
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      int columns = sqlite3_column_count(stmt);
      for (int i = 0; i < columns; ++i) {
        if (i > 0) fputs(csv ? "," : separator, stdout);
        if (sqlite3_column_type(stmt, i) == SQLITE_BLOB) {
          fwrite(sqlite3_column_blob(stmt, i), 1, (size_t)sqlite3_column_bytes(stmt, i), stdout);
          continue;
        }
        const char* text = (const char*)sqlite3_column_text(stmt, i);
        if (text == NULL) continue;
        if (csv) print_csv_field(text);
        else fputs(text, stdout);
      }
      putchar('\n');
    }
    if (rc != SQLITE_DONE) {
      fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
      sqlite3_finalize(stmt);
      return 1;
    }
    sqlite3_finalize(stmt);
  }
  return 0;
}

static char* read_all(FILE* in) {
  size_t size = 0, capacity = 1 << 16;
  char* text = malloc(capacity);
  size_t n;
  while (text && (n = fread(text + size, 1, capacity - size - 1, in)) > 0) {
    size += n;
    if (capacity - size < 2) text = realloc(text, capacity *= 2);
  }
  if (text) text[size] = '\0';
  return text;
}

static int run_command(sqlite3* db, const char* command) {
  if (command[0] != '.') return run_sql(db, command);
  char argument[4096] = "";
  if (strncmp(command, ".load ", 6) == 0 && sscanf(command + 6, " %4095s", argument) == 1) {
    char* error = NULL;
    sqlite3_enable_load_extension(db, 1);
    if (sqlite3_load_extension(db, argument, NULL, &error) != SQLITE_OK) {
      fprintf(stderr, "Error: %s\n", error ? error : sqlite3_errmsg(db));
      sqlite3_free(error);
      return 1;
    }
    return 0;
  }
  if (strncmp(command, ".read ", 6) == 0 && sscanf(command + 6, " %4095s", argument) == 1) {
    FILE* in = fopen(argument, "rb");
    if (in == NULL) {
      fprintf(stderr, "Error: cannot open \"%s\"\n", argument);
      return 1;
    }
    char* script = read_all(in);
    fclose(in);
    int rc = script ? run_sql(db, script) : 1;
    free(script);
    return rc;
  }
  if (strcmp(command, ".version") == 0) return run_sql(db, "select sqlite_version()");
  fprintf(stderr, "Error: host_shell does not know the command: %s\n", command);
  return 1;
}

int main(int argc, char** argv) {
  const char* path = NULL;
  const char* commands[256];
  const char* early[64]; /* -cmd: run before the others */
  int n_commands = 0, n_early = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "-bail") == 0) continue; /* always on */
    else if (strcmp(a, "-csv") == 0) csv = 1;
    else if (strcmp(a, "-separator") == 0 && i + 1 < argc) separator = argv[++i];
    else if (strcmp(a, "-cmd") == 0 && i + 1 < argc && n_early < 64) early[n_early++] = argv[++i];
    else if (a[0] == '-') {
      fprintf(stderr, "Error: host_shell does not know the option %s\n", a);
      return 1;
    } else if (path == NULL) path = a;
    else if (n_commands < 256) commands[n_commands++] = a;
  }
  if (path == NULL) path = ":memory:";
  sqlite3* db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
    fprintf(stderr, "Error: cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < n_early && rc == 0; ++i) rc = run_command(db, early[i]);
  for (int i = 0; i < n_commands && rc == 0; ++i) rc = run_command(db, commands[i]);
  if (rc == 0 && n_commands == 0) {
    char* script = read_all(stdin);
    rc = script ? run_sql(db, script) : 1;
    free(script);
  }
  fflush(stdout);
  if (sqlite3_close(db) != SQLITE_OK) {
    fprintf(stderr, "Error: close: %s\n", sqlite3_errmsg(db));
    rc = 1;
  }
  return rc;
}
