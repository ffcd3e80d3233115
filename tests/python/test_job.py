"""A job of many reports as one archive that Perfetto merges (nsystrace.job), judged by Perfetto's own importer
(trace processor v58.2 in ../shared/tools/perfetto): 16 reports made from the real exports, their session starts
moved by known amounts (out of rank order), on two hosts, import as one trace with every event of every rank
(slices and stack samples), every kernel of every rank at its session start plus its time in the report, two
machines, and no error or data_loss stat. The same traces packed by hand (tarfile, no manifest) line up the same,
and one default trace alone reads wall-clock time (the session's with wall_clock 0). Then a report without a session
start placed at the job's time 0, the .zip form, and the single-trace merge's error past 11 reports.

  test_job.py SOURCE_DIR BUILD_DIR          (exit 77, said, when ../shared is absent)
"""
import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile

# Under a guard: the Dask workers' processes are spawned, and import this file as a module.
if __name__ == "__main__":
    src, build = sys.argv[1], sys.argv[2]
    shared = os.path.join(os.path.dirname(os.path.abspath(src)), "shared")
    fixtures = os.path.join(shared, "fixtures", "real")
    tools = os.path.join(shared, "tools", "perfetto")
    if not os.path.isdir(fixtures) or not os.access(os.path.join(tools, "trace-processor"), os.X_OK):
        print(f"SKIPPED: {fixtures} or {tools} is absent (the job test needs the real exports and Perfetto's importer)")
        sys.exit(77)

    from checks import check, failures  # tests/python/checks.py, beside this script
    # The kernels in Perfetto's tables: gpu_slice rows of Perfetto's GPU model (their kind in the "description"
    # arg), or slices of category 'kernel' (nsystrace_option('gpu_model', 'slices')).
    KERNEL_SLICES = ("select ts from slice where coalesce(category, extract_arg(arg_set_id, 'description')) = "
                     "'kernel'")


    tmp = tempfile.mkdtemp(prefix="nsystrace_job_test.")
    # The package as the source tree has it, with this build's extension beside it.
    package = os.path.join(tmp, "pkg", "nsystrace")
    os.makedirs(package)
    glue = os.path.join(src, "ext", "python", "nsystrace")
    for name in os.listdir(glue):
        os.symlink(os.path.join(glue, name), os.path.join(package, name))
    os.symlink(os.path.join(build, "nsystrace.so"), os.path.join(package, "nsystrace.so"))
    sys.path.insert(0, os.path.dirname(package))
    import nsystrace  # noqa: E402
    from nsystrace import job  # noqa: E402


    def query(trace, sql):
        """Perfetto's trace processor's rows for one query (CSV, a header first)."""
        done = subprocess.run([os.path.join(tools, "trace-processor"), "query", trace, sql], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"trace processor failed on {trace}: {done.stderr[-2000:]}")
        lines = done.stdout[done.stdout.index('"'):] if '"' in done.stdout else ""
        return list(csv.reader(io.StringIO(lines)))[1:]


    def import_stats(trace):
        done = subprocess.run([os.path.join(tools, "import-stats"), trace], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"import-stats failed on {trace}: {done.stderr}")
        return json.loads(done.stdout)


    BASE = 1_750_000_000_000_000_000  # rank k's session starts at BASE + SHIFT[k] ns
    SHIFT = [(k * 7) % 16 * 125_000_000 + k * 1_000 for k in range(16)]  # out of rank order, no two equal


    def make_report(source, path, start, host):
        """A copy of a real export recorded by a session that started at `start` on `host`."""
        shutil.copy(source, path)
        db = sqlite3.connect(path)
        with db:
            tables = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}
            if "TARGET_INFO_SESSION_START_TIME" not in tables:
                db.execute("create table TARGET_INFO_SESSION_START_TIME (utcEpochNs integer, utcTime text, localTime text)")
                db.execute("insert into TARGET_INFO_SESSION_START_TIME values (0, '', '')")
            db.execute("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = ?", (start,))
            if "TARGET_INFO_SYSTEM_ENV" not in tables:
                db.execute("create table TARGET_INFO_SYSTEM_ENV (globalVid integer, devStateName text, name text, "
                           "nameEnum integer, value text)")
            db.execute("delete from TARGET_INFO_SYSTEM_ENV where name = 'Hostname'")
            db.execute("insert into TARGET_INFO_SYSTEM_ENV values (0, '', 'Hostname', 0, ?)", (host,))
        db.close()

    def counter_kinds(source_dir):
        """The kinds src/model/export_model.def declares with the extent counter (GPU metrics, CUDA memory, ...)."""
        kinds = set()
        with open(os.path.join(source_dir, "src", "model", "export_model.def")) as f:
            for line in f:
                if line.startswith("KIND("):
                    fields = [x.strip() for x in line[len("KIND("):].split(",")]
                    if fields[2] == "counter":
                        kinds.add(fields[0])
        assert kinds, "no counter kind declared in export_model.def"
        return kinds

    def report_facts(path):
        """From the report alone (the extension on it): its events as the job converts them, by kind, and its kernels'
        times on its own clock."""
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        nsystrace.load(conn)
        counts = dict(conn.execute(f"select kind, count(*) from trace_events {job.DEFAULT_WHERE} group by kind"))
        # A CUDA graph traced per node: each replay is a slice of its own besides its nodes' rows, one per (process,
        # launch correlation id, stream) of the node work (docs/sql-reference.md).
        counts["graph replay slices"] = conn.execute(
            "select count(*) from (select distinct global_pid, correlation_id, stream_id from trace_events "
            "where kind in ('kernel', 'memcpy', 'memset') and args ->> '$.graph_node_id' is not null)").fetchone()[0]
        kernels = [r[0] for r in conn.execute("select ts from trace_events where kind = 'kernel'")]
        conn.close()
        return counts, kernels


    try:
        sources = sorted(f for f in os.listdir(fixtures) if f.endswith(".sqlite"))[:16]
        check("16 real exports to make the job from", len(sources) == 16, str(len(sources)))
        reports, expected_kernels, expected_slices, expected_samples = [], [], 0, 0
        first_kernels = {}
        for k, name in enumerate(sources):
            path = os.path.join(tmp, f"rank{k}.sqlite")
            make_report(os.path.join(fixtures, name), path, BASE + SHIFT[k], "node-a" if k < 8 else "node-b")
            reports.append(path)
            counts, kernels = report_facts(path)
            # Perfetto's slices: every event but the counter kinds' samples (counter values: which kinds, the model's
            # declaration says) and CPU samples (stack samples).
            expected_slices += sum(n for kind, n in counts.items()
                                   if kind not in counter_kinds(src) and kind != "cpu_sample")
            expected_samples += counts.get("cpu_sample", 0)
            expected_kernels += [BASE + SHIFT[k] + ts for ts in kernels]
            if kernels:
                first_kernels[k] = BASE + SHIFT[k] + min(kernels)

        archive = os.path.join(tmp, "job.tar")
        summary = job.convert_job(reports, archive, jobs=2, progress=False)
        check("the summary counts every report", summary["reports"] == 16)
        check("two machines, by host name", sorted(summary["machines"]) == ["node-a", "node-b"], summary["machines"])

        stats = import_stats(archive)
        check("Perfetto imports the archive without an error or data_loss stat", stats["stats"] == [], stats["stats"])
        check("every slice of every rank", stats["slices"] == expected_slices, f"{stats['slices']} != {expected_slices}")
        samples = int(query(archive, "select count(*) from stack_sample")[0][0]) if expected_samples else 0
        check("every CPU sample of every rank", samples == expected_samples, f"{samples} != {expected_samples}")
        machines = query(archive, "select name from machine order by name")
        check("the merged trace has two machines, named", machines == [["node-a"], ["node-b"]], machines)
        per_machine = query(archive, "select m.name, count(distinct p.upid) from process p join machine m "
                                     "on p.machine_id = m.id group by 1 order by 1")
        check("processes on both machines", len(per_machine) == 2 and all(int(n) > 0 for _, n in per_machine),
              per_machine)
        kernels = sorted(int(r[0]) for r in query(archive, KERNEL_SLICES))
        check("every kernel of every rank at its session start + its time", kernels == sorted(expected_kernels),
              f"{len(kernels)} kernels, {len(expected_kernels)} expected")
        placed = set(kernels)
        check("each rank's first kernel at its expected offset from the others",
              len(first_kernels) >= 12 and all(ts in placed for ts in first_kernels.values()),
              {k: ts for k, ts in first_kernels.items() if ts not in placed})

        # Default traces packed by hand (Python's tarfile, no manifest), the latest-started rank first: Perfetto puts
        # them all on one machine, whose BOOTTIME reads wall-clock time in each; they line up in wall-clock time.
        # The archive's traces are the ones a conversion with the default options writes (checked on one rank).
        alone = os.path.join(tmp, "alone.pftrace")
        conn = sqlite3.connect(f"file:{reports[1]}?mode=ro", uri=True)
        nsystrace.load(conn)
        conn.execute("select nsystrace_option('progress', 0)")
        conn.execute(f"select perfetto_trace_file(?) from trace_events {job.DEFAULT_WHERE}", (alone,)).fetchall()
        session_kernels = [r[0] for r in conn.execute("select ts from trace_events where kind = 'kernel'")]
        conn.close()
        by_hand = os.path.join(tmp, "by_hand.tar")
        members = job.member_names(reports)
        order = sorted(range(len(reports)), key=lambda k: -SHIFT[k])  # the latest session start first
        with tarfile.open(archive) as packed, tarfile.open(by_hand, "w") as out:
            with open(alone, "rb") as f:
                check("the archive's trace of a rank is its default conversion's",
                      packed.extractfile(members[1]).read() == f.read())
            for k in order:
                data = packed.extractfile(members[k]).read()
                info = tarfile.TarInfo(f"r{k}.pftrace")
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
        stats = import_stats(by_hand)
        check("traces packed by hand import without an error or data_loss stat", stats["stats"] == [], stats["stats"])
        check("every slice of every rank packed by hand", stats["slices"] == expected_slices,
              f"{stats['slices']} != {expected_slices}")
        kernels = sorted(int(r[0]) for r in query(by_hand, KERNEL_SLICES))
        check("packed by hand: every kernel of every rank at its session start + its time", kernels == sorted(expected_kernels),
              f"{len(kernels)} kernels, {len(expected_kernels)} expected")
        placed = set(kernels)
        check("packed by hand: each rank's first kernel at its offset from the others",
              all(ts in placed for ts in first_kernels.values()),
              {k: ts for k, ts in first_kernels.items() if ts not in placed})
        # Flow arrows stay within their rank: Perfetto links equal flow ids across the traces of one machine, so
        # each trace's ids are its own. The truth: the same traces, each on a machine of its own.
        apart = os.path.join(tmp, "apart.tar")
        with tarfile.open(archive) as packed, tarfile.open(apart, "w") as out:
            files = []
            for k, member in enumerate(members):
                data = packed.extractfile(member).read()
                info = tarfile.TarInfo(member)
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
                files.append({"path": member, "machine": {"name": f"rank {k}"}})
            text = json.dumps({"perfetto_manifest": {"version": 1, "trace_time": {"clock": "REALTIME"},
                                                     "files": files}}).encode()
            info = tarfile.TarInfo(job.MANIFEST_NAME)
            info.size = len(text)
            out.addfile(info, io.BytesIO(text))
        flows = {name: int(query(trace, "select count(*) from flow")[0][0])
                 for name, trace in (("apart", apart), ("archive", archive), ("by hand", by_hand))}
        check("flow arrows: as many in the archive and packed by hand as with every rank on a machine of its own",
              flows["apart"] > 1000 and flows["archive"] == flows["apart"] == flows["by hand"], flows)
        # One default trace alone: no error stat, its kernels at the session start + trace_events.ts (wall-clock
        # time); with nsystrace_option('wall_clock', 0), at trace_events.ts.
        stats = import_stats(alone)
        check("a single default trace imports without an error or data_loss stat", stats["stats"] == [], stats["stats"])
        kernels = sorted(int(r[0]) for r in query(alone, KERNEL_SLICES))
        check("a single default trace: its kernels at the session start + their time",
              kernels == sorted(BASE + SHIFT[1] + ts for ts in session_kernels) and kernels, kernels[:3])
        conn = sqlite3.connect(f"file:{reports[1]}?mode=ro", uri=True)
        nsystrace.load(conn)
        conn.execute("select nsystrace_option('progress', 0)")
        conn.execute("select nsystrace_option('wall_clock', 0)")
        conn.execute(f"select perfetto_trace_file(?) from trace_events {job.DEFAULT_WHERE}", (alone,)).fetchall()
        conn.close()
        kernels = sorted(int(r[0]) for r in query(alone, KERNEL_SLICES))
        check("wall_clock 0: its kernels at their time since the session start", kernels == sorted(session_kernels),
              kernels[:3])

        # A report without a session start (exports before 2021): a machine of its own, its time 0 at the job's.
        legacy = os.path.join(tmp, "legacy.sqlite")
        shutil.copy(os.path.join(fixtures, "rtx8000_2020_workflow_nvtx_1k_kernels.sqlite"), legacy)
        _, legacy_kernels = report_facts(legacy)
        mixed = os.path.join(tmp, "mixed.zip")
        job.convert_job([reports[3], legacy], mixed, jobs=1, progress=False)
        stats = import_stats(mixed)
        check("a report without a session start imports cleanly (.zip)", stats["stats"] == [], stats["stats"])
        kernels = sorted(int(r[0]) for r in query(mixed, KERNEL_SLICES))
        _, rank3_kernels = report_facts(reports[3])
        expected = sorted([BASE + SHIFT[3] + ts for ts in rank3_kernels] + [BASE + SHIFT[3] + ts for ts in legacy_kernels])
        check("it is placed at the job's time 0 (the earliest session start)", kernels == expected,
              f"{kernels[:3]} vs {expected[:3]}")

        # A file that is no export: an error naming it, no archive and no scratch left behind.
        not_export = os.path.join(tmp, "notes.sqlite")
        sqlite3.connect(not_export).execute("create table notes (x)").connection.close()
        bad = os.path.join(tmp, "bad.tar")
        try:
            job.convert_job([reports[0], not_export], bad, jobs=2, progress=False)
            check("a file that is no export is an error", False)
        except RuntimeError as e:
            check("a file that is no export: an error naming it", "notes.sqlite" in str(e), str(e))
        check("no archive and no scratch directory left", not os.path.exists(bad) and
              not [f for f in os.listdir(tmp) if f.startswith(".nsystrace-job-")], os.listdir(tmp))

        # The single-trace merge past 11 reports names the archive form.
        done = subprocess.run([sys.executable, "-m", "nsystrace", *reports[:12], "-o", os.path.join(tmp, "all.pftrace")],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.dirname(package)})
        check("12 reports in one trace: an error naming the archive form",
              done.returncode != 0 and "-o job.tar" in done.stderr, done.stderr)

        # ---- recipes fanned out over the reports ----
        from nsystrace import stats  # noqa: E402
        few = reports[:5]
        pool = stats.run_recipe("cuda_gpu_kern_sum", few, jobs=2)
        serial = stats.run_recipe("cuda_gpu_kern_sum", few, jobs=1)
        check("a recipe over 5 reports: the process pool's rows are the serial ones", pool == serial)
        check("each row leads with its report and its rank (rank<k>.sqlite)", pool[0][:2] == ["report", "rank"] and
              all(r[0] == f"rank{r[1]}.sqlite" for r in pool[1]), pool[0])
        for k, path in enumerate(few):  # each report's rows are the recipe's on that report alone
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            nsystrace.load(conn)
            alone = [tuple(r) for r in conn.execute(stats.find_recipe("cuda_gpu_kern_sum")[1])]
            conn.close()
            check(f"rank{k}'s rows are the recipe's on it alone", [r[2:] for r in pool[1] if r[1] == k] == alone)
        # torch_op_sum by name over the four rank exports and the PyTorch one: its rows come from the PyTorch export
        # alone (the ranks' NVTX ranges, step N / forward / allreduce, carry none of PyTorch's fields), as there.
        torch_reports = sorted(os.path.join(fixtures, f) for f in os.listdir(fixtures) if f.startswith("h200_job4_rank"))
        torch_reports.append(os.path.join(fixtures, "h200_torch_train_emit_nvtx.sqlite"))
        columns, rows = stats.run_recipe("torch_op_sum", torch_reports, jobs=2)
        conn = sqlite3.connect(f"file:{torch_reports[-1]}?mode=ro", uri=True)
        nsystrace.load(conn)
        alone = [tuple(r) for r in conn.execute(stats.find_recipe("torch_op_sum")[1])]
        conn.close()
        check("torch_op_sum over 5 reports: 4 ranks with no PyTorch op, the PyTorch export's rows as alone",
              len(torch_reports) == 5 and columns[:2] == ["report", "rank"] and len(alone) > 100 and
              [r[2:] for r in rows] == alone and {r[0] for r in rows} == {"h200_torch_train_emit_nvtx.sqlite"},
              f"{len(torch_reports)} reports, {len(rows)} rows, {len(alone)} alone")
        os.environ["PYTHONPATH"] = os.path.dirname(package)  # for the Dask workers' processes
        try:
            from distributed import LocalCluster
        except ImportError:
            check("Dask is installed (Debian: python3-distributed)", False)
        else:
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
                dask = stats.run_recipe("cuda_gpu_kern_sum", few, scheduler=cluster.scheduler_address)
                on_dask = os.path.join(tmp, "dask.tar")
                job.convert_job(few, on_dask, scheduler=cluster.scheduler_address, progress=False)
            check("on a Dask LocalCluster: the same rows as the process pool", dask == pool)
            with tarfile.open(on_dask) as a, tarfile.open(archive) as b:
                same = all(a.extractfile(m).read() == b.extractfile(m).read() for m in job.member_names(few))
            check("an archive made on Dask holds the traces the process pool made", same)

        # The job summary on three copies of the example profile, started 0, 3 and 1 ms apart: each NVTX step's
        # straggler is the one started 3 ms after the first, by 3 ms; GPU busy and NCCL time as the raw tables say.
        example = []
        for k, shift in enumerate([0, 3_000_000, 1_000_000]):
            path = os.path.join(tmp, f"ex_rank{k}.sqlite")
            conn = sqlite3.connect(path)
            with open(os.path.join(src, "examples", "example_profile.sql")) as f:
                conn.executescript(f.read())
            with conn:
                conn.execute("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + ?", (shift,))
            conn.close()
            example.append(path)
        (rank_columns, ranks), (step_columns, steps) = stats.job_summary(example, step="forward", jobs=2)
        check("a step row per occurrence of the step", len(steps) == 40 and all(r[2] == 3 for r in steps), len(steps))
        check("the straggler of every step is the rank that started 3 ms later, by 3 ms",
              all(r[3] == "ex_rank1.sqlite" and r[4] == 1 and r[6] == 3_000_000 for r in steps), steps[:2])

        def union(intervals):
            total, end = 0, None
            for s, e in sorted(intervals):
                if end is None or s > end:
                    total, end = total + e - s, e
                elif e > end:
                    total, end = total + e - end, e
            return total

        raw = sqlite3.connect(f"file:{example[0]}?mode=ro", uri=True)
        work = {}
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            for d, s, e in raw.execute(f"select deviceId, start, end from {table}"):
                work.setdefault(d, []).append((s, e))
        nccl = {}
        for d, s, e in raw.execute("select k.deviceId, k.start, k.end from CUPTI_ACTIVITY_KIND_KERNEL k "
                                   "join StringIds n on n.id = k.shortName where n.value like 'nccl%'"):
            nccl.setdefault(d, []).append((s, e))
        raw.close()
        busy = sum(union(v) for v in work.values())
        idle = sum(max(e for _, e in v) - min(s for s, _ in v) for v in work.values()) - busy
        row = dict(zip(rank_columns, ranks[0]))
        check("GPU busy time is the union of each GPU's kernels, memcpys and memsets (raw tables)",
              row["gpu_busy_ns"] == busy, f"{row['gpu_busy_ns']} != {busy}")
        check("NCCL time is the union of each GPU's nccl kernels (raw tables)",
              row["nccl_ns"] == sum(union(v) for v in nccl.values()) > 0, row)
        check("idle time is each GPU's span without its busy time", row["idle_ns"] == idle, f"{row['idle_ns']} != {idle}")

        # Its `step N` ranges launch NCCL kernels: without --collective, each step's collective is its first NCCL
        # kernel (by the start of the CUDA call that launched it, inside the step, in the step's process); the
        # arrival is the kernel's start. The truth from the raw tables of one copy, placed at each copy's start.
        raw = sqlite3.connect(f"file:{example[0]}?mode=ro", uri=True)
        firsts = raw.execute("""
            with steps as (select coalesce(n.text, s.value) as name, n.start, n."end" as stop,
                                  n.globalTid / 16777216 as pid,
                                  row_number() over (partition by coalesce(n.text, s.value)
                                                     order by n.start, n."end") as occurrence
                           from NVTX_EVENTS n left join StringIds s on s.id = n.textId
                           where coalesce(n.text, s.value) like 'step%' and n."end" > n.start),
            nccl as (select r.start as launched, k.start, k."end" as stop, k.globalPid / 16777216 as pid
                     from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.shortName
                     join CUPTI_ACTIVITY_KIND_RUNTIME r on r.correlationId = k.correlationId
                                                       and r.globalTid / 16777216 = k.globalPid / 16777216
                     where s.value like 'nccl%'),
            picked as (select st.name, st.occurrence, c.start, c.stop,
                              row_number() over (partition by st.name, st.occurrence order by c.launched, c.start) as pick
                       from steps st join nccl c on c.pid = st.pid and c.launched between st.start and st.stop)
            select name, occurrence, start, stop - start from picked where pick = 1""").fetchall()
        origin = raw.execute("select utcEpochNs from TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        raw.close()
        shifts = [0, 3_000_000, 1_000_000]
        want = {}
        for name, n, start, dur in firsts:
            arrivals = [origin + shift + start for shift in shifts]
            want[(name, n)] = [max(0, min(max(arrivals), a + dur) - a) for a in arrivals]
        tables = stats.job_summary_tables(example, jobs=2)
        nccl_steps = [dict(zip(tables[1][1], r)) for r in tables[1][2]]
        nccl_waits = [dict(zip(tables[2][1], r)) for r in tables[2][2]]
        check("NCCL kernels as the collective: the rank started 3 ms later arrives last, by 3 ms, at every step",
              len(firsts) > 10 and len(nccl_steps) == len(firsts) and all(
                  s["straggler_by"] == "collective" and s["collective"].startswith("nccl")
                  and s["straggler_report"] == "ex_rank1.sqlite" and s["lateness_ns"] == 3_000_000
                  and s["first_arrival_utc_ns"] == origin + dict(((f[0], f[1]), f[2]) for f in firsts)[
                      (s["step"], s["occurrence"])] for s in nccl_steps), nccl_steps[:1])
        check("each rank's wait in the NCCL kernel as the raw tables say (clipped to the kernel)",
              len(nccl_waits) == 3 * len(firsts) and all(
                  w["wait_ns"] == want[(w["step"], w["occurrence"])][int(w["report"][7])] for w in nccl_waits),
              nccl_waits[:3])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)
