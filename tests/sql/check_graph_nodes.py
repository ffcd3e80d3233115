#!/usr/bin/python3
"""The graph node args of GPU work (kernels, memcpys, memsets of a CUDA graph traced per node) equal what the export's
own tables say, on every real export of ../shared/fixtures/real (exit 77, skipped, without it).

  check_graph_nodes.py EXTENSION SOURCE_DIR

For each kernel / memcpy / memset row with a graphNodeId (0: none), trace_events' args must hold graph_node_id, and
where CUDA_GRAPH_NODE_EVENTS has the node: graph_node_original_id (its originalGraphNodeId, for a clone) and the
CUDA API call that created the node or, for a clone, the node it was cloned from (followed back to a node that is no
clone): the innermost CUPTI_ACTIVITY_KIND_RUNTIME call of the creating thread whose [start, end] holds the creation
instant (graph_node_created_by: its name; graph_node_created_ts: its start; graph_node_created_correlation_id). The
reference is plain SQL and Python over the raw tables; rows compared as multisets. No other row carries these args.
"""
import glob
import os
import sqlite3
import sys
from collections import Counter

EXTENSION, SOURCE = sys.argv[1], sys.argv[2]
KEYS = ("graph_node_id", "graph_node_original_id", "graph_node_created_by", "graph_node_created_ts",
        "graph_node_created_correlation_id")
TABLES = (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
          ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"))


def columns(db, table):
    return {r[1] for r in db.execute(f"pragma table_info('{table}')")}


def reference(db):
    nodes = {}  # (process, node id) -> [original or None, (globalTid, ts) of its first creation event]
    if {"graphNodeId", "globalTid", "start"} <= columns(db, "CUDA_GRAPH_NODE_EVENTS"):
        orig = "originalGraphNodeId" if "originalGraphNodeId" in columns(db, "CUDA_GRAPH_NODE_EVENTS") else "NULL"
        for tid, node, original, start in db.execute(
                f"select globalTid, graphNodeId, {orig}, start from CUDA_GRAPH_NODE_EVENTS where graphNodeId is not "
                "null and globalTid is not null and start is not null order by start, rowid"):
            n = nodes.setdefault((tid >> 24, node), [None, (tid, start)])
            if n[0] is None:
                n[0] = original

    def made_by(key):  # the call holding the creation of the node or of the original it was cloned from
        for _ in range(16):
            original = nodes[key][0]
            if original is None or (key[0], original) not in nodes:
                break
            key = (key[0], original)
        tid, ts = nodes[key][1]
        if not {"globalTid", "start", "end", "nameId"} <= columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME"):
            return None
        row = db.execute('select coalesce((select value from StringIds where id = r.nameId), '
                         '\'[missing string \' || r.nameId || \']\'), r.start, r.correlationId '
                         'from CUPTI_ACTIVITY_KIND_RUNTIME r where r.globalTid = ? and r.start <= ? and r."end" >= ? '
                         'and r.nameId is not null order by r.start desc, r.rowid desc limit 1', (tid, ts, ts)).fetchone()
        return row

    out = Counter()
    for kind, table in TABLES:
        if not {"graphNodeId", "globalPid", "start"} <= columns(db, table):
            continue
        for pid, start, corr, node in db.execute(f"select globalPid, start, correlationId, graphNodeId from {table} "
                                                 "where graphNodeId is not null and graphNodeId != 0"):
            key = (pid >> 24, node) if pid is not None else None
            original = call = None
            if key in nodes:
                original = nodes[key][0]
                call = made_by(key)
            out[(kind, start, corr, node, original) + (tuple(call) if call else (None, None, None))] += 1
    return out


def ours(db):
    args = ", ".join(f"json_extract(args, '$.{k}')" for k in KEYS)
    rows = db.execute(f"select kind, ts, correlation_id, {args} from trace_events where derived = 0 and "
                      "kind in ('kernel', 'memcpy', 'memset') and "
                      f"coalesce({', '.join(f'json_extract(args, {chr(39)}$.{k}{chr(39)})' for k in KEYS)}) is not null")
    stray = db.execute("select count(*) from trace_events where derived = 0 and kind not in ('kernel', 'memcpy', "
                       "'memset', 'cuda_graph', 'cudnn', 'cublas') and (" +
                       " or ".join(f"json_extract(args, '$.{k}') is not null" for k in KEYS[1:]) + ")").fetchone()[0]
    return Counter(tuple(r) for r in rows), stray


exports = sorted(glob.glob(os.path.join(SOURCE, "..", "shared", "fixtures", "real", "*.sqlite")))
if not exports:
    print("check_graph_nodes: ../shared/fixtures/real not found: graph node args NOT checked")
    sys.exit(77)
failed = checked = 0
for path in exports:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.enable_load_extension(True)
    db.load_extension(EXTENSION)
    expected = reference(db)
    got, stray = ours(db)
    name = os.path.basename(path)
    checked += sum(expected.values())
    if got != expected or stray:
        failed += 1
        missing, extra = expected - got, got - expected
        print(f"FAILED: {name}: {sum(got.values())} rows with graph node args, reference {sum(expected.values())}; "
              f"{stray} other rows carry them; missing e.g. {next(iter(missing), None)}, "
              f"unexpected e.g. {next(iter(extra), None)}")
    elif expected:
        made = sum(n for r, n in expected.items() if r[5] is not None)
        print(f"{name}: {sum(expected.values())} graph node operations, {made} with their creating call: equal")
if checked == 0:
    print("check_graph_nodes: no real export has graph nodes: nothing was checked")
    failed += 1
print(f"check_graph_nodes: {len(exports) - failed} exports passed, {failed} failed")
sys.exit(1 if failed else 0)
