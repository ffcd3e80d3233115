"""One task per report, in parallel: what a job of many reports (one per rank) needs from each of them.

The reports stay where they are; each worker opens one read-only, with the extension loaded, and sends back only
its result. Workers are local processes (`jobs` of them, default: the cores this process may use), or the workers
of a Dask cluster when a scheduler address is given (`tcp://host:8786`; Dask is imported only then), as NVIDIA's
own recipe system fans out. A task is a module-level function, so either kind of worker can import it.
"""
import concurrent.futures
import os
import re
import sqlite3
import sys
import time

import nsystrace
from nsystrace import connection

# Where an export says its rank: launchers' variables in TARGET_INFO_SYSTEM_ENV's DeviceEnvironment (the
# environment nsys ran in), first match wins; else the file name (rank3.sqlite, report_rank_3.sqlite).
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK")
RANK_IN_NAME = re.compile(r"rank[_.-]?(\d+)", re.IGNORECASE)


def cores():
    """The cores this process may run on (CPU affinity: taskset and container limits count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def open_report(path, extension=True):
    """The report opened read-only (never written), with the extension loaded unless asked not to."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    conn = sqlite3.connect(connection.read_only_uri(path), uri=True)
    if extension:
        nsystrace.load(conn)
    return conn


def report_info(path):
    """What a job needs to know of a report before converting it: its session start (UTC ns, or None: exports
    before 2021 have none), its host name (None when the export does not say) and its rank (None when neither the
    export nor the file name says). Plain SQL: no extension needed."""
    try:
        return _report_info(path)
    except sqlite3.Error as e:
        raise report_error(path, e) from None


def _report_info(path):
    conn = open_report(path, extension=False)
    try:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        start = host = rank = None
        if "TARGET_INFO_SESSION_START_TIME" in tables:
            row = conn.execute("select utcEpochNs from TARGET_INFO_SESSION_START_TIME").fetchone()
            start = row[0] if row and isinstance(row[0], int) else None
        if "TARGET_INFO_SYSTEM_ENV" in tables:
            env = dict(conn.execute("select name, value from TARGET_INFO_SYSTEM_ENV "
                                    "where name in ('Hostname', 'DeviceEnvironment')").fetchall())
            host = env.get("Hostname") or None
            device_env = env.get("DeviceEnvironment") or ""
            for name in RANK_VARIABLES:
                m = re.search(r"(?:^|;)" + name + r"=(\d+)(?:;|$)", device_env)
                if m:
                    rank = int(m.group(1))
                    break
    finally:
        conn.close()
    if rank is None:
        m = RANK_IN_NAME.search(os.path.basename(path))
        rank = int(m.group(1)) if m else None
    return {"path": path, "session_start_utc_ns": start, "host": host, "rank": rank}


def report_error(path, error):
    """An error about one report, as one line that names it once."""
    message = str(error)
    if message.startswith("nsystrace: "):
        message = message[len("nsystrace: "):]
    return RuntimeError(message if path in message or os.path.basename(path) in message else f"{path}: {message}")


class Progress:
    """One line for the job on stderr: reports done / total, events, the time left (rewritten in place on a
    terminal, a line every few seconds otherwise)."""

    def __init__(self, what, total, enabled=None, stream=None, unit="events"):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.what, self.total, self.done, self.events, self.unit = what, total, 0, 0, unit
        self.started = self.shown = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.started

    def line(self):
        elapsed = self.elapsed()
        left = elapsed / self.done * (self.total - self.done) if self.done else None
        eta = "" if left is None or self.done == self.total else f", about {left:.0f} s left"
        return (f"nsystrace: {self.what}: {self.done}/{self.total} reports, {self.events} {self.unit}, "
                f"{elapsed:.0f} s{eta}")

    def step(self, events=0):
        self.done += 1
        self.events += events
        if not self.enabled:
            return
        now = time.monotonic()
        tty = self.stream.isatty()
        if tty or now - self.shown >= 5 or self.done == self.total:
            self.shown = now
            self.stream.write(("\r" if tty else "") + self.line() + ("" if tty and self.done < self.total else "\n"))
            self.stream.flush()


def run_tasks(task, items, jobs=None, scheduler=None, on_result=None):
    """task(item) for every item, in parallel; the results in the items' order. jobs: local worker processes
    (default: the cores available; 1 runs them here, one after the other). scheduler: a Dask scheduler address
    (or a distributed.Client) to run them on instead. on_result(index, result): called here as each one comes."""
    items = list(items)
    results = [None] * len(items)

    def got(i, result):
        results[i] = result
        if on_result:
            on_result(i, result)

    if scheduler is not None:
        from distributed import Client, as_completed  # Debian: python3-distributed
        client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        try:
            futures = client.map(task, items, pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for f in as_completed(futures):
                got(index[f.key], f.result())
        finally:
            if client is not scheduler:
                client.close()
        return results
    jobs = cores() if jobs is None else jobs
    if jobs <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            got(i, task(item))
        return results
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        futures = {pool.submit(task, item): i for i, item in enumerate(items)}
        try:
            for f in concurrent.futures.as_completed(futures):
                got(futures[f], f.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return results
