#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. Release build: unit, integration, SQL-level, conformance tests (ctest);
#   2. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer (tests that load the .so into
#      uninstrumented programs — the sqlite3 shell, Python, Node — are left out there: ASan must come first);
#   3. ThreadSanitizer over every threaded path: the thread_tests binary and the projection's threads and its reader;
#   4. the libFuzzer targets (clang) for a bounded time each (NSYSTRACE_FUZZ_SECONDS, default 30).
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
    -E '^(SharedFixtures/|Exports/GpuModel.*/real_|python\.|viewer\.)'
  exit
fi
echo "== 1/4 Release build and tests"
# The viewer check parses our traces with the Chrome DevTools trace engine (npm package pinned in package.json).
if command -v npm > /dev/null; then
  (cd tests/viewer && npm install --no-audit --no-fund --loglevel=error > /dev/null)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
echo "== 2/4 AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNSYSTRACE_SANITIZE=ON > /dev/null
cmake --build build-asan -j"$jobs"
# The generated query grids run a sample of their shapes here (every 8th); the Release pass ran them all.
NSYSTRACE_GRID_STRIDE=8 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -E '^(sql\.|shared_object|viewer\.|examples\.|python\.)'
echo "== 3/4 ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_SANITIZE=thread > /dev/null
cmake --build build-tsan -j"$jobs" --target thread_tests projection_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" NSYSTRACE_GRID_STRIDE=8 build-tsan/tests/thread_tests --gtest_brief=1
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/projection_tests --gtest_brief=1 \
  --gtest_filter='ProjectionThreads.*:ProjectionDifferential.GeneratedFilesReadOnTwoConnections*'  # the projection
  # on threads, and its ranges read on a connection of its own beside SQLite's thread (its other differential tests
  # ran in the passes above)
echo "== 4/4 fuzzing"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSYSTRACE_FUZZ=ON > /dev/null
cmake --build build-fuzz -j"$jobs"
tests/fuzz/run_fuzzers.sh build-fuzz "${NSYSTRACE_FUZZ_SECONDS:-30}"
