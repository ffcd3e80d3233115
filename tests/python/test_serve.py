"""`nsystrace serve`, as a user meets it: the page in headless Chromium (Debian's chromium package) shows the same
numbers as the recipes, a conversion started from the page downloads a trace Perfetto's importer takes whole, and
nothing but the profiles given is served.

  test_serve.py SOURCE_DIR SCRATCH_DIR      (exit 77: chromium is not installed)
"""
import html.parser
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], sys.argv[2]
bin_dir = os.path.dirname(sys.executable)
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
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
    check("the page's event counts are the profile's", all(k in body("kinds") for k in kinds), str(body("kinds")))

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

print(f"test_serve: {len(failures)} failed")
sys.exit(1 if failures else 0)
