#!/usr/bin/env python3
"""Merge the reports of a multi-rank (or multi-node) job into one trace, ranks side by side.

    /usr/bin/python3 examples/merge_reports.py trace.json.gz rank0.sqlite rank1.sqlite [...] [--extension PATH]

Each report is ATTACHed under the name rank0, rank1, ... (in the order given); trace_events' hidden `schema` column
streams them in one scan: processes named "[rank1] python3", pids kept apart, one clock whose time 0 is the earliest
session start among the reports (a report without one among reports that have one is an error naming it), CUDA
correlation ids never matched across ranks. File names are bound as parameters, never pasted
into SQL.
"""
import json
import os
import sqlite3
import sys


def main():
    args = sys.argv[1:]
    extension = os.path.join(os.path.dirname(__file__), "..", "build", "nsystrace")
    if "--extension" in args:
        i = args.index("--extension")
        extension = args[i + 1]
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    out, reports = args[0], args[1:]
    if len(reports) > 64:
        sys.exit("at most 64 reports in one trace")
    conn = sqlite3.connect(f"file:{reports[0]}?mode=ro", uri=True)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    schemas = ["main"]
    for i, path in enumerate(reports[1:], start=1):
        schema = f"rank{i}"
        conn.execute("attach ? as ?", (f"file:{path}?mode=ro", schema))
        schemas.append(schema)
    written = conn.execute(
        "select chrome_trace_file(?) from trace_events where schema in (select value from json_each(?))",
        (out, json.dumps(schemas))).fetchone()[0]
    for schema, n in conn.execute(
            "select schema, count(*) from trace_events where schema in (select value from json_each(?)) group by schema",
            (json.dumps(schemas),)):
        print(f"{schema}: {n} events")
    print(f"wrote {out}: {written} bytes")


if __name__ == "__main__":
    main()
