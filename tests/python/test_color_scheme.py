"""`nsystrace --nvtx-color-scheme` on the bundled example and on every real export (../shared/fixtures/real, when
there): the command succeeds, every tid is a Chrome track id, no two slices partially overlap on one track (a viewer
drops such a slice), each slice sits on the track (same process, same track and lane names) where the command
without a scheme puts it, and NVTX ranges take the scheme's color (the first rule whose expression matches), others
keep theirs.

  test_color_scheme.py SOURCE_DIR SCRATCH_DIR [EXTENSION]

EXTENSION: a built extension without its suffix (build/nsystrace), to test the source tree's package with it
(PYTHONPATH=ext/python, a Python that can load extensions: /usr/bin/python3); without it, the installed package.
"""
import collections
import contextlib
import decimal
import glob
import io
import json
import os
import re
import sqlite3
import sys

src, tmp = sys.argv[1], sys.argv[2]
import nsystrace  # noqa: E402
import nsystrace.cli  # noqa: E402
from checks import check, failures  # tests/python/checks.py, beside this script

if len(sys.argv) > 3:
    extension = os.path.abspath(sys.argv[3])
    nsystrace.loadable_path = lambda: extension

SCHEME = {"^[A-Za-m]": "good", "[0-9]": "bad", ".": "terrible"}
RULES = [(re.compile(k), v) for k, v in SCHEME.items()]


def convert(profile, out, *options):
    """Runs the command; (exit status, what it printed)."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = nsystrace.cli.main([profile, "-o", out, "--no-progress", *options])
    return code, said.getvalue()


def slices(path):
    """[(slice, cname)], a slice being (pid, process name, track name, tid, cat, name, ph, ts, dur), with exact
    decimal times."""
    with open(path) as f:
        events = json.load(f, parse_float=decimal.Decimal)["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    return [((e["pid"], processes.get(e["pid"]), threads.get((e["pid"], e["tid"])), e["tid"], e.get("cat"), e["name"],
              e["ph"], e["ts"], e.get("dur")), e.get("cname")) for e in events if e.get("ph") in ("X", "i")]


def replay_slices(path):
    """The CUDA graph replay slices of a JSON trace (args.graph_replay), as (pid, tid, ts, dur)."""
    with open(path) as f:
        return {(e["pid"], e["tid"], e["ts"], e.get("dur"))
                for e in json.load(f, parse_float=decimal.Decimal)["traceEvents"]
                if e.get("cat") == "graph" and (e.get("args") or {}).get("graph_replay")}


def partial_overlaps(found):
    """Slices that partially overlap an earlier one on their (pid, tid): the ones a viewer drops."""
    by_track = collections.defaultdict(list)
    for s, _ in found:
        if s[6] == "X":
            by_track[(s[0], s[3])].append((s[7], s[7] + s[8]))
    bad = []
    for track, spans in by_track.items():
        spans.sort(key=lambda t: (t[0], -t[1]))
        open_ends = []
        for start, end in spans:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                bad.append((track, start, end))
            open_ends.append(end)
    return bad


def expected_color(s, cname):
    if s[4] in ("nvtx", "nvtx_kernel"):
        return next((c for r, c in RULES if r.search(s[5])), cname)
    return cname


example = os.path.join(tmp, "color_example.sqlite")
if not os.path.exists(example):
    with open(os.path.join(src, "examples", "example_profile.sql")) as f:
        sqlite3.connect(example).executescript(f.read())
profiles = [example] + sorted(glob.glob(os.path.join(src, "..", "shared", "fixtures", "real", "*.sqlite")))
if len(profiles) == 1:
    print("only the bundled example: ../shared/fixtures/real absent")
for profile in profiles:
    name = os.path.basename(profile)
    plain, colored = os.path.join(tmp, "plain.json"), os.path.join(tmp, "colored.json")
    code, said = convert(profile, plain)
    if code != 0:
        check(f"{name}: converts without a scheme", False, said[-300:])
        continue
    code, said = convert(profile, colored, "--nvtx-color-scheme", json.dumps(SCHEME))
    check(f"{name}: --nvtx-color-scheme converts it", code == 0, said[-300:])
    if code != 0:
        continue
    found, reference = slices(colored), slices(plain)
    # The command colors through chrome_trace()'s explicit form (the columns passed), which draws the rows it is
    # given and no CUDA graph replay slice (those come with a trace_events scan: docs/limits.md).
    replays = replay_slices(plain)
    reference = [(s, c) for s, c in reference if not (s[4] == "graph" and (s[0], s[3], s[7], s[8]) in replays)]
    check(f"{name}: every tid is a Chrome track id", all(0 <= s[3] < 2 ** 31 for s, _ in found))
    bad = partial_overlaps(found)
    check(f"{name}: no slice partially overlaps another on its track", not bad, f"{len(bad)}, e.g. {bad[:3]}")
    where = collections.Counter(s[:3] + s[4:] for s, _ in found)
    want = collections.Counter(s[:3] + s[4:] for s, _ in reference)
    check(f"{name}: each slice on the track (and lane) the command's trace without a scheme has it on",
          where == want, f"{sum((where - want).values())} moved, e.g. {list((where - want).items())[:2]}")
    colors = collections.Counter((s[:3] + s[4:], c) for s, c in found)
    want_colors = collections.Counter((s[:3] + s[4:], expected_color(s, c)) for s, c in reference)
    check(f"{name}: NVTX ranges take the scheme's colors, other slices keep theirs", colors == want_colors,
          f"e.g. {list((colors - want_colors).items())[:2]}")

print(f"test_color_scheme: {len(profiles)} profiles, {len(failures)} failed")
sys.exit(1 if failures else 0)
