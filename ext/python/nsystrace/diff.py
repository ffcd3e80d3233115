"""`nsystrace diff BEFORE AFTER [-o diff.csv]`: what changed between two reports, per kernel name, NVTX range and
kind of event: the shipped recipe sql/diff.sql over the two reports ATTACHed as `before` and `after`.

    import nsystrace.diff
    columns, rows = nsystrace.diff.compare("before.sqlite", "after.sqlite")
"""
import csv
import os

from nsystrace import connection, server
from nsystrace.errors import Failure

DESCRIPTION = """what changed between two reports of the same program: per kernel name, NVTX range and kind of
event, the count and total time before and after, the delta and its %, sorted by the absolute delta; names new in
AFTER and names vanished from it listed. Names are matched after removing what differs between runs (PyTorch's
seq / op_id / input_op_ids fields, addresses). The same as SQL: sql/diff.sql."""

# The recipe's columns; the first eight are the contract.
COLUMNS = ["kind", "name", "count_before", "count_after", "total_ns_before", "total_ns_after", "delta_ns", "delta_pct",
           "change", "mean_ns_before", "mean_ns_after"]


def compare(before, after):
    """(columns, rows) of sql/diff.sql with `before` and `after` ATTACHed under those names (read-only)."""
    for path in (before, after):
        if not os.path.isfile(path):
            raise Failure(f"{path}: no such file")
    db = connection.Connection([before])  # main: before (opened read-only)
    db.prelude_sql(f"attach {connection.sql_string(connection.read_only_uri(before))} as before")
    db.prelude_sql(f"attach {connection.sql_string(connection.read_only_uri(after))} as after")
    columns, rows = db.query(server.recipe("diff.sql"))
    if columns and columns != COLUMNS:
        raise Failure(f"sql/diff.sql returned columns {columns}, expected {COLUMNS}")
    return COLUMNS, rows


def write_csv(columns, rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows(rows)


def _ms(ns):
    return f"{ns / 1e6:.3f}"


def report(rows, limit):
    """The text the command prints: the largest changes, then the names new in after and vanished from it."""
    lines = [f"{'kind':<7} {'before_ms':>12} {'after_ms':>12} {'delta_ms':>12} {'delta_%':>8}  name"]
    for kind, name, nb, na, tb, ta, delta, pct, *_ in rows[:limit]:
        lines.append(f"{kind:<7} {_ms(tb):>12} {_ms(ta):>12} {_ms(delta):>12} "
                     f"{'new' if pct is None else f'{pct:.1f}':>8}  {name} ({nb} -> {na})")
    for change, title in (("new", "new in after"), ("vanished", "vanished from after")):
        names = [f"{kind} {name}" for kind, name, *rest in rows if rest[6] == change]
        lines.append(f"{title}: {len(names)}" + "".join(f"\n  {n}" for n in names))
    return "\n".join(lines)


def add_arguments(p):
    p.add_argument("before", metavar="BEFORE", help="the report before the change (.sqlite export)")
    p.add_argument("after", metavar="AFTER", help="the report after it")
    p.add_argument("-o", "--output", help="write every row as CSV to this file (the recipe's columns)")
    p.add_argument("--limit", type=int, default=20, help="rows printed, the largest changes first (default 20)")


def run(args):
    columns, rows = compare(args.before, args.after)
    if args.output:
        write_csv(columns, rows, args.output)
        print(f"nsystrace diff: wrote {args.output} ({len(rows)} rows)")
    print(report(rows, args.limit))
    return 0
