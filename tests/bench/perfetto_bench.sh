#!/usr/bin/env bash
# The Perfetto protobuf trace against the Chrome JSON of the same rows (every row of the profile), on a profile
# scaled from a real export: bytes, the time and memory to write each (perfetto_trace_file / chrome_trace_file), and
# the time and peak memory of Perfetto's own importer (trace processor v58.2, the importer ui.perfetto.dev runs) on
# each. Medians of --reps runs, each its own process, the two formats alternating.
#
#   tests/bench/perfetto_bench.sh [--reps N] [--copies COPIES] [--import-reps N]
#
# Needs ../shared (scale-profile, the real export, tools/perfetto), a Release build in build/, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 copies=200 import_reps=2
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --import-reps) import_reps=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
tp=../shared/tools/perfetto/trace-processor
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
[ -x "$tp" ] || { echo "needs ../shared/tools/perfetto" >&2; exit 2; }
mkdir -p build/bench
db=build/bench/x$copies.sqlite
[ -f "$db" ] || /usr/bin/python3 ../shared/tools/scale-profile ../shared/fixtures/real/nsysai_h100_2gpu_mfu_before_slice.sqlite "$db" --copies "$copies" > /dev/null
results=$(mktemp)
trap 'rm -f "$results" build/bench/bench.json build/bench/bench.pftrace' EXIT
measure() {  # measure NAME COMMAND...: appends "NAME seconds maxrss_kb"
  local name=$1; shift
  echo "$name $( { /usr/bin/time -f "%e %M" "$@" > /dev/null; } 2>&1 | tail -1)" >> "$results"
}
for _ in $(seq "$reps"); do
  rm -f build/bench/bench.json build/bench/bench.pftrace
  measure write_json sqlite3 "$db" ".load $so" "select chrome_trace_file('build/bench/bench.json') from trace_events where derived in (0, 1)"
  measure write_protobuf sqlite3 "$db" ".load $so" "select perfetto_trace_file('build/bench/bench.pftrace') from trace_events where derived in (0, 1)"
done
json_bytes=$(stat -c %s build/bench/bench.json) proto_bytes=$(stat -c %s build/bench/bench.pftrace)
for _ in $(seq "$import_reps"); do
  measure import_json "$tp" query build/bench/bench.json "select count(*) from slice"
  measure import_protobuf "$tp" query build/bench/bench.pftrace "select count(*) from slice"
done
median() { awk -v n="$1" -v col="$2" '$1 == n { print $col }' "$results" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "profile: $db ($copies copies), $(sqlite3 "$db" ".load $so" "select count(*) from trace_events where derived in (0, 1)") events"
printf '%-16s %12s %12s\n' measurement seconds "peak MB"
for m in write_json write_protobuf import_json import_protobuf; do
  printf '%-16s %12.2f %12.0f\n' "$m" "$(median $m 2)" "$(echo "$(median $m 3) / 1024" | bc -l)"
done
ratio() { echo "$1 / $2" | bc -l; }
printf 'bytes: protobuf %d, JSON %d: %.3f\n' "$proto_bytes" "$json_bytes" "$(ratio "$proto_bytes" "$json_bytes")"
printf 'import: time %.3f, peak memory %.3f of the JSON'"'"'s\n' "$(ratio "$(median import_protobuf 2)" "$(median import_json 2)")" \
  "$(ratio "$(median import_protobuf 3)" "$(median import_json 3)")"
printf 'write: time %.3f of the JSON'"'"'s\n' "$(ratio "$(median write_protobuf 2)" "$(median write_json 2)")"
