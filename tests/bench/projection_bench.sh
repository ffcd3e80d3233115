#!/usr/bin/env bash
# The NVTX GPU projection's cost on a scaled profile: this build (A) against a baseline build (B), run alternately
# (A B A B ...) so that both see the same machine; medians of --reps runs, each its own sqlite3 process, and B/A.
#
#   tests/bench/projection_bench.sh --base DIR/nsystrace [--profile FILE] [--reps N] [--threads N] [--only NAME]
#
# FILE (default /work/bench/x200.sqlite) is opened read-only. The window is 0.5 s from the middle of its kernels.
#   ranges         select count(*) ... from nvtx_kernel_ranges          (the whole projection)
#   window         a 0.5 s ts window of trace_events with derived rows  (only the ranges that reach it)
#   window_plain   the same window without derived rows                 (the floor: the window's own rows)
#   whole          every row of trace_events with derived rows
#   perfetto       perfetto_trace_file of every row with derived rows
# Columns: wall seconds and CPU seconds (user + sys: less sensitive to other processes on a shared machine) of
# each build, peak memory (MB), and the ratios B/A.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=/work/bench/x200.sqlite reps=3 base="" threads="" only=""
while [ $# -gt 0 ]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=${NSYSTRACE_SO:-$PWD/build/nsystrace}
[ -n "$base" ] && [ -f "$base.so" ] || { echo "--base DIR/nsystrace: a baseline build's nsystrace.so" >&2; exit 2; }
[ -f "$so.so" ] || { echo "build first: cmake --build build" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uri="file:$profile?mode=ro"
a=$(sqlite3 "$uri" "select (min(start) + max(start)) / 2 from CUPTI_ACTIVITY_KIND_KERNEL")
b=$((a + 500000000))
setup=""
[ -n "$threads" ] && setup="select nsystrace_option('threads', $threads);"
declare -A sql=(
  [ranges]="select count(*), sum(gpu_busy_time) from nvtx_kernel_ranges"
  [window]="select count(*), sum(dur) from trace_events where ts between $a and $b and derived in (0, 1)"
  [window_plain]="select count(*), sum(dur) from trace_events where ts between $a and $b"
  [whole]="select count(*), sum(dur) from trace_events where derived in (0, 1)"
  [perfetto]="select perfetto_trace_file('$dir/out.pftrace') from trace_events where derived in (0, 1)"
)
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
run() {  # run SO NAME: appends "wall cpu MB" to $dir/NAME.SO-label
  /usr/bin/time -o "$dir/t" -f "%e %U %S %M" sqlite3 "$uri" ".load $1" "$setup" "${sql[$2]}" > "$dir/answer.$3"
  awk '{ printf "%s %.2f %d\n", $1, $2 + $3, $4 / 1024 }' "$dir/t" >> "$dir/$2.$3"
}
echo "profile $profile, window [$a, $b], reps $reps${threads:+, threads $threads}; A = $so, B = $base"
printf '%-13s %9s %9s %9s %9s %7s %7s %8s %8s\n' query "A wall" "A cpu" "B wall" "B cpu" "A MB" "B MB" "B/A wall" "B/A cpu"
for name in ranges window window_plain whole perfetto; do
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  for _ in $(seq "$reps"); do
    run "$so" "$name" A
    run "$base" "$name" B
  done
  if [ "$name" != perfetto ] && ! cmp -s "$dir/answer.A" "$dir/answer.B"; then
    echo "$name: the builds disagree: $(cat "$dir/answer.A") vs $(cat "$dir/answer.B")" >&2
  fi
  aw=$(cut -d' ' -f1 "$dir/$name.A" | median) ac=$(cut -d' ' -f2 "$dir/$name.A" | median)
  bw=$(cut -d' ' -f1 "$dir/$name.B" | median) bc=$(cut -d' ' -f2 "$dir/$name.B" | median)
  am=$(cut -d' ' -f3 "$dir/$name.A" | median) bm=$(cut -d' ' -f3 "$dir/$name.B" | median)
  printf '%-13s %9.2f %9.2f %9.2f %9.2f %7d %7d %8.2f %8.2f\n' "$name" "$aw" "$ac" "$bw" "$bc" "$am" "$bm" \
    "$(echo "$bw / $aw" | bc -l)" "$(echo "$bc / $ac" | bc -l)"
done
