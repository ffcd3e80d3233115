#!/usr/bin/env bash
# The conversion's speed against the floor (SQLite reading start/end of the five event tables, no extension), and
# with 1 thread against N (nsystrace_option('threads')), on a profile scaled from a real export. Medians of --reps
# rounds; in each round every measurement runs once, in the same order, each its own sqlite3 process, so the ratios
# compare runs made side by side. Every trace is also checked to be the same bytes for 1 and N threads. Also the NVTX
# GPU projection alone (nvtx_kernel_ranges) against its own floor (SQLite reading the columns it reads).
#
#   tests/bench/speed_bench.sh [--reps N] [--copies N] [--db FILE] [--threads N]
#
# Needs a Release build in build/ and /usr/bin/time; without --db, ../shared to make the profile (once, in
# build/bench/).
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 copies=50 db="" threads=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
if [ -z "$db" ]; then
  mkdir -p build/bench
  db=build/bench/x$copies.sqlite
  [ -f "$db" ] || /usr/bin/python3 ../shared/tools/scale-profile \
    ../shared/fixtures/real/nsysai_h100_2gpu_mfu_before_slice.sqlite "$db" --copies "$copies" > /dev/null
fi
out=$(mktemp -d)
results=$out/results
trap 'rm -rf "$out"' EXIT
floor="select sum(start) + sum(\"end\") from (select start, \"end\" from CUPTI_ACTIVITY_KIND_KERNEL union all select start, \"end\" from CUPTI_ACTIVITY_KIND_MEMCPY union all select start, \"end\" from CUPTI_ACTIVITY_KIND_MEMSET union all select start, \"end\" from CUPTI_ACTIVITY_KIND_RUNTIME union all select start, \"end\" from NVTX_EVENTS)"
# The NVTX projection's floor: SQLite reading exactly the columns the projection reads, every row it reads (its
# NVTX ranges, CUDA API calls and GPU operations), one statement after the other, no extension.
projection_floor="select count(*), total(start), total(\"end\"), total(globalTid), total(endGlobalTid), total(eventType), total(domainId), total(rowid) from NVTX_EVENTS where start is not null and eventType in (59, 60, 70, 71) and globalTid is not null;
select count(*), total(correlationId), total(globalTid >> 24), total(globalTid), total(start), total(\"end\") from CUPTI_ACTIVITY_KIND_RUNTIME where correlationId is not null and globalTid is not null and start is not null and \"end\" is not null;
select count(*), total(c), total(p), total(s), total(e), total(d) from (select correlationId c, globalPid >> 24 p, start s, \"end\" e, deviceId d from CUPTI_ACTIVITY_KIND_KERNEL union all select correlationId, globalPid >> 24, start, \"end\", deviceId from CUPTI_ACTIVITY_KIND_MEMCPY union all select correlationId, globalPid >> 24, start, \"end\", deviceId from CUPTI_ACTIVITY_KIND_MEMSET)"
measure() {  # measure NAME THREADS SQL: appends "NAME seconds maxrss_kb"
  local name=$1 t=$2 sql=$3
  echo "$name $( { /usr/bin/time -f "%e %M" sqlite3 "$db" ".load $so" "select nsystrace_option('threads', $t)" "$sql" > /dev/null; } 2>&1 | tail -1)" >> "$results"
}
for _ in $(seq "$reps"); do
  echo "floor $( { /usr/bin/time -f "%e %M" sqlite3 "$db" "$floor" > /dev/null; } 2>&1 | tail -1)" >> "$results"
  echo "projection_floor $( { /usr/bin/time -f "%e %M" sqlite3 "$db" "$projection_floor" > /dev/null; } 2>&1 | tail -1)" >> "$results"
  for t in 1 "$threads"; do
    measure "projection_t$t" "$t" "select count(*), sum(gpu_busy_time) from nvtx_kernel_ranges"
    measure "stored_pftrace_t$t" "$t" "select perfetto_trace_file('$out/stored_t$t.pftrace') from trace_events"
    measure "derived_pftrace_t$t" "$t" "select perfetto_trace_file('$out/derived_t$t.pftrace') from trace_events where derived in (0, 1)"
    measure "derived_json_t$t" "$t" "select chrome_trace_file('$out/derived_t$t.json') from trace_events where derived in (0, 1)"
    measure "derived_json_gz_t$t" "$t" "select chrome_trace_file('$out/derived_t$t.json.gz') from trace_events where derived in (0, 1)"
  done
done
for f in stored_t1.pftrace derived_t1.pftrace derived_t1.json; do
  cmp -s "$out/$f" "$out/${f/_t1/_t$threads}" || { echo "FAIL: $f differs between 1 and $threads threads" >&2; exit 1; }
done
median() { awk -v n="$1" -v col="$2" '$1 == n { print $col }' "$results" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "profile: $db; $(nproc) cores; medians of $reps; N = $threads threads"
printf '%-24s %9s %9s %12s\n' measurement seconds "x floor" "peak MB"
f=$(median floor 2)
for m in floor projection_floor projection_t1 "projection_t$threads" stored_pftrace_t1 "stored_pftrace_t$threads" derived_pftrace_t1 "derived_pftrace_t$threads" \
         derived_json_t1 "derived_json_t$threads" derived_json_gz_t1 "derived_json_gz_t$threads"; do
  s=$(median "$m" 2)
  printf '%-24s %9.2f %9.1f %12.0f\n' "$m" "$s" "$(echo "$s / $f" | bc -l)" "$(echo "$(median "$m" 3) / 1024" | bc -l)"
done
ratio() { echo "$(median "$1" 2) / $(median "$2" 2)" | bc -l; }
printf 'the projection (nvtx_kernel_ranges): %.1fx its floor at 1 thread, %.1fx at N; N / 1 thread %.2f\n' \
  "$(ratio projection_t1 projection_floor)" "$(ratio "projection_t$threads" projection_floor)" \
  "$(ratio "projection_t$threads" projection_t1)"
printf 'N threads / 1 thread: stored %.2f, derived %.2f, JSON %.2f, .json.gz %.2f\n' \
  "$(ratio "stored_pftrace_t$threads" stored_pftrace_t1)" "$(ratio "derived_pftrace_t$threads" derived_pftrace_t1)" \
  "$(ratio "derived_json_t$threads" derived_json_t1)" "$(ratio "derived_json_gz_t$threads" derived_json_gz_t1)"
printf 'protobuf / JSON (derived, N threads): %.2f; .json.gz / .json: %.2f\n' \
  "$(ratio "derived_pftrace_t$threads" "derived_json_t$threads")" "$(ratio "derived_json_gz_t$threads" "derived_json_t$threads")"
