"""Conversion: what to keep (the choices as one WHERE over the extension's trace_events table) and the writing of the
trace, with the summary from the writer's own counts. Used by the command and by the page alike, so that for the
same choices both write the same trace."""
import dataclasses
import gzip
import json
import os
import re
import tempfile
import time
import typing

from nsystrace.connection import Connection, export_reports, sql_string
from nsystrace.errors import Failure

KINDS = ["nvtx", "cuda_api", "kernel", "memcpy", "memset", "sync", "nvtx_kernel", "osrt", "sched", "cuda_event",
         "diagnostic", "graph", "cudnn", "cublas", "mpi", "cuda_graph", "gpu_metric", "cpu_sample"]
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
    raise Failure(f"cannot tell the format of {path!r} from its name: use .pftrace (Perfetto) or .json / .json.gz "
                  "(Chrome JSON)")


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
            raise Failure(f"no kind {', '.join(map(repr, unknown))}; the kinds are: {', '.join(KINDS)}")
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
        cpu = f"pid in ({', '.join(map(str, options.pid))})" if options.pid else "1"
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


def write_trace(options):
    """Writes the trace the options ask for; returns its Result."""
    fmt = output_format(options.output)
    with tempfile.TemporaryDirectory(prefix="nsystrace-") as scratch:
        profiles = export_reports(options.profiles, scratch)
        out = os.path.abspath(options.output)
        if any(os.path.exists(out) and os.path.samefile(out, p) for p in profiles):
            raise Failure(f"{options.output} is one of the profiles; it is never written over")
        db = Connection(profiles)
        if options.progress is not None:
            db.prelude_sql(f"select nsystrace_option('progress', {int(options.progress)})")
        where = where_clause(options, db.schemas)
        started = time.monotonic()
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
    return Result(out, fmt, seconds, [tuple(k) for k in kinds], gpus)
