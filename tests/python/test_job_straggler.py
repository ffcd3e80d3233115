"""A real job of four ranks (../shared/fixtures/real/h200_job4_rank0..3.sqlite: rank.py, gloo all-reduce each step,
rank 3 does twice the forward work): job_summary's straggler, lateness, waits and per-rank compute / wait time against
one plain-SQL query over the four exports' NVTX_EVENTS and session starts (no extension); the archive of the four
(`nsystrace rank*.sqlite -o job.tar`) in Perfetto's trace processor with each rank at its wall-clock start; and
`nsystrace stats` fanned out over them from the command line.

  test_job_straggler.py SOURCE_DIR BUILD_DIR     (exit 77, said, when ../shared is absent)
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

if __name__ == "__main__":
    src, build = sys.argv[1], sys.argv[2]
    shared = os.path.join(os.path.dirname(os.path.abspath(src)), "shared")
    fixtures = os.path.join(shared, "fixtures", "real")
    tools = os.path.join(shared, "tools", "perfetto")
    ranks = [os.path.join(fixtures, f"h200_job4_rank{k}.sqlite") for k in range(4)]
    if not all(os.path.isfile(p) for p in ranks) or not os.access(os.path.join(tools, "trace-processor"), os.X_OK):
        print(f"SKIPPED: the four h200_job4_rank*.sqlite of {fixtures} or {tools} are absent (the straggler test "
              "needs the real job and Perfetto's importer)")
        sys.exit(77)

    from checks import check, failures  # tests/python/checks.py, beside this script

    tmp = tempfile.mkdtemp(prefix="nsystrace_straggler_test.")
    # The package as the source tree has it, with this build's extension beside it.
    package = os.path.join(tmp, "pkg", "nsystrace")
    os.makedirs(package)
    glue = os.path.join(src, "ext", "python", "nsystrace")
    for name in os.listdir(glue):
        os.symlink(os.path.join(glue, name), os.path.join(package, name))
    os.symlink(os.path.join(build, "nsystrace.so"), os.path.join(package, "nsystrace.so"))
    sys.path.insert(0, os.path.dirname(package))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(package)}
    from nsystrace import stats  # noqa: E402

    def raw_facts():
        """The truth, from the exports' own tables: one plain-SQL query over the four attached (no extension).
        A step: an NVTX range named like 'step%', numbered per name in start order; its collective: the first
        'allreduce' range of its process that starts inside it; arrival: session start + the collective's start;
        wait: from the arrival to the step's last arrival, within the rank's collective."""
        db = sqlite3.connect(":memory:")
        for k, path in enumerate(ranks):
            db.execute(f"attach database ? as r{k}", (f"file:{path}?mode=ro",))
        events = " union all ".join(
            f"select {k} as k, (select utcEpochNs from r{k}.TARGET_INFO_SESSION_START_TIME) as origin, "
            f"coalesce(n.text, s.value) as name, n.start, n.\"end\" as stop, n.globalTid / 16777216 as pid "
            f"from r{k}.NVTX_EVENTS n left join r{k}.StringIds s on s.id = n.textId "
            f"where n.eventType in (59, 60) and n.\"end\" is not null" for k in range(4))
        db.execute(f"create temp table ev as {events}")
        db.executescript("""
        create temp table steps as
          select k, origin, name, start, stop, pid,
                 row_number() over (partition by k, name order by start, stop) as n
          from ev where name like 'step%' and stop > start;
        create temp table arrivals as
          select * from (
            select st.k, st.name as step, st.n, st.origin + c.start as arrival, c.stop - c.start as coll_dur,
                   row_number() over (partition by st.k, st.name, st.n order by c.start, c.stop) as pick
            from steps st join ev c on c.k = st.k and c.pid = st.pid and c.name = 'allreduce'
                                   and c.start between st.start and st.stop)
          where pick = 1;
        create temp table waits as
          select a.*, max(0, min(b.last, a.arrival + a.coll_dur) - a.arrival) as wait, b.first, b.last
          from arrivals a join (select step, n, min(arrival) as first, max(arrival) as last
                                from arrivals group by step, n) b on b.step = a.step and b.n = a.n;
        """)
        per_step = {(step, n): (first, last, [k for (k,) in db.execute(
                        "select k from waits where step = ? and n = ? and arrival = last", (step, n))])
                    for step, n, first, last in db.execute("select distinct step, n, first, last from waits")}
        per_wait = {(step, n, k): (arrival, arrival - first, coll_dur, wait)
                    for step, n, k, arrival, first, coll_dur, wait
                    in db.execute("select step, n, k, arrival, first, coll_dur, wait from waits")}
        last_end = {(name, n): (max_end, [k for (k,) in db.execute(
                        "select k from steps where name = ? and n = ? and origin + stop = ?", (name, n, max_end))],
                                max_end - min_end)
                    for name, n, max_end, min_end in db.execute(
                        "select name, n, max(origin + stop), min(origin + stop) from steps group by name, n")}
        step_ns = dict(db.execute("select k, sum(stop - start) from steps group by k"))
        wait_ns = dict(db.execute("select k, sum(wait) from waits group by k"))
        db.close()
        return per_step, per_wait, last_end, step_ns, wait_ns

    try:
        per_step, per_wait, last_end, step_ns, wait_ns = raw_facts()
        check("the raw tables: 15 steps, an allreduce of each of the 4 ranks in each",
              len(per_step) == 15 and len(per_wait) == 60, (len(per_step), len(per_wait)))

        tables = stats.job_summary_tables(ranks, step="step%", collective="allreduce", jobs=2)
        (_, rank_cols, rank_rows), (_, step_cols, step_rows), (_, wait_cols, wait_rows) = tables
        steps = [dict(zip(step_cols, r)) for r in step_rows]
        waits = [dict(zip(wait_cols, r)) for r in wait_rows]
        by_rank = {r["rank"]: r for r in (dict(zip(rank_cols, r)) for r in rank_rows)}

        # What the workload says: rank 3 does twice the work, so it arrives last at every step's allreduce.
        check("15 steps, in time order", [s["step"] for s in steps] == [f"step {i}" for i in range(15)],
              [s["step"] for s in steps])
        check("the straggler of every step is rank 3, by its collective",
              all(s["straggler_rank"] == 3 and s["straggler_report"] == "h200_job4_rank3.sqlite"
                  and s["straggler_by"] == "collective" and s["collective"] == "allreduce"
                  and s["collective_ranks"] == 4 for s in steps), steps[:1])
        check("its lateness: 51 ms at step 0, 3 to 6 ms at the others",
              50_000_000 < steps[0]["lateness_ns"] < 52_000_000
              and all(3_000_000 < s["lateness_ns"] < 6_000_000 for s in steps[1:]),
              [s["lateness_ns"] for s in steps])

        # Every number against the plain SQL.
        bad = []
        for s in steps:
            key = (s["step"], s["occurrence"])
            first, last, stragglers = per_step[key]
            end, enders, spread = last_end[key]
            got = (s["first_arrival_utc_ns"], s["last_arrival_utc_ns"], s["lateness_ns"], [s["straggler_rank"]],
                   s["last_end_utc_ns"], [s["last_end_rank"]], s["spread_ns"], s["ranks"])
            want = (first, last, last - first, stragglers, end, enders, spread, 4)
            if got != want:
                bad.append((key, got, want))
        check("per step: first and last arrival, lateness, straggler, last end and spread as plain SQL says",
              not bad and len(steps) == len(per_step), bad[:2])
        bad = []
        for w in waits:
            key = (w["step"], w["occurrence"], w["rank"])
            got = (w["arrival_utc_ns"], w["behind_first_ns"], w["collective_ns"], w["wait_ns"])
            if got != per_wait.get(key) or w["straggler"] != int(per_step[key[:2]][2] == [w["rank"]]):
                bad.append((key, got, per_wait.get(key)))
        check("per step and rank: arrival, behind the first, collective duration and wait as plain SQL says",
              not bad and len(waits) == len(per_wait), bad[:2])
        check("the straggler waits 0; the others wait until it arrives (within their allreduce)",
              all((w["wait_ns"] == 0) == (w["rank"] == 3) for w in waits), [w for w in waits if w["rank"] == 3][:1])
        bad = []
        for k in range(4):
            r = by_rank[k]
            got = (r["step_ns"], r["wait_ns"], r["compute_ns"], r["straggler_steps"])
            want = (step_ns[k], wait_ns[k], step_ns[k] - wait_ns[k], 15 if k == 3 else 0)
            if got != want:
                bad.append((k, got, want))
        check("per rank: step, wait and compute time and times the straggler as plain SQL says", not bad, bad)

        # Without --collective these exports have no NCCL kernel or NCCL NVTX range: the straggler is whose step
        # ends last (the columns of before), and the step rows say so.
        plain = stats.job_summary_tables(ranks, step="step%", jobs=2)[1]
        plain_steps = [dict(zip(plain[1], r)) for r in plain[2]]
        check("no collective found: the straggler is whose step ends last, said in straggler_by",
              all(s["straggler_by"] == "step end" and s["straggler_rank"] == s["last_end_rank"]
                  and s["collective"] is None and [s["last_end_rank"]] == last_end[(s["step"], s["occurrence"])][1]
                  for s in plain_steps) and len(plain_steps) == 15, plain_steps[:1])
        try:
            stats.job_summary_tables(ranks, step="step%", collective="allreduse", jobs=1)
            check("a --collective that names no range in a step is an error", False)
        except stats.StatsError as e:
            check("a --collective that names no range in a step is an error naming it", "allreduse" in str(e), str(e))

        # A rank that arrives after the others' collective has ended: rank 0 and a copy of it started 100 ms later
        # (its rank is 0 too: the export's RANK says so; its report name tells it apart).
        # The copy is the straggler by exactly 100 ms at every step, and rank 0's wait is its whole allreduce (the
        # wait is clipped to the rank's own collective range).
        late = os.path.join(tmp, "late_rank1.sqlite")
        shutil.copy(ranks[0], late)
        db = sqlite3.connect(late)
        with db:
            db.execute("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + 100000000")
        db.close()
        shifted = stats.job_summary_tables([ranks[0], late], collective="allreduce", jobs=1)
        shifted_steps = [dict(zip(shifted[1][1], r)) for r in shifted[1][2]]
        shifted_waits = [dict(zip(shifted[2][1], r)) for r in shifted[2][2]]
        check("a copy started 100 ms later: the straggler of every step, by 100 ms",
              len(shifted_steps) == 15 and all(s["straggler_report"] == "late_rank1.sqlite"
                                               and s["lateness_ns"] == 100_000_000 for s in shifted_steps),
              shifted_steps[:1])
        check("the other rank waits its whole allreduce (clipped to its own range), the copy 0",
              len(shifted_waits) == 30 and all(
                  w["wait_ns"] == (0 if w["report"] == "late_rank1.sqlite" else
                                   per_wait[(w["step"], w["occurrence"], 0)][2])
                  for w in shifted_waits), shifted_waits[:2])

        # NCCL's own NVTX ranges, found without --collective: the one-rank NCCL export (../shared/fixtures/large),
        # 30 `iter i` ranges each with an ncclAllReduce range in NCCL's domain.
        nccl = os.path.join(shared, "fixtures", "large", "h200_nccl_1rank_gpu_metrics.sqlite")
        if not os.path.isfile(nccl):
            print(f"SKIPPED (part): {nccl} is absent: NCCL's NVTX ranges as the collective are not checked")
        else:
            db = sqlite3.connect(f"file:{nccl}?mode=ro", uri=True)
            origin = db.execute("select utcEpochNs from TARGET_INFO_SESSION_START_TIME").fetchone()[0]
            # The first ncclAllReduce of NCCL's domain (named by its eventType 75 row) starting inside each step.
            want = db.execute("""
                with ev as (select coalesce(n.text, s.value) as name, n.start, n."end" as stop, n.domainId,
                                   n.globalTid / 16777216 as pid
                            from NVTX_EVENTS n left join StringIds s on s.id = n.textId),
                nccl_domain as (select domainId from NVTX_EVENTS where eventType = 75 and text = 'NCCL'),
                steps as (select * from ev where name like 'iter%' and stop > start and domainId = 0)
                select st.name, (select min(c.start) from ev c where c.name = 'ncclAllReduce' and c.pid = st.pid
                                 and c.domainId in (select domainId from nccl_domain)
                                 and c.start between st.start and st.stop)
                from steps st order by st.start""").fetchall()
            db.close()
            found = stats.job_summary_tables([nccl], step="iter%", jobs=1)[1]
            found = [dict(zip(found[1], r)) for r in found[2]]
            check("NCCL's NVTX ranges: each step's collective is its ncclAllReduce, arriving where the export says",
                  len(want) == 30 and [(s["step"], s["first_arrival_utc_ns"] - origin) for s in found] == want
                  and all(s["straggler_by"] == "collective" and s["collective"] == "ncclAllReduce" for s in found),
                  (found[:1], want[:1]))

        # ---- the command: the archive of the four, and stats fanned out ----
        archive = os.path.join(tmp, "job.tar")
        done = subprocess.run([sys.executable, "-m", "nsystrace", *ranks, "-o", archive, "-j", "2", "--no-progress"],
                              capture_output=True, text=True, env=env)
        check("nsystrace h200_job4_rank*.sqlite -o job.tar", done.returncode == 0, done.stderr[-500:])
        with tarfile.open(archive) as a:
            manifest = json.load(a.extractfile("perfetto_manifest.json"))["perfetto_manifest"]
        check("the manifest: four traces on one machine (one host), wall-clock time",
              len(manifest["files"]) == 4 and len({f["machine"]["name"] for f in manifest["files"]}) == 1
              and manifest["trace_time"] == {"clock": "REALTIME"}, manifest)
        imported = subprocess.run([os.path.join(tools, "import-stats"), archive], capture_output=True, text=True)
        check("Perfetto imports the archive without an error or data_loss stat",
              imported.returncode == 0 and json.loads(imported.stdout)["stats"] == [], imported.stdout[-500:])

        def query(sql):
            out = subprocess.run([os.path.join(tools, "trace-processor"), "query", archive, sql], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-2000:])
            text = out.stdout[out.stdout.index('"'):] if '"' in out.stdout else ""
            return list(csv.reader(io.StringIO(text)))[1:]

        # Each rank at its session start: every NVTX range of every rank (the CPU's, on thread tracks) and every
        # kernel at its session start + its time in the export, so the ranks are apart by their session starts'
        # differences (up to 39 ms here).
        want_ranges, want_kernels, origins = [], [], []
        for path in ranks:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            origin = db.execute("select utcEpochNs from TARGET_INFO_SESSION_START_TIME").fetchone()[0]
            origins.append(origin)
            want_ranges += [(origin + s, e - s, name) for s, e, name in db.execute(
                "select n.start, n.\"end\", coalesce(n.text, t.value) from NVTX_EVENTS n "
                "left join StringIds t on t.id = n.textId where n.\"end\" is not null")]
            want_kernels += [origin + s for (s,) in db.execute("select start from CUPTI_ACTIVITY_KIND_KERNEL")]
            db.close()
        # One run of the trace processor for both (each run imports the archive again).
        placed = query("select 'range', s.ts, s.dur, s.name from slice s join thread_track t on s.track_id = t.id "
                       "where s.category is null or s.category != 'cuda_api' union all "
                       "select 'kernel', ts, dur, name from slice "
                       "where coalesce(category, extract_arg(arg_set_id, 'description')) = 'kernel'")
        names = {r[2] for r in want_ranges}
        got_ranges = [(int(ts), int(dur), name) for what, ts, dur, name in placed if what == "range" and name in names]
        check("every NVTX range of every rank at its session start + its time",
              sorted(got_ranges) == sorted(want_ranges) and len(want_ranges) == 180,
              f"{len(got_ranges)} vs {len(want_ranges)}")
        kernels = sorted(int(ts) for what, ts, _, _ in placed if what == "kernel")
        check("every kernel of every rank at its session start + its time",
              kernels == sorted(want_kernels) and len(kernels) == 79, f"{len(kernels)} vs {len(want_kernels)}")
        check("the four session starts within 39 ms of one another", max(origins) - min(origins) < 39_000_000,
              max(origins) - min(origins))

        out = os.path.join(tmp, "kern.csv")
        done = subprocess.run([sys.executable, "-m", "nsystrace", "stats", "cuda_gpu_kern_sum", *ranks, "-o", out,
                               "-j", "2"], capture_output=True, text=True, env=env)
        with open(out, newline="") as f:
            fanned = list(csv.reader(f))
        columns, rows = stats.run_recipe("cuda_gpu_kern_sum", ranks, jobs=1)
        check("nsystrace stats cuda_gpu_kern_sum h200_job4_rank*.sqlite: one table, each rank's rows",
              done.returncode == 0 and fanned[0] == columns and
              [r[:2] for r in fanned[1:]] == [[r[0], str(r[1])] for r in rows] and
              {r[1] for r in rows} == {0, 1, 2, 3}, done.stderr[-500:])
        summary = os.path.join(tmp, "summary.csv")
        done = subprocess.run([sys.executable, "-m", "nsystrace", "stats", "job_summary", *ranks, "-o", summary,
                               "--collective", "allreduce", "-j", "2"], capture_output=True, text=True, env=env)
        written = {}
        for name, path in (("ranks", summary), ("steps", summary[:-4] + ".steps.csv"),
                           ("waits", summary[:-4] + ".waits.csv")):
            with open(path, newline="") as f:
                written[name] = list(csv.reader(f))
        check("nsystrace stats job_summary --collective allreduce -o x.csv: x.csv, x.steps.csv, x.waits.csv",
              done.returncode == 0 and [len(written[n]) for n in ("ranks", "steps", "waits")] == [5, 16, 61]
              and written["steps"][0] == step_cols and written["waits"][0] == wait_cols,
              done.stderr[-500:])
        done = subprocess.run([sys.executable, "-m", "nsystrace", "stats", "job_summary", *ranks, "-j", "2"],
                              capture_output=True, text=True, env=env)
        check("without --collective on these exports: the step-end straggler, and stderr says so",
              done.returncode == 0 and "straggler_by 'step end'" in done.stderr and "--collective" in done.stderr,
              done.stderr[-500:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)
