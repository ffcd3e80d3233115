#!/usr/bin/env bash
# The `nsystrace` command against the SQL conversion alone, the same rows (every row, derived in (0, 1)) to the same
# kind of file: what the command adds (its summary). This build's command and a baseline's, each with its own
# nsystrace.so, run alternately with the SQL conversion, each its own process. Medians of --reps.
#
#   tests/bench/command_bench.sh --baseline-so DIR --baseline-rev REV [--reps N] [--db FILE] [--output NAME]
#
# DIR holds the baseline's nsystrace.so; REV is the git revision whose ext/python/nsystrace is the baseline's
# command (e.g. main). --output: the trace's name, by its extension the format (default t.pftrace).
# Needs Debian's /usr/bin/python3 (it can load SQLite extensions). Default profile: /work/bench/x50.sqlite.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 db=/work/bench/x50.sqlite base_so="" base_rev="" name=t.pftrace
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --baseline-so) base_so=$2; shift 2 ;;
    --baseline-rev) base_rev=$2; shift 2 ;;
    --output) name=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -f "$base_so/nsystrace.so" ] && [ -n "$base_rev" ] || { echo "--baseline-so DIR and --baseline-rev REV are required" >&2; exit 2; }
[ -f build/nsystrace.so ] || { echo "build first (Release): cmake --build build -j2" >&2; exit 2; }
out=$(mktemp -d /tmp/command_bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
# The two packages as installed: the command's Python files with their .so beside them.
mkdir -p "$out/new" "$out/old/nsystrace"
cp -r ext/python/nsystrace "$out/new/" && cp build/nsystrace.so "$out/new/nsystrace/"
git archive "$base_rev" ext/python/nsystrace | tar -x -C "$out/old" --strip-components=2
cp "$base_so/nsystrace.so" "$out/old/nsystrace/"
function=$(case $name in *.json|*.json.gz) echo chrome_trace_file ;; *) echo perfetto_trace_file ;; esac)
results=$out/results
run() {  # run NAME COMMAND...: appends "NAME wall_s"
  local n=$1; shift
  rm -f "$out/$name"
  echo "$n $( { /usr/bin/time -f "%e" "$@" > /dev/null; } 2>&1 | tail -1)" >> "$results"
}
for _ in $(seq "$reps"); do
  run sql_new sqlite3 "file:$db?mode=ro" ".load $out/new/nsystrace/nsystrace" "select $function('$out/$name') from trace_events where derived in (0, 1)"
  run command_new env PYTHONPATH="$out/new" /usr/bin/python3 -m nsystrace "$db" -o "$out/$name" --no-progress
  run sql_old sqlite3 "file:$db?mode=ro" ".load $out/old/nsystrace/nsystrace" "select $function('$out/$name') from trace_events where derived in (0, 1)"
  run command_old env PYTHONPATH="$out/old" /usr/bin/python3 -m nsystrace "$db" -o "$out/$name" --no-progress
done
median() { awk -v n="$1" '$1 == n { print $2 }' "$results" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "command benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores (shared), load $(cut -d' ' -f1-3 /proc/loadavg), reps=$reps, medians"
echo "profile: $db; output: $name; baseline: $base_rev's command with $base_so/nsystrace.so"
for v in new old; do
  printf '%-4s sql %7s s   command %7s s   command/sql %.2f\n' "$v" "$(median sql_$v)" "$(median command_$v)" \
    "$(echo "$(median command_$v) / $(median sql_$v)" | bc -l)"
done
