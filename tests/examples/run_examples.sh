#!/usr/bin/env bash
# Runs every example in examples/ as a user would, on the bundled example profile, and checks what each produces;
# also `cmake --install` into a temporary prefix.
#   run_examples.sh SQLITE3 BUILD_DIR SOURCE_DIR
set -uo pipefail
sqlite3_bin=$1 build=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sqlite3_bin" "$tmp/prof.sqlite" < "$src/examples/example_profile.sql"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }
valid_json() { [ "$("$sqlite3_bin" :memory: "select json_valid(readfile('$1'))")" = 1 ]; }
kernels=$("$sqlite3_bin" "$tmp/prof.sqlite" "select count(*) from CUPTI_ACTIVITY_KIND_KERNEL")

# One-liner.
"$src/examples/one_liner.sh" "$tmp/prof.sqlite" > "$tmp/one.json" && valid_json "$tmp/one.json" &&
  [ "$("$sqlite3_bin" :memory: "select json_extract(readfile('$tmp/one.json'), '$.otherData.event_counts.kernel')")" = "$kernels" ] &&
  ok || fail "one_liner.sh"

# Python (Debian's python3 can load extensions).
if /usr/bin/python3 -c 'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' 2>/dev/null; then
  /usr/bin/python3 "$src/examples/to_trace.py" "$tmp/prof.sqlite" "$tmp/py.json.gz" "$build/nsystrace" > "$tmp/py.log" &&
    gunzip -c "$tmp/py.json.gz" > "$tmp/py.json" && valid_json "$tmp/py.json" && grep -q "kernel $kernels" "$tmp/py.log" &&
    ok || fail "to_trace.py: $(cat "$tmp/py.log")"
else
  fail "to_trace.py: /usr/bin/python3 with a loadable-extension sqlite3 module is required (apt-get install python3)"
fi

# .nsys-rep without nsys: a clear message and exit code 2, nothing written.
printf 'not really a report' > "$tmp/run.nsys-rep"
msg=$(PATH=/usr/bin:/bin "$src/examples/nsys_rep_to_trace.sh" "$tmp/run.nsys-rep" 2>&1); code=$?
[ $code -eq 2 ] && grep -q "'nsys' is not on PATH" <<<"$msg" && [ ! -e "$tmp/run.json.gz" ] && ok || fail "nsys_rep_to_trace.sh without nsys: $code $msg"
# With nsys (a stand-in that "exports" the example profile): the report is exported, then converted.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/nsys" <<STUB
#!/usr/bin/env bash
# stand-in for 'nsys export --type sqlite --force-overwrite true --output OUT IN'
while [ \$# -gt 0 ]; do [ "\$1" = --output ] && out=\$2; shift; done
cp "$tmp/prof.sqlite" "\$out"
STUB
chmod +x "$tmp/bin/nsys"
PATH="$tmp/bin:$PATH" "$src/examples/nsys_rep_to_trace.sh" "$tmp/run.nsys-rep" > "$tmp/rep.log" 2>&1 &&
  gunzip -c "$tmp/run.json.gz" > "$tmp/rep.json" && valid_json "$tmp/rep.json" && ok || fail "nsys_rep_to_trace.sh with nsys: $(cat "$tmp/rep.log")"

# Multi-rank merge: two reports in one trace, ranks side by side.
cp "$tmp/prof.sqlite" "$tmp/rank1.sqlite"
/usr/bin/python3 "$src/examples/merge_reports.py" "$tmp/merged.json.gz" "$tmp/prof.sqlite" "$tmp/rank1.sqlite" \
    --extension "$build/nsystrace" > "$tmp/merge.log" 2>&1 &&
  gunzip -c "$tmp/merged.json.gz" > "$tmp/merged.json" && valid_json "$tmp/merged.json" &&
  grep -q "^rank1: " "$tmp/merge.log" &&
  [ "$("$sqlite3_bin" :memory: "select count(*) from json_each(readfile('$tmp/merged.json'), '$.traceEvents') where json_extract(value, '$.args.name') like '[rank1]%'")" -gt 0 ] &&
  ok || fail "merge_reports.py: $(cat "$tmp/merge.log")"

# Parameter sweep recipe over two ATTACHed reports.
out=$("$sqlite3_bin" -csv "file:$tmp/prof.sqlite?mode=ro" -cmd ".load $build/nsystrace" \
      "attach 'file:$tmp/rank1.sqlite?mode=ro' as bs16" ".read $src/sql/sweep.sql") &&
  grep -q '^"kernels: GEMM (cuBLAS / cuBLASLt / CUTLASS)",bs16,' <<<"$out" && grep -q '^"kernels: GEMM (cuBLAS / cuBLASLt / CUTLASS)",main,' <<<"$out" &&
  ok || fail "sweep.sql: $out"

# Embedding (static library, sqlite3_auto_extension).
out=$("$build/embed_example" "$tmp/prof.sqlite") && grep -q "^kernel $kernels$" <<<"$out" && grep -q "^trace bytes [1-9]" <<<"$out" &&
  ok || fail "embed_example: $out"

# Install: the .so, the static library, the header and the SQL recipes in standard places.
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null &&
  ls "$tmp"/prefix/lib*/nsystrace/nsystrace.so "$tmp"/prefix/lib*/libnsystrace_static.a "$tmp/prefix/include/nsystrace.h" \
     "$tmp/prefix/share/nsystrace/sql/top_kernels.sql" > /dev/null && ok || fail "cmake --install"

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
