#!/usr/bin/env bash
# Quick start: installs what is missing (Debian), builds the extension, makes the bundled example profile
# (examples/example_profile.sql: a 2-GPU training job shaped like a real nsys 2026 export) and converts it to a
# Chrome trace: build/example_trace.json, ready for https://ui.perfetto.dev or chrome://tracing.
set -euo pipefail
cd "$(dirname "$0")/.."
# The build, and the test suite (tests/run_all.sh): clang for its fuzzers, Dask for the job tests, Chromium for the
# page's tests, Node and npm for the viewer's tests and the page's charting library.
packages="libsqlite3-dev sqlite3 libfmt-dev libgtest-dev zlib1g-dev cmake g++ clang libclang-rt-14-dev python3-distributed chromium"
missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
command -v npm >/dev/null || missing="$missing nodejs npm"  # npm may come from outside Debian
missing=$(echo $missing)
# The languages' examples (examples/languages, docs/languages.md): each toolchain and its SQLite binding,
# without recommends (R and Java would pull in hundreds of packages).
language_packages="golang-go golang-github-mattn-go-sqlite3-dev cargo rustc librust-rusqlite-dev default-jdk-headless
  libxerial-sqlite-jdbc-java r-base-core r-cran-rsqlite ruby ruby-sqlite3 libdbd-sqlite3-perl tcl libsqlite3-tcl"
missing_languages=$(echo $(for p in $language_packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done))
if [ -n "$missing" ] || [ -n "$missing_languages" ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  [ -z "$missing" ] || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
  # shellcheck disable=SC2086
  [ -z "$missing_languages" ] ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing_languages
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target nsystrace
rm -f build/example.sqlite
sqlite3 build/example.sqlite < examples/example_profile.sql
sqlite3 build/example.sqlite ".load ./build/nsystrace" "select chrome_trace(*) from trace_events where derived in (0, 1)" > build/example_trace.json
rm -f build/example_trace.pftrace
sqlite3 build/example.sqlite ".load ./build/nsystrace" "select perfetto_trace_file('build/example_trace.pftrace') from trace_events where derived in (0, 1)" > /dev/null
sqlite3 build/example.sqlite ".load ./build/nsystrace" -box \
  "select kind, count(*) as events, min(ts) as first_ns, max(ts + coalesce(dur, 0)) as last_ns from trace_events group by kind"
echo "wrote build/example_trace.pftrace ($(stat -c %s build/example_trace.pftrace) bytes, Perfetto's own format) and"
echo "build/example_trace.json ($(stat -c %s build/example_trace.json) bytes, Chrome JSON): open either in https://ui.perfetto.dev"
