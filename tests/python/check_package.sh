#!/usr/bin/env bash
# The Python package as a user gets it: `pip install .` from the source tree into a fresh virtual environment,
# offline (--no-index: the build backend is in the tree and needs nothing from PyPI), then the checks of
# test_package.py, test_color_scheme.py, test_command.py, test_readme.py, test_diff.py, test_serve.py and
# test_charts.py with that environment's Python and `nsystrace` command
# (exit 77 when chromium, which the page's tests need, is absent, when npm was, so the page's charting library
# could not be vendored, or when ../shared is, so the page was not compared with the command on the real exports:
# every other check has run and passed by then).
#   check_package.sh SOURCE_DIR BUILD_DIR
# BUILD_DIR is handed to the build backend (NSYSTRACE_BUILD_DIR) so the extension CMake builds is this build's.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
began=$SECONDS
NSYSTRACE_BUILD_DIR=$build "$tmp/venv/bin/pip" install --no-index --quiet --disable-pip-version-check "$src" \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; echo "FAILED: pip install"; exit 1; }
echo "pip install: $((SECONDS - began)) s"
# Each script with the environment's Python. A script that could not test all it covers (chromium absent, npm absent
# at build time, ../shared absent) says what it skipped and exits 77: the others still run, and the whole is a skip.
skipped=()
part() {
  local rc=0 began=$SECONDS
  "$tmp/venv/bin/python" "$src/tests/python/$1" "$src" "$tmp" || rc=$?
  echo "$1: $((SECONDS - began)) s"
  if [ "$rc" -eq 77 ]; then skipped+=("$1"); elif [ "$rc" -ne 0 ]; then exit "$rc"; fi
}
part test_package.py
part test_color_scheme.py
part test_command.py
part test_readme.py
part test_diff.py
# The serve page in headless Chromium, and on every real export (../shared) against the command.
part test_serve.py
# Its charts, offline; without npm at build time, the page without them.
part test_charts.py
if [ ${#skipped[@]} -gt 0 ]; then
  echo "skipped in part: ${skipped[*]} (each said what, above)"
  exit 77
fi
