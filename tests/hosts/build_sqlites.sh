#!/usr/bin/env bash
# Builds the host SQLites of tests/hosts/sqlite_versions.txt, once, into a cache:
#   build_sqlites.sh CACHE_DIR
# For each version: the pinned better-sqlite3 tarball from npm (npm pack; its sha512 checked against the list), its
# amalgamation compiled as CACHE_DIR/<version>/libsqlite3.so.0 with the options a distribution uses (Debian's: thread
# safe, extensions loadable, column metadata, FTS, R*Tree, sessions, ...), and host_shell.c compiled against that
# version's header and linked to it (RPATH $ORIGIN: it runs on its own SQLite whatever LD_LIBRARY_PATH says).
# A version whose stamp (tarball, integrity, flags) is already in the cache is not built again. Prints nothing on
# success but one line per version built; exits 1 naming what failed.
set -euo pipefail
cache=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache/tarballs"
# Debian's compile options that matter to a host (pragma compile_options of Debian 12's libsqlite3).
flags="-DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_COLUMN_METADATA -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS4
  -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_SESSION -DSQLITE_ENABLE_PREUPDATE_HOOK
  -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_STMTVTAB -DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_ENABLE_MATH_FUNCTIONS
  -DSQLITE_USE_URI=1 -DSQLITE_SOUNDEX -DSQLITE_SECURE_DELETE -DSQLITE_MAX_VARIABLE_NUMBER=250000"
flags=$(echo $flags)

build_one() {  # build_one SQLITE_VERSION BETTER_SQLITE3_VERSION INTEGRITY ROLE
  local version=$1 package=$2 integrity=$3 role=$4
  local out="$cache/$version" tarball="$cache/tarballs/better-sqlite3-$package.tgz"
  # -O0: about 9 s a version on one core (-O1 23 s), paid once per build tree, and the matrix's slice runs about as
  # fast on it (10 s for 3.54.1's, on one core); the options that change what SQLite does are the -D flags, not this.
  local opt=-O0
  local stamp="better-sqlite3@$package $integrity $opt $flags $(sha256sum < "$here/host_shell.c")"
  if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]; then return 0; fi
  if [ ! -f "$tarball" ]; then
    (cd "$cache/tarballs" && npm pack --silent "better-sqlite3@$package" > /dev/null) || {
      echo "build_sqlites: npm pack better-sqlite3@$package failed (is the npm registry reachable?)"; return 1; }
  fi
  local actual  # npm's integrity string, computed with Node (which npm needs anyway)
  actual=$(node -e 'const fs = require("fs"), crypto = require("crypto");
    process.stdout.write("sha512-" + crypto.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tarball")
  if [ "$actual" != "$integrity" ]; then
    echo "build_sqlites: $tarball is $actual, the list pins $integrity"; rm -f "$tarball"; return 1
  fi
  rm -rf "$out" && mkdir -p "$out"
  tar -xzf "$tarball" -C "$out" --strip-components=3 package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h
  local shipped
  shipped=$(sed -n 's/^#define SQLITE_VERSION *"\(.*\)"/\1/p' "$out/sqlite3.h")
  if [ "$shipped" != "$version" ]; then
    echo "build_sqlites: better-sqlite3@$package ships SQLite $shipped, the list says $version"; return 1
  fi
  gcc $opt -fPIC -shared $flags -Wl,-soname,libsqlite3.so.0 -o "$out/libsqlite3.so.0" "$out/sqlite3.c" \
    -lpthread -lm -ldl
  gcc -O1 -I"$out" -o "$out/host_shell" "$here/host_shell.c" "$out/libsqlite3.so.0" \
    -Wl,--disable-new-dtags,-rpath,'$ORIGIN'
  rm "$out/sqlite3.c"  # 9 MB each; the tarball stays in the cache
  echo "$stamp" > "$out/stamp"
  echo "build_sqlites: SQLite $version (better-sqlite3@$package) built in $out"
}

# The versions build on every core at once (the amalgamation is one 9 MB C file).
export -f build_one
export cache here flags
grep -v '^#' "$here/sqlite_versions.txt" | awk 'NF == 4' |
  xargs -P "$(nproc)" -L 1 bash -c 'build_one "$@"' _
