# Sourced by the test scripts that run over every profile we have. Needs $sqlite3_bin and $src (the source dir).
# Sets $tmp (a directory removed on exit) and $profiles: the bundled example, made in $tmp, then every real export
# of ../shared/fixtures/real when that directory is present ($real_exports: those alone, possibly none).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sqlite3_bin" "$tmp/example.sqlite" < "$src/examples/example_profile.sql"
real_exports=()
[ -d "$src/../shared/fixtures/real" ] && real_exports=("$src"/../shared/fixtures/real/*.sqlite)
profiles=("$tmp/example.sqlite" "${real_exports[@]}")
