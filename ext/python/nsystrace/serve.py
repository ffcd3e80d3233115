"""`nsystrace serve [profiles...]`: a small local page (standard library HTTP server, no framework) to look at
profiles (kinds and counts, GPUs, top kernels, NVTX GPU time: the shipped recipes), choose what to convert (kinds,
window, processes), download the trace and open it in ui.perfetto.dev.

Only the profiles named on the command line are served, by their number: a request naming a path, or a number
that is not one of them, is refused. It listens on 127.0.0.1 only.
"""
import argparse
import http.server
import json
import os
import sys
import tempfile
import threading
import urllib.parse

from nsystrace import cli

HERE = os.path.dirname(os.path.abspath(__file__))


def recipe(name):
    """The text of a shipped recipe (sql/<name>): in the package when installed, in the source tree otherwise."""
    for base in (os.path.join(HERE, "sql"), os.path.join(HERE, "..", "..", "..", "sql")):
        path = os.path.join(base, name)
        if os.path.exists(path):
            with open(path) as f:
                return f.read()
    raise cli.Failure(f"recipe {name} not found")


class Refused(Exception):
    pass


class Site:
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
        db = cli.Connection([self.profile(query)])
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
            args = cli.options(profiles=[profile], output=os.path.join(self.traces.name, name), progress=False)
            if query.get("kinds", [""])[0]:
                args.kinds = query["kinds"][0]
            for key in ("start", "end"):
                if query.get(key, [""])[0]:
                    setattr(args, key, cli.parse_time(query[key][0]))
            args.pid = [int(p) for p in query.get("pid", []) if p]
            out, fmt_, seconds, kinds, gpus = cli.write_trace(args)
        return {"trace": "/traces/" + urllib.parse.quote(name), "name": name, "bytes": os.path.getsize(out),
                "events": sum(n for _, n in kinds), "seconds": round(seconds, 2),
                "perfetto": cli.PERFETTO_UI + "/#!/?url=" + urllib.parse.quote(
                    f"http://127.0.0.1:{self.port}/traces/{urllib.parse.quote(name)}", safe="")}


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
            self.send_header("Access-Control-Allow-Origin", cli.PERFETTO_UI)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            query = urllib.parse.parse_qs(url.query)
            try:
                if not cli.is_loopback_host(self.headers, site.port):
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
                                   ("Access-Control-Allow-Origin", cli.PERFETTO_UI)])
                else:
                    self.json(404, {"error": f"no page {url.path}"})
            except Refused as e:
                self.json(403, {"error": str(e)})
            except (cli.Failure, ValueError) as e:
                self.json(400, {"error": str(e)})
            except Exception as e:  # an error in a query: said, not a broken connection
                self.json(500, {"error": f"{type(e).__name__}: {e}"})

        def log_message(self, *a):
            pass

    return Handler


def main(argv):
    p = argparse.ArgumentParser(prog="nsystrace serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite exports to offer")
    p.add_argument("--port", type=int, default=cli.PERFETTO_PORT,
                   help=f"port on 127.0.0.1 (default {cli.PERFETTO_PORT}, the one ui.perfetto.dev may fetch a trace "
                        "from, so its 'Open in Perfetto' link works)")
    args = p.parse_args(argv)
    for path in args.profiles:
        if not os.path.isfile(path):
            print(f"nsystrace serve: {path}: no such file", file=sys.stderr)
            return 2
    site = Site(args.profiles, args.port)
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler(site))
    except OSError as e:
        print(f"nsystrace serve: cannot listen on 127.0.0.1:{args.port} ({e.strerror})", file=sys.stderr)
        return 2
    site.port = server.server_address[1]  # --port 0: the one the system chose
    print(f"nsystrace serve: http://127.0.0.1:{server.server_address[1]}/ ({len(site.profiles)} profiles; Ctrl-C "
          "stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        site.traces.cleanup()
    return 0
