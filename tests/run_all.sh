#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. Release build: unit, integration, SQL-level, conformance tests (ctest);
#   2. the host-SQLite matrix: a slice of those tests, with the same binaries, in each SQLite of
#      tests/hosts/sqlite_versions.txt (the documented minimum to the newest release; amalgamations from pinned npm
#      tarballs, built once into build/sqlite-hosts) and the refusal below the minimum (tests/hosts/run_matrix.sh);
#   3. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer (tests that load the .so into
#      uninstrumented programs — the sqlite3 shell, Python, Node, the other languages — are left out there: ASan must
#      come first), then the matrix's test binaries on the newest SQLite;
#   4. ThreadSanitizer over every threaded path: the thread_tests binary and the projection's threads and its reader,
#      and the hosts' lifecycle test (two host threads), on the system's and the newest SQLite;
#   5. the libFuzzer targets (clang) for a bounded time each (NSYSTRACE_FUZZ_SECONDS, default 20).
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
# The generated query grids run a sample of their shapes here (every 8th); the Release pass ran them all. Every real
# export's whole conversion (RealExport.ConvertsCompletelyAndExactly) runs under ASan in the matrix's run below.
NSYSTRACE_GRID_STRIDE=8 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -E '^(sql\.|shared_object|viewer\.|examples\.|python\.|languages\.|SharedFixtures/RealExport\.ConvertsCompletely)'
MATRIX_SANITIZED=1 MATRIX_VERSIONS=$newest MATRIX_CACHE=build/sqlite-hosts tests/hosts/run_matrix.sh build-asan
pass "4/5 ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_SANITIZE=thread > /dev/null
cmake --build build-tsan -j"$jobs" --target thread_tests projection_tests host_lifecycle_test
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" NSYSTRACE_GRID_STRIDE=8 build-tsan/tests/thread_tests --gtest_brief=1
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/projection_tests --gtest_brief=1 \
  --gtest_filter='ProjectionThreads.*:ProjectionDifferential.GeneratedFilesReadOnTwoConnections*'  # the projection
  # on threads, and its ranges read on a connection of its own beside SQLite's thread (its other differential tests
  # ran in the passes above)
# What bindings do (two host threads on two connections, loads and closes), on the system's SQLite and the newest;
# the suppressions are for TSan's blindness to mremap, which our growing buffers use (the file says how).
hosts_tsan="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/hosts/tsan_mremap.supp"
TSAN_OPTIONS=$hosts_tsan build-tsan/tests/host_lifecycle_test build-tsan/nsystrace.so .
LD_LIBRARY_PATH=$PWD/build/sqlite-hosts/$newest NSYSTRACE_EXPECT_SQLITE=$newest TSAN_OPTIONS=$hosts_tsan \
  build-tsan/tests/host_lifecycle_test build-tsan/nsystrace.so .
pass "5/5 fuzzing"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_FUZZ=ON > /dev/null
cmake --build build-fuzz -j"$jobs" --target fuzzers  # not the .so: no pass loads it
tests/fuzz/run_fuzzers.sh build-fuzz "${NSYSTRACE_FUZZ_SECONDS:-20}"
echo "== the whole suite passed in ${SECONDS} s"
