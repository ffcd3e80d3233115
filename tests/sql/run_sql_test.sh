#!/usr/bin/env bash
# Runs one SQL-level test file through the sqlite3 shell with the built extension loaded.
#   run_sql_test.sh SQLITE3 EXTENSION.so SOURCE_DIR TEST.test.sql
# The test file's first line names its fixture: "-- fixture: path/relative/to/source.sql" (built into a temporary
# database; the fixture is applied read-write there, never to a user's file). Every statement that returns a row
# returns ('label', boolean): the test passes when every label comes back with 1 and at least one ran.
set -euo pipefail
sqlite3_bin=$1 so=$2 src=$3 test=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixture=$(sed -n '1s/^-- fixture: *//p' "$test")
db="$tmp/fixture.sqlite"
if [ -n "$fixture" ]; then
  "$sqlite3_bin" "$db" < "$src/$fixture"
fi
if ! "$sqlite3_bin" -bail -separator '|' "$db" -cmd ".load ${so%.so}" < "$test" > "$tmp/out" 2> "$tmp/err"; then
  echo "FAILED to run $test:"; cat "$tmp/err" "$tmp/out"; exit 1
fi
passed=$(grep -c '|1$' "$tmp/out" || true)
failed=$(grep -vc '|1$' "$tmp/out" || true)
grep -v '|1$' "$tmp/out" | sed 's/^/FAILED: /' || true
echo "$(basename "$test"): $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
