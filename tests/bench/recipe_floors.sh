#!/usr/bin/env bash
# What a recipe's own SQL costs SQLite, apart from reading the rows: for the recipes over 8x the scan in
# recipes_bench.sh, the grouping each one does, run over a native TEMP copy of exactly the rows it groups
# (tests/bench/floors/<recipe>.sql: the copy, then "-- timed:", then the grouping). SQLite's GROUP BY, sort and
# aggregates are then all that runs, so their CPU time is a floor of the recipe on this design whatever the
# extension does. Beside it, the recipe itself (its own sqlite3 process) and the time to read those rows into the copy
# (the extension's scan plus SQLite's insert).
# Ratios are to the same scan as recipes_bench.sh's (SQLite reading the five event tables), measured in each round.
#
#   tests/bench/recipe_floors.sh --db FILE.sqlite [--reps N]
#
# Needs a Release build in build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 db=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
so=$PWD/build/nsystrace
[ -f "$so.so" ] || { echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build" >&2; exit 2; }
[ -f "$db" ] || { echo "usage: $0 --db FILE.sqlite [--reps N]" >&2; exit 2; }
uri="file:$db?mode=ro"
source tests/bench/recipes_scan.sh
scan=$(recipes_scan_sql "$uri")
results=$(mktemp)
trap 'rm -f "$results"' EXIT
cpu_of() { awk '/^Run Time:/ { print $6 + $8 }'; }  # "Run Time: real R user U sys S" -> U + S, one line each
for i in $(seq "$reps"); do
  t=$( { /usr/bin/time -f "%U %S" sqlite3 "$uri" "$scan" > /dev/null; } 2>&1 | tail -1)
  awk '{ printf "scan %.2f\n", $1 + $2 }' <<<"$t" >> "$results"
  for f in tests/bench/floors/*.sql; do
    n=$(basename "$f" .sql)
    setup=$(sed '/^-- timed:/,$d; /^--/d' "$f") timed=$(sed '1,/^-- timed:/d' "$f")
    times=$(printf '.load %s\n.timer on\n%s\n%s\n' "$so" "$setup" "$timed" | sqlite3 "$uri" | cpu_of)
    [ "$(wc -l <<<"$times")" = 2 ] || { echo "$f: expected two timed statements" >&2; exit 1; }
    recipe=sql/${n/nsys_stats_/nsys_stats/}.sql
    t=$( { /usr/bin/time -f "%U %S" sqlite3 "$uri" -cmd ".load $so" ".read $recipe" > /dev/null; } 2>&1 | tail -1)
    echo "$n $(tr '\n' ' ' <<<"$times") $(awk '{ printf "%.2f", $1 + $2 }' <<<"$t")" >> "$results"
  done
done
median() {  # median of column $2 for rows labelled $1
  awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
scan_cpu=$(median scan 2)
echo "recipe floors, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, reps=$reps, medians of CPU s; scan $scan_cpu s"
x() { awk -v a="$1" -v b="$scan_cpu" 'BEGIN { printf "%.2f", a / b }'; }
printf "%-34s %10s %7s %10s %7s %10s %7s\n" recipe recipe_cpu x_scan copy_cpu x_scan group_cpu x_scan
for f in tests/bench/floors/*.sql; do
  n=$(basename "$f" .sql)
  c=$(median "$n" 2) g=$(median "$n" 3) r=$(median "$n" 4)
  printf "%-34s %10.2f %7s %10.2f %7s %10.2f %7s\n" "${n/nsys_stats_/nsys_stats/}" "$r" "$(x "$r")" "$c" "$(x "$c")" "$g" "$(x "$g")"
done
