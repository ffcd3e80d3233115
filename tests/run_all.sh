#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. Release build: unit, integration, SQL-level, conformance tests (ctest);
#   2. the host-SQLite matrix: a slice of those tests, with the same binaries, in each SQLite of
#      tests/hosts/sqlite_versions.txt (the documented minimum to the newest release; amalgamations from pinned npm
#      tarballs, built once into build/sqlite-hosts) and the refusal below the minimum (tests/hosts/run_matrix.sh);
#   3. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer (tests that load the .so into
#      uninstrumented programs — the sqlite3 shell, Python, Node, the other languages — are left out there: ASan must
#      come first; the generated grids and the tests over every real export sampled), then the matrix's test binaries
#      on the newest SQLite (the matrix's unit slice runs under ASan there only);
#   4. ThreadSanitizer over every threaded path: the thread_tests binary and the projection's threads and its reader,
#      and the hosts' lifecycle test (two host threads), on the system's and the newest SQLite, all at once;
#   5. the libFuzzer targets (clang), at once, for a bounded time each (NSYSTRACE_FUZZ_SECONDS, default 20).
# On 2 cores the passes' processes that each run on one core run side by side (the matrix's versions, TSan's tests,
# the fuzzers): docs/internals.md#the-test-suite has the figures.
#
# tests/run_all.sh --quick: the edit loop's tier, a few minutes: the Release build and its tests with the generated
# grids sampled as under the sanitizers, without the real exports' suites and the Python package (the whole suite
# runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
if [ "${1:-}" = "--quick" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build build -j"$jobs"
  NSYSTRACE_GRID_STRIDE=8 ctest --test-dir build --output-on-failure -j"$jobs" \
    -E '^(SharedFixtures/|Exports/GpuModel.*/real_|python\.|viewer\.|languages\.)'
  exit
fi
# Each pass says when it began (seconds since the suite started), so a CI log shows where the time goes.
pass() { echo "== $1 (at ${SECONDS} s)"; }
# at_once "FUNCTION ARGS" ...: each in the background, its output kept apart and printed in turn once all have ended;
# fails when any did.
at_once() {
  local logs run pids=() i=0 rc=0
  logs=$(mktemp -d)
  for run in "$@"; do
    $run > "$logs/${#pids[@]}" 2>&1 &
    pids+=($!)
  done
  for run in "$@"; do
    if ! wait "${pids[$i]}"; then rc=1; echo "FAILED: $run"; fi
    cat "$logs/$i"
    i=$((i + 1))
  done
  rm -rf "$logs"
  return $rc
}
pass "1/5 Release build and tests"
# The viewer check parses our traces with the Chrome DevTools trace engine (npm package pinned in package.json).
if command -v npm > /dev/null; then
  (cd tests/viewer && npm install --no-audit --no-fund --loglevel=error > /dev/null)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
pass "2/5 host SQLites"
tests/hosts/run_matrix.sh build
# The newest SQLite of the matrix: the sanitizer passes run the matrix's binaries on it too.
newest=$(awk '!/^#/ && NF == 4 { v = $1 } END { print v }' tests/hosts/sqlite_versions.txt)
pass "3/5 AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNSYSTRACE_SANITIZE=ON > /dev/null
cmake --build build-asan -j"$jobs"
# The generated query grids run a sample of their shapes here (every 16th), as do the tests over every real export
# (each test on every 16th export, testdb::not_sampled_under_sanitizers); the Release pass ran them all. Every real
# export's whole conversion (RealExport.ConvertsCompletelyAndExactly) runs under ASan in the matrix's run below.
# The matrix's unit slice runs under ASan once, in the matrix's run below (on the newest SQLite): ctest leaves it out.
matrix_units=$(tests/hosts/run_matrix.sh --unit-slice | sed 's/\.\*//g; s/:/|/g')
NSYSTRACE_GRID_STRIDE=16 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -E "^(sql\\.|shared_object|viewer\\.|examples\\.|python\\.|languages\\.|SharedFixtures/RealExport\\.ConvertsCompletely)|^($matrix_units)\\."
MATRIX_SANITIZED=1 MATRIX_VERSIONS=$newest MATRIX_CACHE=build/sqlite-hosts tests/hosts/run_matrix.sh build-asan
pass "4/5 ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_SANITIZE=thread > /dev/null
cmake --build build-tsan -j"$jobs" --target thread_tests projection_tests host_lifecycle_test
# Each of these processes runs on about one core: they run at once (at_once), thread_tests in two shards.
tsan="halt_on_error=1 second_deadlock_stack=1"
thread_tests() {  # thread_tests SHARD: half of thread_tests' tests
  TSAN_OPTIONS=$tsan NSYSTRACE_GRID_STRIDE=16 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$1 \
    build-tsan/tests/thread_tests --gtest_brief=1
}
projection_threads() {  # the projection on threads, and its ranges read on a connection of its own beside SQLite's
  # thread (its other differential tests ran in the passes above)
  TSAN_OPTIONS=$tsan build-tsan/tests/projection_tests --gtest_brief=1 \
    --gtest_filter='ProjectionThreads.*:ProjectionDifferential.GeneratedFilesReadOnTwoConnections*'
}
# What bindings do (two host threads on two connections, loads and closes), on the system's SQLite and the newest;
# the suppressions are for TSan's blindness to mremap, which our growing buffers use (the file says how).
hosts_tsan="$tsan suppressions=$PWD/tests/hosts/tsan_mremap.supp"
lifecycle() {  # lifecycle [SQLITE_VERSION]: on the system's SQLite, or on that version of the matrix's
  if [ -n "${1:-}" ]; then
    LD_LIBRARY_PATH=$PWD/build/sqlite-hosts/$1 NSYSTRACE_EXPECT_SQLITE=$1 TSAN_OPTIONS=$hosts_tsan \
      build-tsan/tests/host_lifecycle_test build-tsan/nsystrace.so .
  else
    TSAN_OPTIONS=$hosts_tsan build-tsan/tests/host_lifecycle_test build-tsan/nsystrace.so .
  fi
}
at_once "thread_tests 0" "thread_tests 1" projection_threads lifecycle "lifecycle $newest"
pass "5/5 fuzzing"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_FUZZ=ON > /dev/null
cmake --build build-fuzz -j"$jobs" --target fuzzers  # not the .so: no pass loads it
tests/fuzz/run_fuzzers.sh build-fuzz "${NSYSTRACE_FUZZ_SECONDS:-20}"
echo "== the whole suite passed in ${SECONDS} s"
