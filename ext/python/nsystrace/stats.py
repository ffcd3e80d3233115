"""`nsystrace stats REPORT rank*.sqlite`: a recipe run on every report of a job, in parallel, as one table with a
`report` column (and `rank` when the file name or the export says it); and `job_summary`, what no single-report tool
gives: per rank, GPU busy, NCCL and idle time, and the straggler at each NVTX step.

    nsystrace stats top_kernels rank*.sqlite                  a terminal table
    nsystrace stats cuda_gpu_kern_sum rank*.sqlite -o k.csv   CSV (or -o k.sqlite: an SQLite table)
    nsystrace stats my_query.sql rank*.sqlite -j 8            any .sql file
    nsystrace stats job_summary rank*.sqlite --step 'train_step%'
    nsystrace stats top_kernels rank*.sqlite --scheduler tcp://host:8786     on a Dask cluster

From Python: run_recipe("top_kernels", paths) and job_summary(paths) return (columns, rows).
The reports stay where they are (on a cluster, a filesystem the workers share); only result rows travel.
"""
import contextlib
import csv
import os
import re
import sqlite3

from nsystrace import fanout, recipes
from nsystrace.errors import ConversionFailed, Failure

SUMMARY = "job_summary"


class StatsError(Exception):
    """A mistake to report in one line."""


def find_recipe(recipe):
    """(name, SQL text) of a recipe: a .sql file, or a name of sql/ or sql/nsys_stats/."""
    if recipe.lower().endswith(".sql") and os.path.isfile(recipe):
        with open(recipe, encoding="utf-8") as f:
            return os.path.splitext(os.path.basename(recipe))[0], f.read()
    name = recipe[:-4] if recipe.lower().endswith(".sql") else recipe
    sql = recipes.text(name)
    if sql is None:
        raise StatsError(f"no recipe {recipe!r}: give a .sql file or one of: {', '.join(recipes.names() + [SUMMARY])}")
    return name, sql


def statements(script):
    """The statements of a script, in order (comments and blank text between them dropped)."""
    out, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if re.sub(r"--[^\n]*|/\*.*?\*/|\s|;", "", current, flags=re.S):
                out.append(current)
            current = ""
    if re.sub(r"--[^\n]*|/\*.*?\*/|\s|;", "", current, flags=re.S):
        out.append(current + ";")
    return out


@contextlib.contextmanager
def _worker_connection(path):
    """The report as a fan-out's worker reads it: no progress lines, one thread (the reports run side by side);
    an SQLite error names the report."""
    try:
        conn = fanout.open_report(path)
        try:
            conn.execute("select nsystrace_option('progress', 0)")
            conn.execute("select nsystrace_option('threads', 1)")
            yield conn
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise fanout.report_error(path, e) from None


def run_script(task):
    """A worker's task: (path, SQL script) -> (columns, rows) of the script's last statement that returns rows."""
    path, script = task
    with _worker_connection(path) as conn:
        columns, rows = None, []
        for statement in statements(script):
            cur = conn.execute(statement)
            if cur.description is not None:
                columns, rows = [d[0] for d in cur.description], cur.fetchall()
    if columns is None:
        raise RuntimeError(f"{path}: the recipe returns no rows (no SELECT)")
    return columns, [tuple(r) for r in rows]


def report_labels(paths):
    """A report's name in the `report` column: its file name, or its path where two share a file name."""
    names = [os.path.basename(p) for p in paths]
    return [p if names.count(n) > 1 else n for p, n in zip(paths, names)]


def fan_out(task, items, jobs=None, scheduler=None, progress=None, what="stats"):
    """task over items with a progress line counting the rows that come back."""
    meter = fanout.Progress(what, len(items), enabled=progress, unit="rows")
    return fanout.run_tasks(task, items, jobs=jobs, scheduler=scheduler, on_result=lambda i, r: meter.step(len(r[1])))


def run_recipe(recipe, paths, jobs=None, scheduler=None, progress=False):
    """The recipe on every report (jobs at a time, or on a Dask scheduler): (columns, rows), each row led by its
    report and, when any report's rank is known, its rank."""
    name, script = find_recipe(recipe)
    paths = list(paths)
    infos = [fanout.report_info(p) for p in paths]
    results = fan_out(run_script, [(os.path.abspath(p), script) for p in paths], jobs, scheduler, progress, what=name)
    columns = results[0][0] if results else []
    for p, (c, _) in zip(paths, results):
        if c != columns:
            raise StatsError(f"{p}: the recipe's columns ({', '.join(c)}) differ from {paths[0]}'s")
    with_rank = any(i["rank"] is not None for i in infos)
    lead = ["report", "rank"] if with_rank else ["report"]
    rows = []
    for label, info, (_, report_rows) in zip(report_labels(paths), infos, results):
        key = (label, info["rank"]) if with_rank else (label,)
        rows += [key + r for r in report_rows]
    return lead + columns, rows


# ---- the job summary -------------------------------------------------------------------------------------------

def _busy_sql(where):
    """Per GPU: the union of its operations' intervals (overlapping streams counted once), its first start, last
    end; then their sums over the GPUs. Islands: an operation starts a new one when it begins after every earlier
    end."""
    return f"""
with work as (select device_id, ts as s, ts + dur as e from trace_events where {where}),
o as (select device_id, s, e, max(e) over (partition by device_id order by s, e
                                           rows between unbounded preceding and 1 preceding) as prev from work),
g as (select device_id, s, e, sum(case when prev is null or s > prev then 1 else 0 end)
        over (partition by device_id order by s, e rows unbounded preceding) as grp from o),
islands as (select device_id, min(s) as s, max(e) as e from g group by device_id, grp),
dev as (select device_id, sum(e - s) as busy, min(s) as first, max(e) as last from islands group by device_id)
select count(*), coalesce(sum(busy), 0), coalesce(sum(last - first - busy), 0), min(first), max(last) from dev"""


GPU_WORK = "kind in ('kernel', 'memcpy', 'memset')"
NCCL_WORK = "kind = 'kernel' and name like 'nccl%'"


def summarize_report(task):
    """A worker's task: (path, step LIKE pattern) -> ({gpus, busy, idle, nccl, first, last}, [(step, n, end)])."""
    path, step = task
    with _worker_connection(path) as conn:
        gpus, busy, idle, first, last = conn.execute(_busy_sql(GPU_WORK)).fetchone()
        nccl = conn.execute(_busy_sql(NCCL_WORK)).fetchone()[1]
        steps = conn.execute(
            "select name, row_number() over (partition by name order by ts, ts + dur) as n, ts + dur "
            "from trace_events where kind = 'nvtx' and dur > 0 and name like ? order by name, n",
            (step,)).fetchall()
    return ({"gpus": gpus, "busy": busy, "idle": idle, "nccl": nccl, "first": first, "last": last},
            [tuple(s) for s in steps])


def job_summary(paths, step="step%", jobs=None, scheduler=None, progress=False):
    """Per rank (report): GPUs, GPU busy ns (union of its kernels, memcpys and memsets per GPU, summed over GPUs),
    NCCL ns (the same for kernels named nccl*), idle ns (per GPU, from its first operation to its last, the time
    it ran nothing; summed), and span; then per NVTX step (ranges named like `step`, matched across ranks by name
    and occurrence): the straggler (the rank whose step ends last, in wall-clock time) and the spread of the ends.
    Returns ((rank columns, rank rows), (step columns, step rows))."""
    paths = list(paths)
    infos = [fanout.report_info(p) for p in paths]
    results = fan_out(summarize_report, [(os.path.abspath(p), step) for p in paths], jobs, scheduler, progress,
                      what=SUMMARY)
    labels = report_labels(paths)
    rank_columns = ["report", "rank", "gpus", "gpu_busy_ns", "nccl_ns", "idle_ns", "gpu_span_ns"]
    rank_rows = []
    for label, info, (m, _) in zip(labels, infos, results):
        span = m["last"] - m["first"] if m["first"] is not None else 0
        rank_rows.append((label, info["rank"], m["gpus"], m["busy"], m["nccl"], m["idle"], span))
    # Steps on wall-clock time: each report's session start + its end. Reports without one cannot be compared.
    ends = {}
    for label, info, (_, steps) in zip(labels, infos, results):
        if info["session_start_utc_ns"] is None:
            continue
        for name, n, end in steps:
            ends.setdefault((name, n), []).append((info["session_start_utc_ns"] + end, label, info["rank"]))
    step_columns = ["step", "occurrence", "ranks", "straggler_report", "straggler_rank", "last_end_utc_ns",
                    "spread_ns"]
    step_rows = []
    for (name, n), got in sorted(ends.items()):
        got.sort(key=lambda x: x[0])
        last = got[-1]
        step_rows.append((name, n, len(got), last[1], last[2], last[0], last[0] - got[0][0]))
    return (rank_columns, rank_rows), (step_columns, step_rows)


# ---- output ------------------------------------------------------------------------------------------------------

def format_table(columns, rows):
    cells = [[str(c) for c in columns]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for r in cells[1:]:
        lines.append("  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _numeric(text):
    return bool(re.fullmatch(r"-?[0-9]+(\.[0-9]*)?(e[-+]?[0-9]+)?", text))


def is_export(path):
    """An Nsight Systems export (never written to)."""
    try:
        conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(names & {"StringIds", "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS"})


def write_table(columns, rows, output, table, inputs=()):
    """Rows to a .csv file, or a table (replaced) of a .sqlite database that is not an export."""
    out = os.path.abspath(output)
    if any(os.path.exists(out) and os.path.samefile(out, p) for p in inputs):
        raise StatsError(f"{output} is one of the reports; it is never written to")
    if output.lower().endswith(".csv"):
        with open(output, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
        return
    if not output.lower().endswith((".sqlite", ".db", ".sqlite3")):
        raise StatsError(f"cannot tell the format of {output!r}: use .csv or .sqlite")
    if os.path.exists(output) and is_export(output):
        raise StatsError(f"{output} is an Nsight Systems export; results are never written into a profile")
    conn = sqlite3.connect(output)
    try:
        with conn:
            quoted = lambda name: '"' + str(name).replace('"', '""') + '"'
            conn.execute(f"drop table if exists {quoted(table)}")
            conn.execute(f"create table {quoted(table)} ({', '.join(quoted(c) for c in columns)})")
            conn.executemany(f"insert into {quoted(table)} values ({', '.join('?' * len(columns))})", rows)
    finally:
        conn.close()


DESCRIPTION = """a recipe on every report of a job, in parallel, as one table (a `report` column, and `rank` when
the file name or the export says it); or job_summary: per rank GPU busy, NCCL and idle time, and the straggler at
each NVTX step (docs/job.md).

  nsystrace stats top_kernels rank*.sqlite                  a table on the terminal
  nsystrace stats cuda_gpu_kern_sum rank*.sqlite -o k.csv   CSV (-o k.sqlite: a table named after the recipe)
  nsystrace stats torch_op_sum rank*.sqlite                 PyTorch ops (emit_nvtx, nsys --pytorch) per rank
  nsystrace stats job_summary rank*.sqlite --step 'train_step%'
  nsystrace stats top_kernels rank*.sqlite --scheduler tcp://host:8786   on a Dask cluster"""


def add_arguments(p):
    p.add_argument("recipe", metavar="REPORT",
                   help=f"a recipe of sql/ or sql/nsys_stats/ by name, a .sql file, or {SUMMARY}")
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite exports (one per rank)")
    p.add_argument("-o", "--output", help="x.csv, or x.sqlite (a table named after the recipe; job_summary: two "
                                          "tables, or x.csv and x.steps.csv); default: a table on the terminal")
    p.add_argument("-j", "--jobs", type=int, help="reports at a time (default: the cores available)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster (tcp://host:8786; Debian's python3-distributed) instead of local "
                        "processes; its workers must see the reports at the same paths")
    p.add_argument("--step", default="step%",
                   help=f"{SUMMARY}: the NVTX ranges that are steps, a LIKE pattern (default: step%%)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="reports done / total on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")


def run(args):
    try:
        if args.recipe in (SUMMARY, SUMMARY + ".sql") and not os.path.isfile(args.recipe):
            (rc, rr), (sc, sr) = job_summary(args.profiles, args.step, args.jobs, args.scheduler, args.progress)
            tables = [(SUMMARY + "_ranks", rc, rr), (SUMMARY + "_steps", sc, sr)]
        else:
            columns, rows = run_recipe(args.recipe, args.profiles, args.jobs, args.scheduler, args.progress)
            tables = [(find_recipe(args.recipe)[0], columns, rows)]
        for i, (table, columns, rows) in enumerate(tables):
            if args.output is None:
                print(("\n" if i else "") + f"{table} ({len(rows)} rows)\n" + format_table(columns, rows))
            else:
                output = args.output
                if i and output.lower().endswith(".csv"):  # the summary's second table beside the first
                    output = output[:-4] + ".steps.csv"
                write_table(columns, rows, output, table, args.profiles)
                print(f"nsystrace: wrote {len(rows)} rows of {table} to {output}")
    except (StatsError, FileNotFoundError, ValueError) as e:
        raise Failure(str(e)) from None
    except RuntimeError as e:  # the recipe failed on a report; the message names it
        raise ConversionFailed(str(e)) from None
    return 0
