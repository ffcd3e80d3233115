#!/usr/bin/env bash
# Times every recipe (sql/*.sql, sql/nsys_stats/*.sql), the launch join (and the same launches read from the call_*
# columns, as the README reads them) and the README's window queries on a large profile,
# each against two baselines measured in the same run, with no extension loaded:
#   scan   SQLite reading every row of the event tables the recipes read (NVTX, CUDA API, kernels, memcpys, memsets);
#   plain  the recipe's own numbers computed by plain SQL over the raw nsys tables (tests/bench/plain/<recipe>.sql;
#          the launch join: the same join over the raw tables). Before timing, each plain file's output is compared
#          with its recipe's on this profile (a baseline that computed something else would measure nothing).
#
#   tests/bench/recipes_bench.sh [--db FILE.sqlite | --copies N [--source FILE.sqlite]] [--reps N]
#                                [--compare OTHER/nsystrace.so | --compare-sql OTHER_SOURCE_DIR] [--only REGEX]
#                                [--skip-check]
#
# --db: an existing profile (e.g. /work/bench/x200.sqlite), opened read-only; without it the profile is made once
# under build/bench/ from --source with ../shared/tools/scale-profile (--copies, default 200).
# --compare: another build of the extension (e.g. main's), run alternately with this one (A B A B), each recipe's
# median reported beside and as a ratio. --compare-sql: the recipes' SQL of another source tree (e.g. main's, from
# `git worktree add` or `git archive main sql | tar -x -C DIR`: DIR/sql/...), run alternately with this tree's with
# the same extension, so that the ratio is the SQL's alone. --only: the measurements whose names match (grep -E). --skip-check: no
# comparison of the plain baselines' output with the recipes' before timing (when it was done on this profile).
# Every measurement is a separate sqlite3 process. Printed: medians of --reps runs of the wall time and of the CPU
# time (user + system: the figure to read on a shared machine, where wall times wait for other processes), the
# ratios of CPU times to the scan and to the plain SQL, and the peak RSS; with --compare, the other's CPU and wall
# times and the ratios to them. Needs a Release build in build/ and
# /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 copies=200 db="" compare="" compare_sql="" only="" check=1
source_db=../shared/fixtures/real/nsysai_h100_2gpu_mfu_before_slice.sqlite
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --source) source_db=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --compare) compare=${2%.so}; shift 2 ;;
    --compare-sql) compare_sql=$(cd "$2" && pwd); shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip-check) check=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
[ -z "$compare" ] || [ -f "$compare.so" ] || { echo "no $compare.so" >&2; exit 2; }
[ -z "$compare_sql" ] || [ -d "$compare_sql/sql" ] || { echo "no $compare_sql/sql" >&2; exit 2; }
[ -z "$compare" ] || [ -z "$compare_sql" ] || { echo "--compare and --compare-sql: one at a time" >&2; exit 2; }
if [ -z "$db" ]; then
  mkdir -p build/bench
  db=build/bench/x$copies.sqlite
  [ -f "$db" ] || /usr/bin/python3 ../shared/tools/scale-profile "$source_db" "$db" --copies "$copies" 2>/dev/null
fi
[ -f "$db" ] || { echo "no profile $db" >&2; exit 2; }
uri="file:$db?mode=ro"
has_table() { [ "$(sqlite3 "$uri" "select count(*) from sqlite_schema where name = '$1'")" = 1 ]; }

source tests/bench/recipes_scan.sh
scan=$(recipes_scan_sql "$uri")
# The plain baselines read tables an export may lack (nsys creates them lazily): those are empty TEMP tables here,
# as the recipes see no rows of them.
prelude=""
has_table COMPOSITE_EVENTS || prelude+="create temp table COMPOSITE_EVENTS(id, start, globalTid);"
has_table SAMPLING_CALLCHAINS || prelude+="create temp table SAMPLING_CALLCHAINS(id, symbol, module, stackDepth);"
has_table OSRT_API || prelude+="create temp table OSRT_API(start, \"end\", nameId, globalTid);"
mid=$(sqlite3 "$uri" -cmd ".load $so" "select (min(ts) + max(ts)) / 2 from trace_events where kind = 'kernel'")

declare -A queries=(  # name -> what the extension runs
  [launch_join]="select count(*), count(a.name) from trace_events k left join trace_events a on a.correlation_id = k.correlation_id and a.global_pid = k.global_pid and a.kind = 'cuda_api' where k.kind = 'kernel'"
  [launch_columns]="select count(*), count(call_name) from trace_events where kind = 'kernel'"
  [window_100ms]="select kind, count(*), sum(dur) from trace_events where ts between $mid and $mid + 100000000 group by kind"
  [window_100ms_derived]="select kind, count(*), sum(dur) from trace_events where ts between $mid and $mid + 100000000 and derived in (0, 1) group by kind"
)
declare -A other_sql=()  # name -> what --compare-sql runs
declare -A plain=(  # name -> its plain-SQL baseline (no extension)
  [launch_join]="select count(*), count(a.nameId) from CUPTI_ACTIVITY_KIND_KERNEL k left join CUPTI_ACTIVITY_KIND_RUNTIME a on a.correlationId = k.correlationId and a.globalTid >> 24 = k.globalPid >> 24"
)
plain[launch_columns]=${plain[launch_join]}  # the same counts where no launch has two calls
names=()
for r in sql/*.sql sql/nsys_stats/*.sql; do
  n=${r#sql/}; n=${n%.sql}
  queries[$n]=".read $r"
  [ -n "$compare_sql" ] && [ -f "$compare_sql/$r" ] && other_sql[$n]=".read $compare_sql/$r"
  [ -f "tests/bench/plain/$n.sql" ] && plain[$n]=".read tests/bench/plain/$n.sql"
  names+=("$n")
done
names+=(launch_join launch_columns window_100ms window_100ms_derived)
if [ -n "$only" ]; then
  kept=()
  for n in "${names[@]}"; do grep -qE "$only" <<<"$n" && kept+=("$n"); done
  names=("${kept[@]}")
fi

# The plain baselines must compute what the recipes show.
for n in "${names[@]}"; do
  [ "$check" = 1 ] && [ -n "${plain[$n]:-}" ] || continue
  ours=$(sqlite3 "$uri" -cmd ".load $so" "${queries[$n]}" 2>&1 | md5sum)
  theirs=$(sqlite3 "$uri" -cmd "$prelude" "${plain[$n]}" 2>&1 | md5sum)
  if [ "$ours" != "$theirs" ]; then
    echo "plain baseline of $n differs from the recipe's output on $db" >&2; exit 1
  fi
done

results=$(mktemp)
trap 'rm -f "$results"' EXIT
measure() {  # measure LABEL ARGS...: one run, appended as "LABEL wall cpu rss_kb"
  local label=$1; shift
  local t
  t=$( { /usr/bin/time -f "%e %U %S %M" sqlite3 "$uri" "$@" > /dev/null; } 2>&1 | tail -1)
  awk -v l="$label" '{ printf "%s %s %.2f %s\n", l, $1, $2 + $3, $4 }' <<<"$t" >> "$results"
}
for i in $(seq "$reps"); do
  measure scan "$scan"
  for n in "${names[@]}"; do
    measure "$n" -cmd ".load $so" "${queries[$n]}"
    [ -z "$compare" ] || measure "$n@compare" -cmd ".load $compare" "${queries[$n]}"
    [ -z "${other_sql[$n]:-}" ] || measure "$n@compare" -cmd ".load $so" "${other_sql[$n]}"
    [ -z "${plain[$n]:-}" ] || measure "$n@plain" -cmd "$prelude" "${plain[$n]}"
  done
done
median() {  # median of column $2 for rows labelled $1 ("-" when none)
  awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
scan_cpu=$(median scan 3)
echo "nsystrace recipes benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, reps=$reps, medians"
echo "profile: $db ($(du -m "$db" | cut -f1) MB; $(sqlite3 "$uri" "select (select count(*) from NVTX_EVENTS) || ' NVTX rows, ' || (select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME) || ' CUDA API calls, ' || (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL) || ' kernels'"))"
echo "scan: wall $(median scan 2) s, cpu $scan_cpu s"
header="%-34s %7s %7s %7s %8s %8s %7s"
printf "$header" measurement wall_s cpu_s x_scan plain_s x_plain RSS_MB
[ -z "$compare$compare_sql" ] && echo || printf ' %9s %8s %10s %9s\n' compare_s x_compare cmp_wall_s x_cmp_wall
for n in "${names[@]}"; do
  cpu=$(median "$n" 3) pcpu=$(median "$n@plain" 3)
  printf "$header" "$n" "$(median "$n" 2)" "$cpu" "$(ratio "$cpu" "$scan_cpu")" "$pcpu" "$(ratio "$cpu" "$pcpu")" \
    "$(awk -v k="$(median "$n" 4)" 'BEGIN { print k == "-" ? "-" : int(k / 1024) }')"
  [ -z "$compare$compare_sql" ] && echo || {
    c=$(median "$n@compare" 3) cw=$(median "$n@compare" 2)
    printf ' %9s %8s %10s %9s\n' "$c" "$(ratio "$cpu" "$c")" "$cw" "$(ratio "$(median "$n" 2)" "$cw")"
  }
done
