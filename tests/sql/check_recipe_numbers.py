#!/usr/bin/python3
"""Every number a recipe in sql/ shows equals what plain SQL over the raw nsys tables gives, to the last digit shown.

  check_recipe_numbers.py SQLITE3 EXTENSION PROFILE...

ONLY=REGEX in the environment checks only the recipes (and `diff.sql`) whose file name matches it (while editing one).

Each recipe runs as users run it (the sqlite3 shell, `.load`, `.read`, -json output). Its reference here reads
only the export's own tables (CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, StringIds), never trace_events or
nvtx_kernel_ranges, and is written independently: interval unions and overlaps are computed in Python on integer
nanoseconds; rounding is SQLite's round(), as in the recipes. Prints 'N passed, N failed'; exits 1 on a mismatch.
"""
import bisect
import fnmatch
import json
import re
import os
import sqlite3
import subprocess
import statistics
import sys
from collections import defaultdict

# check_recipe_numbers.py --list: the recipes checked here (each of their runs also shows that they run without
# error: check_recipes.sh runs only the others for that alone).
LIST = sys.argv[1:2] == ["--list"]
SQLITE3, EXTENSION, PROFILES = (None, None, []) if LIST else (sys.argv[1], sys.argv[2], sys.argv[3:])
RECIPES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sql")


def run_recipe(profile, recipe):
    out = subprocess.run([SQLITE3, "-json", "-bail", f"file:{profile}?mode=ro", "-cmd", f".load {EXTENSION}",
                          f".read {RECIPES}/{recipe}"], capture_output=True, text=True, check=True).stdout
    return [list(row.values()) for row in json.loads(out)] if out.strip() else []


class Raw:
    """The export's own tables, read-only."""

    def __init__(self, path):
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def has(self, table, *columns):
        cols = {r[1] for r in self.db.execute(f"pragma table_info('{table}')")}
        return bool(cols) and all(c in cols for c in columns)

    def rows(self, sql, *args):
        return self.db.execute(sql, args).fetchall()

    def round(self, value, digits):  # SQLite's rounding, as the recipes use it
        return self.db.execute("select round(?, ?)", (value, digits)).fetchone()[0]

    def string(self, column):  # a StringIds reference as trace_events names it
        return f"coalesce((select value from StringIds where id = {column}), '[missing string ' || {column} || ']')"

    def kernels(self):
        """(device, name, start, end) of every kernel."""
        if not self.has("CUPTI_ACTIVITY_KIND_KERNEL"):
            return []
        name = f"case when shortName is not null then {self.string('shortName')} else {self.string('demangledName')} end"
        return self.rows(f"select deviceId, {name}, start, max(\"end\", start) from CUPTI_ACTIVITY_KIND_KERNEL")

    def gpu_work(self):
        """(device, start, end) of every kernel, memcpy and memset."""
        out = [(d, s, e) for d, _, s, e in self.kernels()]
        for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            if self.has(t):
                out += self.rows(f"select deviceId, start, max(\"end\", start) from {t}")
        return out


def union(intervals):
    """Sorted, merged (start, end) intervals; touching ones merge."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def top_kernels(raw):
    k = raw.kernels()
    total = sum(e - s for _, _, s, e in k)
    by_name = defaultdict(list)
    for _, name, s, e in k:
        by_name[name].append(e - s)
    rows = sorted(by_name.items(), key=lambda kv: (-sum(kv[1]), kv[0]))[:20]
    return [[name, len(d), raw.round(sum(d) / 1e6, 3), raw.round(sum(d) / len(d) / 1e3, 2),
             raw.round(max(d) / 1e3, 2), raw.round(100.0 * sum(d) / total, 1)] for name, d in rows]


def memcpy_bandwidth(raw):
    # Numbers only, per (direction, memory kind) group, in the recipe's order: labels are the catalog's.
    if not raw.has("CUPTI_ACTIVITY_KIND_MEMCPY"):
        return []
    groups = defaultdict(list)
    for kind, src, dst, b, s, e in raw.rows("select copyKind, srcKind, dstKind, bytes, start, max(\"end\", start) "
                                            "from CUPTI_ACTIVITY_KIND_MEMCPY"):
        groups[(kind, src, dst)].append((b, e - s))

    # Equal byte totals are ordered as the recipe orders them: by the direction's label, then "src -> dst" (an id
    # without a label shows as the id: SQLite orders integers before text).
    def labels(table):
        return dict(raw.rows(f"select id, label from {table} where label is not null")) if raw.has(table) else {}
    oper, mem = labels("ENUM_CUDA_MEMCPY_OPER"), labels("ENUM_CUDA_MEM_KIND")
    def shown(labels_of, v):
        return labels_of.get(v, "?" if v is None else str(v))
    out = []
    for (kind, src, dst), g in groups.items():
        nbytes, ns = sum(b for b, _ in g), sum(d for _, d in g)
        peak = max((b * 1.0 / d for b, d in g if d), default=None)
        direction = (1, oper[kind]) if kind in oper else (0, kind if kind is not None else 0)
        out.append([len(g), raw.round(nbytes / 1e6, 3), raw.round(ns / 1e6, 3),
                    raw.round(nbytes * 1.0 / ns, 3) if ns else None, raw.round(peak, 3) if peak is not None else None,
                    (-nbytes, direction, shown(mem, src) + " -> " + shown(mem, dst))])
    return [r[:5] for r in sorted(out, key=lambda r: r[5])]


def launch_latency(raw):
    if not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return []
    first = {}  # (process, correlation) -> (start, device, stream) of its earliest GPU operation
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if raw.has(t):
            for proc, corr, s, d, st in raw.rows(f"select globalPid >> 24, correlationId, start, deviceId, streamId "
                                                 f"from {t} where correlationId is not null"):
                if (proc, corr) not in first or s < first[(proc, corr)][0]:
                    first[(proc, corr)] = (s, d, st)
    rows = []
    for key, (s, _, g, _) in api_calls(raw).items():  # each launch once, by its (earliest) call
        if key in first:
            gs, d, st = first[key]
            rows.append((gs - s, (g >> 24) & 0xFFFFFF, g & 0xFFFFFF, s, d, st))
    rows.sort(key=lambda r: (-r[0], r[3], r[1], r[2]))
    return [[pid, tid, d, st, s, raw.round(lat / 1e3, 1)] for lat, pid, tid, s, d, st in rows[:20]]


def nvtx_domains(raw):
    """NVTX domain names by (globalPid, domainId): nsys numbers domains per process (the globalTid of the domain
    create row, its thread bits cleared, is the process)."""
    if not raw.has("NVTX_EVENTS"):
        return {}
    name = f"coalesce(text, case when textId is not null then {raw.string('textId')} end)"
    return {(g & ~0xFFFFFF, d): n for g, d, n in raw.rows(
        f"select coalesce(globalTid, 0), coalesce(domainId, 0), {name} from NVTX_EVENTS where eventType = 75 "
        f"and {name} is not null order by rowid")}


def projection_inputs(raw):
    """What the NVTX projection joins: GPU operations by (process, correlation id) as (start, end, is_kernel), an
    operation stored with its end before its start an instant at its start, the profile's end (where unclosed ranges
    end), NVTX domain names, and CUDA API calls by thread (those with work)."""
    ops = defaultdict(list)
    for t, is_kernel in (("CUPTI_ACTIVITY_KIND_KERNEL", 1), ("CUPTI_ACTIVITY_KIND_MEMCPY", 0),
                         ("CUPTI_ACTIVITY_KIND_MEMSET", 0), ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", 0)):
        if raw.has(t):
            for proc, corr, s, e in raw.rows(f"select globalPid >> 24, correlationId, start, \"end\" from {t}"):
                ops[(proc, corr)].append((s, max(s, e), is_kernel))
    domains = nvtx_domains(raw)
    calls = defaultdict(list)
    for g, s, e, corr in raw.rows("select globalTid, start, \"end\", correlationId from CUPTI_ACTIVITY_KIND_RUNTIME"):
        if (g >> 24, corr) in ops:
            calls[g].append((s, e, corr))
    return ops, profile_end(raw), domains, calls


def profile_end(raw):
    """The latest timestamp of the profile's events: where a range never closed ends."""
    ends = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"):
        if raw.has(t):
            ends += [v for v in raw.rows(f"select max(start), max(\"end\") from {t}")[0] if v is not None]
    return max(ends)


def projection(raw):
    """NVTX ranges with GPU work, by Nsight Systems' definition: (name, domain, start, end, gpu_start, gpu_end,
    kernels, the sum of the operations' durations, the length of the union of their intervals). Ops are tied to
    calls on (correlationId, process); a call belongs to every range on its thread that holds it entirely; each
    (range, correlation id) counts once."""
    if not raw.has("NVTX_EVENTS") or not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return []
    ops, profile_end, domains, calls = projection_inputs(raw)
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
    out = []
    for name, dom, g, s, e in raw.rows(f"select {text}, domainId, globalTid, start, coalesce(\"end\", {profile_end}) "
                                       "from NVTX_EVENTS where eventType in (59, 60, 70, 71) and globalTid is not null "
                                       "and (endGlobalTid is null or endGlobalTid = globalTid)"):
        corrs = {corr for cs, ce, corr in calls.get(g, ()) if cs >= s and ce <= e}
        work = [op for corr in corrs for op in ops[(g >> 24, corr)]]
        if work:
            out.append((name, domains.get((g & ~0xFFFFFF, dom)) if dom else None, s, e, min(w[0] for w in work),
                        max(w[1] for w in work), sum(w[2] for w in work), sum(max(0, w[1] - w[0]) for w in work),
                        sum(b - a for a, b in union((w[0], w[1]) for w in work if w[1] > w[0]))))
    return out


def nesting(raw, ranges):
    """(depth, parent rowid or None) of each range, by nsystrace's rule: on its thread, in (start, end descending,
    rowid) order, the ranges before it that end at or after its end enclose it; the last of them is its parent."""
    out = {}
    by_thread = defaultdict(list)
    for r in ranges:  # (rowid, thread, start, end)
        by_thread[r[1]].append(r)
    for rs in by_thread.values():
        rs.sort(key=lambda r: (r[2], -r[3], r[0]))
        ends = []  # ends seen so far, sorted
        for i, (rowid, _, s, e) in enumerate(rs):
            depth = i - bisect.bisect_left(ends, e)
            parent = next((rs[j][0] for j in range(i - 1, -1, -1) if rs[j][3] >= e), None) if depth else None
            out[rowid] = (depth, parent)
            bisect.insort(ends, e)
    return out


def nvtx_gpu_proj_sum(raw):
    """NVIDIA's nvtx_gpu_proj_sum by its documented definition, over the raw tables."""
    if not raw.has("NVTX_EVENTS") or not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return []
    ops, profile_end, domains, calls = projection_inputs(raw)
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
    ranges = raw.rows(f"select rowid, globalTid, start, max(start, coalesce(\"end\", {profile_end})), {text}, domainId, "
                      "eventType from NVTX_EVENTS where eventType in (59, 60, 70, 71) and globalTid is not null "
                      "and start is not null and (endGlobalTid is null or endGlobalTid = globalTid)")
    nest = nesting(raw, [r[:4] for r in ranges])
    projected = {}
    for rowid, g, s, e, name, dom, etype in ranges:
        corrs = {corr for cs, ce, corr in calls.get(g, ()) if cs >= s and ce <= e}
        work = [op for corr in corrs for op in ops[(g >> 24, corr)]]
        if work:
            dom_name = domains.get((g & ~0xFFFFFF, dom)) if dom else None
            projected[rowid] = ((dom_name or "") + ":" + name, "StartEnd" if etype in (60, 71) else "PushPop",
                                max(w[1] for w in work) - min(w[0] for w in work), e - s, len(corrs), nest[rowid][0])
    children = defaultdict(int)
    for rowid in projected:
        if nest[rowid][1] is not None:
            children[nest[rowid][1]] += 1
    groups = defaultdict(list)
    for rowid, (rng, style, span, cpu, n_ops, depth) in projected.items():
        groups[(rng, style)].append((span, cpu, n_ops, depth, children[rowid]))
    out = []
    for (rng, style), v in groups.items():
        spans = [x[0] for x in v]
        out.append([rng, style, sum(spans), sum(x[1] for x in v), len(v)] + five(raw, spans) +
                   [sum(x[2] for x in v), raw.round(sum(x[2] for x in v) / len(v), 1),
                    raw.round(sum(x[3] for x in v) / len(v), 1), raw.round(sum(x[4] for x in v) / len(v), 1)])
    return sorted(out, key=lambda r: (-r[2], r[0], r[1]))


def five(raw, values):
    """avg, median, min, max, sample std dev (0 for one value), as the reports round them; Nones for no values."""
    if not values:
        return [None] * 5
    return [raw.round(sum(values) / len(values), 1), raw.round(statistics.median(values), 1), min(values), max(values),
            raw.round(statistics.stdev(values) if len(values) > 1 else 0.0, 1)]


def cuda_kern_exec_sum(raw):
    """NVIDIA's cuda_kern_exec_sum by its documented definition, over the raw tables."""
    if not raw.has("CUPTI_ACTIVITY_KIND_KERNEL") or not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return []
    calls = api_calls(raw)
    name = f"case when demangledName is not null then {raw.string('demangledName')} else {raw.string('shortName')} end"
    groups = defaultdict(list)
    for corr, gp, d, s, e, kname in raw.rows(f"select correlationId, globalPid, deviceId, start, max(start, \"end\"), "
                                             f"{name} from CUPTI_ACTIVITY_KIND_KERNEL"):
        call = calls.get((gp >> 24, corr))
        if call is None:
            continue
        cs, ce, g, api_name = call
        groups[((g >> 24) & 0xFFFFFF, g & 0xFFFFFF, d, api_name, kname)].append(
            (max(ce, e) - cs, ce - cs, s - ce if s > ce else None, e - s))
    out = []
    for (pid, tid, dev, api_name, kname), v in groups.items():
        qs = [x[2] for x in v if x[2] is not None]
        out.append(([pid, tid, dev, len(v), len(qs)] + five(raw, [x[0] for x in v]) + five(raw, [x[1] for x in v]) +
                    five(raw, qs) + five(raw, [x[3] for x in v]) + [api_name, kname], sum(x[0] for x in v)))
    out.sort(key=lambda r: (-r[1], r[0][-1], r[0][0], r[0][1], r[0][2], r[0][-2]))
    return [r for r, _ in out]


def nvtx_sum(raw):
    """NVIDIA's nvtx_sum over the raw tables: push/pop and start/end ranges by "domain:name" (domains per process),
    a range never closed ending at the last NVTX timestamp (any NVTX_EVENTS row), as NVIDIA's report ends it."""
    if not raw.has("NVTX_EVENTS"):
        return []
    domains = nvtx_domains(raw)
    last = raw.rows("select max(max(start), coalesce(max(\"end\"), max(start))) from NVTX_EVENTS")[0][0]
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
    by = defaultdict(list)
    for name, dom, g, s, e in raw.rows(f"select {text}, coalesce(domainId, 0), coalesce(globalTid, 0), start, \"end\" "
                                       "from NVTX_EVENTS where eventType in (59, 60, 70, 71) and start is not null"):
        dom_name = domains.get((g & ~0xFFFFFF, dom)) if dom else None
        by[(dom_name + ":" if dom_name else "") + name].append(max(0, (last if e is None else e) - s))
    total = sum(sum(d) for d in by.values())
    rows = [[raw.round(100.0 * sum(d) / total, 1) if total else None, sum(d), len(d)] + five(raw, d) + [name]
            for name, d in by.items()]
    return sorted(rows, key=lambda r: (-r[1], r[-1]))


def cuda_api_sum(raw):
    """NVIDIA's cuda_api_sum over the raw tables: calls grouped by recorded name, shown without a '_v' + 4
    characters version suffix (substr(name, -6, 2) = '_v', NVIDIA's rule)."""
    if not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return []
    by = defaultdict(list)
    for name, s, e in raw.rows(f"select coalesce({raw.string('nameId')}, '[unnamed CUDA API call]'), start, \"end\" "
                               "from CUPTI_ACTIVITY_KIND_RUNTIME where start is not null"):
        by[name].append(max(0, e - s) if e is not None else 0)
    total = sum(sum(d) for d in by.values())
    rows = [[raw.round(100.0 * sum(d) / total, 1) if total else None, sum(d), len(d)] + five(raw, d) +
            [name[:-6] if name[-6:-4] == "_v" else name, name] for name, d in by.items()]
    return [r[:-1] for r in sorted(rows, key=lambda r: (-r[1], r[-1]))]


def pytorch_call_fields_removed(name):
    """A range name without PyTorch's per-call fields: ', input_op_ids = ...' to the end, ', seq = N', ', op_id = N'."""
    name = re.sub(r", input_op_ids = .*$", "", name, flags=re.S)
    name = re.sub(r", seq = [0-9]*", "", name, count=1)
    return re.sub(r", op_id = [0-9]*", "", name, count=1)


def nvtx_gpu_time(raw):
    by, raw_names = defaultdict(list), defaultdict(set)
    for name, dom, s, e, gs, ge, k, op_time, busy in projection(raw):
        key = (dom + ":" if dom else "") + pytorch_call_fields_removed(name)
        by[key].append((busy, op_time, ge - gs, e - s, k))
        raw_names[key].add((dom, name))
    rows = sorted(by.items(), key=lambda kv: (-sum(r[0] for r in kv[1]), kv[0]))[:20]
    return [[name, len(r)] + [raw.round(sum(x[i] for x in r) / 1e6, 3) for i in range(4)] +
            [sum(x[4] for x in r), raw.round(sum(x[0] for x in r) / 1e3 / len(r), 1), len(raw_names[name])]
            for name, r in rows]


def gpu_busy(raw, bucket_ns=100_000_000, max_buckets=100_000):
    per_device = defaultdict(list)
    for d, s, e in raw.gpu_work():
        per_device[d].append((s, e))
    busy = {d: union(v) for d, v in per_device.items()}
    if not busy:
        return []
    t0 = min(b[0][0] for b in busy.values())  # the first GPU operation: the span holding GPU work only
    t_end = max(b[-1][1] for b in busy.values())
    if t_end // max_buckets - t0 // max_buckets >= bucket_ns:  # more than max_buckets buckets: widened
        bucket_ns = t_end // max_buckets - t0 // max_buckets + 1
    buckets = defaultdict(lambda: defaultdict(int))
    for d, intervals in busy.items():
        for s, e in intervals:
            k = (s - t0) // bucket_ns
            while True:
                lo, hi = t0 + k * bucket_ns, t0 + (k + 1) * bucket_ns
                buckets[d][k] += min(e, hi) - max(s, lo)
                if not hi < e:
                    break
                k += 1
    last = max(max(b) for b in buckets.values())
    return [[d, k, t0 + k * bucket_ns, raw.round(buckets[d][k] * 100.0 / bucket_ns, 1)]
            for d in sorted(busy) for k in range(last + 1)]


def compute_comm_overlap(raw):
    compute, comm = defaultdict(list), defaultdict(list)
    for d, name, s, e in raw.kernels():
        (comm if name.lower().startswith("nccl") else compute)[d].append((s, e))
    out = []
    for d in sorted(comm):
        busy = union(compute[d])
        hidden = [sum(max(0, min(e, be) - max(s, bs)) for bs, be in busy if bs < e and be > s) for s, e in comm[d]]
        total = sum(e - s for s, e in comm[d])
        out.append([d, len(comm[d]), raw.round(total / 1e6, 3), raw.round(sum(hidden) / 1e6, 3),
                    raw.round((total - sum(hidden)) / 1e6, 3), raw.round(100.0 * sum(hidden) / total, 1)])
    return out


def kernel_family(name):
    n = name.lower()  # SQLite's LIKE folds ASCII case
    if "nccl" in n: return "kernels: NCCL"
    if any(w in n for w in ("flash", "attention", "fmha", "mha_")): return "kernels: attention"
    if n.startswith("triton"): return "kernels: Triton"
    if any(w in n for w in ("cudnn", "conv", "wgrad", "dgrad")): return "kernels: cuDNN / convolution"
    if n.startswith("nvjet") or any(w in n for w in ("gemm", "gemv", "cublas", "cutlass", "xmma", "matmul")):
        return "kernels: GEMM (cuBLAS / cuBLASLt / CUTLASS)"
    if "norm" in n: return "kernels: normalization"
    if any(w in n for w in ("reduce", "reduction", "softmax")): return "kernels: reductions / softmax"
    if any(w in n for w in ("elementwise", "vectorized", "unrolled", "pointwise")): return "kernels: elementwise"
    return "kernels: other"


def stable_nvtx_name(name):  # PyTorch's per-call noise left out
    for marker in (", seq = ", ", op_id = ", ", sizes = "):
        if marker in name:
            return name[:name.index(marker)]
    return name


def sweep(raw):  # one report (main)
    rows = defaultdict(lambda: [0, 0])
    for name, dom, s, e, gs, ge, k, op_time, busy in projection(raw):
        r = rows["nvtx: " + (dom + ":" if dom else "") + stable_nvtx_name(name)]
        r[0] += 1
        r[1] += busy
    for _, name, s, e in raw.kernels():
        r = rows[kernel_family(name)]
        r[0] += 1
        r[1] += e - s
    return [[what, "main", n, raw.round(ns / 1e6, 3)] for what, (n, ns) in sorted(rows.items())]


def sample_stacks(raw, unresolved_by_module=False):
    """{COMPOSITE_EVENTS id: (globalTid, start, [(symbol, module), ...] innermost first)}"""
    if not raw.has("COMPOSITE_EVENTS"):
        return {}
    samples = {i: (g, s, []) for i, g, s in raw.rows("select id, globalTid, start from COMPOSITE_EVENTS")}
    if raw.has("SAMPLING_CALLCHAINS"):
        # unresolved_by_module: a frame nsys did not resolve (its symbol an address) is '[unresolved]' in its module.
        unresolved = "unresolved" if raw.has("SAMPLING_CALLCHAINS", "unresolved") else "0"
        for i, sym, mod, u in raw.rows(f"select id, {raw.string('symbol')}, {raw.string('module')}, "
                                       f"coalesce({unresolved}, 0) from SAMPLING_CALLCHAINS order by id, stackDepth"):
            if i in samples:
                samples[i][2].append(("[unresolved]" if u and unresolved_by_module else sym, mod))
    return samples


def cpu_hotspots(raw, top_n=10):
    threads = defaultdict(list)
    for g, _, frames in sample_stacks(raw, unresolved_by_module=True).values():
        threads[((g >> 24) & 0xFFFFFF, g & 0xFFFFFF)].append(frames)
    out = []
    for (pid, tid), stacks in sorted(threads.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        self_n, total = defaultdict(int), defaultdict(int)
        for frames in stacks:
            if frames:
                self_n[frames[0]] += 1
            for f in set(frames):
                total[f] += 1
        n = len(stacks)
        ranked = sorted(total, key=lambda f: (-self_n[f], -total[f], f[0], f[1]))[:top_n]
        out += [[pid, tid, f[0], f[1], self_n[f], raw.round(100.0 * self_n[f] / n, 1), total[f],
                 raw.round(100.0 * total[f] / n, 1), n] for f in ranked]
    return out


def gpu_idle_cpu(raw, min_gap_ns=1_000_000, top_gaps=10, top_functions=5):
    per_device = defaultdict(list)
    for d, s, e in raw.gpu_work():
        per_device[d].append((s, e))
    gaps = []
    for d, work in per_device.items():
        busy = union(work)
        gaps += [(d, a[1], b[0]) for a, b in zip(busy, busy[1:]) if b[0] - a[1] > min_gap_ns]
    ops = defaultdict(set)  # (process, correlation) -> devices
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if raw.has(t):
            for d, proc, corr in raw.rows(f"select deviceId, globalPid >> 24, correlationId from {t} "
                                          "where correlationId is not null"):
                ops[(proc, corr)].add(d)
    launchers = defaultdict(set)
    if raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        for g, corr in raw.rows("select globalTid, correlationId from CUPTI_ACTIVITY_KIND_RUNTIME "
                                "where correlationId is not null"):
            for d in ops.get((g >> 24, corr), ()):
                launchers[d].add(g)
    samples = sample_stacks(raw).values()
    out = []
    for d, gs, ge in sorted(gaps, key=lambda g: (-(g[2] - g[1]), g[0], g[1]))[:top_gaps]:
        names = defaultdict(int)
        for g, ts, frames in samples:
            if g in launchers[d] and gs <= ts < ge:
                names[frames[0][0] if frames else "[no stack]"] += 1
        n = sum(names.values())
        ranked = sorted(names, key=lambda f: (-names[f], f))[:top_functions]
        out += [[d, gs, ge - gs, n, f, names[f], raw.round(100.0 * names[f] / n, 1)] for f in ranked] or \
               [[d, gs, ge - gs, 0, None, None, None]]
    return out


# --- Where the GPU time goes, why it idles (gpu_time_breakdown, gpu_idle, kernel_breakdown, launch_stats,
# expert_findings). Kernel types are the recipes' own table (data users edit); everything else is computed here.
MEMCPY_NAMES = ["Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD",
                "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP", "Memcpy UVM HtoD", "Memcpy UVM DtoH",
                "Memcpy UVM DtoD"]  # CUPTI's copy kinds, by number
PAGEABLE, STREAM_WAIT_SYNC = 0, 2  # ENUM_CUDA_MEM_KIND, ENUM_CUPTI_SYNC_TYPE


def kernel_types():
    """[(type, priority, pattern)] from the table in sql/kernel_breakdown.sql."""
    text = open(os.path.join(RECIPES, "kernel_breakdown.sql")).read()
    block = text[text.index("-- BEGIN kernel_types"):text.index("-- END kernel_types")]
    return sorted((t, int(p), pat) for t, p, pat in re.findall(r"\('([^']*)', (\d+), '([^']*)'\)", block))


def kernel_type(name, types):
    n = name.lower()
    matches = [(p, t) for t, p, pat in types if fnmatch.fnmatchcase(n, pat)]
    return min(matches)[1] if matches else "other"


def gpu_ops(raw):
    """(kind, device, name, start, end, process globalPid, correlationId) of every kernel, memcpy and memset."""
    out = [("kernel",) + r for r in raw.rows(
        "select deviceId, case when shortName is not null then " + raw.string("shortName") + " else " +
        raw.string("demangledName") + " end, start, max(\"end\", start), globalPid, correlationId "
        "from CUPTI_ACTIVITY_KIND_KERNEL")] if raw.has("CUPTI_ACTIVITY_KIND_KERNEL") else []
    if raw.has("CUPTI_ACTIVITY_KIND_MEMCPY"):
        out += [("memcpy", d, MEMCPY_NAMES[k] if 0 <= k < len(MEMCPY_NAMES) else "Memcpy", s, e, g, c)
                for d, k, s, e, g, c in raw.rows("select deviceId, copyKind, start, max(\"end\", start), globalPid, "
                                                  "correlationId from CUPTI_ACTIVITY_KIND_MEMCPY")]
    if raw.has("CUPTI_ACTIVITY_KIND_MEMSET"):
        out += [("memset", d, "Memset", s, e, g, c) for d, s, e, g, c in raw.rows(
            "select deviceId, start, max(\"end\", start), globalPid, correlationId from CUPTI_ACTIVITY_KIND_MEMSET")]
    return out


def union_ns(intervals):
    return sum(e - s for s, e in union(intervals))


def api_calls(raw):
    """(process, correlationId) -> (start, end, globalTid, name) of the CUDA runtime/driver API call of that id. When
    an export records two calls for one launch, the earliest: by start, then the longest, then the name, then the
    first stored (as trace_events' call_* columns take it). An end before the start, or none, reads as the start."""
    if not raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return {}
    api = f"case when nameId is null then '[unnamed CUDA API call]' else {raw.string('nameId')} end"
    calls = {}
    end = 'max(start, coalesce("end", start))'
    for g, c, s, e, n in raw.rows(f"select globalTid, correlationId, start, {end}, {api} from CUPTI_ACTIVITY_KIND_RUNTIME "
                                  "where correlationId is not null and start is not null order by rowid"):
        key = (g >> 24, c)
        if key not in calls or (s, -(e - s), n) < (calls[key][0], -(calls[key][1] - calls[key][0]), calls[key][3]):
            calls[key] = (s, e, g, n)
    return calls


def gpu_time_breakdown(raw):
    types = kernel_types()
    sets = defaultdict(lambda: defaultdict(list))
    for kind, d, name, s, e, _, _ in gpu_ops(raw):
        what = "memory" if kind != "kernel" else "comm" if kernel_type(name, types) == "NCCL" else "compute"
        sets[d][what].append((s, e))
    out = []
    for d in sorted(sets):
        k = sets[d]
        everything = k["compute"] + k["comm"] + k["memory"]
        span = max(e for _, e in everything) - min(s for s, _ in everything)
        compute, comm, memory = union_ns(k["compute"]), union_ns(k["comm"]), union_ns(k["memory"])
        idle = span - union_ns(everything)
        overlap = sum(max(0, min(e, be) - max(s, bs)) for s, e in union(k["comm"]) for bs, be in union(k["compute"])
                      if bs < e and be > s)
        pct = [raw.round(100.0 * v / span, 1) if span else None for v in (compute, comm, memory, idle, overlap)]
        out.append([d, compute, comm, memory, idle, overlap] + pct + [span])
    return out


def kernel_breakdown(raw, top_n=5):
    types = kernel_types()
    per_name = defaultdict(lambda: [0, 0])
    for _, _, name, s, e, _, _ in gpu_ops(raw):
        per_name[name][0] += 1
        per_name[name][1] += e - s
    by_type = defaultdict(list)
    for name, (n, ns) in per_name.items():
        by_type[kernel_type(name, types)].append((name, n, ns))
    all_ns = sum(ns for _, ns in per_name.values())
    out = []
    for t, names in sorted(by_type.items(), key=lambda kv: (-sum(x[2] for x in kv[1]), kv[0])):
        t_n, t_ns = sum(x[1] for x in names), sum(x[2] for x in names)
        for rank, (name, n, ns) in enumerate(sorted(names, key=lambda x: (-x[2], x[0]))[:top_n], 1):
            out.append([t, t_n, t_ns, raw.round(100.0 * t_ns / all_ns, 1) if all_ns else None, rank, name, n, ns,
                        raw.round(100.0 * ns / t_ns, 1) if t_ns else None])
    return out


def ordered_with_covered(ops):
    """ops sorted by (start, end, name), each with the latest end of the ones before it (None for the first). (The
    recipes break ties in their own order; the name after a gap differs only if two operations of a device start
    and end together right after it: this check would show it.)"""
    out, covered = [], None
    for op in sorted(ops, key=lambda o: (o[0], o[1], o[2])):
        out.append((op, covered))
        covered = op[1] if covered is None else max(covered, op[1])
    return out


def gpu_idle(raw, min_gap_ns=1_000_000):
    calls = api_calls(raw)
    sync_ends = defaultdict(list)  # globalTid -> ends of its synchronization calls
    if raw.has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        for g, c in raw.rows("select globalPid, correlationId from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
            if (g >> 24, c) in calls:
                call = calls[(g >> 24, c)]
                sync_ends[call[2]].append(call[1])
    per_device = defaultdict(list)
    for kind, d, name, s, e, g, c in gpu_ops(raw):
        per_device[d].append((s, e, name, g, c))
    rows = []
    for d in sorted(per_device):
        for (s, e, name, g, c), covered in ordered_with_covered(per_device[d]):
            if covered is None or s - covered <= min_gap_ns:
                continue
            call = calls.get((g >> 24, c)) if c is not None else None
            if call is None or call[0] < covered:
                cause = "other"
            elif any(covered <= end <= call[0] for end in sync_ends[call[2]]):
                cause = "sync"
            else:
                cause = "host"
            rows.append([d, covered, s, s - covered, cause, name, call[3] if call else None, call[0] if call else None])
    totals = defaultdict(lambda: [0, 0])
    for r in rows:
        totals[(r[0], r[4])][0] += 1
        totals[(r[0], r[4])][1] += r[3]
    return [r + totals[(r[0], r[4])] for r in rows]


def cuda_graph_sum(raw):
    """Replays of CUDA graphs traced per node: the kernels, memcpys and memsets with a graphNodeId (0: none) grouped
    by (process, correlationId); graphs: the replays of one process with the same set of node ids."""
    calls = api_calls(raw)
    replays = defaultdict(list)  # (globalPid, correlationId) -> [(kind, start, end, node id)]
    for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                        ("memset", "CUPTI_ACTIVITY_KIND_MEMSET")):
        if raw.has(table, "graphNodeId"):
            for g, c, s, e, n in raw.rows(f"select globalPid, correlationId, start, max(\"end\", start), graphNodeId "
                                          f"from {table} where graphNodeId is not null and graphNodeId != 0 "
                                          "and correlationId is not null"):
                replays[(g, c)].append((kind, s, e, n))
    graphs = defaultdict(list)  # (globalPid, node ids) -> [(span, kernels, other nodes, latency, idle, call name)]
    for (g, c), nodes in replays.items():
        start, end = min(s for _, s, _, _ in nodes), max(e for _, _, e, _ in nodes)
        idle = (end - start) - union_ns([(s, e) for _, s, e, _ in nodes])
        kernels = sum(1 for k, *_ in nodes if k == "kernel")
        call = calls.get((g >> 24, c))
        graphs[(g, tuple(sorted({n for *_, n in nodes})))].append(
            (end - start, kernels, len(nodes) - kernels, start - call[0] if call else None, idle,
             call[3] if call else None))
    rows = []
    for (g, ids), reps in graphs.items():
        spans = [r[0] for r in reps]
        latencies = [r[3] for r in reps if r[3] is not None]
        names = [r[5] for r in reps if r[5] is not None]
        n = len(reps)
        rows.append((-sum(spans), (g >> 24) & 0xFFFFFF, ids[0], [
            (g >> 24) & 0xFFFFFF, ids[0], len(ids), min(names) if names else None, n,
            raw.round(sum(r[1] for r in reps) / n, 2), raw.round(sum(r[2] for r in reps) / n, 2),
            raw.round(sum(spans) / n / 1e3, 3), raw.round(min(spans) / 1e3, 3), raw.round(max(spans) / 1e3, 3),
            raw.round(sum(latencies) / len(latencies) / 1e3, 3) if latencies else None,
            raw.round(max(latencies) / 1e3, 3) if latencies else None,
            raw.round(sum(r[4] for r in reps) / n / 1e3, 3),
            raw.round(100.0 * sum(r[4] for r in reps) / sum(spans), 2) if sum(spans) else None]))
    return [r[3] for r in sorted(rows, key=lambda r: r[:3])]


def launch_stats(raw, top_n=20):
    calls = api_calls(raw)
    out = []
    starts = {}
    for kind, d, name, s, e, g, c in gpu_ops(raw):
        if kind == "kernel":
            starts.setdefault(name, []).append((s, e - s, calls.get((g >> 24, c)) if c is not None else None))
    for name, ks in starts.items():
        launched = [(s, dur, call) for s, dur, call in ks if call]
        delays = [s - call[0] for s, dur, call in launched]
        short = sum(1 for s, dur, call in launched if dur < call[1] - call[0])
        out.append([name, len(ks), len(launched), len(ks) - len(launched), min(delays, default=None),
                    raw.round(statistics.median(delays), 1) if delays else None,
                    raw.round(sum(delays) / len(delays), 1) if delays else None, max(delays, default=None),
                    sum(delays) if delays else None, short if launched else 0,
                    raw.round(100.0 * short / len(launched), 1) if launched else None,
                    sum(dur for _, dur, _ in ks), sum(call[1] - call[0] for _, _, call in launched) if launched else None])
    out.sort(key=lambda r: (r[8] is None, -(r[8] or 0), r[0]))
    return out[:top_n]


def expert_findings(raw, gap_ns=500_000_000, chunks=30, threshold_pct=50):
    """(rule, pid, start, duration, name) of each finding, in the recipe's order; devices are compared too, but for
    cuda_api_sync (nsys 2026 records device 0 on other GPUs' sync rows; the catalog corrects it)."""
    calls = api_calls(raw)
    rows = []
    for t, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if not raw.has(t):
            continue
        kinds = "srcKind, dstKind" if kind == "memcpy" else "null, null"
        for d, s, e, g, c, src, dst in raw.rows(f"select deviceId, start, max(\"end\", start), globalPid, "
                                                f"correlationId, {kinds} from {t}"):
            call = calls.get((g >> 24, c))
            if call is None:
                continue
            sync_api = "async" not in call[3].lower()
            if kind == "memset" and sync_api:
                rows.append(["cuda_memset_sync", d, (call[2] >> 24) & 0xFFFFFF, s, e - s, call[3]])
            elif kind == "memcpy" and (sync_api or PAGEABLE in (src, dst)):
                rows.append(["cuda_memcpy_sync" if sync_api else "cuda_memcpy_async", d, (call[2] >> 24) & 0xFFFFFF,
                             s, e - s, call[3]])
    if raw.has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        for g, c, st in raw.rows("select globalPid, correlationId, syncType from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
            call = calls.get((g >> 24, c))
            if call is not None and st != STREAM_WAIT_SYNC and "Synchronize" in call[3]:
                rows.append(["cuda_api_sync", None, (call[2] >> 24) & 0xFFFFFF, call[0], call[1] - call[0], call[3]])
    per = defaultdict(list)
    for kind, d, name, s, e, g, c in gpu_ops(raw):
        per[(g, d)].append((s, e, name))
    for (g, d), ops in per.items():
        pid = (g >> 24) & 0xFFFFFF
        for (s, e, name), covered in ordered_with_covered(ops):
            if covered is not None and s - covered >= gap_ns:
                rows.append(["gpu_gaps", d, pid, covered, s - covered, name])
        t0, t1 = min(o[0] for o in ops), max(o[1] for o in ops)
        size = max(1, (t1 - t0) // chunks)
        busy = union((s, e) for s, e, _ in ops)
        for k in range(chunks):
            lo, hi = t0 + k * size, (t1 if k == chunks - 1 else t0 + (k + 1) * size)
            if hi <= lo:
                continue
            b = sum(max(0, min(e, hi) - max(s, lo)) for s, e in busy)
            if 100.0 * b / (hi - lo) < threshold_pct:
                rows.append(["gpu_time_util", d, pid, lo, hi - lo, None])
    key = lambda r: (r[0], -1 if r[1] is None else r[1], r[3], r[5] or "")
    return sorted(rows, key=key)


def expert_shown(r):  # the recipe's row as the reference has it: no detail, no device for cuda_api_sync
    return [r[0], None if r[0] == "cuda_api_sync" else r[1]] + r[2:6]



def stable_name(name):
    """A name as sql/diff.sql matches it across runs: without PyTorch's per-call fields, addresses (0x and 4 or more
    hex digits, at the start of a word) as 0x?."""
    name = pytorch_call_fields_removed(name)
    return re.sub(r"(?<![0-9A-Za-z_])0x[0-9a-fA-F]{4,}", "0x?", name)


def diff_sides(raw):
    """{(kind, stable name): (count, total ns)} for kernels and NVTX ranges of one report, from the raw tables."""
    out = defaultdict(lambda: [0, 0])
    for kind, d, name, s, e, g, c in gpu_ops(raw):
        if kind == "kernel":
            r = out[("kernel", stable_name(name))]
            r[0] += 1
            r[1] += e - s
    if raw.has("NVTX_EVENTS"):
        domains = nvtx_domains(raw)
        end_of_profile = profile_end(raw)  # where a range never closed ends, as in trace_events
        text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
        for name, dom, g, s, e in raw.rows(f"select {text}, coalesce(domainId, 0), coalesce(globalTid, 0), start, "
                                           f"coalesce(\"end\", {end_of_profile}) from NVTX_EVENTS "
                                           "where eventType in (59, 60, 70, 71) and start is not null"):
            dom_name = domains.get((g & ~0xFFFFFF, dom)) if dom else None
            r = out[("nvtx", stable_name((dom_name + ":" if dom_name else "") + name))]
            r[0] += 1
            r[1] += max(0, e - s)
    return out


def diff_rows(before, after):
    """sql/diff.sql's kernel and NVTX rows, from the raw tables of the two reports (unordered)."""
    b, a = diff_sides(before), diff_sides(after)
    rows = []
    for key in set(b) | set(a):
        (nb, tb), (na, ta) = b.get(key, (0, 0)), a.get(key, (0, 0))
        rows.append([key[0], key[1], nb, na, tb, ta, ta - tb, before.round(100.0 * (ta - tb) / tb, 1) if tb else None,
                     "new" if nb == 0 else "vanished" if na == 0 else ""])
    return rows


def run_diff(before, after):
    out = subprocess.run([SQLITE3, "-json", "-bail", ":memory:", "-cmd", f".load {EXTENSION}",
                          f"attach 'file:{before}?mode=ro' as before", f"attach 'file:{after}?mode=ro' as after",
                          f".read {RECIPES}/diff.sql"], capture_output=True, text=True, check=True).stdout
    return [list(row.values()) for row in json.loads(out)] if out.strip() else []


def queue_depth(raw, bucket_ns=100_000_000, max_buckets=100_000):
    """Per (device, stream, bucket): the most operations queued at once (call start, or the operation's own start
    when earlier or unrecorded, to its end) and the time-weighted mean."""
    calls = api_calls(raw)
    streams = defaultdict(list)
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if raw.has(t):
            for d, st, s, e, g, c in raw.rows(f"select deviceId, streamId, start, max(\"end\", start), globalPid, "
                                              f"correlationId from {t}"):
                call = calls.get((g >> 24, c)) if c is not None else None
                streams[(d, st)].append((min(s, call[0]) if call else s, e))
    if not streams:
        return []
    t0 = min(q for ops in streams.values() for q, _ in ops)
    t_end = max(e for ops in streams.values() for _, e in ops)
    if t_end // max_buckets - t0 // max_buckets >= bucket_ns:  # more than max_buckets buckets: widened
        bucket_ns = t_end // max_buckets - t0 // max_buckets + 1
    out = []
    for (d, st) in sorted(streams):
        events = sorted([(q, 1) for q, _ in streams[(d, st)]] + [(e, -1) for _, e in streams[(d, st)]])
        buckets = defaultdict(lambda: [0, 0])  # k -> [max depth, depth x ns]
        depth = 0
        for (t, delta), nxt in zip(events, events[1:] + [(None, 0)]):
            depth += delta
            if nxt[0] is None or nxt[0] <= t or depth <= 0:
                continue
            s, e = t, nxt[0]
            k = (s - t0) // bucket_ns
            while t0 + k * bucket_ns < e:
                part = min(e, t0 + (k + 1) * bucket_ns) - max(s, t0 + k * bucket_ns)
                b = buckets[k]
                b[0] = max(b[0], depth)
                b[1] += depth * part
                k += 1
        out += [[d, st, k, t0 + k * bucket_ns, b[0], raw.round(1.0 * b[1] / bucket_ns, 2)]
                for k, b in sorted(buckets.items())]
    return out


def cuda_memory_peak(raw):
    """Per (GPU, memory kind) from CUDA_GPU_MEMORY_USAGE_EVENTS: the bytes in use after each row (allocations minus
    frees, in (start, rowid) order, every process summed), the first row that reaches the largest value, the CUDA call
    of its correlation id, that call's thread's NVTX ranges open at the row's start (start <= t < end, outermost
    first), and the kind's totals."""
    if not raw.has("CUDA_GPU_MEMORY_USAGE_EVENTS"):
        return []
    labels = dict(raw.rows("select id, label from ENUM_CUDA_MEM_KIND")) if raw.has("ENUM_CUDA_MEM_KIND") else {}
    calls = api_calls(raw)
    per_kind = defaultdict(list)
    for rowid, s, g, d, kind, op, b, addr, corr in raw.rows(
            "select rowid, start, globalPid, deviceId, memKind, memoryOperationType, bytes, address, correlationId "
            "from CUDA_GPU_MEMORY_USAGE_EVENTS order by start, rowid"):
        per_kind[(d, kind)].append((s, rowid, g, op, b, addr, corr))
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
    out = []
    for (d, kind), rows in per_kind.items():
        in_use, peak = 0, None
        for s, rowid, g, op, b, addr, corr in rows:
            in_use += b if op == 0 else -b if op == 1 else 0
            if peak is None or in_use > peak[0]:
                peak = (in_use, s, g, b, addr, corr)
        value, s, g, b, addr, corr = peak
        call = calls.get((g >> 24, corr)) if corr is not None else None
        ranges = []
        if call is not None and raw.has("NVTX_EVENTS"):
            end_of_profile = profile_end(raw)  # where a range never closed ends, as in trace_events
            ranges = [n for n, _, _, _ in sorted(raw.rows(
                f"select {text}, start, coalesce(\"end\", {end_of_profile}), rowid from NVTX_EVENTS "
                "where eventType in (59, 60, 70, 71) and globalTid = ? and start <= ? and "
                f"coalesce(\"end\", {end_of_profile}) > ?", call[2], s, s), key=lambda r: (r[1], -(r[2] - r[1]), r[3]))]
        allocs = [r[4] for r in rows if r[3] == 0]
        frees = [r[4] for r in rows if r[3] == 1]
        out.append([d, labels.get(kind, kind), value, s, b, addr,
                    (call[2] >> 24) & 0xFFFFFF if call else None, call[2] & 0xFFFFFF if call else None,
                    call[3] if call else None, " > ".join(ranges) if ranges else None, len(ranges),
                    len(rows), len(allocs), len(frees), sum(allocs), sum(frees), in_use])
    return sorted(out, key=lambda r: (r[0], -r[2], str(r[1])))


PYTORCH_FIELDS = (", seq = ", ", seq=", ", stashed seq", ", op_id = ", ", sizes = ")


def torch_op_sum(raw):
    """PyTorch's emit_nvtx ranges per op (the name before its first ', '), from NVTX_EVENTS and the GPU operations:
    calls, CPU time (as nvtx_sum counts it), GPU time (per range the union of the intervals of the work launched inside it, as the
    projection defines it), the most common 'sizes = ' field, and each backward node paired with the last forward
    range of its process with its seq that started before it."""
    if not raw.has("NVTX_EVENTS"):
        return []
    end_of_profile = profile_end(raw)  # where the projection ends a range never closed
    last_nvtx = raw.rows("select max(max(start), coalesce(max(\"end\"), max(start))) from NVTX_EVENTS")[0][0]
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '[unnamed NVTX range]')"
    ranges = [r for r in raw.rows(f"select rowid, {text}, globalTid, endGlobalTid, start, "
                                  f"coalesce(\"end\", {end_of_profile}), \"end\" from NVTX_EVENTS "
                                  "where eventType in (59, 60, 70, 71) and start is not null")
              if any(f in r[1] for f in PYTORCH_FIELDS) or r[1].startswith("aten::")]
    busy = {}
    if raw.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        ops, _, _, calls = projection_inputs(raw)
        for rowid, _, g, eg, s, e, _ in ranges:
            if g is None or (eg is not None and eg != g):
                continue
            corrs = {corr for cs, ce, corr in calls.get(g, ()) if cs >= s and ce <= e}
            work = [op for corr in corrs for op in ops[(g >> 24, corr)]]
            if work:
                busy[rowid] = sum(b - a for a, b in union((w[0], w[1]) for w in work if w[1] > w[0]))
    calls_of = {}
    for rowid, name, g, _, s, _, stored_end in ranges:
        op = name.split(", ", 1)[0]
        seq = re.search(r", (stashed )?seq ?= ?(-?[0-9]+)", name)
        sizes = re.search(r", sizes = (.*?)(, input_op_ids = |$)", name, flags=re.S)
        backward = seq is not None and (seq.group(1) is not None or (
            re.fullmatch(r".*Backward([0-9]{1,2})?", op, flags=re.S) is not None and not op.startswith("autograd::")))
        calls_of[rowid] = dict(op=op, kind="backward node" if backward else "op", seq=int(seq.group(2)) if seq else None,
                               process=(g or 0) >> 24, start=s, gpu=busy.get(rowid),
                               # CPU time as nvtx_sum counts it: a range never closed ends at the last NVTX timestamp
                               cpu=max(0, (last_nvtx if stored_end is None else stored_end) - s),
                               shapes=sizes.group(1) if sizes else None)
    forward = defaultdict(list)  # (process, seq) -> [(start, rowid)] of forward ranges
    for rowid, c in calls_of.items():
        if c["seq"] is not None and c["kind"] == "op":
            forward[(c["process"], c["seq"])].append((c["start"], rowid))
    partners = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))  # (op, kind) -> partner -> [n, cpu, gpu]
    for rowid, b in calls_of.items():
        if b["kind"] != "backward node":
            continue
        made_by = [x for x in forward.get((b["process"], b["seq"]), ()) if x[0] <= b["start"]]
        if not made_by:
            continue
        f = calls_of[max(made_by)[1]]
        for mine, other in ((f, b), (b, f)):
            t = partners[(mine["op"], mine["kind"])][other["op"]]
            t[0] += 1
            t[1] += other["cpu"]
            t[2] += other["gpu"] or 0
    groups = defaultdict(list)
    for c in calls_of.values():
        groups[(c["op"], c["kind"])].append(c)
    out = []
    for (op, kind), cs in groups.items():
        shapes = defaultdict(int)
        for c in cs:
            if c["shapes"] is not None:
                shapes[c["shapes"]] += 1
        top = min(shapes.items(), key=lambda kv: (-kv[1], kv[0])) if shapes else (None, None)
        p = partners.get((op, kind), {})
        best = min(p.items(), key=lambda kv: (-kv[1][0], kv[0]))[0] if p else None
        out.append([op, kind, len(cs), sum(c["cpu"] for c in cs), sum(c["gpu"] or 0 for c in cs),
                    sum(1 for c in cs if c["gpu"] is not None), top[0], top[1], best, sum(v[0] for v in p.values()),
                    sum(v[1] for v in p.values()) if p else None, sum(v[2] for v in p.values()) if p else None])
    return sorted(out, key=lambda r: (-r[4], -r[3], r[0], r[1]))

CHECKS = {
    "top_kernels.sql": (top_kernels, lambda r: r),
    "memcpy_bandwidth.sql": (memcpy_bandwidth, lambda r: r[2:]),  # copies and numbers; labels are the catalog's
    "launch_latency.sql": (launch_latency, lambda r: r[2:]),  # pid, tid, device, stream, call_ns, latency_us
    "nvtx_gpu_time.sql": (nvtx_gpu_time, lambda r: r),
    "gpu_busy.sql": (gpu_busy, lambda r: r),
    "compute_comm_overlap.sql": (compute_comm_overlap, lambda r: r),
    "sweep.sql": (sweep, lambda r: r),
    "cpu_hotspots.sql": (cpu_hotspots, lambda r: r[1:2] + r[3:]),  # numbers and frames; names are the catalog's
    "gpu_idle_cpu.sql": (gpu_idle_cpu, lambda r: r[:5] + r[6:]),  # all but the thread names
    "gpu_time_breakdown.sql": (gpu_time_breakdown, lambda r: r),
    "kernel_breakdown.sql": (kernel_breakdown, lambda r: r),
    "gpu_idle.sql": (gpu_idle, lambda r: r),
    "launch_stats.sql": (launch_stats, lambda r: r),
    "cuda_graph_sum.sql": (cuda_graph_sum, lambda r: r),
    "queue_depth.sql": (queue_depth, lambda r: r),
    # Compared as sets: the recipe orders sync findings by device, which the reference leaves out.
    "expert_findings.sql": (expert_findings, expert_shown, "unordered"),
    "nsys_stats/cuda_kern_exec_sum.sql": (cuda_kern_exec_sum, lambda r: r),
    "nsys_stats/nvtx_gpu_proj_sum.sql": (nvtx_gpu_proj_sum, lambda r: r),
    "nsys_stats/nvtx_sum.sql": (nvtx_sum, lambda r: r),
    "nsys_stats/cuda_api_sum.sql": (cuda_api_sum, lambda r: r),
    "cuda_memory_peak.sql": (cuda_memory_peak, lambda r: r),
    "torch_op_sum.sql": (torch_op_sum, lambda r: r),
}

if LIST:
    print("\n".join(sorted(CHECKS)))
    sys.exit(0)
if os.environ.get("ONLY"):
    CHECKS = {k: v for k, v in CHECKS.items() if re.search(os.environ["ONLY"], k)}
passed = failed = 0


def compare(what, ours, expected):
    """Counts one comparison; on a difference, prints the row counts and the first row that differs."""
    global passed, failed
    if ours == expected:
        passed += 1
        return
    failed += 1
    bad = next((i for i, (a, b) in enumerate(zip(ours, expected)) if a != b), min(len(ours), len(expected)))
    print(f"FAILED: {what}: {len(ours)} rows, reference {len(expected)}; first difference at row {bad}: "
          f"{ours[bad] if bad < len(ours) else None} != {expected[bad] if bad < len(expected) else None}")


for profile in PROFILES:
    raw = Raw(profile)
    for recipe, (reference, shown, *order) in CHECKS.items():
        ours, expected = [shown(r) for r in run_recipe(profile, recipe)], reference(raw)
        if order:
            ours, expected = sorted(ours, key=repr), sorted(expected, key=repr)
        compare(f"{recipe} on {profile.rsplit('/', 1)[-1]}", ours, expected)
# torch_op_sum's CPU time is NVIDIA's nvtx_sum's: per op, the sum of the report's Total Time over the op's names. On
# the profiles whose PyTorch ranges are all in the default domain (the report then names a range by its text alone).
def is_pytorch_range(name):
    return any(f in name for f in PYTORCH_FIELDS) or name.startswith("aten::")


for profile in PROFILES:
    if os.environ.get("ONLY") and not re.search(os.environ["ONLY"], "torch_op_sum.sql"):
        break
    ours = defaultdict(int)
    for r in run_recipe(profile, "torch_op_sum.sql"):
        ours[r[0]] += r[3]
    raw = Raw(profile)
    text = f"coalesce(text, case when textId is not null then {raw.string('textId')} end, '')"
    if not ours or any(is_pytorch_range(n) for n, in raw.rows(
            f"select {text} from NVTX_EVENTS where coalesce(domainId, 0) != 0 and eventType in (59, 60, 70, 71)")):
        continue
    nvidia = defaultdict(int)
    for r in run_recipe(profile, "nsys_stats/nvtx_sum.sql"):
        if is_pytorch_range(r[-1]):
            nvidia[r[-1].split(", ", 1)[0]] += r[1]
    compare(f"torch_op_sum.sql's cpu_ns per op = nvtx_sum's Total Time over its names on {profile.rsplit('/', 1)[-1]}",
            sorted(ours.items()), sorted(nvidia.items()))
# sql/diff.sql on each profile and the next (and the last and the first): its kernel and NVTX rows against the
# reference, as sets; the 'event' rows (every kind) are the catalog's and are left out.
for before_path, after_path in zip(PROFILES, PROFILES[1:] + PROFILES[:1]):
    if os.environ.get("ONLY") and not re.search(os.environ["ONLY"], "diff.sql"):
        break
    ours = sorted((r[:9] for r in run_diff(before_path, after_path) if r[0] != "event"), key=repr)
    expected = sorted(diff_rows(Raw(before_path), Raw(after_path)), key=repr)
    compare(f"diff.sql on {before_path.rsplit('/', 1)[-1]} -> {after_path.rsplit('/', 1)[-1]}", ours, expected)
print(f"check_recipe_numbers: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
