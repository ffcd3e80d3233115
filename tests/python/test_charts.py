"""The serve page's charts, as a user meets them: headless Chromium, driven over the DevTools protocol, opens the page
with every host name but 127.0.0.1 unresolvable (offline), and the charts it draws — the GPU time breakdown, the
idle causes, the utilization over time — hold exactly the recipes' rows (run here through the sqlite3 shell), per
GPU, and are painted (each bar's pixels in its series' color, where its value puts it); the CUDA memory in use over
time holds the bytes in use after each row of CUDA_GPU_MEMORY_USAGE_EVENTS (summed here from the raw table); no
request leaves 127.0.0.1. On the example, on tests/fixtures/gpu_causes.sql, whose numbers are also known by
construction (its header), and on gpu_causes.sql with tests/fixtures/cuda_memory.sql's memory rows (allocations and
frees on two GPUs).
Then the package as built without npm: the page draws no chart, says why (the build's own note) and still shows the
recipes' numbers in its tables.

  test_charts.py SOURCE_DIR SCRATCH_DIR   (exit 77: chromium is not installed, or npm was not there at build time:
                                           then only the page without charts is tested, and it says so)
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from browser import Browser, find_chromium  # tests/python/browser.py, beside this script
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], sys.argv[2]
if find_chromium() is None:
    print("skipped: chromium is not installed (apt-get install chromium); the page's charts are not tested")
    sys.exit(77)
package = os.path.dirname(__import__("nsystrace").__file__)
vendored = os.path.exists(os.path.join(package, "vendor", "chart.umd.min.js"))
if not vendored:
    with open(os.path.join(package, "vendor", "charts-missing.txt")) as f:
        built_without = f.read().strip()
    if shutil.which("npm"):  # npm was there but no charts: the vendoring broke (or npm could not reach its registry)
        check("npm is on PATH, so the package's build vendored the charting library", False, built_without)


# What the page drew, read back from the charts: each dataset's values, and for each bar or point drawn its pixel
# geometry and the color painted at its middle (bars) or on it (lines).
READ_CHARTS = """(() => {
  const out = {};
  for (const id of ["breakdown-chart", "idle-chart", "busy-chart", "memory-chart"]) {
    const chart = window.Chart && Chart.getChart(id);
    if (!chart) { out[id] = null; continue; }
    const canvas = chart.canvas, ratio = chart.currentDevicePixelRatio;
    // The device pixel that holds the point (x, y): inside a bar two or more pixels wide, never on its edge.
    const pixel = (x, y) => Array.from(canvas.getContext("2d").getImageData(Math.floor(x * ratio),
                                                                            Math.floor(y * ratio), 1, 1).data);
    out[id] = {type: chart.config.type, labels: chart.data.labels, x_title: chart.options.scales.x.title.text,
               y_top: chart.scales.y.top, y_bottom: chart.scales.y.bottom, y_min: chart.scales.y.min,
               y_max: chart.scales.y.max,
               x_pixels_per_unit: (chart.scales.x.right - chart.scales.x.left) /
                                  (chart.scales.x.max - chart.scales.x.min),
               datasets: chart.data.datasets.map((d, i) => ({
                 label: d.label, data: d.data, color: d.backgroundColor,
                 // Lines: also the pixel a step into the line (a stepped line holds a point's value until the
                 // next point), NULL when the next point is under 2 pixels away or there is none.
                 drawn: chart.getDatasetMeta(i).data.map((e, j, all) => chart.config.type === "bar"
                   ? {from: e.base, to: e.x, y: e.y, pixel: pixel((e.base + e.x) / 2, e.y)}
                   : {x: e.x, y: e.y, pixel: pixel(e.x, e.y),
                      step: all[j + 1] && all[j + 1].x - e.x >= 2 ? pixel(e.x + 1, e.y) : null})}))};
  }
  return out;
})()"""


def rgb(color):
    return [int(color[i:i + 2], 16) for i in (1, 3, 5)]


def recipe_rows(profile, name):
    """The shipped recipe through the sqlite3 shell, as its header says to run it: rows as dicts."""
    out = subprocess.run(["sqlite3", "-json", profile, "-cmd", f".load {os.path.join(package, 'nsystrace')}",
                          f".read {src}/sql/{name}"], capture_output=True, text=True, check=True).stdout
    return json.loads(out) if out.strip() else []


def check_bars(what, chart, labels, series):
    """A stacked bar chart: its GPUs, its series with the recipe's values, and each bar painted where its value puts
    it (one scale for every bar: its length over its value is the same for all) in its series' color."""
    check(f"{what}: a bar per GPU", chart and chart["labels"] == labels, str(chart and chart["labels"]))
    if not chart:
        return
    got = {d["label"]: d["data"] for d in chart["datasets"]}
    check(f"{what}: the series and their values are the recipe's", got == series, f"{got} vs {series}")
    misplaced = []  # bars whose length is not their value on the axis' scale (to a pixel)
    for d in chart["datasets"]:
        for gpu, value, bar in zip(labels, d["data"], d["drawn"]):
            if value:
                if abs(bar["to"] - bar["from"] - value * chart["x_pixels_per_unit"]) > 1:
                    misplaced.append((d["label"], gpu, bar))
                if bar["to"] - bar["from"] >= 2:  # a narrower bar's middle pixel is blended with its neighbours
                    check(f"{what}: the {d['label']} bar of {gpu} is painted in its color",
                          bar["pixel"][:3] == rgb(d["color"]) and bar["pixel"][3] == 255,
                          f"{bar['pixel']} vs {d['color']}")
    check(f"{what}: every bar's length is its value on the axis", not misplaced, str(misplaced))


def check_page(browser, base, profile_number, profile, known=None):
    name = os.path.basename(profile)
    check(f"{name}: the page lists the profiles", browser.wait_for("document.getElementById('profile').options.length"))
    browser.evaluate(f"(() => {{ const s = document.getElementById('profile'); if (s.value !== '{profile_number}') "
                     f"{{ s.value = '{profile_number}'; s.dispatchEvent(new Event('change')); }} }})()")
    check(f"{name}: the page draws its charts",
          browser.wait_for(f"document.getElementById('charts').dataset.shown === '{profile_number}'"))
    check(f"{name}: the page shows no error", browser.evaluate("document.getElementById('error').textContent") == "",
          browser.evaluate("document.getElementById('error').textContent"))
    charts = browser.evaluate(READ_CHARTS)

    breakdown = recipe_rows(profile, "gpu_time_breakdown.sql")
    kinds = ("compute", "comm", "memory", "idle")
    check_bars(f"{name}: GPU time breakdown", charts["breakdown-chart"], [f"GPU {r['device']}" for r in breakdown],
               {k: [r[f"{k}_ns"] for r in breakdown] for k in kinds})
    table = browser.evaluate("Array.from(document.querySelectorAll('#gpu_time_breakdown tr')).slice(1)"
                             ".map((tr) => Array.from(tr.cells).map((td) => td.textContent))")
    check(f"{name}: the breakdown's table is the recipe's",
          table == [[str(v) for v in r.values()] for r in breakdown], f"{table} vs {breakdown}")

    # The idle causes: the recipe's totals per (device, cause), which it repeats on every gap of theirs.
    idle = recipe_rows(profile, "gpu_idle.sql")
    devices = sorted({r["device"] for r in idle})
    totals = {(r["device"], r["cause"]): r["cause_idle_ns"] for r in idle}
    if idle:
        check_bars(f"{name}: idle causes", charts["idle-chart"], [f"GPU {g}" for g in devices],
                   {c: [totals.get((g, c)) for g in devices] for c in ("host", "sync", "other")})
    else:
        note = browser.evaluate("document.getElementById('idle-chart-note').textContent")
        check(f"{name}: no idle gap over the threshold: no idle chart, and the page says so",
              charts["idle-chart"] is None and "no idle gap" in note, note)

    # Utilization: gpu_busy.sql at the interval the page chose (its params line, as the recipe's header says).
    busy_chart = charts["busy-chart"]
    bucket_ns = re.search(r"intervals of ([0-9.]+) ms", busy_chart["x_title"]) if busy_chart else None
    bucket_ns = round(float(bucket_ns.group(1)) * 1e6) if bucket_ns else 100000000
    check(f"{name}: the utilization interval is 1, 2 or 5 x 10^k ns", busy_chart and re.fullmatch(
        r"[125]0*", str(bucket_ns)), str(bucket_ns))
    params_line = "with params(bucket_ns, max_buckets) as (select 100000000, 100000)"
    with open(os.path.join(src, "sql", "gpu_busy.sql")) as f:
        busy_sql = f.read()
    check(f"{name}: gpu_busy.sql has the params line the reference sets", busy_sql.count(params_line) == 1)
    busy_sql = busy_sql.replace(params_line, f"with params(bucket_ns, max_buckets) as (select {bucket_ns}, 100000)")
    busy_file = os.path.join(tmp, "gpu_busy_chart.sql")
    with open(busy_file, "w") as f:
        f.write(busy_sql)
    out = subprocess.run(["sqlite3", "-json", profile, "-cmd", f".load {os.path.join(package, 'nsystrace')}",
                          f".read {busy_file}"], capture_output=True, text=True, check=True).stdout
    busy = json.loads(out)
    gpus = sorted({r["device_id"] for r in busy})
    expected = {f"GPU {g}": [{"x": r["bucket_start_ns"], "y": r["busy_pct"]} for r in busy if r["device_id"] == g]
                for g in gpus}
    got = {d["label"]: d["data"] for d in busy_chart["datasets"]} if busy_chart else None
    check(f"{name}: utilization over time: a line per GPU, the recipe's rows ({len(busy)}, at most 200 per GPU)",
          got == expected and all(len(v) <= 200 for v in expected.values()),
          f"{str(got)[:300]} vs {str(expected)[:300]}")
    if busy_chart:
        top, bottom = busy_chart["y_top"], busy_chart["y_bottom"]
        placed = [abs(p["y"] - (bottom - (bottom - top) * v["y"] / 100)) <= 0.5 and (p["step"] or p["pixel"])[3] > 0
                  for d in busy_chart["datasets"] for v, p in zip(d["data"], d["drawn"])]
        check(f"{name}: utilization over time: every point drawn at its value and painted",
              len(placed) == len(busy) and all(placed), f"{placed.count(False)} of {len(placed)} not")
    # CUDA memory in use: the bytes in use after each row, a line per (GPU, memory kind).
    memory_chart, memory = charts["memory-chart"], memory_in_use(profile)
    if memory:
        got = {d["label"]: d["data"] for d in memory_chart["datasets"]} if memory_chart else None
        check(f"{name}: CUDA memory in use: a line per GPU and memory kind, the bytes in use after each row",
              got == memory, f"{str(got)[:300]} vs {str(memory)[:300]}")
        if memory_chart:
            top, bottom, low, high = (memory_chart[k] for k in ("y_top", "y_bottom", "y_min", "y_max"))
            placed = [abs(p["y"] - (bottom - (bottom - top) * (v["y"] - low) / (high - low))) <= 0.5 and
                      (p["step"] or p["pixel"])[3] > 0
                      for d in memory_chart["datasets"] for v, p in zip(d["data"], d["drawn"])]
            check(f"{name}: CUDA memory in use: every point drawn at its value and painted",
                  len(placed) == sum(len(v) for v in memory.values()) and all(placed),
                  f"{placed.count(False)} of {len(placed)} not")
    else:
        note = browser.evaluate("document.getElementById('memory-chart-note').textContent")
        check(f"{name}: no CUDA memory events: no memory chart, and the page says so",
              memory_chart is None and "no CUDA memory events" in note, note)
    if known:
        check(f"{name}: the charts hold the numbers known by construction",
              known(charts), json.dumps({k: v and [d["data"] for d in v["datasets"]] for k, v in charts.items()}))


def memory_in_use(profile):
    """{"GPU d kind": [{x: start, y: bytes in use after the row}]} from CUDA_GPU_MEMORY_USAGE_EVENTS: allocations
    (memoryOperationType 0) add their bytes, frees (1) take them away, in (start, rowid) order, every process summed;
    the kind by its ENUM_CUDA_MEM_KIND label."""
    conn = sqlite3.connect(f"file:{profile}?mode=ro", uri=True)
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    if "CUDA_GPU_MEMORY_USAGE_EVENTS" not in tables:
        return {}
    labels = dict(conn.execute("select id, label from ENUM_CUDA_MEM_KIND")) if "ENUM_CUDA_MEM_KIND" in tables else {}
    out, in_use = {}, {}
    for d, kind, start, op, size in conn.execute("select deviceId, memKind, start, memoryOperationType, bytes "
                                                 "from CUDA_GPU_MEMORY_USAGE_EVENTS order by start, rowid"):
        key = f"GPU {d} {labels.get(kind, kind)}"
        in_use[key] = in_use.get(key, 0) + (size if op == 0 else -size if op == 1 else 0)
        out.setdefault(key, []).append({"x": start, "y": in_use[key]})
    conn.close()
    return out


def gpu_causes_by_construction(charts):
    if None in (charts["breakdown-chart"], charts["idle-chart"], charts["busy-chart"]):
        return False
    """tests/fixtures/gpu_causes.sql's header: compute 230000, comm 100000, memory 20000, idle 4850000; a gap of
    each cause: host [170000, 2180000), sync [2200000, 3410000), other [3420000, 5000000); 300000 busy ns in 5.15 ms."""
    series = lambda chart: {d["label"]: d["data"] for d in charts[chart]["datasets"]}
    busy = series("busy-chart")["GPU 0"]
    return (series("breakdown-chart") == {"compute": [230000], "comm": [100000], "memory": [20000], "idle": [4850000]}
            and series("idle-chart") == {"host": [2010000], "sync": [1210000], "other": [1580000]}
            and len(busy) > 1 and all(0 <= p["y"] <= 100 for p in busy))


def serve(pythonpath, profiles):
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else None
    server = subprocess.Popen([sys.executable, "-m", "nsystrace", "serve", *profiles, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
    check("serve listens on loopback and says where", m is not None)
    return server, f"http://127.0.0.1:{m.group(1)}" if m else ""


example, causes = os.path.join(tmp, "charts_example.sqlite"), os.path.join(tmp, "charts_gpu_causes.sqlite")
memory, memory_rows = os.path.join(tmp, "charts_memory.sqlite"), os.path.join(tmp, "charts_cuda_memory.sqlite")
for path, script in ((example, "examples/example_profile.sql"), (causes, "tests/fixtures/gpu_causes.sql"),
                     (memory, "tests/fixtures/gpu_causes.sql"), (memory_rows, "tests/fixtures/cuda_memory.sql")):
    if os.path.exists(path):
        os.remove(path)
    with open(os.path.join(src, script)) as f:
        sqlite3.connect(path).executescript(f.read())
# gpu_causes' GPU work with cuda_memory.sql's allocations and frees (its header), in their stored order.
with sqlite3.connect(memory) as conn:
    conn.execute("attach ? as m", (memory_rows,))
    conn.execute("create table ENUM_CUDA_MEM_KIND as select * from m.ENUM_CUDA_MEM_KIND")
    conn.execute("create table CUDA_GPU_MEMORY_USAGE_EVENTS as select * from m.CUDA_GPU_MEMORY_USAGE_EVENTS order by rowid")

# The package as a build without npm makes it: the vendor directory holds the build's note, not the library.
without = os.path.join(tmp, "without_npm")
shutil.rmtree(without, ignore_errors=True)
note_dir = os.path.join(without, "page_charts")
build = subprocess.run(["cmake", f"-DSOURCE={src}/ext/python/charts", f"-DOUT={note_dir}", "-DNPM=/nonexistent/npm",
                        "-P", os.path.join(src, "ext", "python", "charts", "vendor.cmake")],
                       capture_output=True, text=True)
check("a build without npm goes on, and says the page has no charts",
      build.returncode == 0 and "without its charts" in build.stderr and
      os.listdir(note_dir) == ["charts-missing.txt"], build.stderr[-300:])
shutil.copytree(package, os.path.join(without, "nsystrace"), ignore=shutil.ignore_patterns("vendor", "__pycache__"))
os.makedirs(os.path.join(without, "nsystrace", "vendor"))
shutil.copy(os.path.join(note_dir, "charts-missing.txt"), os.path.join(without, "nsystrace", "vendor"))
with open(os.path.join(note_dir, "charts-missing.txt")) as f:
    why = f.read().strip()

browser = Browser()
servers = []
try:
    if vendored:
        server, base = serve(None, [example, causes, memory])
        servers.append(server)
        browser.call("Page.navigate", url=base + "/")
        check_page(browser, base, 0, example)
        check_page(browser, base, 1, causes, gpu_causes_by_construction)
        check_page(browser, base, 2, memory)
        library = [u for u in browser.requested() if u.endswith("/vendor/chart.umd.min.js")]
        check("the charting library comes from the page's own server", len(library) == 1, str(browser.requested()))
        strangers = [u for u in browser.requested() if not u.startswith(base + "/")]
        check(f"no request leaves 127.0.0.1 ({len(browser.requested())} requests)", not strangers, str(strangers))

    server, base = serve(without, [causes])
    servers.append(server)
    browser.events.clear()
    browser.call("Page.navigate", url=base + "/")
    check("without the library: the page is whole",
          browser.wait_for("document.getElementById('charts').dataset.shown === '0'"))
    state = browser.evaluate("({note: document.getElementById('charts-note').textContent, chart: typeof Chart, "
                             "canvases: Array.from(document.querySelectorAll('.chart'))"
                             ".filter((e) => !e.hidden).length,"
                             " error: document.getElementById('error').textContent, "
                             "rows: document.querySelectorAll('#gpu_idle tr').length})")
    check("without the library: no chart, and the page says why (the build's note)",
          state["chart"] == "undefined" and state["canvases"] == 0 and why in state["note"] and not state["error"],
          str(state))
    check("without the library: the recipes' numbers are still in the tables", state["rows"] == 4, str(state))
    strangers = [u for u in browser.requested() if not u.startswith(base + "/")]
    check("without the library: no request leaves 127.0.0.1 either", not strangers, str(strangers))
finally:
    browser.close()
    for server in servers:
        server.terminate()
        server.wait(timeout=10)

print(f"test_charts: {len(failures)} failed")
if failures:
    sys.exit(1)
if not vendored:
    print(f"skipped: the package was built without its charting library ({built_without}); only the page without "
          "charts was tested")
    sys.exit(77)
