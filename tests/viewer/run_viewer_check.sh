#!/usr/bin/env bash
# Converts the bundled example and every real export (../shared, when present) with the built .so, then parses each
# trace with the Chrome DevTools trace engine under Node (check_trace_engine.mjs).
#   run_viewer_check.sh SQLITE3 EXTENSION.so SOURCE_DIR
# Exit 77 (reported as skipped by CTest) when node or the npm package is missing: tests/run_all.sh installs it.
set -euo pipefail
sqlite3_bin=$1 so=${2%.so} src=$3
here=$src/tests/viewer
if ! command -v node > /dev/null || [ ! -d "$here/node_modules/@paulirish/trace_engine" ]; then
  echo "SKIPPED: node or @paulirish/trace_engine missing (run: cd tests/viewer && npm install)"; exit 77
fi
source "$src/tests/profiles.sh"
traces=()
for p in "${profiles[@]}"; do
  out="$tmp/$(basename "$p" .sqlite).json"
  "$sqlite3_bin" "file:$p?mode=ro" -cmd ".load $so" "select chrome_trace_file('$out') from trace_events" > /dev/null
  traces+=("$out")
done
node "$here/check_trace_engine.mjs" "${traces[@]}"
