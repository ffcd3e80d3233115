"""The local HTTP server (standard library, loopback only): a trace served once to ui.perfetto.dev (`--open`), and
the page of `nsystrace serve`, which looks at profiles (kinds and counts, GPUs, top kernels, NVTX GPU time: the
shipped recipes), converts them as the command does and links the trace into ui.perfetto.dev.

Only the profiles given are served, by their number: a request naming a path, or a number that is not one of them,
is refused; a request naming this server by another host name (DNS rebinding) too.
"""
import http.server
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
import webbrowser

from nsystrace import conversion
from nsystrace.connection import Connection
from nsystrace.errors import Failure

PERFETTO_UI = "https://ui.perfetto.dev"
PERFETTO_PORT = 9001  # the port ui.perfetto.dev may fetch a trace from (its Content-Security-Policy allows it)
HERE = os.path.dirname(os.path.abspath(__file__))


def is_loopback_host(headers, port):
    """The request names this server by a loopback name (a page elsewhere that rebinds its own name to 127.0.0.1,
    DNS rebinding, sends its own Host)."""
    return headers.get("Host") in (f"127.0.0.1:{port}", f"localhost:{port}")


def perfetto_link(url):
    """The ui.perfetto.dev deep link that opens the trace at url."""
    return f"{PERFETTO_UI}/#!/?url={urllib.parse.quote(url, safe='')}"


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
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)  # loopback only
    except OSError as e:
        raise Failure(f"cannot serve on 127.0.0.1:{port} ({e.strerror}); is another trace being served?")
    link = perfetto_link(f"http://127.0.0.1:{port}/{urllib.parse.quote(name)}")
    announce(f"nsystrace: serving {name} on 127.0.0.1:{port} until Perfetto has fetched it (Ctrl-C stops):\n  {link}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    if open_browser:
        try:
            webbrowser.get()
            webbrowser.open(link)
        except webbrowser.Error:
            pass  # no browser here: the link is printed
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
    """The text of a shipped recipe (sql/<name>): in the package when installed, in the source tree otherwise."""
    for base in (os.path.join(HERE, "sql"), os.path.join(HERE, "..", "..", "..", "sql")):
        path = os.path.join(base, name)
        if os.path.exists(path):
            with open(path) as f:
                return f.read()
    raise Failure(f"recipe {name} not found")


class Refused(Exception):
    pass


class Site:
    """What the page serves: the profiles given, and the traces converted from them (in a temporary directory)."""

    def __init__(self, profiles, port):
        self.profiles = [os.path.abspath(p) for p in profiles]
        self.port = port
        self.traces = tempfile.TemporaryDirectory(prefix="nsystrace-serve-")
        self.lock = threading.Lock()  # one conversion at a time: they share the machine's cores
        self.count = 0

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
        for key, sql in (("kinds", "select kind, count(*) as events from trace_events group by kind order by kind"),
                         ("gpus", "select device_id as gpu, count(*) as events from trace_events "
                                  "where device_id is not null group by 1 order by 1"),
                         ("processes", "select pid, max(process_name) as process, count(*) as events "
                                       "from trace_events where device_id is null group by pid order by pid"),
                         ("top_kernels", recipe("top_kernels.sql")),
                         ("nvtx_gpu_time", recipe("nvtx_gpu_time.sql"))):
            columns, rows = db.query(sql)
            # Reals as text, as SQLite shows them (24.0, not JavaScript's 24): the page shows what the recipe shows.
            out[key] = {"columns": columns,
                        "rows": [[repr(v) if isinstance(v, float) else v for v in r] for r in rows]}
        return out

    def convert(self, query):
        profile = self.profile(query)
        fmt = query.get("format", ["pftrace"])[0]
        if fmt not in ("pftrace", "json.gz", "json"):
            raise Refused("format is pftrace, json.gz or json")
        with self.lock:
            self.count += 1
            name = f"{os.path.splitext(os.path.basename(profile))[0]}-{self.count}.{fmt}"
            options = conversion.Options(profiles=[profile], output=os.path.join(self.traces.name, name),
                                         progress=False)
            if query.get("kinds", [""])[0]:
                options.kinds = query["kinds"][0]
            for key in ("start", "end"):
                if query.get(key, [""])[0]:
                    setattr(options, key, conversion.parse_time(query[key][0]))
            options.pid = [int(p) for p in query.get("pid", []) if p]
            result = conversion.write_trace(options)
        return {"trace": "/traces/" + urllib.parse.quote(name), "name": name, "bytes": os.path.getsize(result.path),
                "events": result.events, "seconds": round(result.seconds, 2),
                "perfetto": perfetto_link(f"http://127.0.0.1:{self.port}/traces/{urllib.parse.quote(name)}")}


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
                elif url.path == "/api/convert":
                    self.json(200, site.convert(query))
                elif url.path.startswith("/traces/"):
                    name = urllib.parse.unquote(url.path[len("/traces/"):])
                    path = os.path.join(site.traces.name, name)
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
    """Serves the page for these profiles on 127.0.0.1:port until Ctrl-C; its temporary traces go with it."""
    site = Site(profiles, port)
    try:
        try:
            server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler(site))
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
        site.traces.cleanup()
