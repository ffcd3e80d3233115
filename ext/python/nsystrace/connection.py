"""Connection and loading: the profiles opened read-only with the extension loaded, in Python's sqlite3 when it can
load extensions, else through the sqlite3 shell; .nsys-rep reports exported to SQLite first. Every statement can be
interrupted (Ctrl-C, SIGTERM, the page's cancel) within a second: SQLite's interrupt stops the extension, which
removes its temporary file."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.parse

import nsystrace
from nsystrace.errors import ConversionFailed, Failure

SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
# SQLite attaches at most 10 databases to one connection (SQLITE_MAX_ATTACHED's default): 11 profiles with main.
MAX_PROFILES = 11


def sql_string(s):
    return "'" + s.replace("'", "''") + "'"


def read_only_uri(path):
    """A profile as SQLite opens it: read-only, whatever its name."""
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"


def is_report(path):
    return path.lower().endswith(".nsys-rep")


def what_it_starts_like(head):
    """A guess at what a file that is not an SQLite database is, from its first bytes."""
    if not head:
        return "it is empty"
    if head[:2] == b"\x1f\x8b":
        return "it is gzip-compressed"
    if head.lstrip()[:1] in (b"{", b"["):
        return "it looks like JSON text (a trace, not a profile?)"
    if head[:4] == b"PK\x03\x04":
        return "it is a zip archive"
    return "its first bytes are not SQLite's header"


def check_profiles(paths, one_timeline=True):
    """Each path exists, is named once and is an SQLite database (or a .nsys-rep report): else a Failure naming it.
    one_timeline: they are to be opened together, so at most MAX_PROFILES (the page opens each on its own)."""
    seen = {}
    for path in paths:
        if not os.path.exists(path):
            raise Failure(f"{path}: no such file")
        if os.path.isdir(path):
            raise Failure(f"{path}: is a directory, not a profile")
        key = os.path.realpath(path)
        if key in seen:
            raise Failure(f"{path} is given twice (also as {seen[key]}); each report goes on the timeline once")
        seen[key] = path
        if is_report(path):
            continue
        try:
            with open(path, "rb") as f:
                head = f.read(len(SQLITE_HEADER))
        except OSError as e:
            raise Failure(f"{path}: cannot be read ({e.strerror})")
        if head != SQLITE_HEADER:
            raise Failure(f"{path} is not an SQLite database: {what_it_starts_like(head)}. nsystrace reads the "
                          "SQLite export of a profile: `nsys export --type sqlite --output prof.sqlite "
                          "report.nsys-rep` (an .nsys-rep report renamed .sqlite is not one; name it .nsys-rep and "
                          "nsystrace runs nsys export itself when nsys is on PATH)")
    if one_timeline and len(paths) > MAX_PROFILES:
        raise Failure(f"{len(paths)} reports: SQLite puts at most {MAX_PROFILES} on one timeline (one connection "
                      "attaches at most 10 besides the first). Write the job's archive instead, one trace per report: "
                      "`nsystrace rank*.sqlite -o job.tar`; or give at most 11 reports")


def export_reports(paths, scratch):
    """.nsys-rep reports exported to SQLite (in scratch(), a temporary directory made when first needed) with nsys;
    .sqlite files as they are."""
    out = []
    for path in paths:
        if not is_report(path):
            out.append(path)
            continue
        nsys = shutil.which("nsys")
        if nsys is None:
            raise Failure(f"{path} is an Nsight Systems report; converting it needs `nsys export --type sqlite`, and "
                          "nsys is not on PATH. Export it where nsys is installed and pass the .sqlite file.")
        target = os.path.join(scratch(), os.path.splitext(os.path.basename(path))[0] + ".sqlite")
        run_interruptibly([nsys, "export", "--type", "sqlite", "--output", target, path], what=f"exporting {path}")
        out.append(target)
    return out


def run_interruptibly(cmd, input=None, what=None):
    """A child process's stdout; on Ctrl-C or SIGTERM the child gets SIGINT (the sqlite3 shell interrupts its
    statement, which removes the trace's temporary file), then the interrupt goes on."""
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, text=True)
    try:
        out, _ = child.communicate(input)
    except BaseException:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise
    if child.returncode != 0:
        raise ConversionFailed(f"{what or ' '.join(cmd)}: {os.path.basename(cmd[0])} failed (exit "
                               f"{child.returncode}; its message is above)")
    return out


_fallback_said = False


def say_fallback_once():
    global _fallback_said
    if not _fallback_said:
        _fallback_said = True
        print(f"nsystrace: this Python ({sys.executable}) cannot load SQLite extensions, so the sqlite3 shell runs "
              "the conversion instead (the same trace). To use Python itself, run nsystrace with a Python that can "
              "(Debian's and Ubuntu's /usr/bin/python3; with pyenv: PYTHON_CONFIGURE_OPTS="
              "--enable-loadable-sqlite-extensions pyenv install <version>)", file=sys.stderr)


def on_threads(works, interrupt):
    """Each work() on a thread of its own, at once; their results in order. Ctrl-C or SIGTERM here calls
    interrupt() (which stops their statements) and waits for every work to end before it goes on; an error of a
    work is raised here."""
    results, errors = [None] * len(works), [None] * len(works)
    # Waited for by Events each worker sets last, not Thread.join: a Ctrl-C inside join() can leave a thread
    # looking finished while it still runs (and the process would then exit before the cleanup).
    done = [threading.Event() for _ in works]

    def run(i):
        try:
            results[i] = works[i]()
        except BaseException as e:  # handed to the caller's thread
            errors[i] = e
        finally:
            done[i].set()

    for i in range(len(works)):
        threading.Thread(target=run, args=(i,), daemon=True).start()
    try:
        for d in done:
            while not d.wait(0.05):
                pass
    except BaseException:
        interrupt()
        for d in done:
            while not d.is_set():
                try:
                    d.wait(0.05)
                except KeyboardInterrupt:  # a second Ctrl-C: still waiting for the cleanup
                    pass
        raise
    for e in errors:
        if e is not None:
            raise e
    return results


class Connection:
    """The profile(s) opened read-only, with the extension loaded: in Python's sqlite3 when it can load extensions,
    else through the sqlite3 shell. Several profiles are attached as rank1, rank2, ... (schemas)."""

    def __init__(self, profiles):
        self.profiles = profiles
        self.schemas = ["main"] + [f"rank{i}" for i in range(1, len(profiles))]
        self.conn = None
        self._prelude = []  # for the sqlite3 shell: statements run before each query
        try:
            # check_same_thread=False: statements run on a worker thread, so that this one can interrupt them.
            conn = sqlite3.connect(read_only_uri(profiles[0]), uri=True, check_same_thread=False)
            nsystrace.load(conn)  # through the package, so a test can stand in for it
            self.conn = conn
        except nsystrace.ExtensionLoadingUnsupported:
            if shutil.which("sqlite3") is None:
                raise
            say_fallback_once()
        for schema, path in zip(self.schemas[1:], profiles[1:]):
            self.prelude_sql(f"attach {sql_string(read_only_uri(path))} as {schema}")

    def prelude_sql(self, sql):
        if self.conn is not None:
            self.conn.execute(sql)
        else:
            self._prelude.append(sql)

    def interrupt(self):
        """Stops the statement running now (from any thread); it fails with SQLite's 'interrupted'."""
        if self.conn is not None:
            self.conn.interrupt()

    def _interruptibly(self, work):
        """work() on a worker thread; Ctrl-C or SIGTERM here interrupts SQLite, waits for the statement to stop
        (the extension joins its threads and removes its temporary file), then goes on."""
        return on_threads([work], self.interrupt)[0]

    def query(self, sql, first=()):
        """(column names, rows) of one statement, after the statements `first`, whose rows are dropped, on the same
        connection (with the sqlite3 shell, in the same process: what one computed, such as the NVTX projection or
        the record of the trace just written, is still there for the next)."""
        if self.conn is not None:
            def work():
                # Each cursor is closed as soon as it is done or failed: closing resets its statement, and a reset
                # is what ends an interrupted conversion (the extension then removes its temporary file), not the
                # garbage collection of a cursor a traceback still holds.
                for statement in first:
                    cur = self.conn.cursor()
                    try:
                        cur.execute(statement).fetchall()
                    finally:
                        cur.close()
                cur = self.conn.cursor()
                try:
                    cur.execute(sql)
                    return [d[0] for d in cur.description], cur.fetchall()
                finally:
                    cur.close()
            return self._interruptibly(work)
        # The sqlite3 shell: the prelude (attached reports, settings) and `first` silently, then the statement as
        # JSON.
        statement = sql.rstrip().rstrip(";")
        script = (f".load {nsystrace.loadable_path()}\n.output /dev/null\n" +
                  "".join(s.rstrip().rstrip(";") + ";\n" for s in [*self._prelude, *first]) +
                  f".output stdout\n.mode json\n{statement};\n")
        out = run_interruptibly(["sqlite3", "-bail", read_only_uri(self.profiles[0])], input=script,
                                what=", ".join(self.profiles))
        rows = json.loads(out) if out.strip() else []
        return (list(rows[0].keys()) if rows else []), [tuple(r.values()) for r in rows]

    def rows(self, sql, first=()):
        return self.query(sql, first)[1]

    def create_function(self, name, n, fn, deterministic=True):
        if self.conn is None:
            raise Failure("--nvtx-color-scheme needs a Python that can load SQLite extensions")
        self.conn.create_function(name, n, fn, deterministic=deterministic)
