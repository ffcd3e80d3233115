#!/usr/bin/python3
"""sql/nsys_stats/*.sql give NVIDIA's own numbers: every row of every summary table that `nsys profile --stats=true`
stored in an export (2020 exports keep them: cudaKernelStats, cudaAPIStats, osrtAPIStats, nvtxPushPopRangeStats,
cudaMemoryOperationTimeStats, cudaMemoryOperationByteStats: num, min, max, avg, total) equals the report's row of the
same name, and the report has no row NVIDIA's lacks. Reports run as users run them (sqlite3 shell, .load, .read).

  check_nsys_stats.py SQLITE3 EXTENSION PROFILE...

Profiles without such tables are skipped, and said so. Prints 'N passed, N failed, N skipped'; exits 1 on a mismatch.
"""
import json
import os
import sqlite3
import subprocess
import sys

SQLITE3, EXTENSION, PROFILES = sys.argv[1], sys.argv[2], sys.argv[3:]
REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sql", "nsys_stats")
# 2020's operation names -> today's (the copy kind's label, as ENUM_CUDA_MEMCPY_OPER and the reports name it).
OPERATIONS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device", "HtoH": "Host-to-Host",
              "PtoP": "Peer-to-Peer", "HtoA": "Host-to-Array", "AtoH": "Array-to-Host", "AtoA": "Array-to-Array",
              "AtoD": "Array-to-Device", "DtoA": "Device-to-Array"}


def report(profile, name):
    out = subprocess.run([SQLITE3, "-json", "-bail", f"file:{profile}?mode=ro", "-cmd", f".load {EXTENSION}",
                          f".read {REPORTS}/{name}.sql"], capture_output=True, text=True, check=True).stdout
    return json.loads(out) if out.strip() else []


def operation(name):  # "[CUDA memcpy HtoD]" -> "[CUDA memcpy Host-to-Device]"
    for short, label in OPERATIONS.items():
        name = name.replace(f"memcpy {short}]", f"memcpy {label}]")
    return name


# report -> (NVIDIA's table, SQL giving (name, num, min, max, avg, total) from it, unit divisor of the report's columns)
CHECKS = {
    "cuda_gpu_kern_sum": ("cudaKernelStats", "select s.value, num, min, max, avg, total from cudaKernelStats k "
                          "join StringIds s on s.id = k.demangledName", None),
    # The table holds the recorded name; NVIDIA's report shows it without a '_v' + 4 characters version suffix.
    "cuda_api_sum": ("cudaAPIStats", "select case substr(s.value, -6, 2) when '_v' then substr(s.value, 1, "
                     "length(s.value) - 6) else s.value end, num, min, max, avg, total from cudaAPIStats a "
                     "join StringIds s on s.id = a.nameId", None),
    "osrt_sum": ("osrtAPIStats", "select s.value, num, min, max, avg, total from osrtAPIStats a "
                 "join StringIds s on s.id = a.nameId", None),
    "nvtx_sum": ("nvtxPushPopRangeStats", "select tag, num, min, max, avg, total from nvtxPushPopRangeStats", None),
    "cuda_gpu_mem_time_sum": ("cudaMemoryOperationTimeStats",
                              "select name, num, min, max, avg, total from cudaMemoryOperationTimeStats", None),
    "cuda_gpu_mem_size_sum": ("cudaMemoryOperationByteStats",
                              "select name, num, min, max, avg, total from cudaMemoryOperationByteStats", 1e6),
}

passed = failed = skipped = 0
for profile in PROFILES:
    db = sqlite3.connect(f"file:{profile}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("select name from sqlite_schema where type = 'table'")}
    rnd = lambda v, d: db.execute("select round(?, ?)", (v, d)).fetchone()[0]
    for name, (table, sql, unit) in CHECKS.items():
        if table not in tables:
            skipped += 1
            continue
        nvidia = {operation(r[0]): r[1:] for r in db.execute(sql)}
        ours = report(profile, name)
        rows = {r["Operation" if unit else "Name"]: r for r in ours}
        problems = []
        if set(rows) != set(nvidia):
            problems.append(f"names differ: only ours {sorted(set(rows) - set(nvidia))[:3]}, "
                            f"only NVIDIA's {sorted(set(nvidia) - set(rows))[:3]}")
        for key in set(rows) & set(nvidia):
            num, lo, hi, avg, total = nvidia[key]
            r = rows[key]
            if unit:  # MB, 3 decimals
                got = (r["Count"], r["Min (MB)"], r["Max (MB)"], r["Avg (MB)"], r["Total (MB)"])
                want = (num, rnd(lo / unit, 3), rnd(hi / unit, 3), rnd(avg / unit, 3), rnd(total / unit, 3))
            else:
                got = (r["Instances"], r["Min (ns)"], r["Max (ns)"], r["Avg (ns)"], r["Total Time (ns)"])
                want = (num, lo, hi, rnd(avg, 1), total)
            if got != want:
                problems.append(f"{key}: ours {got}, NVIDIA's {want}")
        where = f"{name} on {os.path.basename(profile)} ({len(nvidia)} rows of {table})"
        if problems:
            failed += 1
            print(f"FAILED: {where}: " + "; ".join(problems[:3]))
        else:
            passed += 1
            print(f"ok: {where}")
print(f"check_nsys_stats: {passed} passed, {failed} failed, {skipped} skipped (no NVIDIA table to compare with)")
sys.exit(1 if failed else 0)
