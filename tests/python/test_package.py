"""The installed package, used as users use it: `import nsystrace` and the `nsystrace` command (run from the virtual
environment it was installed into). Every count is compared with a plain SQL statement over the profile.

  test_package.py SOURCE_DIR SCRATCH_DIR
"""
import gzip
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], sys.argv[2]
bin_dir = os.path.dirname(sys.executable)


def run(*args, **kw):
    return subprocess.run([os.path.join(bin_dir, "nsystrace"), *args], capture_output=True, text=True, **kw)


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


# The bundled example profile, and a copy of it (a second "rank").
profile = os.path.join(tmp, "example.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    sqlite3.connect(profile).executescript(f.read())
rank1 = os.path.join(tmp, "rank1.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    sqlite3.connect(rank1).executescript(f.read())
raw = sqlite3.connect(profile)
kernels = raw.execute("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
before = md5(profile)

# import nsystrace
import nsystrace  # noqa: E402

check("loadable_path() names the installed .so", os.path.exists(nsystrace.loadable_path() + ".so") and
      os.path.dirname(nsystrace.loadable_path()).startswith(os.path.dirname(os.path.dirname(bin_dir))))
conn = sqlite3.connect(profile)
nsystrace.load(conn)
check("load(conn): trace_events counts the kernels",
      conn.execute("select count(*) from trace_events where kind = 'kernel'").fetchone()[0] == kernels)


class NoExtensions:  # what pyenv's sqlite3 connection looks like when built without extension loading
    pass


try:
    nsystrace.load(NoExtensions())
    check("load() on a Python that cannot load extensions fails", False)
except nsystrace.ExtensionLoadingUnsupported as e:
    check("load() on a Python that cannot load extensions names the fix",
          "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions" in str(e) and "/usr/bin/python3" in str(e))

# The glue is one module per concern, with no import loop: each module's imports of the package's own modules,
# followed from every module, never come back to it (a loop would make an import's order matter).
import ast  # noqa: E402

package_dir = os.path.dirname(nsystrace.__file__)
own_imports = {}
for name in sorted(os.listdir(package_dir)):
    if name.endswith(".py") and name != "__main__.py":
        module = "nsystrace" if name == "__init__.py" else "nsystrace." + name[:-3]
        with open(os.path.join(package_dir, name)) as f:
            tree = ast.parse(f.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("nsystrace.")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nsystrace"):
                found |= {f"nsystrace.{a.name}" if node.module == "nsystrace" else node.module for a in node.names}
        own_imports[module] = {m for m in found if m != "nsystrace"}


def reaches(start, target, seen=()):
    return any(m == target or (m not in seen and reaches(m, target, (*seen, m))) for m in own_imports.get(start, ()))


loops = [m for m in own_imports if reaches(m, m)]
check("the package's modules import each other without a loop", len(own_imports) >= 6 and not loops,
      f"{loops} in {own_imports}")
for module in sorted(own_imports):
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    check(f"`import {module}` works on its own", r.returncode == 0, r.stderr[-300:])

# The command.
def counts(where=""):
    return dict(conn.execute("select kind, count(*) from trace_events " + where + " group by kind").fetchall())


r = run(profile)
out = os.path.join(tmp, "example.pftrace")
check("`nsystrace prof.sqlite` writes prof.pftrace beside it", r.returncode == 0 and os.path.getsize(out) > 0,
      r.stderr)
every = counts("where derived in (0, 1)")
check("the summary counts every event", f"events: {sum(every.values())} (" in r.stdout, r.stdout)
check("the summary names the GPUs", "GPUs: 0, 1;" in r.stdout, r.stdout)
r = subprocess.run([sys.executable, "-m", "nsystrace", "--help"], capture_output=True, text=True)
check("`python -m nsystrace --help` shows the examples", r.returncode == 0 and "examples:" in r.stdout and
      "--nvtx-color-scheme" in r.stdout)


def json_trace(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def per_kind(trace):
    out = {}
    for e in trace["traceEvents"]:
        # (not the GPU utilization counter: derived by the writer from the GPU work, no kind of trace_events)
        if e.get("ph") in ("X", "i", "C", "b") and e.get("cat") != "gpu_utilization":
            out[e.get("cat")] = out.get(e.get("cat"), 0) + 1
    return out


j = os.path.join(tmp, "k.json.gz")
r = run(profile, "-o", j, "--kinds", "kernel,nvtx")
check("-o .json.gz with --kinds writes only those kinds, each event",
      r.returncode == 0 and per_kind(json_trace(j)) == counts("where kind in ('kernel', 'nvtx')"),
      f"{r.stderr} {per_kind(json_trace(j)) if r.returncode == 0 else ''}")
j = os.path.join(tmp, "w.json")
t0, t1 = conn.execute("select min(ts), (min(ts) + max(ts)) / 2 from trace_events").fetchone()
r = run(profile, "-o", j, "--start", str(t0), "--end", str(t1), "--no-gpu-projection")
check("--start/--end keep the window's events",
      r.returncode == 0 and per_kind(json_trace(j)) == counts(f"where ts between {t0} and {t1} and derived = 0"), r.stderr)
r = run(profile, "-o", j, "--gpu", "0", "--pid", "4101", "--no-gpu-projection")
check("--gpu/--pid keep GPU 0's work and process 4101's events",
      r.returncode == 0 and per_kind(json_trace(j)) == counts(
          "where derived = 0 and ((device_id is null and pid = 4101) or (device_id = 0))"), r.stderr)
r = run(profile, "-o", j, "--nvtx-prefix", "step", "--no-gpu-projection")
check("--nvtx-prefix keeps the NVTX ranges it names, and every other event",
      r.returncode == 0 and per_kind(json_trace(j)) == counts("where derived = 0 and (kind != 'nvtx' or name like 'step%')"), r.stderr)
r = run(profile, "-o", j, "--nvtx-color-scheme", '{"^step": "good", "forward": "bad"}')
colors = {(e["name"].split(" ")[0], e.get("cname")) for e in json_trace(j)["traceEvents"]
          if e.get("cat") == "nvtx" and e.get("ph") == "X"} if r.returncode == 0 else set()
check("--nvtx-color-scheme colors NVTX ranges by name (cname)",
      ("step", "good") in colors and ("forward", "bad") in colors, f"{r.stderr} {sorted(colors)[:5]}")
merged = os.path.join(tmp, "job.pftrace")
r = run(profile, rank1, "-o", merged)
check("several reports merge into one trace", r.returncode == 0 and
      f"events: {2 * sum(every.values())} (" in r.stdout, r.stdout + r.stderr)
# A report given later whose session started earlier: the trace's time 0 is its start, nothing is clamped to 0.
early = os.path.join(tmp, "early.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    e = sqlite3.connect(early)
    e.executescript(f.read())
    e.execute("update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs - 5000000000")
    e.commit()
    e.close()
j = os.path.join(tmp, "job.json")
r = run(profile, early, "-o", j)
other = json_trace(j)["otherData"] if r.returncode == 0 else {}
check("a report given later that started earlier: time 0 is its start, nothing clamped",
      r.returncode == 0 and "events_clamped_to_zero" not in other and
      [x["clock_offset_ns"] for x in other["reports"]] == [5000000000, 0], r.stderr + str(other.get("reports")))
no_start = os.path.join(tmp, "no_start.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    e = sqlite3.connect(no_start)
    e.executescript(f.read() + ";drop table TARGET_INFO_SESSION_START_TIME;")
    e.close()
r = run(profile, no_start, "-o", j)
check("a report without a session start among reports that have one: an error naming it",
      r.returncode == 1 and f"report 'rank1' ({no_start}) has no session start" in r.stderr, r.stderr)

# Mistakes: clear messages, exit 2, nothing written over.
r = run(profile, "-o", profile)
check("never writes over its input", r.returncode != 0 and md5(profile) == before, r.stderr)
rep = os.path.join(tmp, "report.nsys-rep")
open(rep, "wb").close()
r = run(rep, env={**os.environ, "PATH": "/usr/bin:/bin"} if not any(
    os.path.exists(os.path.join(d, "nsys")) for d in os.environ.get("PATH", "").split(":")) else None)
check(".nsys-rep without nsys says how to export it", r.returncode == 2 and "nsys export --type sqlite" in r.stderr,
      r.stderr)
# With nsys on PATH (a stand-in that "exports" the example), a .nsys-rep is exported into a temporary directory
# first, and nothing is left beside the report.
fake_bin = os.path.join(tmp, "fake_bin")
os.makedirs(fake_bin, exist_ok=True)
with open(os.path.join(fake_bin, "nsys"), "w") as f:
    f.write("#!/bin/sh\n# nsys export --type sqlite --output OUT REPORT\n"
            f"[ \"$1 $2 $3\" = 'export --type sqlite' ] && [ \"$4\" = --output ] && cp '{profile}' \"$5\"\n")
os.chmod(os.path.join(fake_bin, "nsys"), 0o755)
from_rep = os.path.join(tmp, "from_rep.pftrace")
r = run(rep, "-o", from_rep, env={**os.environ, "PATH": fake_bin + ":" + os.environ["PATH"]})
check(".nsys-rep goes through `nsys export --type sqlite` when nsys is on PATH",
      r.returncode == 0 and f"events: {sum(every.values())} (" in r.stdout and
      sorted(os.listdir(tmp)).count("report.sqlite") == 0, r.stdout + r.stderr)
r = run(profile, "--kinds", "kernels")
check("an unknown kind lists the kinds", r.returncode == 2 and "the kinds are: nvtx" in r.stderr, r.stderr)
r = run(profile, "-o", os.path.join(tmp, "t.txt"))
check("an unknown output format names the ones it knows", r.returncode == 2 and ".pftrace" in r.stderr, r.stderr)

# --open: served once on 127.0.0.1:9001 to ui.perfetto.dev's origin, as Perfetto documents; no browser here.
p = subprocess.Popen([os.path.join(bin_dir, "nsystrace"), profile, "-o", out, "--open"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, env={**os.environ, "BROWSER": "true"})
link = ""
deadline = time.time() + 60
while time.time() < deadline and "ui.perfetto.dev/#!/?url=" not in link:
    line = p.stdout.readline()
    if not line:
        break
    link += line
m = re.search(r"https://ui\.perfetto\.dev/#!/\?url=([^&\s]+)&enablePlugins=(\S+)", link)
check("--open prints the ui.perfetto.dev deep link, with the GPU plugins enabled",
      m is not None and m.group(2) == "com.meta.GpuCompute,dev.perfetto.GpuByProcess", link)
if m:
    url = urllib.request.unquote(m.group(1))
    check("the trace is served on loopback, port 9001", url.startswith("http://127.0.0.1:9001/"), url)
    req = urllib.request.Request(url, headers={"Origin": "https://ui.perfetto.dev"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
        allow = resp.headers.get("Access-Control-Allow-Origin")
    check("it answers ui.perfetto.dev's origin with the whole trace",
          allow == "https://ui.perfetto.dev" and body == open(out, "rb").read(), str(allow))
    try:
        p.wait(timeout=15)
        check("the server stops once the trace has been fetched", p.returncode == 0, str(p.returncode))
    except subprocess.TimeoutExpired:
        p.kill()
        check("the server stops once the trace has been fetched", False)
else:
    p.kill()

# A Python whose sqlite3 cannot load extensions (pyenv's default build): the command falls back to the sqlite3 shell
# and writes the same trace.
import nsystrace.cli  # noqa: E402


def refuse(conn):
    raise nsystrace.ExtensionLoadingUnsupported("simulated")


real_load, nsystrace.load = nsystrace.load, refuse
fallback = os.path.join(tmp, "fallback.pftrace")
try:
    code = nsystrace.cli.main([profile, "-o", fallback, "--no-progress"])
finally:
    nsystrace.load = real_load
check("without extension loading in Python, the command uses the sqlite3 shell: the same trace",
      code == 0 and open(fallback, "rb").read() == open(out, "rb").read())

# The summary (events per kind, GPUs) is the conversion's own count, read with nsystrace_last_trace_file() on the
# same connection: one scan of the profile, not a second `group by kind` (which, through the sqlite3 shell, was
# also a second and a third process, each computing the NVTX projection again).
import contextlib  # noqa: E402
import io  # noqa: E402

expected_summary = "  events: {} ({})".format(sum(every.values()), ", ".join(f"{k} {n}" for k, n in sorted(every.items())))


def summary_of(argv):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = nsystrace.cli.main(argv)
    return code, printed.getvalue()


statements = []


def load_and_trace(conn):
    real_load(conn)
    conn.set_trace_callback(statements.append)


nsystrace.load = load_and_trace
try:
    code, said = summary_of([profile, "-o", os.path.join(tmp, "traced.pftrace"), "--no-progress"])
finally:
    nsystrace.load = real_load
scans = [s for s in statements if "trace_events" in s]
check("the command's summary is the conversion's count, from one scan",
      code == 0 and expected_summary + "\n" in said and "GPUs: 0, 1;" in said and len(scans) == 1 and
      "perfetto_trace_file(" in scans[0], said + str(scans))
shells = []
real_popen = subprocess.Popen


class CountShells(real_popen):
    def communicate(self, input=None, *a, **kw):
        if self.args[0] == "sqlite3":
            shells.append(input or "")
        return super().communicate(input, *a, **kw)


nsystrace.load, subprocess.Popen = refuse, CountShells
try:
    code, said = summary_of([profile, rank1, "-o", os.path.join(tmp, "fallback.json.gz"), "--no-progress"])
finally:
    nsystrace.load, subprocess.Popen = real_load, real_popen
doubled = ", ".join(f"{k} {2 * n}" for k, n in sorted(every.items()))
check("through the sqlite3 shell: one process converts and summarizes (the NVTX projection computed once)",
      code == 0 and len(shells) == 1 and shells[0].count("trace_events") == 1 and
      f"  events: {2 * sum(every.values())} ({doubled})\n" in said and "GPUs: 0, 1;" in said, said + str(shells))

# Perfetto's own importer, when ../shared has it: the trace is taken whole.
stats = os.path.join(src, "..", "shared", "tools", "perfetto", "import-stats")
if os.path.exists(stats):
    r = subprocess.run([stats, out], capture_output=True, text=True)
    check("Perfetto's importer drops nothing of the command's trace", r.returncode == 0 and '"stats":[]' in
          r.stdout.replace(" ", ""), r.stdout[-300:])
    # A real export (../shared), with the command and from Python: both traces taken whole by Perfetto's importer.
    real = os.path.join(src, "..", "shared", "fixtures", "real", "nsysai_h100_2gpu_mfu_before_slice.sqlite")
    if os.path.exists(real):
        from_command = os.path.join(tmp, "real_command.pftrace")
        r = run(real, "-o", from_command)
        from_python = os.path.join(tmp, "real_python.pftrace")
        c = sqlite3.connect(f"file:{real}?mode=ro", uri=True)
        nsystrace.load(c)
        c.execute("select perfetto_trace_file(?) from trace_events where derived in (0, 1)", (from_python,)).fetchone()
        kernels_real = c.execute("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        check("a real export converts with the command", r.returncode == 0 and f"kernel {kernels_real}" in r.stdout,
              r.stdout + r.stderr)
        for what, path in (("the command's", from_command), ("Python's", from_python)):
            r = subprocess.run([stats, path], capture_output=True, text=True)
            check(f"Perfetto's importer drops nothing of {what} trace of a real export",
                  r.returncode == 0 and '"stats":[]' in r.stdout.replace(" ", ""), r.stdout[-300:])
    else:
        print("skipped the real export: ../shared/fixtures/real absent")
else:
    print("skipped Perfetto's importer: ../shared/tools/perfetto absent")

print(f"test_package: {len(failures)} failed")
sys.exit(1 if failures else 0)
