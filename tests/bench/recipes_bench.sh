#!/usr/bin/env bash
# Times every recipe (sql/*.sql, sql/nsys_stats/*.sql) and the README's join and window queries on the 200x profile,
# each against a baseline measured in the same run: SQLite reading every row of the event tables the recipes read
# (NVTX, CUDA API, kernels, memcpys, memsets), with no extension. Each recipe must finish in under 10 s here.
#
#   tests/bench/recipes_bench.sh [--reps N] [--copies N] [--source FILE.sqlite]
#
# Needs ../shared (scale-profile and the real exports), a Release build in build/ and /usr/bin/time. The profile is
# made once under build/bench/. Every measurement is a separate sqlite3 process on the profile opened read-only;
# medians of --reps runs are printed with the ratio to the baseline's median and the peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 copies=200
source_db=../shared/fixtures/real/nsysai_h100_2gpu_mfu_before_slice.sqlite
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --source) source_db=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
mkdir -p build/bench
db=build/bench/x$copies.sqlite
[ -f "$db" ] || /usr/bin/python3 ../shared/tools/scale-profile "$source_db" "$db" --copies "$copies" 2>/dev/null
uri="file:$db?mode=ro"

baseline="select (select count(*) + sum(\"end\" - start) from NVTX_EVENTS) + (select count(*) + sum(\"end\" - start) from CUPTI_ACTIVITY_KIND_RUNTIME) + (select count(*) + sum(\"end\" - start) from CUPTI_ACTIVITY_KIND_KERNEL)"
for t in CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET; do
  [ "$(sqlite3 "$uri" "select count(*) from sqlite_schema where name = '$t'")" = 1 ] &&
    baseline="$baseline + (select count(*) + sum(\"end\" - start) from $t)"
done
mid=$(sqlite3 "$uri" -cmd ".load $so" "select (min(ts) + max(ts)) / 2 from trace_events where kind = 'kernel'")
declare -A queries=(
  [baseline]="$baseline"
  [launch_join]="select count(*), count(a.name) from trace_events k left join trace_events a on a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and a.kind = 'cuda_api' where k.kind = 'kernel'"
  [window_100ms]="select kind, count(*), sum(dur) from trace_events where ts between $mid and $mid + 100000000 group by kind"
  [window_100ms_derived]="select kind, count(*), sum(dur) from trace_events where ts between $mid and $mid + 100000000 and derived in (0, 1) group by kind"
)
names=(baseline)
for r in sql/*.sql sql/nsys_stats/*.sql; do
  n=${r#sql/}; n=${n%.sql}
  queries[$n]=".read $r"
  names+=("$n")
done
names+=(launch_join window_100ms window_100ms_derived)

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for i in $(seq "$reps"); do
  for n in "${names[@]}"; do
    if [ "$n" = baseline ]; then load=(); else load=(-cmd ".load $so"); fi
    t=$( { /usr/bin/time -f "%e %M" sqlite3 "$uri" "${load[@]}" "${queries[$n]}" > /dev/null; } 2>&1 | tail -1)
    echo "$n $t" >> "$results"
  done
done
median() {  # median of column $2 for rows named $1
  awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
base=$(median baseline 2)
echo "nsystrace recipes benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, reps=$reps, medians"
echo "profile: ${copies}x $(basename "$source_db") ($(du -m "$db" | cut -f1) MB; $(sqlite3 "$uri" "select (select count(*) from NVTX_EVENTS) || ' NVTX rows, ' || (select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME) || ' CUDA API calls, ' || (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL) || ' kernels'"))"
printf '%-34s %9s %12s %12s\n' measurement seconds x_baseline peak_RSS_MB
slow=0
for n in "${names[@]}"; do
  s=$(median "$n" 2)
  printf '%-34s %9s %12s %12d\n' "$n" "$s" "$(awk -v s="$s" -v b="$base" 'BEGIN { printf "%.1f", s / b }')" "$(( $(median "$n" 3) / 1024 ))"
  case $n in baseline|launch_join|window_*) continue ;; esac  # not recipes
  if awk -v s="$s" 'BEGIN { exit !(s >= 10) }'; then slow=$((slow + 1)); fi
done
echo "recipes at or over 10 s: $slow"
