"""`nsystrace diff BEFORE AFTER [-o diff.csv]`: what changed between two reports, per kernel name, NVTX range and
kind of event: the shipped recipe sql/diff.sql. Its costly part, each report's per-name totals (the CTE raw_rows),
is read from the two reports at once (a connection and a thread each; SQLite runs without the GIL), then the rest of
the recipe runs over those small tables; the sqlite3 shell, when Python cannot load the extension, runs the recipe
whole with both reports ATTACHed as `before` and `after`. Either way the same SQL gives the rows.

    import nsystrace.diff
    columns, rows = nsystrace.diff.compare("before.sqlite", "after.sqlite")
"""
import csv
import os
import sqlite3

from nsystrace import connection, fanout, server
from nsystrace.errors import Failure

DESCRIPTION = """what changed between two reports of the same program: per kernel name, NVTX range and kind of
event, the count and total time before and after, the delta and its %, sorted by the absolute delta; names new in
AFTER and names vanished from it listed. Names are matched after removing what differs between runs (PyTorch's
seq / op_id / input_op_ids fields, addresses). The same as SQL: sql/diff.sql."""

# The recipe's columns; the first eight are the contract.
COLUMNS = ["kind", "name", "count_before", "count_after", "total_ns_before", "total_ns_after", "delta_ns", "delta_pct",
           "change", "mean_ns_before", "mean_ns_after"]


SIDES = ("before", "after")
# The CTE of sql/diff.sql that reads the reports: one row per (side, kind, name, domain) with its count n and total
# ns.
RAW_ROWS = "raw_rows as materialized ("


def split_recipe(sql):
    """sql/diff.sql around its CTE raw_rows: (the text before it, its body, the text after it and its comma)."""
    start = sql.find(RAW_ROWS)
    if start < 0:
        raise Failure(f"sql/diff.sql has no CTE `{RAW_ROWS}...)`, which nsystrace diff reads the reports with")
    depth, i, quote = 1, start + len(RAW_ROWS), None
    while depth:  # to the parenthesis that closes it, past quoted text and comments
        if i >= len(sql):
            raise Failure("sql/diff.sql: the CTE raw_rows does not end")
        c = sql[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif sql.startswith("--", i):
            i = sql.index("\n", i)
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    rest = sql[i:].lstrip()
    if not rest.startswith(","):
        raise Failure("sql/diff.sql: the CTE raw_rows must be followed by another")
    return sql[:start], sql[start + len(RAW_ROWS):i - 1], rest[1:]


def side_sql(recipe, side):
    """The statement that reads one side's raw_rows from a report opened alone (as main, which the recipe's
    params then name for both sides): the CTE not materialized, so that SQLite pushes `side = ...` into each arm
    of its UNION ALL and never runs the other side's scans (a constant false condition ends an arm at once)."""
    head, body, _ = split_recipe(recipe)
    return f"{head}raw_rows as ({body})\nselect side, kind, name, domain, n, ns from raw_rows where side = '{side}'"


def compare(before, after, parallel=True):
    """(columns, rows) of sql/diff.sql with `before` and `after` ATTACHed under those names (read-only); parallel:
    each report's raw_rows read at once on its own connection (when Python can load the extension)."""
    for path in (before, after):
        if not os.path.isfile(path):
            raise Failure(f"{path}: no such file")
    recipe = server.recipe("diff.sql")
    columns, rows = _in_parallel(recipe, before, after) if parallel else (None, None)
    if columns is None:
        db = connection.Connection([before])  # main: before (opened read-only)
        db.prelude_sql(f"attach {connection.sql_string(connection.read_only_uri(before))} as before")
        db.prelude_sql(f"attach {connection.sql_string(connection.read_only_uri(after))} as after")
        columns, rows = db.query(recipe)
    if columns and columns != COLUMNS:
        raise Failure(f"sql/diff.sql returned columns {columns}, expected {COLUMNS}")
    return COLUMNS, rows


def _in_parallel(recipe, before, after):
    """(columns, rows) of the recipe with each side's raw_rows read on its own connection and thread, the rest run
    over them in memory; (None, None) when Python cannot load the extension (the shell then runs the recipe)."""
    dbs = [connection.Connection([path]) for path in (before, after)]
    if any(db.conn is None for db in dbs):
        for db in dbs:
            if db.conn is not None:
                db.conn.close()
        return None, None

    def read(db, side):
        cur = db.conn.cursor()
        try:
            return cur.execute(side_sql(recipe, side)).fetchall()
        finally:
            cur.close()  # resets the statement: an interrupted scan cleans up now

    try:
        # The two sides share the cores: each connection's reader threads get half of them.
        for db in dbs:
            db.conn.execute("select nsystrace_option('threads', ?)", (max(1, fanout.cores() // len(dbs)),))
        sides = connection.on_threads([lambda db=db, side=side: read(db, side) for db, side in zip(dbs, SIDES)],
                                      lambda: [db.interrupt() for db in dbs])
    finally:
        for db in dbs:
            db.conn.close()
    head, _, rest = split_recipe(recipe)
    mem = sqlite3.connect(":memory:")  # plain SQL from here: no extension
    try:
        mem.execute("create temp table raw_rows(side, kind, name, domain, n, ns)")
        for rows in sides:
            mem.executemany("insert into raw_rows values (?, ?, ?, ?, ?, ?)", rows)
        cur = mem.execute(head + rest)
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        mem.close()


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
