#!/usr/bin/env bash
# The profile is never modified: every function runs on copies opened READ-WRITE (so a write would succeed) and the
# files' SHA-256 must not change. nsystrace_create_indexes(), whose documented purpose is to write, must change it.
#   check_profile_unchanged.sh SQLITE3 EXTENSION.so SOURCE_DIR
set -euo pipefail
sqlite3_bin=$1 so=${2%.so} src=$3
source "$src/tests/profiles.sh"
profiles=("$tmp/example.sqlite")  # the real exports are checked on writable copies
for f in "${real_exports[@]}"; do cp "$f" "$tmp/"; chmod u+w "$tmp/$(basename "$f")"; profiles+=("$tmp/$(basename "$f")"); done
[ ${#real_exports[@]} -gt 0 ] || echo "check_profile_unchanged: ../shared absent: checking the bundled example only"
passed=0 failed=0
for p in "${profiles[@]}"; do
  before=$(sha256sum "$p" | cut -d' ' -f1)
  "$sqlite3_bin" "$p" -cmd ".load $so" > /dev/null 2>&1 <<SQL || true
select count(*), sum(length(args)) from trace_events;
select length(chrome_trace(*)) from trace_events;
select length(chrome_trace(*)) from trace_events where kind = 'kernel' and ts > 0;
select count(*) from nvtx_kernel_ranges;
select chrome_trace_file('$tmp/out.json.gz') from trace_events;
select chrome_trace(*) from (select * from trace_events order by ts);
select chrome_trace(kind, name, ts, dur, pid, tid) from trace_events;
SQL
  after=$(sha256sum "$p" | cut -d' ' -f1)
  if [ "$before" = "$after" ]; then passed=$((passed + 1)); else echo "FAILED: $(basename "$p") was modified"; failed=$((failed + 1)); fi
done
# The one writer writes (and the check above would have seen it).
before=$(sha256sum "$tmp/example.sqlite" | cut -d' ' -f1)
"$sqlite3_bin" "$tmp/example.sqlite" -cmd ".load $so" "select nsystrace_create_indexes()" > /dev/null
after=$(sha256sum "$tmp/example.sqlite" | cut -d' ' -f1)
if [ "$before" != "$after" ]; then passed=$((passed + 1)); else echo "FAILED: nsystrace_create_indexes() wrote nothing"; failed=$((failed + 1)); fi
echo "check_profile_unchanged: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
