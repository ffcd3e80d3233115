#!/usr/bin/env bash
# Runs the libFuzzer targets, at once, for a bounded time: tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS
# Seeds: our fixtures built into databases, and the real exports of ../shared when present.
set -euo pipefail
build=$1 seconds=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/json" "$work/export" "$work/payload"
for f in "$src"/tests/fixtures/*.sql; do
  head -c 4000 "$f" > "$work/json/$(basename "$f").txt"
  sqlite3 "$work/export/$(basename "$f" .sql).sqlite" < "$f"
done
sqlite3 "$work/export/example.sqlite" < "$src/examples/example_profile.sql"
if [ -d "$src/../shared/fixtures/real" ]; then
  for f in nsysai_mock_rtx3080_tiny rtx3080_kmeans_legacy_nometa; do
    cp "$src/../shared/fixtures/real/$f.sqlite" "$work/export/" 2>/dev/null || true
  done
else
  echo "fuzz: ../shared absent: export fuzzing seeded with our own fixtures only"
fi
passed=0 failed=0
# The payload decoder's seed: NCCL's all-reduce schema (3 entries: uint64 with no offset, size_t at 8, the
# 4-byte enum at 16; fuzz_nvtx_payload.cc says the layout), then the fixture's blob of the range at 500.
hex="031100FFFF000000000000000015000800000000000000000025001000000000000000000004"
hex+=$(sqlite3 "$work/export/nccl_payloads.sqlite" "select hex(binaryData) from NVTX_EVENTS where start = 500")
printf "$(echo "$hex" | sed 's/../\\x&/g')" > "$work/payload/seed"
# The targets run at once (each on about one core), then their results are read in turn.
targets="json_writer:json export_reader:export nvtx_payload:payload"
for target in $targets; do
  name=${target%%:*} corpus=$work/${target##*:}
  ("$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=4096 \
     -print_final_stats=1 "$corpus" > "$work/$name.log" 2>&1; echo $? > "$work/$name.rc") &
done
wait
for target in $targets; do
  name=${target%%:*}
  if [ "$(cat "$work/$name.rc")" = 0 ]; then
    echo "fuzz_$name: ok ($(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$work/$name.log" || echo 'runs unknown'))"
    passed=$((passed + 1))
  else
    echo "fuzz_$name: FAILED"; tail -40 "$work/$name.log"; failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
