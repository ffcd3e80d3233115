"""`nsystrace serve`, as a user meets it: the page in headless Chromium (Debian's chromium package) shows the same
numbers as the recipes, a conversion started from the page downloads a trace Perfetto's importer takes whole, and
nothing but the profiles given is served. Then, on every real export (../shared/fixtures/real), the page as it
starts converts what the command converts by default: it offers every kind the command writes, the NVTX GPU
projection (nvtx_kernel) among them, checked, and the two traces hold the same slices per category in Perfetto's
importer; with nvtx_kernel unticked, the page's trace holds none of it and the rest unchanged.

  test_serve.py SOURCE_DIR SCRATCH_DIR      (exit 77: chromium is not installed, or ../shared is absent: then the
                                             real exports are not tested, and it says so)
"""
import concurrent.futures
import contextlib
import csv
import filecmp
import html.parser
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from browser import Browser, find_chromium  # tests/python/browser.py, beside this script
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], sys.argv[2]
bin_dir = os.path.dirname(sys.executable)
chromium = find_chromium()
if chromium is None:
    print("skipped: chromium is not installed (apt-get install chromium); the serve page is not tested")
    sys.exit(77)


class Tables(html.parser.HTMLParser):
    """The page's tables by id: rows of cell texts (the header row first)."""

    def __init__(self):
        super().__init__()
        self.tables, self.current, self.row, self.cell = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.current = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self.current is not None:
            self.row = []
            self.current.append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell)
            self.cell = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


profile = os.path.join(tmp, "serve_example.sqlite")
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    sqlite3.connect(profile).executescript(f.read())
so = os.path.join(os.path.dirname(__import__("nsystrace").__file__), "nsystrace")
server = subprocess.Popen([os.path.join(bin_dir, "nsystrace"), "serve", profile, "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    first = server.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
    check("serve listens on loopback and says where", m is not None, first)
    base = f"http://127.0.0.1:{m.group(1)}" if m else ""

    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=30000", "--dump-dom", base + "/?convert"],
                         capture_output=True, text=True, timeout=120).stdout
    tables = Tables()
    tables.feed(dom)

    def recipe(name):  # the shipped recipe through the sqlite3 shell, as its header says to run it
        out = subprocess.run(["sqlite3", "-json", profile, "-cmd", f".load {so}", f".read {src}/sql/{name}"],
                             capture_output=True, text=True, check=True).stdout
        rows = json.loads(out) if out.strip() else []
        return [[str(v) if v is not None else "" for v in r.values()] for r in rows]

    def body(table_id):
        return tables.tables.get(table_id, [[]])[1:]

    for table_id, name in (("top_kernels", "top_kernels.sql"), ("nvtx_gpu_time", "nvtx_gpu_time.sql")):
        expected = recipe(name)
        check(f"the page's {table_id} table is the recipe's ({len(expected)} rows)",
              expected and body(table_id) == expected, f"{body(table_id)[:2]} vs {expected[:2]}")
    kinds = [[k, str(n)] for k, n in sqlite3.connect(profile).execute(
        "select 'kernel', count(*) from CUPTI_ACTIVITY_KIND_KERNEL union all "
        "select 'memcpy', count(*) from CUPTI_ACTIVITY_KIND_MEMCPY")]
    projected = subprocess.run(["sqlite3", profile, "-cmd", f".load {so}",
                                "select count(*) from trace_events where derived = 1"],
                               capture_output=True, text=True, check=True).stdout.strip()
    kinds.append(["nvtx_kernel", projected])
    check("the page's event counts are the profile's, the NVTX GPU projection's among them",
          all(k in body("kinds") for k in kinds), f"{body('kinds')} vs {kinds}")

    link = re.search(r'<a id="download" href="([^"]+)"', dom)
    check("a conversion from the page gives a download link", link is not None, dom[-500:])
    if link:
        with urllib.request.urlopen(base + link.group(1), timeout=30) as r:
            trace = r.read()
            disposition = r.headers.get("Content-Disposition", "")
        path = os.path.join(tmp, "from_page.pftrace")
        with open(path, "wb") as f:
            f.write(trace)
        check("the download is an attachment with the trace", "attachment" in disposition and len(trace) > 1000)
        stats = os.path.join(src, "..", "shared", "tools", "perfetto", "import-stats")
        if os.path.exists(stats):
            r = subprocess.run([stats, path], capture_output=True, text=True)
            check("Perfetto's importer takes the page's trace whole",
                  r.returncode == 0 and '"stats":[]' in r.stdout.replace(" ", ""), r.stdout[-300:])
        else:
            print("skipped Perfetto's importer: ../shared/tools/perfetto absent")
    perfetto = re.search(r'<a id="open-perfetto" href="([^"]+)"', dom)
    check("the page links the trace into ui.perfetto.dev",
          perfetto is not None and perfetto.group(1).startswith("https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1"))

    for what, url, headers in (("a path", "/api/summary?path=/etc/passwd", {}),
                               ("a profile not given", "/api/summary?profile=7", {}),
                               ("a path among the traces", "/traces/..%2F..%2Fetc%2Fpasswd", {}),
                               ("another host name (DNS rebinding)", "/api/profiles", {"Host": "evil.example"})):
        try:
            urllib.request.urlopen(urllib.request.Request(base + url, headers=headers), timeout=10)
            check(f"{what} is refused", False)
        except urllib.error.HTTPError as e:
            check(f"{what} is refused", e.code == 403, str(e.code))
finally:
    server.terminate()
    server.wait(timeout=10)


# The page as it starts, against the command's default, on every real export.
shared = os.path.join(os.path.dirname(os.path.abspath(src)), "shared")
fixtures = os.path.join(shared, "fixtures", "real")
exports = sorted(os.path.join(fixtures, n) for n in os.listdir(fixtures) if n.endswith(".sqlite")) \
    if os.path.isdir(fixtures) else []
importer = os.path.join(shared, "tools", "perfetto", "trace-processor")
# Slices per category as Perfetto's importer sees them: the GPU work in Perfetto's GPU model is gpu_slice rows,
# whose kind is their "description" arg; the others carry their category. And the counter values, all tracks.
PER_CATEGORY = ("select coalesce(category, extract_arg(arg_set_id, 'description')) as category, count(*) as slices, "
                "sum(dur) as total_dur from slice group by 1 union all "
                "select '(counter values)', count(*), null from counter order by 1")


def per_category(trace):
    """{category: [slices, total dur]} of the trace, read by Perfetto's trace processor."""
    done = subprocess.run([importer, "query", trace, PER_CATEGORY], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"trace processor failed on {trace}: {done.stderr[-2000:]}")
    table = done.stdout[done.stdout.index('"'):] if '"' in done.stdout else ""
    return {row[0]: row[1:] for row in list(csv.reader(io.StringIO(table)))[1:]}


def has_graph_rows(export):
    """Whether the export holds graph launches traced per graph (CUPTI_ACTIVITY_KIND_GRAPH_TRACE rows)."""
    with contextlib.closing(sqlite3.connect(f"file:{export}?mode=ro", uri=True)) as c:
        table = c.execute("select count(*) from sqlite_schema where name = 'CUPTI_ACTIVITY_KIND_GRAPH_TRACE'")
        return table.fetchone()[0] > 0 and \
            c.execute("select exists (select 1 from CUPTI_ACTIVITY_KIND_GRAPH_TRACE)").fetchone()[0] == 1


def summary_kinds(stdout):
    """The kinds the command's summary says it wrote: `events: N (kind n, kind n, ...)`."""
    m = re.search(r"events: \d+ \((.*)\)", stdout)
    return [item.split(" ")[0] for item in m.group(1).split(", ")] if m else None


skipped = None
if not exports or not os.access(importer, os.X_OK):
    skipped = (f"{fixtures} or {importer} is absent: the page's default conversion "
               "is not compared with the command's on the real exports")
else:
    work = os.path.join(tmp, "serve_real")
    os.makedirs(work, exist_ok=True)
    server = subprocess.Popen([os.path.join(bin_dir, "nsystrace"), "serve", *exports, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    browser = None
    # Perfetto's importer reads the traces on a second core while the page converts the next export.
    reading = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    try:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
        check(f"serve takes all {len(exports)} real exports at once", m is not None, server.stderr.read()
              if m is None else "")
        base = f"http://127.0.0.1:{m.group(1)}" if m else ""
        browser = Browser() if m else None
        if browser:
            browser.call("Page.navigate", url=base + "/")
            check("the page lists every real export", browser.wait_for(
                f"document.getElementById('profile').options.length === {len(exports)}"))

        def page_conversion(number, name, untick=()):
            """The page shows profile `number`; the kinds in untick are unticked, the form submitted with the
            Convert button as a user does, and the trace downloaded. Returns (the kinds offered, as
            [kind, checked], the trace's path or None, the page's error)."""
            browser.evaluate(f"(() => {{ const s = document.getElementById('profile'); if (s.value !== '{number}') "
                             f"{{ s.value = '{number}'; s.dispatchEvent(new Event('change')); }} }})()")
            if not browser.wait_for(f"document.getElementById('convert').dataset.profile === '{number}'"):
                return None, None, browser.evaluate("document.getElementById('error').textContent") or "no form"
            offered = browser.evaluate("Array.from(document.querySelectorAll('#kind-boxes input'))"
                                       ".map((b) => [b.value, b.checked])")
            browser.evaluate("(() => { document.getElementById('result').replaceChildren(); "
                             f"for (const b of document.querySelectorAll('#kind-boxes input')) "
                             f"if ({json.dumps(list(untick))}.includes(b.value)) b.checked = false; "
                             "document.querySelector('#convert button[type=submit]').click(); })()")
            browser.wait_for("!!document.getElementById('download') || !!document.getElementById('error').textContent",
                             seconds=120)
            href = browser.evaluate("document.getElementById('download') && "
                                    "document.getElementById('download').getAttribute('href')")
            if not href:
                return offered, None, browser.evaluate("document.getElementById('error').textContent")
            path = os.path.join(work, f"page_{name}{'_unticked' if untick else ''}.pftrace")
            with urllib.request.urlopen(base + href, timeout=60) as r, open(path, "wb") as f:
                f.write(r.read())
            return offered, path, ""

        compared = []  # (export, the page's trace, the command's, the page's without the projection, kinds written)
        for number, export in enumerate(exports if browser else []):
            name = os.path.basename(export)[:-len(".sqlite")]
            offered, page_trace, error = page_conversion(number, name)
            command_trace = os.path.join(work, f"command_{name}.pftrace")
            r = subprocess.run([os.path.join(bin_dir, "nsystrace"), export, "-o", command_trace, "--no-progress"],
                               capture_output=True, text=True)
            written = summary_kinds(r.stdout)
            check(f"{name}: the command converts it", r.returncode == 0 and written is not None, r.stderr[-300:])
            # The summary counts a CUDA graph replay's slice (traced per node) under its category, graph; it is no
            # trace_events row, so the page offers graph only for an export with graph rows of its own.
            offerable = [k for k in written or [] if k != "graph" or has_graph_rows(export)]
            check(f"{name}: the page offers every kind the command writes, each checked",
                  offered is not None and offered == [[k, True] for k in sorted(offerable)],
                  f"{offered} vs {written}")
            check(f"{name}: the page's default conversion writes a trace", page_trace is not None, error)
            unticked = None
            if "nvtx_kernel" in (written or []):
                _, unticked, error = page_conversion(number, name, untick=["nvtx_kernel"])
                check(f"{name}: with nvtx_kernel unticked, the page writes a trace", unticked is not None, error)
            if page_trace and r.returncode == 0:
                page_read = reading.submit(per_category, page_trace)
                # The same bytes hold the same slices: the importer reads the command's trace only when they differ
                # (the trace's metadata may, e.g. rows skipped by a reader the page's kinds did not open).
                command_read = page_read if filecmp.cmp(page_trace, command_trace, shallow=False) else \
                    reading.submit(per_category, command_trace)
                compared.append((name, [page_read, command_read,
                                        reading.submit(per_category, unticked) if unticked else None]))
        for name, (page_read, command_read, unticked_read) in compared:
            page_slices, command_slices = page_read.result(), command_read.result()
            differing = {c: (page_slices.get(c), command_slices.get(c)) for c in set(page_slices) | set(command_slices)
                         if page_slices.get(c) != command_slices.get(c)}
            check(f"{name}: the page's default trace holds the command's slices per category "
                  f"({', '.join(f'{c} {n[0]}' for c, n in sorted(command_slices.items()))})",
                  command_slices and not differing, f"differing (page, command): {differing}")
            if unticked_read:
                without = unticked_read.result()
                expected = {c: n for c, n in command_slices.items() if c != "nvtx_kernel"}
                check(f"{name}: nvtx_kernel unticked, the page's trace holds none of it and the rest unchanged",
                      "nvtx_kernel" in command_slices and without == expected,
                      f"{without} vs {expected}")
    finally:
        reading.shutdown(wait=True)
        if browser:
            browser.close()
        server.terminate()
        server.wait(timeout=10)

print(f"test_serve: {len(failures)} failed")
if failures:
    sys.exit(1)
if skipped:
    print(f"skipped: {skipped}")
    sys.exit(77)
