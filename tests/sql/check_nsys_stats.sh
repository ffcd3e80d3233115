#!/usr/bin/env bash
# The nsys stats reports (sql/nsys_stats/*.sql): each runs with .read, as users run it, on the bundled example, the
# CPU-sample and per-process NVTX domain fixtures and every real export (on the latter fixture their numbers also
# against plain SQL over its raw tables); then their numbers against NVIDIA's own (check_nsys_stats.py), which only
# the 2020 real exports of ../shared hold: without them the comparison is skipped (exit 77, CTest says "Skipped").
#   check_nsys_stats.sh SQLITE3 EXTENSION.so SOURCE_DIR
set -euo pipefail
sqlite3_bin=$1 so=${2%.so} src=$3
source "$src/tests/profiles.sh"
"$sqlite3_bin" "$tmp/cpu_samples.sqlite" < "$src/tests/fixtures/cpu_samples.sql"
profiles+=("$tmp/cpu_samples.sqlite")
# Two processes numbering their NVTX domains alike, and a range never closed (nvtx_sum's per-process domains and
# NVIDIA's end of an open range): the reports' numbers against their plain-SQL references over the raw tables.
"$sqlite3_bin" "$tmp/nvtx_domains_per_process.sqlite" < "$src/tests/fixtures/nvtx_domains_per_process.sql"
profiles+=("$tmp/nvtx_domains_per_process.sqlite")
failed=0 ran=0
python=/usr/bin/python3; [ -x "$python" ] || python=python3
# The report files are what their one description (generate.py) makes.
"$python" "$src/sql/nsys_stats/generate.py" --check || failed=$((failed + 1))
for p in "${profiles[@]}"; do
  for r in "$src"/sql/nsys_stats/*.sql; do
    if ! out=$("$sqlite3_bin" -bail "file:$p?mode=ro" -cmd ".load $so" ".read $r" 2>&1) || grep -qi "error" <<<"$out"; then
      echo "FAILED: $(basename "$r") on $(basename "$p"): $out" | head -5; failed=$((failed + 1))
    fi
    ran=$((ran + 1))
  done
done
# On the example (examples/example_profile.sql's header): 160 launches of ampere_sgemm_128x64_tn, 150 us each.
out=$("$sqlite3_bin" -csv "$tmp/example.sqlite" -cmd ".load $so" ".read $src/sql/nsys_stats/cuda_gpu_kern_sum.sql")
awk -F, '$9 == "ampere_sgemm_128x64_tn" && $3 == 160 && $2 == 24000000 && $6 == 150000 && $8 == 0.0 { ok = 1 } END { exit !ok }' \
  <<<"$out" || { echo "FAILED: cuda_gpu_kern_sum on the example: $out" | head -5; failed=$((failed + 1)); }
"$python" "$src/tests/sql/check_recipe_numbers.py" "$sqlite3_bin" "$so" "$tmp/nvtx_domains_per_process.sqlite" ||
  failed=$((failed + 1))
echo "check_nsys_stats: $ran report runs, $failed failed"
[ "$failed" -eq 0 ] || exit 1
[ ${#real_exports[@]} -gt 0 ] || { echo "../shared absent: the comparison with NVIDIA's numbers NOT run"; exit 77; }
"$python" "$src/tests/sql/check_nsys_stats.py" "$sqlite3_bin" "$so" "${real_exports[@]}"
