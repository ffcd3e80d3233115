#!/usr/bin/env bash
# GPU metrics at scale: ../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite (1,143,318 GPU_METRICS samples of
# 22 metrics), against issue #46's targets:
#   - the whole export to .pftrace in <= 3x the time of reading its GPU_METRICS rows with plain SQL (one scan that
#     reads every column of every row);
#   - the trace <= 16 bytes per sample;
#   - trace processor imports it with every sample's value (counter rows) and no error stat;
#   - a 0.5 s window of it (ts in [2 s, 2.5 s)) in <= 0.15x the whole's time: on the export as recorded, and on a
#     copy indexed by nsystrace_create_indexes() (GPU_METRICS.timestamp), the way docs/sql-reference.md says to make
#     windows fast;
#   - the recipe sql/gpu_metrics_busy.sql on it (its time, for the record).
# Medians of --reps runs, each its own process.
#
#   tests/bench/gpu_metrics_bench.sh [--reps N] [--build DIR]   (DIR: a Release build, default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 build=build
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/$build/nsystrace
db=../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite
tools=../shared/tools/perfetto
[ -f "$so.so" ] || { echo "build first: cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build" >&2; exit 2; }
[ -f "$db" ] && [ -x "$tools/trace-processor" ] || { echo "needs ../shared (the large export, tools/perfetto)" >&2; exit 2; }
out=$(mktemp -d)
results=$out/results
trap 'rm -rf "$out"' EXIT
measure() {  # measure NAME COMMAND...: appends "NAME seconds maxrss_kb cpu_seconds" (CPU: user + system, which
  local name=$1; shift  # other work on a shared machine disturbs less than the wall time)
  echo "$name $( { /usr/bin/time -f "%e %M %U %S" "$@" > /dev/null; } 2>&1 | tail -1 | awk '{ print $1, $2, $3 + $4 }')" \
    >> "$results"
}
indexed=$out/indexed/$(basename "$db")  # a copy (the export itself is never written), of the same name: the trace's
mkdir "$out/indexed"                     # metadata names its source file
cp "$db" "$indexed"
sqlite3 "$indexed" ".load $so" "select nsystrace_create_indexes()" > /dev/null
for _ in $(seq "$reps"); do
  measure plain_scan sqlite3 "$db" "select count(*), sum(timestamp), total(typeId), sum(metricId), sum(value) from GPU_METRICS"
  measure whole_pftrace sqlite3 "$db" ".load $so" "select perfetto_trace_file('$out/whole.pftrace') from trace_events"
  measure window_pftrace sqlite3 "$db" ".load $so" \
    "select perfetto_trace_file('$out/window.pftrace') from trace_events where ts >= 2000000000 and ts < 2500000000"
  measure window_indexed sqlite3 "$indexed" ".load $so" \
    "select perfetto_trace_file('$out/window_indexed.pftrace') from trace_events where ts >= 2000000000 and ts < 2500000000"
  measure whole_json sqlite3 "$db" ".load $so" "select chrome_trace_file('$out/whole.json') from trace_events"
  measure recipe sqlite3 "$db" ".load $so" ".read sql/gpu_metrics_busy.sql"
done
median() { awk -v n="$1" -v col="$2" '$1 == n { print $col }' "$results" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
samples=$(sqlite3 "$db" "select count(*) from GPU_METRICS")
bytes=$(stat -c %s "$out/whole.pftrace")
counters=$("$tools/trace-processor" query "$out/whole.pftrace" \
  "select count(*) from counter c join counter_track t on t.id = c.track_id where t.type = 'gpu_counter' and t.name != 'GPU utilization'" \
  2>/dev/null | tail -1)
stats=$("$tools/import-stats" "$out/whole.pftrace" 2>&1)
printf '%-16s %10s %10s %10s\n' measurement seconds "CPU s" "peak MB"
for m in plain_scan whole_pftrace window_pftrace window_indexed whole_json recipe; do
  printf '%-16s %10.2f %10.2f %10.0f\n' "$m" "$(median $m 2)" "$(median $m 4)" "$(echo "$(median $m 3) / 1024" | bc -l)"
done
ratio() { echo "$1 / $2" | bc -l; }
printf 'whole .pftrace / plain scan: %.2fx wall, %.2fx CPU (target <= 3)\n' \
  "$(ratio "$(median whole_pftrace 2)" "$(median plain_scan 2)")" "$(ratio "$(median whole_pftrace 4)" "$(median plain_scan 4)")"
for w in window_pftrace window_indexed; do
  printf '%s / whole: %.3fx wall, %.3fx CPU (target <= 0.15)\n' "$w" \
    "$(ratio "$(median $w 2)" "$(median whole_pftrace 2)")" "$(ratio "$(median $w 4)" "$(median whole_pftrace 4)")"
done
cmp -s "$out/window.pftrace" "$out/window_indexed.pftrace" && echo "the indexed copy's window trace: the same bytes" ||
  echo "the indexed copy's window trace DIFFERS"
printf 'trace: %d bytes, %.1f bytes per sample (target <= 16); JSON %d bytes\n' "$bytes" \
  "$(ratio "$bytes" "$samples")" "$(stat -c %s "$out/whole.json")"
echo "trace processor: $counters GPU metric counter values of $samples samples; import-stats: $stats"
