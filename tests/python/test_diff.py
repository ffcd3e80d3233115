"""`nsystrace diff`, as users run it (the installed command and nsystrace.diff.compare()), on two reports that differ
by construction (tests/fixtures/gpu_causes.sql, and the same with gpu_causes_after.sql applied): the CSV holds
exactly what sql/diff.sql gives in the sqlite3 shell, the known changes are there, and new and vanished names are
listed. (diff.sql's numbers themselves are checked against the raw tables by tests/sql/check_recipe_numbers.py.)

  test_diff.py SOURCE_DIR SCRATCH_DIR
"""
import csv
import io
import os
import sqlite3
import subprocess
import sys

import nsystrace
import nsystrace.diff
import nsystrace.server
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], sys.argv[2]
bin_dir = os.path.dirname(sys.executable)


def fixture(path, *scripts):
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path)
    for script in scripts:
        with open(os.path.join(src, "tests", "fixtures", script)) as f:
            conn.executescript(f.read())
    conn.commit()
    conn.close()
    return path


before = fixture(os.path.join(tmp, "diff_before.sqlite"), "gpu_causes.sql")
after = fixture(os.path.join(tmp, "diff_after.sqlite"), "gpu_causes.sql", "changes/gpu_causes_after.sql")
out_csv = os.path.join(tmp, "diff.csv")
done = subprocess.run([os.path.join(bin_dir, "nsystrace"), "diff", before, after, "-o", out_csv],
                      capture_output=True, text=True)
check("nsystrace diff exits 0", done.returncode == 0, done.stderr)
with open(out_csv, newline="") as f:
    ours = list(csv.reader(f))
shell = subprocess.run(["sqlite3", "-csv", "-header", ":memory:", "-cmd", f".load {nsystrace.loadable_path()}",
                        f"attach '{before}' as before", f"attach '{after}' as after",
                        f".read {os.path.join(src, 'sql', 'diff.sql')}"], capture_output=True, text=True)
expected = list(csv.reader(io.StringIO(shell.stdout)))
check("the CSV is sql/diff.sql's output", ours == expected and len(ours) > 1, f"{ours} != {expected}")
check("contract columns first", ours[0][:8] == ["kind", "name", "count_before", "count_after", "total_ns_before",
                                                "total_ns_after", "delta_ns", "delta_pct"], ours[0])
rows = {(r[0], r[1]): r[2:] for r in ours[1:]}
check("the slower GEMM", rows.get(("kernel", "ampere_sgemm_128x64_tn"), [])[:6] ==
      ["2", "2", "200000", "300000", "100000", "50.0"], rows.get(("kernel", "ampere_sgemm_128x64_tn")))
check("the new kernel", rows.get(("kernel", "triton_poi_fused_add_0"), [])[:7] ==
      ["0", "1", "0", "30000", "30000", "", "new"])
check("the vanished kernel", rows.get(("kernel", "reduce_kernel"), [])[:7] ==
      ["1", "0", "10000", "0", "-10000", "-100.0", "vanished"])
check("PyTorch names matched across runs", rows.get(("nvtx", "aten::mm"), [])[:5] == ["2", "2", "12500", "12500", "0"])
check("sorted by absolute delta", [abs(int(r[6])) for r in ours[1:]] == sorted((abs(int(r[6])) for r in ours[1:]),
                                                                                 reverse=True))
check("new and vanished names printed", "new in after: 1\n  kernel triton_poi_fused_add_0" in done.stdout and
      "vanished from after: 1\n  kernel reduce_kernel" in done.stdout, done.stdout)
columns, api_rows = nsystrace.diff.compare(before, after)
check("compare() gives the command's rows", [columns] + [["" if v is None else str(v) for v in r] for r in api_rows]
      == ours, api_rows[:3])
# The command reads each report's per-name totals on a connection and thread of its own (diff.split_recipe cuts
# them out of sql/diff.sql); the recipe run whole gives the same rows, here and with NVTX domains of two processes.
check("this Python takes the parallel path", nsystrace.diff._in_parallel(
    nsystrace.server.recipe("diff.sql"), before, after)[1] == api_rows)
check("the parallel path gives the recipe's rows", api_rows == nsystrace.diff.compare(before, after, False)[1],
      api_rows[:3])
domains = fixture(os.path.join(tmp, "diff_domains.sqlite"), "nvtx_domains_per_process.sql")
parallel = nsystrace.diff.compare(domains, after)[1]
check("the parallel path gives the recipe's rows with NVTX domains",
      parallel == nsystrace.diff.compare(domains, after, False)[1] and
      ("nvtx", "Trainer:step") in [r[:2] for r in parallel], parallel[:5])
missing = subprocess.run([os.path.join(bin_dir, "nsystrace"), "diff", before, os.path.join(tmp, "nope.sqlite")],
                         capture_output=True, text=True)
check("a missing report is a clear error", missing.returncode == 2 and "nope.sqlite: no such file" in missing.stderr,
      missing.stderr)
print(f"test_diff: {'FAILED ' + ', '.join(failures) if failures else 'all passed'}")
sys.exit(1 if failures else 0)
