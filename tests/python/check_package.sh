#!/usr/bin/env bash
# The Python package as a user gets it: `pip install .` from the source tree into a fresh virtual environment,
# offline (--no-index: the build backend is in the tree and needs nothing from PyPI), then the checks of
# test_package.py, test_color_scheme.py, test_command.py, test_readme.py, test_diff.py, test_serve.py and
# test_charts.py with that environment's Python and `nsystrace` command
# (exit 77 when chromium, which the page's tests need, is absent, or when npm was, so the page's charting library
# could not be vendored: the package checks have passed by then).
#   check_package.sh SOURCE_DIR BUILD_DIR
# BUILD_DIR is handed to the build backend (NSYSTRACE_BUILD_DIR) so the extension CMake builds is this build's.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
NSYSTRACE_BUILD_DIR=$build "$tmp/venv/bin/pip" install --no-index --quiet --disable-pip-version-check "$src" \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; echo "FAILED: pip install"; exit 1; }
"$tmp/venv/bin/python" "$src/tests/python/test_package.py" "$src" "$tmp"
"$tmp/venv/bin/python" "$src/tests/python/test_color_scheme.py" "$src" "$tmp"
"$tmp/venv/bin/python" "$src/tests/python/test_command.py" "$src" "$tmp"
"$tmp/venv/bin/python" "$src/tests/python/test_readme.py" "$src" "$tmp"
"$tmp/venv/bin/python" "$src/tests/python/test_diff.py" "$src" "$tmp"
# The serve page in headless Chromium; its absence is a skip (exit 77), said, not a pass.
"$tmp/venv/bin/python" "$src/tests/python/test_serve.py" "$src" "$tmp"
# Its charts, offline; without npm at build time, the page without them (a skip, said).
"$tmp/venv/bin/python" "$src/tests/python/test_charts.py" "$src" "$tmp"
