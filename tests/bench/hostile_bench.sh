#!/usr/bin/env bash
# Hostile exports must cost n log n, not n^2: each shape is generated at n and 4n rows and timed (median of
# --reps runs, each its own sqlite3 process); the ratio of the two medians should stay near 4 (4.4 at most for
# n log n at these sizes), where a quadratic step shows as 16.
#
#   tests/bench/hostile_bench.sh [--reps N] [--n ROWS] [--shapes "a b"]   (NSYSTRACE_SO=path/nsystrace: another
#                                                                          build, to compare)
#
# Shapes (no ../shared needed):
#   staggered  n kernels on one stream, each overlapping the previous partially: n lanes on one track
#   leaked     n NVTX start/end ranges never ended on one thread (each encloses all later ones), one launch inside
#              all of them: the NVTX projection nests n deep
#   leaked_pp  the same as push/pop ranges (the timeline's own nesting, and the projection's)
#   leaked_launches  n NVTX start/end ranges never ended on one thread, each followed by a launch: range i holds the
#              launches i..n-1 (n^2/2 (range, launch) pairs; the projection's totals must not list them)
# Besides the seconds, the peak resident memory of one run (MB, /usr/bin/time), which must grow linearly.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 n=20000 shapes="staggered leaked leaked_pp leaked_launches"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=${NSYSTRACE_SO:-$PWD/build/nsystrace}
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

make_profile() {  # make_profile SHAPE ROWS FILE
  local shape=$1 rows=$2 f=$3 type=60
  local series="with recursive c(i) as (select 0 union all select i + 1 from c where i < $rows - 1)"
  case $shape in
    staggered)
      sqlite3 "$f" "create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'k');
        create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, shortName);
        $series insert into CUPTI_ACTIVITY_KIND_KERNEL select i * 10, i * 10 + $rows * 10, 0, 7, i, 281476654432256, 1 from c;" ;;
    leaked|leaked_pp)
      [ "$shape" = leaked_pp ] && type=59
      sqlite3 "$f" "create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'cudaLaunchKernel');
        create table NVTX_EVENTS(start, end, eventType, text, globalTid, domainId, endGlobalTid);
        $series insert into NVTX_EVENTS select i * 10, NULL, $type, 'leak', 281476654432356, 0, NULL from c;
        create table CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);
        insert into CUPTI_ACTIVITY_KIND_RUNTIME values ($rows * 10 + 5, $rows * 10 + 6, 281476654432356, 1, 1);
        create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, shortName);
        insert into CUPTI_ACTIVITY_KIND_KERNEL values ($rows * 10 + 7, $rows * 10 + 8, 0, 7, 1, 281476654432256, 1);" ;;
    leaked_launches)
      sqlite3 "$f" "create table StringIds(id integer primary key, value text); insert into StringIds values (1, 'cudaLaunchKernel');
        create table NVTX_EVENTS(start, end, eventType, text, globalTid, domainId, endGlobalTid);
        $series insert into NVTX_EVENTS select i * 10, NULL, 60, 'leak', 281476654432356, 0, NULL from c;
        create table CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);
        $series insert into CUPTI_ACTIVITY_KIND_RUNTIME select i * 10 + 5, i * 10 + 6, 281476654432356, i + 1, 1 from c;
        create table CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, shortName);
        $series insert into CUPTI_ACTIVITY_KIND_KERNEL select i * 10 + 7, i * 10 + 12, 0, 7, i + 1, 281476654432256, 1 from c;" ;;
  esac
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
time_one() {  # time_one FILE: seconds of one conversion of every row to a file (its peak RSS in $dir/rss, KB)
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -o "$dir/rss" -f %M sqlite3 "$1" ".load $so" \
    "select chrome_trace_file('$dir/out.json') from trace_events where derived in (0, 1)" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
rss_mb() { echo "$(tail -1 "$dir/rss") / 1024" | bc; }

printf '%-16s %8s %9s %7s %8s %9s %7s %7s\n' shape rows "s (n)" MB rows "s (4n)" MB ratio
for shape in $shapes; do
  make_profile "$shape" "$n" "$dir/$shape-1.sqlite"
  make_profile "$shape" $((4 * n)) "$dir/$shape-4.sqlite"
  small=$(for _ in $(seq "$reps"); do time_one "$dir/$shape-1.sqlite"; done | median)
  small_mb=$(rss_mb)
  large=$(for _ in $(seq "$reps"); do time_one "$dir/$shape-4.sqlite"; done | median)
  large_mb=$(rss_mb)
  printf '%-16s %8d %9.3f %7d %8d %9.3f %7d %7.2f\n' "$shape" "$n" "$small" "$small_mb" $((4 * n)) "$large" "$large_mb" \
    "$(echo "$large / $small" | bc -l)"
done
