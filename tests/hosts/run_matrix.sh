#!/usr/bin/env bash
# The host-SQLite matrix (issue 47): a slice of the suite run in each SQLite of tests/hosts/sqlite_versions.txt,
# with the tests already built in BUILD_DIR (no rebuild):
#   run_matrix.sh BUILD_DIR
#   run_matrix.sh --unit-slice: the gtest filter of the unit_tests it runs
# Environment: MATRIX_VERSIONS="3.54.1 ..." runs those only; MATRIX_JOBS, how many versions run at once (the
# cores; each version's lines are printed together, in the list's order); MATRIX_SANITIZED=1 for a sanitizer build (its .so
# cannot load into the uninstrumented host_shell: only the test binaries and the lifecycle test run); MATRIX_CACHE,
# where the SQLites are built (BUILD_DIR/sqlite-hosts); MATRIX_SO, another nsystrace.so for host_shell and the
# lifecycle test to load (e.g. an older build's, to see a bug in it; the gtest binaries load their own).
#
# How: each SQLite is built once as its own libsqlite3.so.0 (build_sqlites.sh, cached in BUILD_DIR/sqlite-hosts).
# The test binaries link libsqlite3.so.0 dynamically, so with LD_LIBRARY_PATH at that directory they run on that
# SQLite, the static build and the loaded .so alike (checked: the lifecycle test asserts sqlite3_libversion(), and
# ldd must resolve each binary's libsqlite3.so.0 there). The SQL-level tests run through host_shell, built against
# each version (Debian's shell refuses any libsqlite3 but its own). Per version, the slice:
#   - the SQL-level tests (tests/sql/*.test.sql through run_sql_test.sh);
#   - every recipe of sql/ on the bundled example: the same CSV as under the system's SQLite;
#   - both trace forms (chrome_trace, perfetto_trace, and their file functions) of the example and of every fixture
#     of tests/fixtures: the same bytes as under the system's SQLite;
#   - unit_tests: the fixtures, both trace forms and their typed row pointers (the star and row forms), query shapes,
#     bad input, interrupts; conformance_tests: the real exports' query grid, sampled, and their conversion checked
#     completely (skipped, and said so, without ../shared); thread_tests: interrupts of the threaded writer and scan;
#   - the lifecycle test (loaded twice, two host threads, closed with the connection).
# Below the minimum (role "refused") loading must fail with an error naming both versions.
# Ends with "matrix: N passed, N failed, N skipped" (each gtest test and each other check, per version; a skipped
# test is not a pass); exit 1 when any failed.
set -uo pipefail
# The gtest slices. Filters name whole suites so that a new test in them joins the matrix.
unit_slice='Fixture.*:CallColumns.*:ConnectionLifecycle.*:ChromeTrace.*:ChromeTraceTimes.*:QueryShapes.*'
unit_slice+=':PerfettoTrace.*:PerfettoTraceFixtures.*:BadInput.*'
unit_slice+=':Profiles/StarForms.*'  # chrome_trace(*) / perfetto_trace(*) (typed row pointers) on every fixture
unit_slice+=':Metamorphic.*:MetamorphicTraceAggregates.*'  # generated predicates: TLP, NoREC, wrappers, (*) shapes
unit_slice+=':PlanIndependence.*'  # the queries of issue 54, each a named test
# The real exports' query grid on five exports of 2020 to 2023 and the legacy schema (its every 8th shape,
# NSYSTRACE_GRID_STRIDE); every export's conversion checked completely (3 s for all).
grid='SharedFixtures/RealExportQueryGrid.EveryShapeGivesSqlitesAnswer'
conformance_slice="RealExportQueryGrid.*:$grid/rtx8000_2020_workflow_nvtx_1k_kernels:$grid/rtx3080_kmeans_legacy_nometa"
conformance_slice+=":$grid/a100x8_nerf_cudnn_events_cublas_nvtx_2021_5:$grid/t4_vectoradd_streams_osrt_2022_4"
conformance_slice+=":$grid/a100x4_recon_sched_2023_1:SharedFixtures/RealExport.ConvertsCompletelyAndExactly/*:GpuModelOption.*"
thread_slice='RowPipeline.AnInterrupt*:EventTotals.AnInterrupt*'
# run_matrix.sh --unit-slice prints the unit slice (the ASan pass of tests/run_all.sh leaves it to this script's run).
if [ "${1:-}" = --unit-slice ]; then echo "$unit_slice"; exit 0; fi
build=$(realpath "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
so=$build/nsystrace.so
cache=$(realpath -m "${MATRIX_CACHE:-$build/sqlite-hosts}")
so=${MATRIX_SO:-$so}
sanitized=${MATRIX_SANITIZED:-0}
"$src/tests/hosts/build_sqlites.sh" "$cache" || { echo "matrix: the host SQLites could not be built"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Counts of the version being run (each version runs in a subshell of its own, run_version, which sets them to 0).
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); version_failed=$((version_failed + 1)); echo "FAILED [SQLite $version]: $*"; }

# A version's gtest binaries run at once (gtest_start each, then gtest_finish): under the sanitizers they are most of
# the matrix's time, and each runs on one core.
gtest_started=()
gtest_start() {  # gtest_start LIBDIR BINARY FILTER
  local libdir=$1 binary=$2 filter=$3 out=$vtmp/$2.out
  [ -x "$build/tests/$binary" ] || { fail "$binary not built in $build/tests"; return; }
  local resolved
  resolved=$(LD_LIBRARY_PATH=$libdir ldd "$build/tests/$binary" | awk '$1 == "libsqlite3.so.0" { print $3 }')
  [ "$resolved" = "$libdir/libsqlite3.so.0" ] || { fail "$binary loads $resolved, not $libdir/libsqlite3.so.0"; return; }
  (LD_LIBRARY_PATH=$libdir NSYSTRACE_GRID_STRIDE=8 "$build/tests/$binary" --gtest_brief=1 \
     --gtest_filter="$filter" > "$out" 2>&1; echo $? > "$out.rc") &
  gtest_started+=("$binary $filter")
}
gtest_finish() {  # each started binary's tests count once: passed, failed or skipped (said why)
  wait
  local started binary filter out rc ok no skips
  for started in "${gtest_started[@]}"; do
    binary=${started%% *} filter=${started#* } out=$vtmp/$binary.out
    rc=$(cat "$out.rc")
    ok=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$out")
    no=$(grep '^\[  FAILED  \] [A-Za-z]' "$out" | sed 's/ (.*//; s/, where GetParam.*//' | sort -u | wc -l)
    skips=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?[.,].*/\1/p' "$out")
    passed=$((passed + ${ok:-0})) skipped=$((skipped + ${skips:-0}))
    echo "  $binary: ${ok:-0} passed, ${no:-0} failed, ${skips:-0} skipped"
    if [ -n "$skips" ]; then  # why: each skip's message (the line after gtest's "file:line: Skipped")
      grep -A1 ': Skipped$' "$out" | grep -v ': Skipped$\|^--$' | sort -u | sed 's/^/    skipped: /'
    fi
    if [ "$rc" -eq 0 ] && [ $((${ok:-0} + ${skips:-0})) -eq 0 ]; then fail "$binary: no test matches '$filter'"; fi
    if [ "$rc" -ne 0 ]; then
      fail "$binary --gtest_filter='$filter' (exit $rc):"
      [ "$no" -gt 1 ] && failed=$((failed + no - 1))  # fail() counted one
      grep -E -A2 'Failure$' "$out" | head -12
      grep '^\[  FAILED  \] [A-Za-z]' "$out" | sort -u | head -10
      if [ "$rc" -gt 128 ]; then echo "  $binary died of signal $((rc - 128))"; tail -3 "$out"; fi
    fi
  done
  gtest_started=()
}

# The references: the system's SQLite (the one the rest of the suite runs on), through host_shell built against it.
gcc -O1 -o "$tmp/system_shell" "$src/tests/hosts/host_shell.c" -lsqlite3 || { echo "matrix: no system host_shell"; exit 1; }
make_profiles() {  # make_profiles SHELL DIR: the example and every fixture of tests/fixtures, as databases
  mkdir -p "$2"
  "$1" "$2/example.sqlite" < "$src/examples/example_profile.sql" || return 1
  for f in "$src"/tests/fixtures/*.sql; do "$1" "$2/$(basename "$f" .sql).sqlite" < "$f" || return 1; done
}
traces() {  # traces SHELL DIR OUT: both trace forms of every profile in DIR, and the recipes on the example, in OUT
  local shell=$1 dir=$2 out=$3 p r
  mkdir -p "$out"
  for p in "$dir"/*.sqlite; do
    local name
    name=$(basename "$p" .sqlite)
    # Fixtures that hold bad input on purpose may refuse: the error message is compared then.
    "$shell" "file:$p?mode=ro" -cmd ".load ${so%.so}" \
      "select chrome_trace(*) from trace_events" > "$out/$name.json" 2>&1
    "$shell" "file:$p?mode=ro" -cmd ".load ${so%.so}" \
      "select hex(perfetto_trace(*)) from trace_events where derived in (0, 1)" > "$out/$name.pftrace.hex" 2>&1
    "$shell" "file:$p?mode=ro" -cmd ".load ${so%.so}" \
      "select perfetto_trace_file('$out/$name.file.pftrace') from trace_events" > /dev/null 2>&1
  done
  for r in "$src"/sql/*.sql; do
    "$shell" -csv "file:$dir/example.sqlite?mode=ro" -cmd ".load ${so%.so}" ".read $r" > "$out/$(basename "$r").csv" 2>&1
  done
}
if [ "$sanitized" != 1 ]; then
  make_profiles "$tmp/system_shell" "$tmp/system_profiles" || { echo "matrix: cannot make the profiles"; exit 1; }
  traces "$tmp/system_shell" "$tmp/system_profiles" "$tmp/reference"
fi

# The minimum nsystrace states (and its refusal names): the oldest tested version's 3.N.
minimum=$(awk '!/^#/ && $4 == "tested" { split($1, v, "."); print v[1] "." v[2]; exit }' "$src/tests/hosts/sqlite_versions.txt")
run_version() {  # run_version VERSION PACKAGE ROLE: its lines on stdout, its counts in $vtmp/counts
  local version=$1 package=$2 role=$3
  local lib=$cache/$version started=$SECONDS
  vtmp=$tmp/$version && mkdir -p "$vtmp"
  passed=0 failed=0 skipped=0 version_failed=0
  echo "== SQLite $version (better-sqlite3@$package, $role)"
  if [ "$sanitized" != 1 ]; then
    actual=$("$lib/host_shell" :memory: .version 2>&1)
    echo "  select sqlite_version(): $actual"
    [ "$actual" = "$version" ] && pass || fail "host_shell runs on SQLite $actual"
  fi
  if [ "$role" = refused ]; then
    if [ "$sanitized" != 1 ]; then
      if message=$("$lib/host_shell" :memory: -cmd ".load ${so%.so}" "select 1" 2>&1); then
        fail "the extension loaded into SQLite $version, below the minimum"
      elif grep -qF "$minimum" <<<"$message" && grep -qF "$version" <<<"$message"; then
        echo "  refused: $message"; pass
      else
        fail "the refusal does not name both versions: $message"
      fi
      printf '%-8s %-9s %s\n' "$version" refused "$([ $version_failed -eq 0 ] && echo ok || echo FAILED)" > "$vtmp/summary"
    fi
    echo "$passed $failed $skipped" > "$vtmp/counts"
    return
  fi

  gtest_start "$lib" unit_tests "$unit_slice"
  gtest_start "$lib" conformance_tests "$conformance_slice"
  gtest_start "$lib" thread_tests "$thread_slice"
  if [ "$sanitized" != 1 ]; then
    for t in "$src"/tests/sql/*.test.sql; do
      if out=$(bash "$src/tests/sql/run_sql_test.sh" "$lib/host_shell" "$so" "$src" "$t" 2>&1); then pass
      else fail "$(basename "$t"):"; echo "$out" | head -20; fi
    done
    make_profiles "$lib/host_shell" "$vtmp/profiles" || fail "cannot make the profiles"
    traces "$lib/host_shell" "$vtmp/profiles" "$vtmp/out"
    differ=$(diff -rq "$tmp/reference" "$vtmp/out" | sed "s|$tmp/||g")
    if [ -z "$differ" ]; then
      echo "  traces and recipes: $(ls "$tmp/reference" | wc -l) outputs, the same bytes as under SQLite $(sqlite3 --version | cut -d' ' -f1)"
      pass
    else
      fail "outputs that differ from the system SQLite's:"; echo "$differ" | head -10
      diff -r "$tmp/reference" "$vtmp/out" | head -c 1500; echo
    fi
  fi
  if out=$(LD_LIBRARY_PATH=$lib NSYSTRACE_EXPECT_SQLITE=$version "$build/tests/host_lifecycle_test" "$so" "$src" 2>&1)
  then pass; lifecycle="  $(tail -1 <<<"$out")"
  else fail "host_lifecycle_test:"; echo "$out" | tail -30; lifecycle=""; fi
  gtest_finish
  [ -n "$lifecycle" ] && echo "$lifecycle"
  printf '%-8s %-9s %-6s %4d s\n' "$version" "$role" \
    "$([ $version_failed -eq 0 ] && echo ok || echo FAILED)" $((SECONDS - started)) > "$vtmp/summary"
  echo "$passed $failed $skipped" > "$vtmp/counts"
}

# The versions run MATRIX_JOBS at once (default: the cores), each in a subshell with its own log; the logs are then
# printed in the list's order.
jobs=${MATRIX_JOBS:-$(nproc)}
versions=()
while read -r version package integrity role; do
  case "$version" in ''|'#'*) continue ;; esac
  if [ -n "${MATRIX_VERSIONS:-}" ] && ! grep -qw -- "$version" <<<"$MATRIX_VERSIONS"; then continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  (run_version "$version" "$package" "$role" > "$tmp/$version.log" 2>&1) &
  versions+=("$version")
done < "$src/tests/hosts/sqlite_versions.txt"
wait
passed=0 failed=0 skipped=0
summary=()
for version in "${versions[@]}"; do
  cat "$tmp/$version.log"
  if [ -f "$tmp/$version/counts" ]; then
    read -r p f k < "$tmp/$version/counts"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
  else
    echo "FAILED [SQLite $version]: its run ended before counting"; failed=$((failed + 1))
  fi
  [ -f "$tmp/$version/summary" ] && summary+=("$(cat "$tmp/$version/summary")")
done

echo "== host SQLites"
[ ${#summary[@]} -gt 0 ] && printf '%s\n' "${summary[@]}"
echo "matrix: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
