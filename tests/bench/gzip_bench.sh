#!/usr/bin/env bash
# The cost of gzip: chrome_trace_file('x.json.gz') against chrome_trace_file('x.json') over the same rows (every row,
# derived in (0, 1)), with nsystrace_option('threads', N) at 1 and 2, this build against a baseline build, each
# run its own sqlite3 process, the variants alternating within every repetition (the machine is shared: only
# ratios measured in the same run mean anything). Medians of --reps.
#
#   tests/bench/gzip_bench.sh --baseline DIR [--reps N] [--db FILE] [--level NAME=DIR ...]
#
# --baseline DIR: a directory holding the baseline's nsystrace.so (e.g. main built into /tmp/base).
# --level NAME=DIR: also measure the .gz with the nsystrace.so in DIR (a build with another GzipSettings::level),
#   at 1 and 2 threads, e.g. --level 3=/tmp/lv3.
# Default profile: /work/bench/x50.sqlite, opened read-only.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 db=/work/bench/x50.sqlite base="" levels=()
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --baseline) base=$2; shift 2 ;;
    --level) levels+=("$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$base" ] && [ -f "$base/nsystrace.so" ] || { echo "--baseline DIR (holding nsystrace.so) is required" >&2; exit 2; }
ours=$PWD/build
[ -f "$ours/nsystrace.so" ] || { echo "build first (Release): cmake --build build -j2" >&2; exit 2; }
out=$(mktemp -d /tmp/gzip_bench.XXXXXX)
results=$out/results
trap 'rm -rf "$out"' EXIT
uri="file:$db?mode=ro"
# run NAME SO_DIR THREADS FILE: one sqlite3 process; appends "NAME wall_s cpu_s bytes".
run() {
  local name=$1 dir=$2 threads=$3 file=$out/$4 t
  rm -f "$file"
  t=$( { /usr/bin/time -f "%e %U %S" sqlite3 "$uri" ".load $dir/nsystrace" "select nsystrace_option('threads', $threads)" \
         "select chrome_trace_file('$file') from trace_events where derived in (0, 1)" > /dev/null; } 2>&1 | tail -1)
  echo "$name $(echo "$t" | awk '{ print $1, $2 + $3 }') $(stat -c %s "$file")" >> "$results"
  rm -f "$file"
}
for _ in $(seq "$reps"); do
  run base_json "$base" 1 t.json
  run base_gz "$base" 1 t.json.gz
  run json_t1 "$ours" 1 t.json
  run gz_t1 "$ours" 1 t.json.gz
  run json_t2 "$ours" 2 t.json
  run gz_t2 "$ours" 2 t.json.gz
  for l in "${levels[@]}"; do
    run "level${l%%=*}_t1" "${l#*=}" 1 t.json.gz
    run "level${l%%=*}_t2" "${l#*=}" 2 t.json.gz
  done
done
median() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "gzip benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores (shared), load $(cut -d' ' -f1-3 /proc/loadavg), reps=$reps, medians"
echo "profile: $db; baseline: $base/nsystrace.so; ours: $ours/nsystrace.so"
printf '%-12s %8s %8s %12s %12s\n' run wall_s cpu_s bytes "wall/json"
names="base_json base_gz json_t1 gz_t1 json_t2 gz_t2"
for l in "${levels[@]}"; do names="$names level${l%%=*}_t1 level${l%%=*}_t2"; done
for n in $names; do
  case $n in base_*) ref=base_json ;; *_t2) ref=json_t2 ;; *) ref=json_t1 ;; esac
  printf '%-12s %8s %8s %12s %12.2f\n' "$n" "$(median "$n" 2)" "$(median "$n" 3)" "$(median "$n" 4)" \
    "$(echo "$(median "$n" 2) / $(median "$ref" 2)" | bc -l)"
done
