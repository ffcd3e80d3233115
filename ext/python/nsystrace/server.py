"""The local HTTP server (standard library, loopback only): a trace served once to ui.perfetto.dev (`--open`), and
the page of `nsystrace serve`, which looks at profiles (kinds and counts, GPUs, top kernels, NVTX GPU time: the
shipped recipes; charts of the GPU time breakdown, the idle causes, the utilization and the CUDA memory in use over
time, drawn from the recipes' rows and the memory counter with the charting library vendored into the package), converts them as the command does and links the
trace into ui.perfetto.dev.

Only the profiles given are served, by their number: a request naming a path, or a number that is not one of them,
is refused; a request naming this server by another host name (DNS rebinding) too.
"""
import dataclasses
import http.server
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import webbrowser

from nsystrace import conversion, recipes
from nsystrace.connection import Connection
from nsystrace.errors import Failure

PERFETTO_UI = "https://ui.perfetto.dev"
PERFETTO_PORT = 9001  # the port ui.perfetto.dev may fetch a trace from (its Content-Security-Policy allows it)
# Perfetto UI plugins that show GPU work, enabled for the session by the link's `enablePlugins` route argument (a
# comma-separated list of plugin ids: ui/src/public/route_schema.ts and ui/src/core/plugin_manager.ts in Perfetto).
PERFETTO_PLUGINS = ("com.meta.GpuCompute", "dev.perfetto.GpuByProcess")
HERE = os.path.dirname(os.path.abspath(__file__))
# The page's charting library, vendored into the package when it is built (ext/python/charts/vendor.cmake): the
# page loads it from this server, never from a CDN, so it works offline. Only these files of vendor/ are served.
VENDOR = os.path.join(HERE, "vendor")
CHART_LIBRARY = "chart.umd.min.js"
VENDORED = {CHART_LIBRARY: "text/javascript; charset=utf-8", "chart.js-LICENSE.md": "text/markdown; charset=utf-8"}
UTILIZATION_BUCKETS = 200  # the most intervals the utilization chart cuts the GPU span into


class QuietServer(http.server.ThreadingHTTPServer):
    """A browser that goes away mid-answer (a cancelled download, a closed tab) is not an error to print."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def is_loopback_host(headers, port):
    """The request names this server by a loopback name (a page elsewhere that rebinds its own name to 127.0.0.1,
    DNS rebinding, sends its own Host)."""
    return headers.get("Host") in (f"127.0.0.1:{port}", f"localhost:{port}")


def perfetto_link(url=None):
    """The ui.perfetto.dev deep link that opens the trace at url (none: the trace processor's, the native
    accelerator), with the GPU plugins enabled."""
    args = [f"url={urllib.parse.quote(url, safe='')}"] if url else []
    args.append(f"enablePlugins={','.join(PERFETTO_PLUGINS)}")
    return f"{PERFETTO_UI}/#!/?{'&'.join(args)}"


def open_in_browser(link):
    try:
        webbrowser.get()
        webbrowser.open(link)
    except webbrowser.Error:
        pass  # no browser here: the link is printed


def open_with_trace_processor(trace_processor, path, announce=print):
    """A trace too big for a browser tab: Perfetto's trace processor loads it natively and serves it on
    127.0.0.1:9001, where ui.perfetto.dev finds it (its "native accelerator"); until Ctrl-C."""
    child = subprocess.Popen([trace_processor, "--httpd", path])
    link = perfetto_link()
    announce(f"nsystrace: {os.path.basename(trace_processor)} is loading {os.path.basename(path)} on "
             f"127.0.0.1:{PERFETTO_PORT}; in ui.perfetto.dev choose \"use the trace already loaded\" (Ctrl-C stops):"
             f"\n  {link}")
    open_in_browser(link)
    try:
        child.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if child.poll() is None:
            child.terminate()
            child.wait()
    return link


def serve_once(path, port=PERFETTO_PORT, open_browser=True, announce=print):
    """Serves `path` on 127.0.0.1:port to ui.perfetto.dev (Perfetto's documented way to open a local trace) until it
    has been fetched whole, or Ctrl-C. Returns the deep link."""
    name = os.path.basename(path)
    fetched = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _headers(self, code, length=None):
            self.send_response(code)
            self.send_header("Access-Control-Allow-Origin", PERFETTO_UI)
            self.send_header("Cache-Control", "no-cache")
            if length is not None:
                self.send_header("Content-Length", str(length))
                self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()

        def do_OPTIONS(self):  # CORS preflight
            self._headers(200, 0)

        def do_GET(self):
            if (urllib.parse.urlparse(self.path).path != "/" + urllib.parse.quote(name) or
                    not is_loopback_host(self.headers, port)):
                self._headers(404, 0)
                return
            size = os.path.getsize(path)
            self._headers(200, size)
            with open(path, "rb") as f:
                shutil.copyfileobj(f, self.wfile)
            fetched.set()

        def log_message(self, *a):  # quiet
            pass

    try:
        server = QuietServer(("127.0.0.1", port), Handler)  # loopback only
    except OSError as e:
        raise Failure(f"cannot serve on 127.0.0.1:{port} ({e.strerror}); is another trace being served?")
    link = perfetto_link(f"http://127.0.0.1:{port}/{urllib.parse.quote(name)}")
    announce(f"nsystrace: serving {name} on 127.0.0.1:{port} until Perfetto has fetched it (Ctrl-C stops):\n  {link}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    if open_browser:
        open_in_browser(link)
    try:
        while not fetched.wait(0.2):
            pass
        time.sleep(0.5)  # let the response finish
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return link


def recipe(name):
    """The text of a shipped recipe (sql/<name>)."""
    sql = recipes.text(name)
    if sql is None:
        raise Failure(f"recipe {name} not found")
    return sql


def statement(sql):
    """A recipe's one statement without its final semicolon, to nest it in another."""
    return sql.rstrip().rstrip(";")


def as_shown(rows):
    """Reals as text, as SQLite shows them (24.0, not JavaScript's 24): the page's tables show what the recipe shows."""
    return [[repr(v) if isinstance(v, float) else v for v in r] for r in rows]


def chart_library():
    """The page's charting library as the package was built: where the page loads it from, or why it is not there
    (the note the build left)."""
    if os.path.exists(os.path.join(VENDOR, CHART_LIBRARY)):
        with open(os.path.join(VENDOR, "chart.js-version.txt")) as f:
            return {"script": "/vendor/" + CHART_LIBRARY, "name": "Chart.js " + f.read().strip()}
    try:
        with open(os.path.join(VENDOR, "charts-missing.txt")) as f:
            return {"missing": f.read().strip()}
    except FileNotFoundError:
        return {"missing": "this nsystrace runs without the charting library that the package's build vendors "
                           "(from the source tree?): install it with pip install ."}


def utilization_bucket_ns(span_ns):
    """The utilization chart's interval: the smallest 1, 2 or 5 x 10^k ns that cuts span_ns into at most
    UTILIZATION_BUCKETS intervals."""
    scale = 1
    while True:
        for m in (1, 2, 5):
            if span_ns <= m * scale * UTILIZATION_BUCKETS:
                return m * scale
        scale *= 10


def with_bucket(sql, bucket_ns):
    """gpu_busy.sql with its params line set to another bucket size (as its header tells users to)."""
    out, n = re.subn(r"(with params\(bucket_ns, max_buckets\) as \(select )\d+(, \d+\))",
                     lambda m: f"{m.group(1)}{bucket_ns}{m.group(2)}", sql)
    if n != 1:
        raise Failure("gpu_busy.sql's params line (with params(bucket_ns, max_buckets) as (select N, M)) is not "
                      "there: the page cannot set the utilization chart's interval")
    return out


CUDA_MEMORY_IN_USE = """select pid - 16777216 as device, mem_kind as memory_kind, ts, json_extract(args, '$.value') as in_use_bytes
from trace_events where kind = 'cuda_memory' order by device, memory_kind, ts, rowid"""


class Refused(Exception):
    pass


PROGRESS_LINE = re.compile(r"nsystrace: (?P<phase>.+?): (?:\[[#.]*\] )?(?P<done>\d+)(?: of (?P<total>\d+))? "
                           r"(?P<unit>[a-z]+)(?: \((?P<percent>\d+)%\))?, (?P<seconds>[0-9.]+) s"
                           r"(?:, about (?P<left>\d+) s left)?")


class Job:
    """One conversion from the page: the same function as the command's (conversion.write_trace), in a process of
    its own, so that the page can show its progress (the extension's progress lines, read from its stderr) and
    cancel it (SIGTERM: the conversion stops and removes its temporary file)."""

    def __init__(self, number, options, name):
        self.number, self.options, self.name = number, options, name
        self.state = "running"  # then done, failed or cancelled
        self.progress = None   # the last progress line, parsed
        self.error = None
        self.result = None
        self.changed = threading.Condition()
        self.child = subprocess.Popen(
            [sys.executable, "-m", "nsystrace.conversion", json.dumps(dataclasses.asdict(options))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self):
        messages = []
        for line in self.child.stderr:
            m = PROGRESS_LINE.match(line)
            with self.changed:
                if m:
                    self.progress = {k: v for k, v in m.groupdict().items() if v is not None}
                else:
                    messages.append(line.strip())
                self.changed.notify_all()
        out = self.child.stdout.read()
        code = self.child.wait()
        with self.changed:
            if self.state == "cancelling":
                self.state = "cancelled"
                # The signal may come after the trace was whole (at its last rows, or while the child reported
                # it): the user cancelled, so that trace goes too.
                try:
                    os.remove(self.options.output)
                except FileNotFoundError:
                    pass
            elif code == 0:
                self.result = json.loads(out)
                self.state = "done"
            else:
                self.state = "failed"
                self.error = " ".join(messages) or f"the conversion failed (exit {code})"
            self.changed.notify_all()

    def cancel(self):
        with self.changed:
            if self.state == "running":
                self.state = "cancelling"
                self.child.send_signal(signal.SIGTERM)

    def wait(self):
        self.child.wait()
        with self.changed:
            self.changed.wait_for(lambda: self.state not in ("running", "cancelling"), timeout=5)

    def status(self, port, wait_seconds=0.0):
        """The job as the page shows it; waits up to wait_seconds for a change first (the page's long poll)."""
        with self.changed:
            before = (self.state, self.progress)
            self.changed.wait_for(lambda: (self.state, self.progress) != before, timeout=wait_seconds)
            out = {"job": self.number, "state": self.state, "progress": self.progress, "error": self.error}
            if self.state == "done":
                path = self.result["path"]  # removed once a later conversion is done
                out.update({"trace": "/traces/" + urllib.parse.quote(self.name), "name": self.name,
                            "bytes": os.path.getsize(path) if os.path.exists(path) else None,
                            "events": sum(n for _, n in self.result["kinds"]),
                            "seconds": round(self.result["seconds"], 2),
                            "perfetto": perfetto_link(
                                f"http://127.0.0.1:{port}/traces/{urllib.parse.quote(self.name)}")})
            return out


class Site:
    """What the page serves: the profiles given, and the trace of the last conversion (older ones are removed when
    a new one is done; all of them, and any conversion still running, when the server stops)."""

    def __init__(self, profiles, port):
        self.profiles = [os.path.abspath(p) for p in profiles]
        self.port = port
        self.traces = tempfile.mkdtemp(prefix="nsystrace-serve-")
        self.lock = threading.Lock()
        self.jobs = {}
        self.numbers = itertools.count(1)

    def profile(self, query):
        if "path" in query or "file" in query:
            raise Refused("only the profiles given to `nsystrace serve` are served, by number; no path is taken")
        try:
            i = int(query.get("profile", ["0"])[0])
        except ValueError:
            raise Refused("profile must be the number of one of the profiles given to `nsystrace serve`")
        if not 0 <= i < len(self.profiles):
            raise Refused(f"there is no profile {i}: {len(self.profiles)} were given to `nsystrace serve`")
        return self.profiles[i]

    def summary(self, query):
        db = Connection([self.profile(query)])
        out = {}
        # Every kind a conversion can write, the NVTX GPU projection (nvtx_kernel, derived rows) included: the page
        # offers each as a box, checked, so that its default conversion is the command's.
        for key, sql in (("kinds", "select kind, count(*) as events from trace_events where derived in (0, 1) "
                                   "group by kind order by kind"),
                         ("gpus", "select device_id as gpu, count(*) as events from trace_events "
                                  "where device_id is not null and derived = 0 group by 1 order by 1"),
                         ("processes", "select pid, max(process_name) as process, count(*) as events "
                                       "from trace_events where device_id is null group by pid order by pid"),
                         ("top_kernels", recipe("top_kernels.sql")),
                         ("nvtx_gpu_time", recipe("nvtx_gpu_time.sql"))):
            columns, rows = db.query(sql)
            out[key] = {"columns": columns, "rows": as_shown(rows)}
        return out

    def chart(self, query):
        """The rows of the recipe a chart draws, as the recipe gives them (numbers), and as its table shows them
        (text). The page draws these numbers and computes none."""
        name = query.get("name", [""])[0]
        if name not in ("gpu_time_breakdown", "gpu_idle", "gpu_busy", "cuda_memory"):
            raise Refused("a chart is gpu_time_breakdown, gpu_idle, gpu_busy or cuda_memory")
        db = Connection([self.profile(query)])
        out = {"recipe": f"{name}.sql"}
        if name == "cuda_memory":
            # Not a recipe: trace_events' CUDA memory counter as the trace draws it, each allocation's or free's
            # bytes in use after it (args.value), per GPU (its pid is 2^24 + the device) and memory kind.
            out["recipe"] = "trace_events' cuda_memory rows"
            sql = CUDA_MEMORY_IN_USE
        elif name == "gpu_time_breakdown":
            sql = recipe("gpu_time_breakdown.sql")
        elif name == "gpu_idle":
            # The recipe's totals per (device, cause), the columns it repeats on each gap of theirs, once each.
            sql = (f"select distinct device, cause, cause_gaps, cause_idle_ns from "
                   f"({statement(recipe('gpu_idle.sql'))}) order by device, cause")
        else:  # gpu_busy
            # Intervals sized to the profile (the recipe's 100 ms make one or two of a short profile).
            (start, end), = db.rows("select min(ts), max(ts + dur) from trace_events "
                                    "where kind in ('kernel', 'memcpy', 'memset')")
            out["bucket_ns"] = utilization_bucket_ns(end - start) if start is not None else None
            sql = with_bucket(recipe("gpu_busy.sql"), out["bucket_ns"] or 1)
        columns, rows = db.query(sql)
        out.update(columns=columns, rows=rows, text=as_shown(rows))
        return out

    def options(self, query, output):
        """The page's choices as the command's options. The page sends the kinds checked, nvtx_kernel (the GPU
        projection) among them as the command's --kinds takes it; every box checked, its default, is the command's
        default: every kind, the GPU projection."""
        options = conversion.Options(profiles=[self.profile(query)], output=output, progress=True)
        if query.get("kinds", [""])[0]:
            options.kinds = query["kinds"][0]
        for key in ("start", "end"):
            if query.get(key, [""])[0]:
                setattr(options, key, conversion.parse_time(query[key][0]))
        options.pid = [int(p) for p in query.get("pid", []) if p]
        return options

    def convert(self, query):
        fmt = query.get("format", ["pftrace"])[0]
        if fmt not in ("pftrace", "json.gz", "json"):
            raise Refused("format is pftrace, json.gz or json")
        profile = self.profile(query)
        with self.lock:
            number = next(self.numbers)
            name = f"{os.path.splitext(os.path.basename(profile))[0]}-{number}.{fmt}"
            job = Job(number, self.options(query, os.path.join(self.traces, name)), name)
            self.jobs[number] = job
        return job.status(self.port)

    def job(self, query):
        try:
            job = self.jobs[int(query.get("job", ["0"])[0])]
        except (KeyError, ValueError):
            raise Refused("no such conversion")
        if "cancel" in query:
            job.cancel()
        status = job.status(self.port, wait_seconds=min(float(query.get("wait", ["0"])[0]), 2.0))
        if status["state"] == "done":
            self.keep_only(job)
        return status

    def keep_only(self, kept):
        """Removes the traces of the conversions before this one (the page links only the last)."""
        with self.lock:
            for number, job in list(self.jobs.items()):
                if number < kept.number and job.state not in ("running", "cancelling"):
                    path = os.path.join(self.traces, job.name)
                    if os.path.exists(path):
                        os.unlink(path)

    def close(self):
        """Cancels what still runs and removes every trace."""
        for job in list(self.jobs.values()):
            job.cancel()
        for job in list(self.jobs.values()):
            job.wait()
        shutil.rmtree(self.traces, ignore_errors=True)


def handler(site):
    class Handler(http.server.BaseHTTPRequestHandler):
        def send(self, code, body, content_type, extra=()):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def json(self, code, value):
            self.send(code, json.dumps(value).encode(), "application/json")

        def do_OPTIONS(self):
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", PERFETTO_UI)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            query = urllib.parse.parse_qs(url.query)
            try:
                if not is_loopback_host(self.headers, site.port):
                    raise Refused("this server answers requests for 127.0.0.1 and localhost only")
                if url.path == "/":
                    with open(os.path.join(HERE, "page.html"), "rb") as f:
                        self.send(200, f.read(), "text/html; charset=utf-8")
                elif url.path == "/api/profiles":
                    self.json(200, [{"id": i, "name": os.path.basename(p)} for i, p in enumerate(site.profiles)])
                elif url.path == "/api/summary":
                    self.json(200, site.summary(query))
                elif url.path == "/api/charts":
                    self.json(200, chart_library())
                elif url.path == "/api/chart":
                    self.json(200, site.chart(query))
                elif url.path.startswith("/vendor/"):
                    name = url.path[len("/vendor/"):]
                    if name not in VENDORED or not os.path.isfile(os.path.join(VENDOR, name)):
                        self.json(404, {"error": f"no {url.path}: {chart_library().get('missing', '')}"})
                    else:
                        with open(os.path.join(VENDOR, name), "rb") as f:
                            self.send(200, f.read(), VENDORED[name])
                elif url.path == "/api/convert":
                    self.json(200, site.convert(query))
                elif url.path == "/api/job":
                    self.json(200, site.job(query))
                elif url.path.startswith("/traces/"):
                    name = urllib.parse.unquote(url.path[len("/traces/"):])
                    path = os.path.join(site.traces, name)
                    if "/" in name or not os.path.isfile(path):
                        raise Refused(f"no trace {name}")
                    with open(path, "rb") as f:
                        self.send(200, f.read(), "application/octet-stream",
                                  [("Content-Disposition", f'attachment; filename="{name}"'),
                                   ("Access-Control-Allow-Origin", PERFETTO_UI)])
                else:
                    self.json(404, {"error": f"no page {url.path}"})
            except Refused as e:
                self.json(403, {"error": str(e)})
            except (Failure, ValueError) as e:
                self.json(400, {"error": str(e)})
            except Exception as e:  # an error in a query: said, not a broken connection
                self.json(500, {"error": f"{type(e).__name__}: {e}"})

        def log_message(self, *a):
            pass

    return Handler


def serve_page(profiles, port, announce=lambda text: print(text, flush=True)):
    """Serves the page for these profiles on 127.0.0.1:port until Ctrl-C or SIGTERM; its temporary traces go with
    it."""
    site = Site(profiles, port)
    try:
        try:
            server = QuietServer(("127.0.0.1", port), handler(site))
        except OSError as e:
            raise Failure(f"cannot listen on 127.0.0.1:{port} ({e.strerror})")
        site.port = server.server_address[1]  # port 0: the one the system chose
        announce(f"nsystrace serve: http://127.0.0.1:{site.port}/ ({len(site.profiles)} profiles; Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    finally:
        site.close()
