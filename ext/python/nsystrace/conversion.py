"""Conversion: what to keep (the choices as one WHERE over the extension's trace_events table) and the writing of the
trace, with the summary from the writer's own counts. Used by the command and by the page alike, so that for the
same choices both write the same trace."""
import dataclasses
import difflib
import gzip
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import typing

from nsystrace.connection import Connection, check_profiles, export_reports, sql_string
from nsystrace.errors import ConversionFailed, Failure

KINDS = ["nvtx", "cuda_api", "kernel", "memcpy", "memset", "sync", "nvtx_kernel", "osrt", "sched", "cuda_event",
         "diagnostic", "graph", "cudnn", "cublas", "mpi", "cuda_graph", "gpu_metric", "cpu_sample",
         "cuda_memory"]
# How trace_events numbers processes (docs/sql-reference.md: Tracks; Several reports on one timeline): a GPU's rows
# are drawn under pid 2^24 + its device id, and report r adds r * 2^25 to its pids.
GPU_PID_BASE = 1 << 24
REPORT_PID_STRIDE = 1 << 25
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb", ".pftrace.gz", ".perfetto-trace.gz")
JSON_SUFFIXES = (".json", ".json.gz")


@dataclasses.dataclass
class Options:
    """The choices of one conversion (the command's options; the page sets the same)."""
    profiles: typing.List[str]
    output: str
    kinds: typing.Optional[str] = None          # comma-separated kinds to keep; None: all
    start: typing.Optional[int] = None          # ns from the session's start
    end: typing.Optional[int] = None
    pid: typing.List[int] = dataclasses.field(default_factory=list)
    gpu: typing.List[int] = dataclasses.field(default_factory=list)
    nvtx_prefix: typing.Optional[str] = None
    nvtx_color_scheme: typing.Optional[str] = None
    no_gpu_projection: bool = False
    progress: typing.Optional[bool] = None      # None: the extension's default (on a terminal)

    @classmethod
    def of(cls, namespace):
        """The options an argparse namespace holds (it may hold more)."""
        return cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls)})


class Result(typing.NamedTuple):
    path: str           # absolute
    format: str         # "perfetto" or "json"
    seconds: float
    kinds: list         # [(kind, events)], by kind
    gpus: list          # [device_id]

    @property
    def events(self):
        return sum(n for _, n in self.kinds)


def parse_time(text):
    """'1500' (ns), '2.5s', '300ms', '40us' -> integer ns. ValueError when it is not a time."""
    m = re.fullmatch(r"\s*(-?[0-9]+(?:\.[0-9]*)?)\s*(ns|us|ms|s)?\s*", text)
    if not m:
        raise ValueError(f"not a time: {text!r} (ns, or a number with us, ms or s)")
    scale = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[m.group(2) or "ns"]
    return int(round(float(m.group(1)) * scale))


def output_format(path):
    lower = path.lower()
    if lower.endswith(PERFETTO_SUFFIXES):
        return "perfetto"
    if lower.endswith(JSON_SUFFIXES):
        return "json"
    raise Failure(f"{path}: cannot tell the trace's format from its name: use .pftrace (Perfetto) or .json / "
                  ".json.gz (Chrome JSON)")


def where_clause(options, schemas):
    """The options as one WHERE over trace_events."""
    terms = []
    if len(schemas) > 1:
        terms.append("schema in (" + ", ".join(sql_string(s) for s in schemas) + ")")
    kinds = None
    if options.kinds:
        kinds = [k.strip() for k in options.kinds.split(",") if k.strip()]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            close = [m for k in unknown for m in difflib.get_close_matches(k, KINDS, 1)]
            raise Failure(f"--kinds: no kind {', '.join(map(repr, unknown))}"
                          f"{' (did you mean ' + ', '.join(close) + '?)' if close else ''}; "
                          f"the kinds are: {', '.join(KINDS)}")
        terms.append("kind in (" + ", ".join(sql_string(k) for k in kinds) + ")")
    projection = not options.no_gpu_projection and (kinds is None or "nvtx_kernel" in kinds)
    if kinds is not None and "nvtx_kernel" in kinds and options.no_gpu_projection:
        raise Failure("--kinds asks for nvtx_kernel, the GPU projection that --no-gpu-projection leaves out")
    terms.append("derived in (0, 1)" if projection else "derived = 0")
    if options.start is not None:
        terms.append(f"ts >= {options.start}")
    if options.end is not None:
        terms.append(f"ts <= {options.end}")
    if options.pid or options.gpu:
        # A process's pid as trace_events gives it in each report (report r's pids are offset by r * 2^25).
        pids = [p + r * REPORT_PID_STRIDE for r in range(len(schemas)) for p in options.pid]
        cpu = f"pid in ({', '.join(map(str, pids))})" if options.pid else "1"
        gpu = f"device_id in ({', '.join(map(str, options.gpu))})" if options.gpu else "1"
        terms.append(f"((device_id is null and {cpu}) or (device_id is not null and {gpu}))")
    if options.nvtx_prefix:
        n = len(options.nvtx_prefix.encode("utf-8"))
        terms.append(f"(kind not in ('nvtx', 'nvtx_kernel') or substr(cast(name as blob), 1, {n}) = "
                     f"cast({sql_string(options.nvtx_prefix)} as blob))")
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




# What opening a trace in ui.perfetto.dev costs, per row of the profile's event tables (what estimated_events
# counts), measured on the 200x profile (tests/bench/RESULTS.md: the trace processor's peak memory importing its
# whole trace, 1831 MB for the .pftrace, 3805 MB for the JSON; 6.45 M stored rows, 8.37 M events with the NVTX GPU
# projection); and what a browser tab holds (its WebAssembly memory).
IMPORT_BYTES_PER_EVENT = {"perfetto": 284, "json": 590}
BROWSER_TAB_BYTES = 2_000_000_000
# Below this many bytes of profiles, no trace of them comes near a tab's memory (an event takes more than 25 bytes
# of a profile), so the estimate is not made.
ESTIMATE_ABOVE_PROFILE_BYTES = 50_000_000


def span_text(ns):
    return f"{ns} ns ({ns / 1e9:.3f} s)"


def listing(items, limit=12):
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check_choices(db, options, profiles_text):
    """Every kind, process, GPU and window the options name is in the profile(s): else a Failure that says what
    is there (a typo must not give a trace of something else). One statement of cheap probes (each pushed down to
    the scan, stopping at the first row); the listing, a whole scan, is made only for the message."""
    schemas = f" and schema in ({', '.join(sql_string(s) for s in db.schemas)})"
    probes = []  # (what, SQL that is 1 when it exists)
    for kind in [k.strip() for k in (options.kinds or "").split(",") if k.strip()]:
        derived = 1 if kind == "nvtx_kernel" else 0
        probes.append((("kind", kind), f"exists(select 1 from trace_events where kind = {sql_string(kind)} and "
                                       f"derived = {derived}{schemas})"))
    for pid in options.pid:
        probes.append((("pid", pid), "(" + " or ".join(
            f"exists(select 1 from trace_events where pid = {int(pid) + r * REPORT_PID_STRIDE} and "
            f"schema = {sql_string(schema)})" for r, schema in enumerate(db.schemas)) + ")"))
    for gpu in options.gpu:
        probes.append((("gpu", gpu), "(" + " or ".join(
            f"exists(select 1 from trace_events where pid = {GPU_PID_BASE + int(gpu) + r * REPORT_PID_STRIDE} and "
            f"schema = {sql_string(schema)})" for r, schema in enumerate(db.schemas)) + ")"))
    if options.start is not None and options.end is not None and options.start > options.end:
        raise Failure(f"--start {options.start} ns is after --end {options.end} ns")
    if options.start is not None or options.end is not None:
        window = " and ".join(t for t in (f"ts >= {options.start}" if options.start is not None else "",
                                          f"ts <= {options.end}" if options.end is not None else "") if t)
        probes.append((("window", None), f"exists(select 1 from trace_events where {window} and derived = 0"
                                         f"{schemas})"))
    if not probes:
        return
    found = db.rows("select " + ", ".join(sql for _, sql in probes))[0]
    missing = [what for (what, _), ok in zip(probes, found) if not ok]
    if not missing:
        return
    # What is there, for the message, each list only when needed, as cheaply as it can be had: the kinds by a probe
    # each (one table each, first row), the GPUs from the tables of GPU work, the processes and the time span from
    # a scan of every row.
    whats = {what for what, _ in missing}
    kinds, gpus, processes = [], {}, {}
    first = last = None
    if "kind" in whats:
        stored = [k for k in KINDS if k != "nvtx_kernel"]
        found = db.rows("select " + ", ".join(f"exists(select 1 from trace_events where kind = {sql_string(k)} and "
                                             f"derived = 0{schemas})" for k in stored))[0]
        kinds = [k for k, ok in zip(stored, found) if ok]
    if "gpu" in whats:
        gpus = dict(db.rows("select device_id, max(process_name) from trace_events where kind in ('kernel', "
                            f"'memcpy', 'memset') and derived = 0{schemas} group by 1"))
    if "pid" in whats or "window" in whats:
        for pid, name, n, t0, t1 in db.rows(
                "select case when device_id is null then pid end, max(process_name), count(*), min(ts), "
                f"max(ts + coalesce(dur, 0)) from trace_events where derived = 0{schemas} group by 1"):
            if pid is not None:
                processes[pid] = [name, n]
            first = t0 if first is None else min(first, t0)
            last = t1 if last is None else max(last, t1)
    problems = []
    for what, value in missing:
        if what == "kind":
            why = "; nvtx_kernel needs NVTX ranges and the GPU work they launched" if value == "nvtx_kernel" else ""
            problems.append(f"--kinds {value}: no {value} events in {profiles_text}; its kinds: "
                            f"{', '.join(kinds) or 'none'}{why}")
        elif what == "pid":
            busiest = sorted(processes.items(), key=lambda item: -item[1][1])
            problems.append(f"--pid {value}: no process {value} in {profiles_text}; its processes: "
                            f"{listing(f'{p} {n!r} ({c} events)' for p, (n, c) in busiest) or 'none'}")
        elif what == "gpu":
            problems.append(f"--gpu {value}: no GPU {value} in {profiles_text}; its GPUs: "
                            f"{listing(n or f'GPU {d}' for d, n in sorted(gpus.items())) or 'none'}")
        else:
            problems.append(f"--start/--end: no event in that window in {profiles_text}; its events span "
                            f"{span_text(first) if first is not None else '-'} to "
                            f"{span_text(last) if last is not None else '-'} from the session's start")
    raise Failure("; ".join(problems) + ". Nothing was written.")


def trace_processor():
    """Perfetto's trace processor on PATH (its "native accelerator" for ui.perfetto.dev), or None."""
    for name in ("trace_processor_shell", "trace_processor"):
        found = shutil.which(name)
        if found:
            return found
    return None


def estimated_events(db):
    """About how many events the profiles hold: the rows of their tables that have a start time (the event tables;
    SQLite counts a table's rows from its b-tree, without reading them)."""
    total = 0
    for schema in db.schemas:
        tables = [t for (t,) in db.rows(
            f"select m.name from {schema}.sqlite_master m where m.type = 'table' and exists (select 1 from "
            f"pragma_table_info(m.name, {sql_string(schema)}) where name in ('start', 'timestamp'))")]
        if tables:
            total += db.rows("select " + " + ".join(
                f"(select count(*) from {schema}.\"{t.replace(chr(34), chr(34) * 2)}\")" for t in tables))[0][0]
    return total


def size_warning(db, options, fmt, profiles):
    """A warning, before a trace too big for a browser tab is written, with what to do; None when it fits."""
    if sum(os.path.getsize(p) for p in profiles) < ESTIMATE_ABOVE_PROFILE_BYTES:
        return None
    events = estimated_events(db)
    need = events * IMPORT_BYTES_PER_EVENT[fmt]
    if need <= BROWSER_TAB_BYTES:
        return None
    narrowed = [flag for flag, given in (("--start/--end", options.start is not None or options.end is not None),
                                         ("--kinds", options.kinds), ("--pid", options.pid), ("--gpu", options.gpu))
                if given]
    tp = trace_processor()
    accelerator = (f"Perfetto's trace processor is installed ({tp}): --open starts it (`{os.path.basename(tp)} "
                   "--httpd TRACE`) and ui.perfetto.dev uses it as its native accelerator" if tp else
                   "Perfetto's trace processor is not on PATH: get trace_processor_shell from "
                   "https://get.perfetto.dev/trace_processor, run `trace_processor_shell --httpd TRACE` and open "
                   "ui.perfetto.dev, which uses it as its native accelerator (--open starts it when it is on PATH)")
    return (f"warning: {', '.join(options.profiles)} {'hold' if len(profiles) > 1 else 'holds'} about "
            f"{events / 1e6:.1f} M stored events"
            f"{' before ' + ', '.join(narrowed) + ' narrow them' if narrowed else ''}; opening their trace in a "
            f"browser tab would take about {need / 1e9:.1f} GB of memory, more than a tab has "
            f"({BROWSER_TAB_BYTES / 1e9:.0f} GB). To open it: narrow it (a window with --start/--end, fewer "
            "--kinds, --pid/--gpu), or write the job's archive, one trace per report (-o job.tar), or open it "
            f"natively: {accelerator}")


def write_trace(options, warn=lambda text: print(f"nsystrace: {text}", file=sys.stderr, flush=True)):
    """Writes the trace the options ask for; returns its Result. Nothing is written when a choice names nothing
    in the profile; on an error, Ctrl-C or SIGTERM, no file or temporary directory is left."""
    fmt = output_format(options.output)
    check_profiles(options.profiles)
    profiles_text = ", ".join(options.profiles)
    scratch = []

    def scratch_dir():  # for .nsys-rep reports exported to SQLite
        if not scratch:
            scratch.append(tempfile.mkdtemp(prefix="nsystrace-"))
        return scratch[0]
    try:
        profiles = export_reports(options.profiles, scratch_dir)
        out = os.path.abspath(options.output)
        if any(os.path.exists(out) and os.path.samefile(out, p) for p in profiles):
            raise Failure(f"{options.output} is one of the profiles; it is never written over")
        db = Connection(profiles)
        if options.progress is not None:
            db.prelude_sql(f"select nsystrace_option('progress', {int(options.progress)})")
        where = where_clause(options, db.schemas)
        check_choices(db, options, profiles_text)
        warning = size_warning(db, options, fmt, profiles)
        if warning:
            warn(warning)
        started = time.monotonic()
        try:
            kinds, gpus = _write(db, options, fmt, out, where)
        except sqlite3.Error as e:
            message = str(e)
            if "interrupted" in message:
                raise KeyboardInterrupt()
            if "selected no rows" in message:  # each choice names something, but not together
                raise Failure(f"no event of {profiles_text} matches all of these choices together; nothing was "
                              "written")
            named = any(p in message for p in options.profiles) or options.output in message or out in message
            raise ConversionFailed(message if named else f"{message} (converting {profiles_text} to "
                                                         f"{options.output})")
        seconds = time.monotonic() - started
        return Result(out, fmt, seconds, [tuple(k) for k in kinds], gpus)
    finally:
        if scratch:
            shutil.rmtree(scratch[0], ignore_errors=True)


def _write(db, options, fmt, out, where):
    """Writes the trace; returns ([(kind, events)], [GPU])."""
    if options.nvtx_color_scheme:
        if fmt != "json":
            raise Failure("--nvtx-color-scheme colors Chrome JSON (cname); write a .json or .json.gz trace")
        rules = color_scheme(options.nvtx_color_scheme)
        db.create_function("nsystrace_cli_color", 2, lambda kind, name: next(
            (c for r, c in rules if kind in ("nvtx", "nvtx_kernel") and name and r.search(name)), None))
        # The explicit form writes rows as given: the rows' tracks and lanes become Chrome tids here.
        db.create_function("nsystrace_cli_tid", 6, ChromeTrackIds().tid, deterministic=False)
        db.create_function("nsystrace_cli_lane_name", 2, lane_name)
        text = db.rows("select chrome_trace(kind, name, ts, dur, pid, "
                       "nsystrace_cli_tid(kind, pid, tid, global_pid, thread_name, lane), process_name, "
                       "nsystrace_cli_lane_name(thread_name, lane), args, correlation_id, global_tid, "
                       "coalesce(nsystrace_cli_color(kind, name), cname)) from trace_events" + where)[0][0]
        # Written under a temporary name and renamed when whole, as the extension writes its files.
        partial = f"{out}.{os.getpid()}.partial"
        try:
            opener = gzip.open if out.lower().endswith(".gz") else open
            with opener(partial, "wt", encoding="utf-8") as f:
                f.write(text)
            os.replace(partial, out)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        kinds = db.rows("select kind, count(*) from trace_events" + where + " group by kind order by kind")
        gpus = [g[0] for g in db.rows("select distinct device_id from trace_events" + where +
                                      " and device_id is not null order by 1")]
        return kinds, gpus
    # The summary is the conversion's own count (nsystrace_last_trace_file(), read on the same connection right
    # after it), not a second scan of the profile.
    function = "perfetto_trace_file" if fmt == "perfetto" else "chrome_trace_file"
    record = db.rows("select nsystrace_last_trace_file()",
                     first=[f"select {function}({sql_string(out)}) from trace_events" + where])[0][0]
    if record is None:
        raise ConversionFailed(f"the extension kept no record of the trace it wrote to {options.output}")
    record = json.loads(record)
    return sorted(record["event_counts"].items()), record["gpus"]


def main(argv):
    """`python -m nsystrace.conversion OPTIONS_JSON`: one conversion in a process of its own (the page runs it so
    that it can show its progress, which the extension writes on stderr, and cancel it with SIGTERM); the Result as
    JSON on stdout."""
    from nsystrace.errors import reported, stop_on_sigterm
    stop_on_sigterm()

    def run():
        result = write_trace(Options(**json.loads(argv[0])))
        print(json.dumps(result._asdict()), flush=True)
        return 0
    return reported("nsystrace", run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
