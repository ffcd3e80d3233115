"""Connection and loading: the profiles opened read-only with the extension loaded, in Python's sqlite3 when it can
load extensions, else through the sqlite3 shell; .nsys-rep reports exported to SQLite first."""
import json
import os
import shutil
import sqlite3
import subprocess
import urllib.parse

import nsystrace
from nsystrace.errors import Failure


def sql_string(s):
    return "'" + s.replace("'", "''") + "'"


def read_only_uri(path):
    """A profile as SQLite opens it: read-only, whatever its name."""
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"


def export_reports(paths, scratch):
    """.nsys-rep reports exported to SQLite (in scratch) with nsys; .sqlite files as they are."""
    out = []
    for path in paths:
        if not os.path.exists(path):
            raise Failure(f"{path}: no such file")
        if not path.lower().endswith(".nsys-rep"):
            out.append(path)
            continue
        nsys = shutil.which("nsys")
        if nsys is None:
            raise Failure(f"{path} is an Nsight Systems report; converting it needs `nsys export --type sqlite`, and "
                          "nsys is not on PATH. Export it where nsys is installed and pass the .sqlite file.")
        target = os.path.join(scratch, os.path.splitext(os.path.basename(path))[0] + ".sqlite")
        subprocess.run([nsys, "export", "--type", "sqlite", "--output", target, path], check=True)
        out.append(target)
    return out


class Connection:
    """The profile(s) opened read-only, with the extension loaded: in Python's sqlite3 when it can load extensions,
    else through the sqlite3 shell. Several profiles are attached as rank1, rank2, ... (schemas)."""

    def __init__(self, profiles):
        self.profiles = profiles
        self.schemas = ["main"] + [f"rank{i}" for i in range(1, len(profiles))]
        self.conn = None
        self._prelude = []  # for the sqlite3 shell: statements run before each query
        try:
            conn = sqlite3.connect(read_only_uri(profiles[0]), uri=True)
            nsystrace.load(conn)  # through the package, so a test can stand in for it
            self.conn = conn
        except nsystrace.ExtensionLoadingUnsupported:
            if shutil.which("sqlite3") is None:
                raise
        for schema, path in zip(self.schemas[1:], profiles[1:]):
            try:
                self.prelude_sql(f"attach {sql_string(read_only_uri(path))} as {schema}")
            except sqlite3.OperationalError as e:  # past SQLite's limit: the archive form has none
                if "too many attached" not in str(e):
                    raise
                from nsystrace.job import too_many_reports_hint
                raise Failure(f"{e}: {too_many_reports_hint(len(profiles))}")

    def prelude_sql(self, sql):
        if self.conn is not None:
            self.conn.execute(sql)
        else:
            self._prelude.append(sql)

    def query(self, sql, first=()):
        """(column names, rows) of one statement, after the statements `first`, whose rows are dropped, on the same
        connection (with the sqlite3 shell, in the same process: what one computed, such as the NVTX projection or
        the record of the trace just written, is still there for the next)."""
        if self.conn is not None:
            for statement in first:
                self.conn.execute(statement).fetchall()
            cur = self.conn.execute(sql)
            return [d[0] for d in cur.description], cur.fetchall()
        # The sqlite3 shell: the prelude (attached reports, settings) and `first` silently, then the statement as
        # JSON.
        statement = sql.rstrip().rstrip(";")
        script = (f".load {nsystrace.loadable_path()}\n.output /dev/null\n" +
                  "".join(s.rstrip().rstrip(";") + ";\n" for s in [*self._prelude, *first]) +
                  f".output stdout\n.mode json\n{statement};\n")
        done = subprocess.run(["sqlite3", "-bail", read_only_uri(self.profiles[0])], input=script,
                              stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise Failure("the sqlite3 shell failed (its message is above)")
        rows = json.loads(done.stdout) if done.stdout.strip() else []
        return (list(rows[0].keys()) if rows else []), [tuple(r.values()) for r in rows]

    def rows(self, sql, first=()):
        return self.query(sql, first)[1]

    def create_function(self, name, n, fn, deterministic=True):
        if self.conn is None:
            raise Failure("--nvtx-color-scheme needs a Python that can load SQLite extensions")
        self.conn.create_function(name, n, fn, deterministic=deterministic)
