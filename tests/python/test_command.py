"""The `nsystrace` command and its page when things go wrong, as a new user meets them: choices that name nothing in
the profile, files that are not profiles, too many reports, a closed pipe, Ctrl-C and SIGTERM sent to a real child
process in the middle of writing, the page's conversion (the same trace as the command's), its progress, its cancel
and its cleanup. Every child runs with a TMPDIR of its own, so that what it leaves there is seen.

  test_command.py SOURCE_DIR SCRATCH_DIR
"""
import contextlib
import glob
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], os.path.abspath(sys.argv[2])
bin_dir = os.path.dirname(sys.executable)
command = os.path.join(bin_dir, "nsystrace")
work = os.path.join(tmp, "command")
os.makedirs(work, exist_ok=True)
child_tmp = os.path.join(work, "tmpdir")  # the children's TMPDIR
os.makedirs(child_tmp, exist_ok=True)
env = {**os.environ, "TMPDIR": child_tmp}


def run(*args, **kw):
    return subprocess.run([command, *args], capture_output=True, text=True, env=env, cwd=work, **kw)


def left_behind():
    """What a child left: temporary files beside the traces, and anything in its TMPDIR."""
    return sorted(glob.glob(os.path.join(work, "*.partial")) + os.listdir(child_tmp))


profile = os.path.join(work, "example.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    sqlite3.connect(profile).executescript(f.read())
raw = sqlite3.connect(profile)
names = [n for (n,) in raw.execute("select name from PROCESSES order by pid")]

# Choices that name nothing in the profile: a non-zero exit, a message listing what is there, nothing written.
out = os.path.join(work, "typo.pftrace")
for what, args, expected in (
        ("--gpu 7 on a 2-GPU profile", ["--gpu", "7"], ["GPU 0 (NVIDIA H100 80GB HBM3)", "GPU 1 (NVIDIA H100"]),
        ("--pid 99999", ["--pid", "99999"], ["4101 'python3'", "4102 'python3'"]),
        ("a window past the end", ["--start", "100s"], ["2000000000 ns (2.000 s) to 2139936539 ns"]),
        ("--kinds kernels", ["--kinds", "kernels"], ["did you mean kernel?", "the kinds are: nvtx, cuda_api"]),
        ("--kinds mpi, a kind the profile has none of", ["--kinds", "kernel,mpi"],
         ["no mpi events", "its kinds: nvtx, cuda_api, kernel, memcpy, memset, sync"])):
    r = run(profile, "-o", out, *args)
    named = "kernels" in args or "in " + profile in r.stderr  # a kind that does not exist is about no file
    check(f"{what}: exit 2, what exists listed, nothing written",
          r.returncode == 2 and all(e in r.stderr for e in expected) and named and not os.path.exists(out) and
          not left_behind() and "nsystrace: nsystrace:" not in r.stderr, r.stderr)
r = run(profile, "-o", out, "--kinds", "nvtx", "--nvtx-prefix", "zzz")
check("choices that each name something but nothing together: exit 2, said, nothing written",
      r.returncode == 2 and "matches all of these choices together" in r.stderr and profile in r.stderr and
      not os.path.exists(out) and not left_behind(), r.stderr)
check("the processes listed are the profile's", all(n == "python3" for n in names) and len(names) == 2, str(names))

# Files that are not profiles, named in the message; given twice; twelve reports.
renamed = os.path.join(work, "report.sqlite")
with open(renamed, "wb") as f:
    f.write(b"\x00\x01NSYS-like report bytes, not SQLite" * 100)
r = run(renamed)
check("a non-SQLite file named .sqlite (a renamed .nsys-rep): exit 2, told by its first bytes, with the fix",
      r.returncode == 2 and f"{renamed} is not an SQLite database" in r.stderr and "nsys export --type sqlite" in
      r.stderr and "Traceback" not in r.stderr, r.stderr)
r = run(profile, "./example.sqlite", "-o", out)
check("the same file twice is an error naming it", r.returncode == 2 and "given twice" in r.stderr and
      "example.sqlite" in r.stderr and not os.path.exists(out), r.stderr)
ranks = []
for i in range(12):
    ranks.append(os.path.join(work, f"rank{i}.sqlite"))
    shutil.copy(profile, ranks[-1])
r = run(*ranks, "-o", out)
check("twelve reports: a message naming the job's archive form, not SQLite's 'max 10'",
      r.returncode == 2 and "-o job.tar" in r.stderr and "max 10" not in r.stderr and not os.path.exists(out),
      r.stderr)
r = run(profile, "-o", os.path.join(work, "no_such_dir", "t.pftrace"))
check("an output that cannot be written: an error naming it, once prefixed",
      r.returncode == 1 and "no_such_dir/t.pftrace" in r.stderr and "nsystrace: nsystrace:" not in r.stderr and
      r.stderr.startswith("nsystrace: "), r.stderr)
r = subprocess.run([command, "serve", os.path.join(work, "absent.sqlite")], capture_output=True, text=True, env=env)
check("a subcommand's mistake is prefixed with its name once", r.returncode == 2 and
      r.stderr.startswith("nsystrace serve: ") and "absent.sqlite" in r.stderr and
      "nsystrace serve: nsystrace" not in r.stderr, r.stderr)

# A closed pipe (`nsystrace prof.sqlite | head -1`): quiet, no traceback; the trace is whole.
p = subprocess.Popen([command, profile, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                     cwd=work)
p.stdout.read(1)
p.stdout.close()
err = p.stderr.read().decode()
p.wait(timeout=60)
check("a closed pipe on stdout ends quietly (141), without a traceback", p.returncode in (0, 141) and
      "Traceback" not in err and "Error" not in err, f"{p.returncode} {err}")
os.unlink(out) if os.path.exists(out) else None

# Every entry point, at every stage (argparse's --help, --version and usage errors, the summary, the page's server
# start-up, the page's conversion process), on a closed pipe: quiet, 141. The reader has closed before the command
# starts, so the pipe is closed whenever it writes.
from nsystrace.cli import SUBCOMMANDS  # noqa: E402

python_m = [sys.executable, "-m"]
entry_points = [("--help", [command, "--help"]), ("--version", [command, "--version"]),
                ("python -m nsystrace --help", python_m + ["nsystrace", "--help"]),
                ("a conversion's summary", [command, profile, "-o", out, "--no-progress"]),
                ("the page's server start-up", [command, "serve", profile, "--port", "0"]),
                ("the page's conversion process", python_m + ["nsystrace.conversion", json.dumps(
                    {"profiles": [profile], "output": out, "progress": False})])]
entry_points += [(f"{name} --help", [command, name, "--help"]) for name in sorted(SUBCOMMANDS)]
for what, args in entry_points:
    reader, writer = os.pipe()
    os.close(reader)
    r = subprocess.run(args, stdout=writer, stderr=subprocess.PIPE, text=True, env=env, cwd=work, timeout=60)
    os.close(writer)
    check(f"{what} into a closed pipe: quiet, exit 141", r.returncode == 141 and r.stderr == "",
          f"{r.returncode} {r.stderr[-400:]}")
# Stderr closed too (`nsystrace ... 2>&1 | true`): a usage error is said where no one reads it, quietly.
reader, writer = os.pipe()
os.close(reader)
r = subprocess.run([command, "--no-such-option"], stdout=writer, stderr=writer, env=env, cwd=work, timeout=60)
os.close(writer)
check("a usage error with stdout and stderr into a closed pipe: exit 141, no traceback", r.returncode == 141,
      str(r.returncode))
# As a user pipes them: `... | head -1` (head may read everything before it exits: then the command ends with 0).
for what, args in entry_points:
    if "serve" in args:  # the server goes on after its first line (a closed pipe ends it, above)
        continue
    r = subprocess.run(["bash", "-c", '"$@" | head -1; exit "${PIPESTATUS[0]}"', "bash", *args], capture_output=True,
                       text=True, env=env, cwd=work, timeout=60)
    check(f"{what} | head -1: its first line, quiet, exit 0 or 141",
          r.returncode in (0, 141) and r.stderr == "" and r.stdout.count("\n") == 1 and r.stdout.strip(),
          f"{r.returncode} {r.stdout!r} {r.stderr[-400:]}")
os.unlink(out) if os.path.exists(out) else None

# Python without extension loading: the sqlite3 shell converts, and the command says so once, with the fix.
import nsystrace  # noqa: E402
import nsystrace.cli  # noqa: E402


def refuse(conn):
    raise nsystrace.ExtensionLoadingUnsupported("simulated")


real_load, nsystrace.load = nsystrace.load, refuse
said = io.StringIO()
try:
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        codes = [nsystrace.cli.main([profile, "-o", os.path.join(work, f"fallback{i}.pftrace"), "--no-progress"])
                 for i in range(2)]
finally:
    nsystrace.load = real_load
check("the sqlite3 shell fallback is said once, with the fix", codes == [0, 0] and
      said.getvalue().count("cannot load SQLite extensions") == 1 and
      "--enable-loadable-sqlite-extensions" in said.getvalue(), said.getvalue())

# A trace too big for a browser tab: the estimate (rows of the event tables), and the warning before writing.
from nsystrace import conversion  # noqa: E402
from nsystrace.connection import Connection  # noqa: E402

db = Connection([profile])
stored = raw.execute("select (select count(*) from NVTX_EVENTS) + (select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME)"
                     " + (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL) + (select count(*) from "
                     "CUPTI_ACTIVITY_KIND_MEMCPY) + (select count(*) from CUPTI_ACTIVITY_KIND_MEMSET) + (select "
                     "count(*) from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)").fetchone()[0]
check("the size estimate counts the event tables' rows", conversion.estimated_events(db) == stored,
      f"{conversion.estimated_events(db)} vs {stored}")
limits = conversion.ESTIMATE_ABOVE_PROFILE_BYTES, conversion.BROWSER_TAB_BYTES
# As if a tab held less: the JSON (454 bytes an event) is over, the protobuf (219) is not.
conversion.ESTIMATE_ABOVE_PROFILE_BYTES, conversion.BROWSER_TAB_BYTES = 0, stored * 300
warned = io.StringIO()
try:
    with contextlib.redirect_stderr(warned), contextlib.redirect_stdout(io.StringIO()):
        code = nsystrace.cli.main([profile, "-o", os.path.join(work, "big.json"), "--no-progress"])
        small = nsystrace.cli.main([profile, "-o", os.path.join(work, "small.pftrace"), "--no-progress"])
finally:
    conversion.ESTIMATE_ABOVE_PROFILE_BYTES, conversion.BROWSER_TAB_BYTES = limits
text = warned.getvalue()
check("a trace too big for a tab is warned about, with what to do and whether the trace processor is installed",
      code == 0 and small == 0 and text.count("warning:") == 1 and "--start/--end" in text and "-o job.tar" in text
      and "native accelerator" in text and ("is installed" in text or "is not on PATH" in text), text)

# --open on a trace too big for a tab starts Perfetto's trace processor when it is on PATH (a stand-in here, which
# says how it was started) and links ui.perfetto.dev without a URL: the UI finds the native accelerator on 9001.
fake_bin = os.path.join(work, "fake_bin")
os.makedirs(fake_bin, exist_ok=True)
started = os.path.join(work, "trace_processor_args")
with open(os.path.join(fake_bin, "trace_processor_shell"), "w") as f:
    f.write(f"#!/bin/sh\necho \"$@\" > '{started}'\n")
os.chmod(os.path.join(fake_bin, "trace_processor_shell"), 0o755)
conversion.ESTIMATE_ABOVE_PROFILE_BYTES, conversion.BROWSER_TAB_BYTES = 0, stored * 300
said = io.StringIO()
path, browser = os.environ["PATH"], os.environ.get("BROWSER")
os.environ["PATH"], os.environ["BROWSER"] = fake_bin + ":" + path, "true"
try:
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
        code = nsystrace.cli.main([profile, "-o", os.path.join(work, "big.json"), "--no-progress", "--open"])
finally:
    conversion.ESTIMATE_ABOVE_PROFILE_BYTES, conversion.BROWSER_TAB_BYTES = limits
    os.environ["PATH"] = path
    os.environ.pop("BROWSER") if browser is None else os.environ.update(BROWSER=browser)
args = open(started).read().split() if os.path.exists(started) else []
check("--open on a trace too big for a tab starts the trace processor on it, and links the UI to it",
      code == 0 and args == ["--httpd", os.path.join(work, "big.json")] and "is installed" in said.getvalue() and
      "https://ui.perfetto.dev/#!/?enablePlugins=com.meta.GpuCompute,dev.perfetto.GpuByProcess" in said.getvalue(),
      f"{args} {said.getvalue()[-400:]}")

# Ctrl-C and SIGTERM in the middle of writing a real conversion: stopped within a second, nothing left behind.
big = os.path.join(work, "big.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    b = sqlite3.connect(big)
    b.executescript(f.read())
# The example spans 140 ms: 1,000 copies, one after the other (4.4 M events with the projection). Converting it
# must outlast the first progress line (after 2 s of a phase) by far, on any machine: the page test cancels the
# conversion once that line shows, and a conversion finished by then cannot be cancelled (500 copies, 2.2 M events,
# were at 99% by then on a fast machine).
SHIFT = 200_000_000
COPIES = 1000
for table in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
              "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
    cols = [r[1] for r in b.execute(f"pragma table_info({table})")]
    exprs = [f"{c} + k * {SHIFT}" if c in ("start", "end") else f"{c} + k * 1000000" if c == "correlationId" else c
             for c in cols]
    b.execute(f"insert into {table} ({', '.join(cols)}) select {', '.join(exprs)} from {table}, (with recursive "
              f"copies(k) as (select 1 union all select k + 1 from copies where k < {COPIES}) select k from copies)")
b.commit()
b.close()


# The command as a Python that cannot load extensions runs it: through the sqlite3 shell.
WITHOUT_EXTENSION_LOADING = """
import sys, nsystrace, nsystrace.cli
def refuse(conn):
    raise nsystrace.ExtensionLoadingUnsupported("simulated")
nsystrace.load = refuse
sys.exit(nsystrace.cli.main(sys.argv[1:]))
"""


def interrupted(sig, args, what, through_the_shell=False):
    """Starts the command, sends sig once its trace is being written (its .partial file exists), and checks."""
    trace = os.path.join(work, "interrupted.json.gz")
    start = [sys.executable, "-c", WITHOUT_EXTENSION_LOADING] if through_the_shell else [command]
    p = subprocess.Popen([*start, *args, "-o", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=work)
    deadline = time.monotonic() + 120
    while not glob.glob(trace + ".*.partial") and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    writing = bool(glob.glob(trace + ".*.partial"))
    sent = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    took = time.monotonic() - sent
    expected = 130 if sig == signal.SIGINT else 143
    # The exit code and the missing trace show the conversion was cut short; the bound only catches a stop that
    # hangs (a loaded CI machine takes over 1 s to stop a conversion of this size, so it is not a speed check).
    check(f"{what} while writing: stopped in {took:.2f} s (at most 15), exit {expected}, no trace, nothing left",
          writing and took <= 15.0 and p.returncode == expected and not os.path.exists(trace) and not left_behind()
          and "Traceback" not in err, f"writing={writing} exit={p.returncode} left={left_behind()} {err[-300:]}")


interrupted(signal.SIGINT, [big], "Ctrl-C (SIGINT)")
interrupted(signal.SIGTERM, [big, "--no-gpu-projection"], "SIGTERM")
interrupted(signal.SIGINT, [big, "--no-gpu-projection"], "Ctrl-C through the sqlite3 shell (no extension loading)",
            through_the_shell=True)

# The page: the same trace as the command for the same choices, its progress, its cancel, its cleanup.
server = subprocess.Popen([command, "serve", profile, big, "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
try:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
    base = f"http://127.0.0.1:{m.group(1)}" if m else ""

    def api(path):
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return json.load(r)

    def finish(job, seen=None):
        deadline = time.monotonic() + 120
        while job["state"] in ("running", "cancelling") and time.monotonic() < deadline:
            job = api(f"/api/job?job={job['job']}&wait=1")
            if seen is not None and job["progress"]:
                seen.append(job["progress"])
        return job

    for choices, flags in (("", []), ("&kinds=kernel,nvtx&start=2050ms&pid=4101", ["--kinds", "kernel,nvtx",
                                                                                    "--start", "2050ms", "--pid",
                                                                                    "4101"])):
        page = finish(api(f"/api/convert?profile=0&format=pftrace{choices}"))
        mine = os.path.join(work, "command.pftrace")
        r = run(profile, "-o", mine, *flags)
        events = re.search(r"events: (\d+)", r.stdout)
        check(f"the page writes what the command writes ({' '.join(flags) or 'every event'})",
              page["state"] == "done" and events is not None and page["events"] == int(events.group(1)) and
              page["bytes"] == os.path.getsize(mine), f"{page} / {r.stdout} {r.stderr}")
    check("the page's 'open in Perfetto' link enables the GPU plugins", page.get("perfetto", "").endswith(
        "&enablePlugins=com.meta.GpuCompute,dev.perfetto.GpuByProcess"), page.get("perfetto"))
    traces = glob.glob(os.path.join(child_tmp, "nsystrace-serve-*", "*"))
    check("the page keeps only the last conversion's trace", [os.path.basename(t) for t in traces] == [page["name"]],
          str(traces))
    # A long conversion: its progress shows (the extension's lines, once a phase has run 2 s), then cancel.
    job = api("/api/convert?profile=1&format=json.gz")
    seen = []
    deadline = time.monotonic() + 120
    while job["state"] == "running" and not seen and time.monotonic() < deadline:
        job = api(f"/api/job?job={job['job']}&wait=1")
        if job["progress"]:
            seen.append(job["progress"])
    check("the page shows a long conversion's progress: done of total, %, time so far",
          seen and all(k in seen[0] for k in ("phase", "done", "total", "unit", "percent", "seconds")), str(job))
    api(f"/api/job?job={job['job']}&cancel=1")
    cancelled = finish(job)
    check("cancel stops the page's conversion and leaves no file", cancelled["state"] == "cancelled" and not glob.glob(
        os.path.join(child_tmp, "nsystrace-serve-*", f"*-{job['job']}.*")), str(cancelled))
finally:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
check("SIGTERM stops the page and removes its traces", server.returncode == 0 and not left_behind(),
      f"{server.returncode} {left_behind()}")

print(f"test_command: {len(failures)} failed")
sys.exit(1 if failures else 0)
