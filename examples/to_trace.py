#!/usr/bin/env python3
"""Convert an Nsight Systems SQLite export to a gzipped Chrome trace from Python.

    /usr/bin/python3 examples/to_trace.py prof.sqlite trace.json.gz [path/to/nsystrace]

Uses only the standard library's sqlite3 module. The Python must be able to load SQLite extensions (Debian's
/usr/bin/python3 can; pyenv's default build cannot: enable_load_extension is missing there).
"""
import os
import sqlite3
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    profile, out = sys.argv[1], sys.argv[2]
    extension = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "build", "nsystrace")
    conn = sqlite3.connect(f"file:{profile}?mode=ro", uri=True)  # read-only: the profile is never modified
    if not hasattr(conn, "enable_load_extension"):
        sys.exit("this Python cannot load SQLite extensions; use Debian's /usr/bin/python3")
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.enable_load_extension(False)
    written = conn.execute("select chrome_trace_file(?) from trace_events", (out,)).fetchone()[0]
    kinds = conn.execute("select kind, count(*) from trace_events group by kind order by kind").fetchall()
    print(f"wrote {out}: {written} bytes; " + ", ".join(f"{k} {n}" for k, n in kinds))


if __name__ == "__main__":
    main()
