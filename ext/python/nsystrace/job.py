"""A job of any size on one timeline: each report (one per rank) converted on its own, in parallel, into a Perfetto
trace, and the traces packed in one archive (.tar or .zip) with a `perfetto_manifest` that Perfetto's trace
processor and ui.perfetto.dev (v58 and later) read to merge them onto one timeline, each on its machine.

    nsystrace rank*.sqlite -o job.tar            (-j N: N conversions at a time; default the cores available)
    nsystrace.job.convert_job(["rank0.sqlite", ...], "job.tar")

How the ranks line up (docs/job.md): every trace carries a clock snapshot relating its clock to REALTIME (the
export's session start, TARGET_INFO_SESSION_START_TIME.utcEpochNs), and its BOOTTIME reads wall-clock time, so the
traces of one machine agree on it; the manifest names each file's machine after the export's host name
(TARGET_INFO_SYSTEM_ENV `Hostname`: ranks of one host share a machine) and makes REALTIME the merged trace's clock.
A report without a session start gets a machine of its own, placed at the job's time 0 (the earliest session start)
by a clock entry of the manifest. The traces are the ones a single conversion writes, with its default options.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import time
import zipfile

import nsystrace
from nsystrace import connection, fanout
from nsystrace.errors import ConversionFailed, Failure

ARCHIVE_SUFFIXES = (".tar", ".zip")
MANIFEST_NAME = "perfetto_manifest.json"
DEFAULT_WHERE = "where derived in (0, 1)"  # every event and the NVTX ranges projected on the GPUs


def is_archive(path):
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def member_names(paths):
    """The traces' names in the archive: each report's file name with .pftrace, made unique (rank0.sqlite of two
    directories) by the directory's name, then by a number."""
    names, taken = [], set()
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        name = stem + ".pftrace"
        if name in taken:
            name = f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}_{stem}.pftrace"
        n = 2
        base = name[:-len(".pftrace")]
        while name in taken:
            name, n = f"{base}_{n}.pftrace", n + 1
        taken.add(name)
        names.append(name)
    return names


def manifest(infos, members):
    """The perfetto_manifest (docs/reference/perfetto-manifest.md in Perfetto) for the reports `infos`
    (fanout.report_info) packed as `members`."""
    placed = [(i, m) for i, m in zip(infos, members) if i["session_start_utc_ns"] is not None]
    origin = min((i["session_start_utc_ns"] for i, _ in placed), default=None)
    files = []
    for info, member in zip(infos, members):
        stem = member[:-len(".pftrace")]
        entry = {"path": member}
        if info["session_start_utc_ns"] is not None:
            # One machine per host: its BOOTTIME reads wall-clock time in each of its traces, so they agree.
            entry["machine"] = {"name": info["host"] or stem}
        else:
            # No session start: its clock is its own (a machine of its own), its time 0 put at the job's.
            entry["machine"] = {"name": f"{info['host'] or stem} ({member}, no session start)"}
            if placed:
                entry["clocks"] = {"clock": "BOOTTIME", "sync_to": {"file": placed[0][1], "clock": "REALTIME"},
                                   "offset_ns": origin}
        files.append(entry)
    body = {"version": 1}
    if placed:
        body["trace_time"] = {"clock": "REALTIME"}
    body["files"] = files
    return {"perfetto_manifest": body}


class PlainTar:
    """A plain TAR (POSIX pax headers, as tarfile writes them) written member by member, each trace's bytes copied
    file to file by the kernel (copy_file_range) instead of through Python's buffers: packing then costs the main
    process almost nothing beside the conversions (tests/bench/RESULTS.md)."""

    def __init__(self, path):
        self.out = open(path, "wb")

    def _header(self, name, size):
        info = tarfile.TarInfo(name)
        info.size, info.mtime = size, int(time.time())
        self.out.write(info.tobuf(tarfile.PAX_FORMAT))

    def _pad(self, size):
        self.out.write(b"\0" * (-size % tarfile.BLOCKSIZE))

    def add_bytes(self, name, data):
        self._header(name, len(data))
        self.out.write(data)
        self._pad(len(data))

    def add_file(self, path, name):
        with open(path, "rb") as src:
            size = os.fstat(src.fileno()).st_size
            self._header(name, size)
            self.out.flush()
            copied = 0
            try:
                while copied < size:
                    n = os.copy_file_range(src.fileno(), self.out.fileno(), size - copied)
                    if n == 0:
                        break
                    copied += n
            except OSError:  # a filesystem or kernel without it: through Python, from where it stopped
                src.seek(copied)
                self.out.seek(0, os.SEEK_END)
                shutil.copyfileobj(src, self.out, 1 << 20)
                copied = size
            if copied != size:
                raise OSError(f"{path}: {copied} of its {size} bytes copied into the archive")
            self.out.seek(0, os.SEEK_END)
        self._pad(size)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:  # the end of the archive: two zero blocks, the whole padded to tarfile's record size
                self.out.write(b"\0" * (2 * tarfile.BLOCKSIZE))
                self._pad_to_record()
        finally:
            self.out.close()

    def _pad_to_record(self):
        self.out.write(b"\0" * (-self.out.tell() % tarfile.RECORDSIZE))


def _shell_convert(path, out, where, threads):
    """The conversion through the sqlite3 shell, for a Python that cannot load extensions."""
    script = (f".load {nsystrace.loadable_path()}\n.output /dev/null\n"
              f"select nsystrace_option('progress', 0);\n"
              f"select nsystrace_option('threads', {int(threads)});\n"
              f"select perfetto_trace_file('{out.replace(chr(39), chr(39) * 2)}') from trace_events {where};\n"
              f".output stdout\nselect nsystrace_last_trace_file();\n")
    done = subprocess.run(["sqlite3", "-bail", connection.read_only_uri(path)], input=script, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(f"{path}: {done.stderr.strip()}")
    return done.stdout.strip()


def convert_report(task):
    """One report into one Perfetto trace (a worker's task): (path, out, where, threads) -> the extension's record
    of the file written (events, event_counts, bytes, ...)."""
    path, out, where, threads = task
    try:
        try:
            conn = fanout.open_report(path)
        except nsystrace.ExtensionLoadingUnsupported:
            if shutil.which("sqlite3") is None:
                raise
            record = _shell_convert(path, out, where, threads)
        else:
            try:
                conn.execute("select nsystrace_option('progress', 0)")
                conn.execute("select nsystrace_option('threads', ?)", (int(threads),))
                conn.execute(f"select perfetto_trace_file(?) from trace_events {where}", (out,)).fetchall()
                record = conn.execute("select nsystrace_last_trace_file()").fetchone()[0]
            finally:
                conn.close()
    except (sqlite3.Error, OSError) as e:
        raise fanout.report_error(path, e) from None
    if not record:
        raise RuntimeError(f"{path}: the extension kept no record of the trace it wrote")
    return json.loads(record)


def convert_job(profiles, output, jobs=None, where=DEFAULT_WHERE, progress=None, scheduler=None):
    """Converts every report of `profiles` on its own (jobs at a time, or on a Dask scheduler) and packs the traces
    with their manifest into `output` (.tar or .zip), written whole or not at all. Returns a summary: reports,
    events, event_counts (summed), machines (host -> members), bytes."""
    if not is_archive(output):
        raise ValueError(f"{output}: an archive is a .tar or a .zip")
    profiles = list(profiles)
    if not profiles:
        raise ValueError("no report to convert")
    out = os.path.abspath(output)
    for p in profiles:
        if os.path.exists(out) and os.path.samefile(out, p):
            raise ValueError(f"{output} is one of the profiles; it is never written over")
    infos = [fanout.report_info(p) for p in profiles]
    members = member_names(profiles)
    jobs = fanout.cores() if jobs is None else max(1, int(jobs))
    # Cores left to each conversion's own threads (writer, readers): all of them when there is one at a time.
    threads = max(1, fanout.cores() // min(jobs, len(profiles)))
    meter = fanout.Progress(os.path.basename(output), len(profiles), enabled=progress)
    scratch = tempfile.mkdtemp(prefix=".nsystrace-job-", dir=os.path.dirname(out))
    partial = os.path.join(scratch, "archive" + os.path.splitext(out)[1])
    counts = {}
    packing = manifest(infos, members)
    try:
        text = json.dumps(packing, indent=1).encode()
        if out.lower().endswith(".zip"):
            # Stored, not deflated: a Perfetto trace is compact already, and each member stays readable in place.
            archive = zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True)
            add_bytes = lambda name, data: archive.writestr(name, data)
            add_file = lambda path, name: archive.write(path, name)
        else:
            archive = PlainTar(partial)
            add_bytes, add_file = archive.add_bytes, archive.add_file
        with archive:
            add_bytes(MANIFEST_NAME, text)

            # Each trace joins the archive as soon as it is written, and leaves the scratch directory.
            def packed(i, record):
                member = os.path.join(scratch, members[i])
                add_file(member, members[i])
                os.remove(member)
                for k, n in record.get("event_counts", {}).items():
                    counts[k] = counts.get(k, 0) + n
                meter.step(record.get("events", 0))

            tasks = [(os.path.abspath(p), os.path.join(scratch, m), where, threads) for p, m in zip(profiles, members)]
            fanout.run_tasks(convert_report, tasks, jobs=jobs, scheduler=scheduler, on_result=packed)
        os.replace(partial, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    machines = {}
    for entry in packing["perfetto_manifest"]["files"]:
        machines.setdefault(entry["machine"]["name"], []).append(entry["path"])
    return {"output": out, "reports": len(profiles), "events": sum(counts.values()), "event_counts": counts,
            "machines": machines, "bytes": os.path.getsize(out), "seconds": meter.elapsed()}


def write(args):
    """`nsystrace REPORTS... -o job.tar [-j N] [--scheduler ADDRESS]` (cli.OUTPUTS_OF_THEIR_OWN): the archive, with
    the conversion's options applied to each report, and a summary on stdout; returns the exit status."""
    if any(p.lower().endswith(".nsys-rep") for p in args.profiles):
        raise Failure("an archive is made from .sqlite exports: export each .nsys-rep first (nsys export --type "
                      "sqlite)")
    if args.open:
        raise Failure("--open opens one trace; open the archive by dropping it on https://ui.perfetto.dev")
    from nsystrace import conversion
    where = conversion.where_clause(conversion.Options.of(args), ["main"])
    try:
        summary = convert_job(args.profiles, args.output, jobs=args.jobs, where=where, progress=args.progress,
                              scheduler=args.scheduler)
    except (ValueError, FileNotFoundError) as e:
        raise Failure(str(e)) from None
    except RuntimeError as e:  # a report's conversion failed; the message names it
        raise ConversionFailed(str(e)) from None
    size = summary["bytes"]
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(summary["event_counts"].items())) or "no events"
    print(f"nsystrace: wrote {args.output} ({shown}: {summary['reports']} Perfetto traces and their manifest) in "
          f"{summary['seconds']:.1f} s")
    print(f"  events: {summary['events']} ({kinds})")
    print("  machines: " + "; ".join(f"{m} ({len(files)} reports)" for m, files in summary["machines"].items()))
    print("  open it in https://ui.perfetto.dev or with trace_processor: one timeline, every rank on its machine")
    return 0
