"""The `nsystrace` command: Nsight Systems profiles to a Perfetto (or Chrome JSON) trace, without writing SQL.

Every option becomes a WHERE over the extension's trace_events table (see the README); the conversion, the
correlation and the writing run inside SQLite.
"""
import argparse
import gzip
import http.server
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import webbrowser

import nsystrace

KINDS = ["nvtx", "cuda_api", "kernel", "memcpy", "memset", "sync", "nvtx_kernel", "osrt", "sched", "cuda_event",
         "diagnostic", "graph", "cudnn", "cublas", "mpi", "cuda_graph", "gpu_metric", "cpu_sample"]
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb", ".pftrace.gz", ".perfetto-trace.gz")
JSON_SUFFIXES = (".json", ".json.gz")
PERFETTO_UI = "https://ui.perfetto.dev"
PERFETTO_PORT = 9001  # the port ui.perfetto.dev may fetch a trace from (its Content-Security-Policy allows it)

EPILOG = """
examples:
  nsystrace prof.sqlite                         writes prof.pftrace beside it (Perfetto's own format)
  nsystrace prof.sqlite -o prof.json.gz         Chrome JSON, gzipped (the format follows the extension)
  nsystrace prof.sqlite --kinds kernel,nvtx     only these kinds of events
  nsystrace prof.sqlite --start 2s --end 2.5s   a time window, from the session's start (ns, or us/ms/s; with
                                                several reports, from the earliest session start)
  nsystrace prof.sqlite --gpu 0 --pid 4101      GPU 0's work and process 4101's CPU events
  nsystrace prof.sqlite --nvtx-prefix step      NVTX ranges whose name starts with "step" (other events stay)
  nsystrace rank*.sqlite -o job.pftrace         several reports (ranks, nodes) on one timeline
  nsystrace report.nsys-rep                     runs `nsys export --type sqlite` first (nsys must be on PATH)
  nsystrace prof.sqlite --open                  converts, then opens the trace in ui.perfetto.dev
  nsystrace serve a.sqlite b.sqlite             a local page to look at the profiles and convert them

The profile is only read: the output is never a database (the extension refuses to write over one).
Kinds: """ + ", ".join(KINDS) + """.
"""


class Failure(Exception):
    """A mistake to report in one line, with exit status 2."""


def parse_time(text):
    """'1500' (ns), '2.5s', '300ms', '40us' -> integer ns."""
    m = re.fullmatch(r"\s*(-?[0-9]+(?:\.[0-9]*)?)\s*(ns|us|ms|s)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (ns, or a number with us, ms or s)")
    scale = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[m.group(2) or "ns"]
    return int(round(float(m.group(1)) * scale))


def parser():
    p = argparse.ArgumentParser(
        prog="nsystrace", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Convert NVIDIA Nsight Systems profiles (nsys export --type sqlite, or .nsys-rep with nsys on "
                    "PATH) into a trace for https://ui.perfetto.dev: Perfetto's protobuf (.pftrace) or Chrome JSON "
                    "(.json, .json.gz).")
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite export(s) or .nsys-rep report(s)")
    p.add_argument("-o", "--output", help="the trace to write (default: the first profile's name, .pftrace); "
                                          ".pftrace / .perfetto-trace: Perfetto, .json / .json.gz: Chrome JSON")
    p.add_argument("--kinds", help="comma-separated kinds of events to keep (default: all)")
    p.add_argument("--start", type=parse_time, help="keep events starting at or after this time")
    p.add_argument("--end", type=parse_time, help="keep events starting at or before this time")
    p.add_argument("--pid", type=int, action="append", default=[],
                   help="keep this process's CPU events, not other processes' (repeatable; GPU work stays unless --gpu)")
    p.add_argument("--gpu", type=int, action="append", default=[],
                   help="keep this GPU's work, not other GPUs' (repeatable; CPU events stay unless --pid)")
    p.add_argument("--nvtx-prefix", help="keep only the NVTX ranges whose name starts with this")
    p.add_argument("--nvtx-color-scheme", metavar="JSON",
                   help="colors for NVTX ranges by name, as nsys2json takes them: a JSON object (or a file holding "
                        "one) of regular expression -> Chrome color name; Chrome JSON output only")
    p.add_argument("--no-gpu-projection", action="store_true",
                   help="leave out the NVTX ranges drawn on the GPUs that ran their work (computing them costs a "
                        "pass over the profile)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="report progress on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("-j", "--jobs", type=int, help="with -o JOB.tar / JOB.zip: reports converted at a time "
                                                    "(default: the cores available); see docs/job.md")
    p.add_argument("--open", action="store_true",
                   help=f"serve the trace on 127.0.0.1:{PERFETTO_PORT} and open it in {PERFETTO_UI} (stops once "
                        "the trace has been fetched, or on Ctrl-C)")
    p.add_argument("--version", action="version", version=f"nsystrace (Python glue) {_package_version()}")
    return p


def _package_version():
    try:
        from importlib.metadata import version
        return version("nsystrace")
    except Exception:  # running from the source tree
        return "source"


def output_format(path):
    lower = path.lower()
    if lower.endswith(PERFETTO_SUFFIXES):
        return "perfetto"
    if lower.endswith(JSON_SUFFIXES):
        return "json"
    raise Failure(f"cannot tell the format of {path!r} from its name: use .pftrace (Perfetto) or .json / .json.gz "
                  "(Chrome JSON)")


def sql_string(s):
    return "'" + s.replace("'", "''") + "'"


def where_clause(args, schemas):
    """The options as one WHERE over trace_events."""
    terms = []
    if len(schemas) > 1:
        terms.append("schema in (" + ", ".join(sql_string(s) for s in schemas) + ")")
    kinds = None
    if args.kinds:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise Failure(f"no kind {', '.join(map(repr, unknown))}; the kinds are: {', '.join(KINDS)}")
        terms.append("kind in (" + ", ".join(sql_string(k) for k in kinds) + ")")
    projection = not args.no_gpu_projection and (kinds is None or "nvtx_kernel" in kinds)
    if kinds is not None and "nvtx_kernel" in kinds and args.no_gpu_projection:
        raise Failure("--kinds asks for nvtx_kernel, the GPU projection that --no-gpu-projection leaves out")
    terms.append("derived in (0, 1)" if projection else "derived = 0")
    if args.start is not None:
        terms.append(f"ts >= {args.start}")
    if args.end is not None:
        terms.append(f"ts <= {args.end}")
    if args.pid or args.gpu:
        cpu = f"pid in ({', '.join(map(str, args.pid))})" if args.pid else "1"
        gpu = f"device_id in ({', '.join(map(str, args.gpu))})" if args.gpu else "1"
        terms.append(f"((device_id is null and {cpu}) or (device_id is not null and {gpu}))")
    if args.nvtx_prefix:
        n = len(args.nvtx_prefix.encode("utf-8"))
        terms.append(f"(kind not in ('nvtx', 'nvtx_kernel') or substr(cast(name as blob), 1, {n}) = "
                     f"cast({sql_string(args.nvtx_prefix)} as blob))")
    return " where " + " and ".join(terms)


def color_scheme(text):
    """nsys2json's --nvtx-color-scheme: {regex: color name}, as JSON text or a file holding it."""
    if os.path.exists(text):
        with open(text) as f:
            text = f.read()
    try:
        scheme = json.loads(text)
    except json.JSONDecodeError as e:
        raise Failure(f"--nvtx-color-scheme is not JSON: {e}")
    if not isinstance(scheme, dict) or not all(isinstance(v, str) for v in scheme.values()):
        raise Failure("--nvtx-color-scheme must be a JSON object of regular expression -> Chrome color name")
    try:
        return [(re.compile(k), v) for k, v in scheme.items()]
    except re.error as e:
        raise Failure(f"--nvtx-color-scheme: bad regular expression: {e}")


class ChromeTrackIds:
    """Chrome tids for trace_events rows, from the layout the scan gave them: a row's track is its process (pid)
    and track (thread_name; a thread's own tid and its process, global_pid, set apart tracks of the same name, but
    for a GPU's one `CUDA sync` track, which holds the syncs of every stream and process), and its lane of that
    track. The row's own tid is a stream id (up to 2^32 - 1) or an OS tid, not a Chrome track id (below 2^31), and
    lanes are what keep partially overlapping slices apart, so both are mapped here as the extension's own writer
    maps them: a track keeps its tid when it is below 2^24 and free in its process, else takes one counted down
    from 2^24 - 1; lane k is (k << 24) | that, named "<track> [lane k]"; lanes past 126 get ids of their own."""

    def __init__(self):
        self.bases = {}     # track -> its base tid
        self.taken = set()  # (pid, base tid)
        self.next_free = {}  # pid -> next id to count down from
        self.overflow = {}  # (track, lane) -> tid, for lanes past 126
        self.next_overflow = {}  # pid -> count of those

    def _base(self, track, pid, tid):
        base = self.bases.get(track)
        if base is None:
            if tid is not None and 0 <= tid < 1 << 24 and (pid, tid) not in self.taken:
                base = tid
            else:
                base = self.next_free.get(pid, (1 << 24) - 1)
                while (pid, base) in self.taken:
                    base -= 1
                self.next_free[pid] = base - 1
            self.taken.add((pid, base))
            self.bases[track] = base
        return base

    def tid(self, kind, pid, tid, global_pid, thread_name, lane):
        own = None if kind == "sync" else (tid, global_pid)
        track = (pid, thread_name, own)
        base = self._base(track, pid, None if kind == "sync" else tid)
        if lane == 0:
            return base
        if lane < 127:
            return (lane << 24) | base
        if (track, lane) not in self.overflow:
            n = self.next_overflow.get(pid, 0)
            self.next_overflow[pid] = n + 1
            self.overflow[(track, lane)] = (127 << 24) | n
        return self.overflow[(track, lane)]


def lane_name(thread_name, lane):
    return thread_name if lane == 0 else f"{thread_name} [lane {lane}]"


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


def read_only_uri(path):
    """A profile as SQLite opens it: read-only, whatever its name."""
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"


def is_loopback_host(headers, port):
    """The request names this server by a loopback name (a page elsewhere that rebinds its own name to 127.0.0.1,
    DNS rebinding, sends its own Host)."""
    return headers.get("Host") in (f"127.0.0.1:{port}", f"localhost:{port}")


class Connection:
    """The profile(s) opened read-only, with the extension loaded: in Python's sqlite3 when it can load extensions,
    else through the sqlite3 shell."""

    def __init__(self, profiles):
        self.profiles = profiles
        self.schemas = ["main"] + [f"rank{i}" for i in range(1, len(profiles))]
        self.conn = None
        self._prelude = []  # for the sqlite3 shell: statements run before each query
        try:
            conn = sqlite3.connect(read_only_uri(profiles[0]), uri=True)
            nsystrace.load(conn)
            self.conn = conn
        except nsystrace.ExtensionLoadingUnsupported:
            if shutil.which("sqlite3") is None:
                raise
        for schema, path in zip(self.schemas[1:], profiles[1:]):
            try:
                self.prelude_sql(f"attach {sql_string(read_only_uri(path))} as {schema}")
            except sqlite3.OperationalError as e:
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


def options(**given):
    """The command's options with their defaults, as convert() takes them (for callers other than the command)."""
    args = parser().parse_args(["-"])
    for k, v in given.items():
        setattr(args, k, v)
    return args


def write_trace(args):
    """Writes the trace args ask for; returns (path, format, seconds, [(kind, events)], [GPU])."""
    fmt = output_format(args.output)
    with tempfile.TemporaryDirectory(prefix="nsystrace-") as scratch:
        profiles = export_reports(args.profiles, scratch)
        out = os.path.abspath(args.output)
        if any(os.path.exists(out) and os.path.samefile(out, p) for p in profiles):
            raise Failure(f"{args.output} is one of the profiles; it is never written over")
        db = Connection(profiles)
        if args.progress is not None:
            db.prelude_sql(f"select nsystrace_option('progress', {int(args.progress)})")
        where = where_clause(args, db.schemas)
        started = time.monotonic()
        if args.nvtx_color_scheme:
            if fmt != "json":
                raise Failure("--nvtx-color-scheme colors Chrome JSON (cname); write a .json or .json.gz trace")
            rules = color_scheme(args.nvtx_color_scheme)
            db.create_function("nsystrace_cli_color", 2, lambda kind, name: next(
                (c for r, c in rules if kind in ("nvtx", "nvtx_kernel") and name and r.search(name)), None))
            # The explicit form writes rows as given: the rows' tracks and lanes become Chrome tids here.
            db.create_function("nsystrace_cli_tid", 6, ChromeTrackIds().tid, deterministic=False)
            db.create_function("nsystrace_cli_lane_name", 2, lane_name)
            text = db.rows("select chrome_trace(kind, name, ts, dur, pid, "
                           "nsystrace_cli_tid(kind, pid, tid, global_pid, thread_name, lane), process_name, "
                           "nsystrace_cli_lane_name(thread_name, lane), args, correlation_id, global_tid, "
                           "coalesce(nsystrace_cli_color(kind, name), cname)) from trace_events" + where)[0][0]
            opener = gzip.open if out.lower().endswith(".gz") else open
            with opener(out, "wt", encoding="utf-8") as f:
                f.write(text)
            seconds = time.monotonic() - started
            kinds = db.rows("select kind, count(*) from trace_events" + where + " group by kind order by kind")
            gpus = [g[0] for g in db.rows("select distinct device_id from trace_events" + where +
                                          " and device_id is not null order by 1")]
        else:
            # The summary is the conversion's own count (nsystrace_last_trace_file(), read on the same connection
            # right after it), not a second scan of the profile.
            function = "perfetto_trace_file" if fmt == "perfetto" else "chrome_trace_file"
            record = db.rows("select nsystrace_last_trace_file()",
                             first=[f"select {function}({sql_string(out)}) from trace_events" + where])[0][0]
            seconds = time.monotonic() - started
            if record is None:
                raise Failure("the extension kept no record of the trace it wrote")
            record = json.loads(record)
            kinds = sorted(record["event_counts"].items())
            gpus = record["gpus"]
    return out, fmt, seconds, kinds, gpus


def convert(args):
    out, fmt, seconds, kinds, gpus = write_trace(args)
    summary = ", ".join(f"{k} {n}" for k, n in kinds) or "no events"
    size = os.path.getsize(out)
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    kind = "Perfetto protobuf" if fmt == "perfetto" else "Chrome JSON"
    print(f"nsystrace: wrote {args.output} ({shown}, {kind}) in {seconds:.1f} s")
    print(f"  events: {sum(n for _, n in kinds)} ({summary})")
    print(f"  GPUs: {', '.join(str(g) for g in gpus) or 'none'}; profiles: {', '.join(args.profiles)}")
    return out


def serve_once(path, port=PERFETTO_PORT, open_browser=True, announce=print):
    """Serves `path` on 127.0.0.1:port to ui.perfetto.dev (Perfetto's documented way to open a local trace) until it
    has been fetched whole, or Ctrl-C. Returns the deep link."""
    name = os.path.basename(path)
    fetched = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _headers(self, code, length=None):
            self.send_response(code)
            self.send_header("Access-Control-Allow-Origin", PERFETTO_UI)
            self.send_header("Cache-Control", "no-cache")
            if length is not None:
                self.send_header("Content-Length", str(length))
                self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()

        def do_OPTIONS(self):  # CORS preflight
            self._headers(200, 0)

        def do_GET(self):
            if (urllib.parse.urlparse(self.path).path != "/" + urllib.parse.quote(name) or
                    not is_loopback_host(self.headers, port)):
                self._headers(404, 0)
                return
            size = os.path.getsize(path)
            self._headers(200, size)
            with open(path, "rb") as f:
                shutil.copyfileobj(f, self.wfile)
            fetched.set()

        def log_message(self, *a):  # quiet
            pass

    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)  # loopback only
    except OSError as e:
        raise Failure(f"cannot serve on 127.0.0.1:{port} ({e.strerror}); is another trace being served?")
    url = f"http://127.0.0.1:{port}/{urllib.parse.quote(name)}"
    link = f"{PERFETTO_UI}/#!/?url={urllib.parse.quote(url, safe='')}"
    announce(f"nsystrace: serving {name} on 127.0.0.1:{port} until Perfetto has fetched it (Ctrl-C stops):\n  {link}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    if open_browser:
        try:
            webbrowser.get()
            webbrowser.open(link)
        except webbrowser.Error:
            pass  # no browser here: the link is printed
    try:
        while not fetched.wait(0.2):
            pass
        time.sleep(0.5)  # let the response finish
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return link


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from nsystrace.serve import main as serve_main
        return serve_main(argv[1:])
    if argv[:1] == ["stats"]:  # a recipe over every report of a job (docs/job.md)
        from nsystrace.stats import main as stats_main
        return stats_main(argv[1:])
    args = parser().parse_args(argv)
    if args.output is None:
        stem = os.path.splitext(args.profiles[0])[0]
        args.output = stem + ".pftrace"
    try:
        from nsystrace import job  # -o job.tar / job.zip: per-report traces that Perfetto merges (docs/job.md)
        if job.is_archive(args.output):
            return job.command(args, where_clause(args, ["main"]))
        out = convert(args)
        if args.open:
            serve_once(out)
    except (Failure, nsystrace.ExtensionLoadingUnsupported) as e:
        print(f"nsystrace: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:  # the extension's messages say "nsystrace: " already
        print(str(e) if str(e).startswith("nsystrace: ") else f"nsystrace: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"nsystrace: {' '.join(e.cmd)} failed (exit {e.returncode})", file=sys.stderr)
        return 1
    return 0
