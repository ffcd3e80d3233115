#!/usr/bin/env bash
# The .so exports exactly one symbol, sqlite3_nsystrace_init, and calls SQLite only through the API table it is
# handed (no undefined sqlite3_* symbols, no link to libsqlite3).
set -euo pipefail
so=$1
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
undefined_sqlite=$(nm -D --undefined-only "$so" | awk '{print $2}' | grep '^sqlite3' || true)
linked_sqlite=$(ldd "$so" | grep -i sqlite || true)
fail=0
if [ "$exported" != "sqlite3_nsystrace_init" ]; then echo "FAILED: exported symbols: $exported"; fail=1; fi
if [ -n "$undefined_sqlite" ]; then echo "FAILED: direct SQLite calls: $undefined_sqlite"; fail=1; fi
if [ -n "$linked_sqlite" ]; then echo "FAILED: linked against $linked_sqlite"; fail=1; fi
if [ $fail -eq 0 ]; then echo "check_shared_object: 3 passed, 0 failed"; else exit 1; fi
