"""`nsystrace stats REPORT rank*.sqlite`: a recipe run on every report of a job, in parallel, as one table with a
`report` column (and `rank` when the file name or the export says it); and `job_summary`, what no single-report tool
gives: per rank, GPU busy, NCCL, idle, compute and wait time, and at each NVTX step the straggler (the last rank to
arrive at the step's collective), its lateness and each rank's wait.

    nsystrace stats top_kernels rank*.sqlite                  a terminal table
    nsystrace stats cuda_gpu_kern_sum rank*.sqlite -o k.csv   CSV (or -o k.sqlite: an SQLite table)
    nsystrace stats my_query.sql rank*.sqlite -j 8            any .sql file
    nsystrace stats job_summary rank*.sqlite --step 'train_step%' --collective allreduce
    nsystrace stats top_kernels rank*.sqlite --scheduler tcp://host:8786     on a Dask cluster

From Python: run_recipe("top_kernels", paths) and job_summary(paths) return (columns, rows).
The reports stay where they are (on a cluster, a filesystem the workers share); only result rows travel.
"""
import bisect
import contextlib
import csv
import os
import re
import sqlite3
import sys

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


# NCCL's NVTX ranges (its domain, `NCCL`) that are collectives or point-to-point calls; ncclCommInitRank,
# ncclGroupStart and the like are not where ranks meet.
NCCL_NVTX_COLLECTIVES = ("ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclBcast",
                         "ncclReduce", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend", "ncclRecv")

# Where a step's collective comes from, in the order job_summary looks for it when --collective is not given.
NCCL_KERNELS, NCCL_NVTX, NAMED_NVTX = "nccl kernel", "nccl nvtx", "nvtx"


def _first_in_steps(steps, candidates):
    """For each step (pid, start, end), the first candidate (pid, anchor, name, ts, dur) of its process whose anchor
    lies in [start, end]: (name, ts, dur) or None. Candidates sorted by (anchor, ts)."""
    by_pid = {}
    for c in candidates:
        by_pid.setdefault(c[0], []).append(c)
    anchors = {pid: [c[1] for c in rows] for pid, rows in by_pid.items()}
    firsts = []
    for pid, start, end in steps:
        i = bisect.bisect_left(anchors.get(pid, ()), start)
        rows = by_pid.get(pid, ())
        firsts.append(tuple(rows[i][2:]) if i < len(rows) and rows[i][1] <= end else None)
    return firsts


def summarize_report(task):
    """A worker's task: (path, step LIKE pattern, collective LIKE pattern or None) -> ({gpus, busy, idle, nccl,
    first, last}, [(step, n, start, end, {source: (collective name, ts, dur) or None})])."""
    path, step, collective = task
    with _worker_connection(path) as conn:
        gpus, busy, idle, first, last = conn.execute(_busy_sql(GPU_WORK)).fetchone()
        nccl = conn.execute(_busy_sql(NCCL_WORK)).fetchone()[1]
        steps = conn.execute(
            "select name, row_number() over (partition by name order by ts, ts + dur) as n, ts, ts + dur, "
            "global_pid from trace_events where kind = 'nvtx' and dur > 0 and name like ? order by ts, ts + dur",
            (step,)).fetchall()
        candidates = {
            # An NCCL kernel belongs to the step whose range holds the CUDA call that launched it (the kernel
            # itself may run after the step's CPU range has ended); its arrival is when the GPU started it.
            NCCL_KERNELS: conn.execute(
                "select global_pid, coalesce(call_ts, ts), name, ts, dur from trace_events "
                "where kind = 'kernel' and name like 'nccl%' order by 2, 4").fetchall(),
            NCCL_NVTX: conn.execute(
                "select global_pid, ts, name, ts, dur from trace_events where kind = 'nvtx' and domain = 'NCCL' "
                f"and dur is not null and name in ({', '.join('?' * len(NCCL_NVTX_COLLECTIVES))}) order by 2, 4",
                NCCL_NVTX_COLLECTIVES).fetchall(),
        }
        if collective is not None:
            candidates[NAMED_NVTX] = conn.execute(
                "select global_pid, ts, name, ts, dur from trace_events where kind = 'nvtx' and dur is not null "
                "and name like ? order by 2, 4", (collective,)).fetchall()
    spans = [(pid, s, e) for _, _, s, e, pid in steps]
    firsts = {source: _first_in_steps(spans, rows) for source, rows in candidates.items()}
    out = [(name, n, s, e, {source: firsts[source][i] for source in firsts})
           for i, (name, n, s, e, _) in enumerate(steps)]
    return {"gpus": gpus, "busy": busy, "idle": idle, "nccl": nccl, "first": first, "last": last}, out


RANK_COLUMNS = ["report", "rank", "gpus", "gpu_busy_ns", "nccl_ns", "idle_ns", "gpu_span_ns",
                "step_ns", "compute_ns", "wait_ns", "straggler_steps"]
STEP_COLUMNS = ["step", "occurrence", "ranks", "straggler_report", "straggler_rank", "last_end_utc_ns", "spread_ns",
                "straggler_by", "collective", "collective_ranks", "first_arrival_utc_ns", "last_arrival_utc_ns",
                "lateness_ns", "last_end_report", "last_end_rank"]
WAIT_COLUMNS = ["step", "occurrence", "report", "rank", "collective", "arrival_utc_ns", "behind_first_ns",
                "collective_ns", "wait_ns", "straggler"]


def _collective_source(results, collective):
    """The collective every report is read with: the NVTX ranges the user named, else NCCL's kernels where any
    report has one in a step, else NCCL's NVTX ranges, else none (the straggler is then whose step ends last)."""
    if collective is not None:
        return NAMED_NVTX
    for source in (NCCL_KERNELS, NCCL_NVTX):
        if any(firsts[source] for _, steps in results for *_, firsts in steps):
            return source
    return None


def job_summary_tables(paths, step="step%", collective=None, jobs=None, scheduler=None, progress=False):
    """The job summary's three tables, [(name, columns, rows)]: job_summary_ranks, job_summary_steps and
    job_summary_waits (a row per step and rank that reached the step's collective). docs/job.md defines each
    column."""
    paths = list(paths)
    infos = [fanout.report_info(p) for p in paths]
    results = fan_out(summarize_report, [(os.path.abspath(p), step, collective) for p in paths], jobs, scheduler,
                      progress, what=SUMMARY)
    labels = report_labels(paths)
    source = _collective_source(results, collective)
    if collective is not None and not any(firsts[NAMED_NVTX] for _, steps in results for *_, firsts in steps):
        # A typo must not quietly give the step ends' straggler.
        raise StatsError(f"--collective {collective!r}: no NVTX range of that name starts inside a step "
                         f"(--step {step!r}) of any report")
    # Steps on wall-clock time: each report's session start + its times. Reports without one cannot be compared.
    by_step = {}
    for k, (info, (_, steps)) in enumerate(zip(infos, results)):
        origin = info["session_start_utc_ns"]
        if origin is None:
            continue
        for name, n, start, end, firsts in steps:
            by_step.setdefault((name, n), []).append((k, origin + start, origin + end, firsts.get(source)))
    step_rows, wait_rows = [], []
    waits = [0] * len(paths)
    straggles = [0] * len(paths)
    # In time order: by the step's earliest start on any rank.
    for (name, n), got in sorted(by_step.items(), key=lambda item: (min(g[1] for g in item[1]), item[0])):
        ended = sorted(got, key=lambda g: (g[2], g[0]))
        last_end, first_end = ended[-1], ended[0]
        # Arrival: the start of the rank's collective (wall-clock). Ties go to the later report in the list.
        arrived = sorted(((infos[k]["session_start_utc_ns"] + c[1], k, c) for k, _, _, c in got if c is not None),
                         key=lambda a: (a[0], a[1]))
        if arrived:
            first_arrival, last_arrival = arrived[0][0], arrived[-1][0]
            straggler = arrived[-1][1]
            for at, k, (cname, cts, cdur) in arrived:
                # The wait: from the rank's arrival to the last rank's, within its own collective range.
                wait = max(0, min(last_arrival, at + cdur) - at)
                waits[k] += wait
                wait_rows.append((name, n, labels[k], infos[k]["rank"], cname, at, at - first_arrival, cdur, wait,
                                  int(k == straggler)))
            by, cname = "collective", arrived[-1][2][0]
        else:
            first_arrival = last_arrival = cname = None
            straggler, by = last_end[0], "step end"
        straggles[straggler] += 1
        step_rows.append((name, n, len(got), labels[straggler], infos[straggler]["rank"], last_end[2],
                          last_end[2] - first_end[2], by, cname, len(arrived), first_arrival, last_arrival,
                          None if first_arrival is None else last_arrival - first_arrival,
                          labels[last_end[0]], infos[last_end[0]]["rank"]))
    rank_rows = []
    for k, (label, info, (m, steps)) in enumerate(zip(labels, infos, results)):
        span = m["last"] - m["first"] if m["first"] is not None else 0
        step_ns = sum(e - s for _, _, s, e, _ in steps)
        compared = info["session_start_utc_ns"] is not None
        rank_rows.append((label, info["rank"], m["gpus"], m["busy"], m["nccl"], m["idle"], span, step_ns,
                          step_ns - waits[k] if compared else None, waits[k] if compared else None,
                          straggles[k] if compared else None))
    return [(SUMMARY + "_ranks", RANK_COLUMNS, rank_rows), (SUMMARY + "_steps", STEP_COLUMNS, step_rows),
            (SUMMARY + "_waits", WAIT_COLUMNS, wait_rows)]


def job_summary(paths, step="step%", jobs=None, scheduler=None, progress=False, collective=None):
    """Per rank (report): GPUs, GPU busy ns, NCCL ns, idle ns, span, and over its steps compute, wait and how often
    it was the straggler; per NVTX step (ranges named like `step`, matched across ranks by name and occurrence):
    the straggler (the last to enter the step's first collective; without a collective, whose step ends last) and
    its lateness. Returns ((rank columns, rank rows), (step columns, step rows)); job_summary_tables() gives the
    per-rank waits of each step too."""
    ranks, steps, _ = job_summary_tables(paths, step, collective, jobs, scheduler, progress)
    return (ranks[1], ranks[2]), (steps[1], steps[2])


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
the file name or the export says it); or job_summary: per rank GPU busy, NCCL, idle, compute and wait time, and at
each NVTX step the straggler (the last to arrive at the step's collective) and each rank's wait (docs/job.md).

  nsystrace stats top_kernels rank*.sqlite                  a table on the terminal
  nsystrace stats cuda_gpu_kern_sum rank*.sqlite -o k.csv   CSV (-o k.sqlite: a table named after the recipe)
  nsystrace stats torch_op_sum rank*.sqlite                 PyTorch ops (emit_nvtx, nsys --pytorch) per rank
  nsystrace stats job_summary rank*.sqlite --step 'train_step%' --collective allreduce
  nsystrace stats top_kernels rank*.sqlite --scheduler tcp://host:8786   on a Dask cluster"""


def add_arguments(p):
    p.add_argument("recipe", metavar="REPORT",
                   help=f"a recipe of sql/ or sql/nsys_stats/ by name, a .sql file, or {SUMMARY}")
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite exports (one per rank)")
    p.add_argument("-o", "--output", help="x.csv, or x.sqlite (a table named after the recipe; job_summary: three "
                                          "tables, or x.csv, x.steps.csv and x.waits.csv); default: a table on the "
                                          "terminal")
    p.add_argument("-j", "--jobs", type=int, help="reports at a time (default: the cores available)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster (tcp://host:8786; Debian's python3-distributed) instead of local "
                        "processes; its workers must see the reports at the same paths")
    p.add_argument("--step", default="step%",
                   help=f"{SUMMARY}: the NVTX ranges that are steps, a LIKE pattern (default: step%%)")
    p.add_argument("--collective", metavar="NAME",
                   help=f"{SUMMARY}: the NVTX ranges where the ranks meet in a step, a LIKE pattern (e.g. allreduce; "
                        "default: NCCL's kernels, else NCCL's NVTX ranges, where the reports have them)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="reports done / total on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")


def run(args):
    try:
        if args.recipe in (SUMMARY, SUMMARY + ".sql") and not os.path.isfile(args.recipe):
            tables = job_summary_tables(args.profiles, args.step, args.collective, args.jobs, args.scheduler,
                                        args.progress)
        else:
            if args.collective is not None:
                raise StatsError(f"--collective is an option of {SUMMARY}, not of the recipe {args.recipe!r}")
            columns, rows = run_recipe(args.recipe, args.profiles, args.jobs, args.scheduler, args.progress)
            tables = [(find_recipe(args.recipe)[0], columns, rows)]
        if tables[0][0] == SUMMARY + "_ranks" and any(r[7] == "step end" for r in tables[1][2]):
            missing = (f"no NVTX range like {args.collective!r}" if args.collective is not None
                       else "no NCCL kernel or NCCL NVTX range")
            print(f"nsystrace: job_summary: {missing} in some steps: their straggler is whose step ends last "
                  "(straggler_by 'step end'); name the ranges where the ranks meet with --collective", file=sys.stderr)
        for i, (table, columns, rows) in enumerate(tables):
            if args.output is None:
                print(("\n" if i else "") + f"{table} ({len(rows)} rows)\n" + format_table(columns, rows))
            else:
                output = args.output
                if i and output.lower().endswith(".csv"):  # the summary's other tables beside the first
                    output = output[:-4] + "." + table[len(SUMMARY + "_"):] + ".csv"
                write_table(columns, rows, output, table, args.profiles)
                print(f"nsystrace: wrote {len(rows)} rows of {table} to {output}")
    except (StatsError, FileNotFoundError, ValueError) as e:
        raise Failure(str(e)) from None
    except RuntimeError as e:  # the recipe failed on a report; the message names it
        raise ConversionFailed(str(e)) from None
    return 0
