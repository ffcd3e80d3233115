#!/usr/bin/env bash
# Benchmarks nsystrace against SQLite's own JSON functions on profiles scaled from a real export.
#
#   tests/bench/run_bench.sh [--reps N] [--small COPIES] [--large COPIES] [--source FILE.sqlite]
#
# Needs ../shared (scale-profile and the real exports), a Release build in build/, /usr/bin/time and Debian's
# /usr/bin/python3. Profiles are made once under build/bench/. Every measurement is a separate sqlite3 process;
# ours and the baseline run alternately, and the medians of --reps runs are printed with their ratio and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 small=50 large=200
source_db=../shared/fixtures/real/nsysai_h100_2gpu_mfu_before_slice.sqlite
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --small) small=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --source) source_db=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
mkdir -p build/bench
for copies in "$small" "$large"; do
  db=build/bench/x$copies.sqlite
  [ -f "$db" ] || /usr/bin/python3 ../shared/tools/scale-profile "$source_db" "$db" --copies "$copies" 2>/dev/null
done

kinds="kind in ('kernel','memcpy','memset','cuda_api','nvtx')"
# run NAME DB SQL...: one timed sqlite3 process; appends "NAME seconds maxrss_kb" to $results.
results=$(mktemp)
trap 'rm -f "$results"; rm -f build/bench/out.json build/bench/out.json.gz' EXIT
run() {
  local name=$1 db=$2; shift 2
  local t
  t=$( { /usr/bin/time -f "%e %M" sqlite3 "$db" ".load $so" "$@" > /dev/null; } 2>&1 | tail -1)
  echo "$name $t" >> "$results"
}

events=$(sqlite3 "build/bench/x$small.sqlite" ".load $so" "select count(*) from trace_events where $kinds")
out_bytes=$(sqlite3 "build/bench/x$small.sqlite" ".load $so" "select length(chrome_trace(*)) from trace_events where $kinds")
# The text form is measured with two consumers of the value: typeof(), which reads nothing, so the figure is what
# making the value costs; and length(), which counts the characters of the value (SQLite walks every byte), so
# the larger trace also pays for being read. The baseline gets the same consumer each time.
baseline_with() { sed -e "/^--/d" -e "s/select length(json_group_array/select $1(json_group_array/" tests/bench/baseline.sql; }
baseline_typeof=$(baseline_with typeof) baseline_length=$(baseline_with length)
for i in $(seq "$reps"); do
  run ours_text "build/bench/x$small.sqlite" "select typeof(chrome_trace(*)) from trace_events where $kinds"
  run sqlite_json "build/bench/x$small.sqlite" "$baseline_typeof"
  run ours_text_length "build/bench/x$small.sqlite" "select length(chrome_trace(*)) from trace_events where $kinds"
  run sqlite_json_length "build/bench/x$small.sqlite" "$baseline_length"
  rm -f build/bench/out.json build/bench/out.json.gz
  run ours_file_small "build/bench/x$small.sqlite" "select chrome_trace_file('build/bench/out.json') from trace_events where derived in (0, 1)"
  rm -f build/bench/out.json
  run ours_file_large "build/bench/x$large.sqlite" "select chrome_trace_file('build/bench/out.json') from trace_events where derived in (0, 1)"
  rm -f build/bench/out.json
  run ours_gzip_large "build/bench/x$large.sqlite" "select chrome_trace_file('build/bench/out.json.gz') from trace_events where derived in (0, 1)"
  run projection_small "build/bench/x$small.sqlite" "select count(*) from nvtx_kernel_ranges"
  run projection_large "build/bench/x$large.sqlite" "select count(*) from nvtx_kernel_ranges"
done

median() {  # median of column $2 for rows named $1
  awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
count_rows() { sqlite3 "$1" "select (select count(*) from NVTX_EVENTS), (select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME)"; }
echo "nsystrace benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, reps=$reps, medians"
echo "source: $(basename "$source_db"); small = ${small}x ($events events of the baseline's kinds), large = ${large}x"
echo "NVTX rows / CUDA API calls: small $(count_rows "build/bench/x$small.sqlite" | tr '|' '/'), large $(count_rows "build/bench/x$large.sqlite" | tr '|' '/')"
printf '%-18s %9s %12s\n' measurement seconds peak_RSS_MB
for n in ours_text sqlite_json ours_text_length sqlite_json_length ours_file_small ours_file_large ours_gzip_large projection_small projection_large; do
  printf '%-18s %9s %12d\n' "$n" "$(median $n 2)" "$(( $(median $n 3) / 1024 ))"
done
ours=$(median ours_text 2) base=$(median sqlite_json 2)
ours_l=$(median ours_text_length 2) base_l=$(median sqlite_json_length 2)
fs=$(median ours_file_small 2) fl=$(median ours_file_large 2)
ms=$(median ours_file_small 3) ml=$(median ours_file_large 3)
ps=$(median projection_small 2) pl=$(median projection_large 2)
awk -v o="$ours" -v b="$base" -v ol="$ours_l" -v bl="$base_l" -v fs="$fs" -v fl="$fl" -v ms="$ms" -v ml="$ml" -v ps="$ps" -v pl="$pl" \
    -v out="$out_bytes" -v rss="$(median ours_text 3)" -v s="$small" -v l="$large" 'BEGIN {
  printf "chrome_trace(*) / json_group_array time ratio (same rows), typeof(): %.2f, length(): %.2f\n", o / b, ol / bl
  printf "file form, %dx / %dx: time %.2fx, peak RSS %.2fx (data grew %.1fx)\n", l, s, fl / fs, ml / ms, l / s
  printf "projection, %dx / %dx: time %.2fx\n", l, s, pl / ps
  printf "text form: peak RSS %.0f MB for %.0f MB of JSON (%.2fx the output)\n", rss / 1024, out / 1048576, rss * 1024 / out
}'
