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
import csv
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
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

# The replay slices, as Perfetto's trace processor reads the traces: one per replay (and stream) of the export, with its extent
# and node count, an arrow from its launch call, its nodes nested in it (JSON, and the protobuf with gpu_model
# 'slices'; in the typed model the nodes are gpu_slice rows of the stream's hardware queue, beside it).
TOOLS = os.path.join(SOURCE, "..", "shared", "tools", "perfetto")


def tp(trace, sql):
    out = subprocess.run([os.path.join(TOOLS, "trace-processor"), "query", trace, sql], capture_output=True,
                         text=True, check=True).stdout.strip().splitlines()
    return [next(csv.reader([line])) for line in out[1:]]


def raw_replays(db):
    """(process, correlationId, device, stream) -> [start, end, nodes] of the export's graph node rows: a replay
    whose nodes ran on several streams has a slice on each."""
    out = {}
    for _, table in TABLES:
        if {"graphNodeId", "globalPid", "correlationId"} <= columns(db, table):
            for g, c, d, st, s, e in db.execute(
                    f'select globalPid, correlationId, deviceId, streamId, start, max("end", start) from {table} '
                    "where graphNodeId is not null and graphNodeId != 0 and correlationId is not null"):
                r = out.setdefault((g >> 24, c, d, st), [s, e, 0])
                r[0], r[1], r[2] = min(r[0], s), max(r[1], e), r[2] + 1
    return out


traces_checked = 0
if not os.access(os.path.join(TOOLS, "trace-processor"), os.X_OK):
    print("check_graph_nodes: ../shared/tools/perfetto not found: the replay slices were NOT checked")
else:
    tmp = tempfile.mkdtemp()
    for path in exports:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        replays = raw_replays(db)
        if not replays:
            continue
        db.enable_load_extension(True)
        db.load_extension(EXTENSION)
        name = os.path.basename(path)
        expected = sorted((e - s, n) for s, e, n in replays.values())
        node_rows = sum(n for _, _, n in replays.values())
        traces = {"JSON": os.path.join(tmp, "t.json"), "protobuf": os.path.join(tmp, "t.pftrace"),
                  "protobuf (slices)": os.path.join(tmp, "s.pftrace")}
        db.execute(f"select chrome_trace_file('{traces['JSON']}') from trace_events where derived in (0, 1)").fetchall()
        db.execute(f"select perfetto_trace_file('{traces['protobuf']}') from trace_events where derived in (0, 1)"
                   ).fetchall()
        db.execute("select nsystrace_option('gpu_model', 'slices')").fetchall()
        db.execute(f"select perfetto_trace_file('{traces['protobuf (slices)']}') from trace_events "
                   "where derived in (0, 1)").fetchall()
        for form, trace in traces.items():
            traces_checked += 1
            problems = []
            stats = json.loads(subprocess.run([os.path.join(TOOLS, "import-stats"), trace], capture_output=True,
                                              text=True, check=True).stdout)["stats"]
            if stats:
                problems.append(f"import stats {stats}")
            arg = "args." if form == "JSON" else "debug."
            got = sorted((int(d), int(n)) for d, n in tp(trace, f"select dur, extract_arg(arg_set_id, '{arg}nodes') "
                                                                "from slice where category = 'graph' and "
                                                                f"extract_arg(arg_set_id, '{arg}graph_replay') = 1"))
            if got != expected:
                problems.append(f"{len(got)} replay slices, {len(expected)} replays in the export (or their "
                                "durations / node counts differ)")
            # One arrow from the launch call to its replay and one to each node. (The JSON's flow ends bind to the
            # innermost slice open at their time: there the replay's arrow ends on its first node, which starts with it.)
            launches = tp(trace, "select count(*) from flow f join slice c on c.id = f.slice_out where c.name like "
                                 "'cudaGraphLaunch%'")
            if int(launches[0][0]) != node_rows + len(expected):
                problems.append(f"{launches[0][0]} arrows from cudaGraphLaunch calls, {node_rows} nodes and "
                                f"{len(expected)} replays in the export")
            arrows = tp(trace, "select count(*) from flow f join slice s on s.id = f.slice_in join slice c on "
                               "c.id = f.slice_out where s.category = 'graph' and c.name like 'cudaGraphLaunch%'")
            if form != "JSON" and int(arrows[0][0]) != len(expected):
                problems.append(f"{arrows[0][0]} arrows from a cudaGraphLaunch call into a replay, {len(expected)} "
                                "replays")
            if form != "protobuf":
                # Each node nested in the replay of its launch (the same correlation id: the JSON's args), or, where
                # it overlaps another node on its stream, on an extra lane of the stream ("[lane k]"), as before.
                nested = tp(trace, "select count(*) from slice c join slice p on p.id = c.parent_id where "
                                   f"p.category = 'graph' and extract_arg(c.arg_set_id, '{arg}graph_node_id') "
                                   "is not null")
                lane = ("(select t.name from thread_track tt join thread t using (utid) where tt.id = s.track_id)"
                        if form == "JSON" else "(select name from track where id = s.track_id)")
                on_lanes = tp(trace, f"select count(*) from slice s where s.depth = 0 and {lane} like '%[lane %' and "
                                     f"extract_arg(s.arg_set_id, '{arg}graph_node_id') is not null")
                if int(nested[0][0]) + int(on_lanes[0][0]) != node_rows:
                    problems.append(f"{nested[0][0]} nodes nested in replays and {on_lanes[0][0]} on extra lanes, "
                                    f"{node_rows} node rows in the export")
                if form == "JSON":
                    strays = tp(trace, "select count(*) from slice c join slice p on p.id = c.parent_id where "
                                       "p.category = 'graph' and extract_arg(c.arg_set_id, 'args.correlation_id') "
                                       "!= extract_arg(p.arg_set_id, 'args.correlation_id')")
                    if int(strays[0][0]):
                        problems.append(f"{strays[0][0]} slices nested in a replay of another launch")
            if problems:
                failed += 1
                print(f"FAILED: replay slices of {name}, {form}: " + "; ".join(problems))
            else:
                print(f"{name}, {form}: {len(expected)} replay slices, each with its arrow and nodes: equal")
    shutil.rmtree(tmp, ignore_errors=True)
print(f"check_graph_nodes: {failed} failed")
sys.exit(1 if failed else 0)
