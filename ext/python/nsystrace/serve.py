"""`nsystrace serve PROFILE...`: a local page to look at profiles and convert them (the page itself: server.py)."""
from nsystrace import server
from nsystrace.connection import check_profiles, is_report
from nsystrace.errors import Failure

DESCRIPTION = """a small local page (127.0.0.1 only) to look at profiles (kinds and counts, GPUs, top kernels, NVTX
GPU time, and charts of the GPU time breakdown, the idle causes, the utilization and the CUDA memory in use over time:
the shipped recipes),
choose what to convert (kinds, window, processes), download the trace and open it in ui.perfetto.dev. Only the
profiles named here are served."""


def add_arguments(p):
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite exports to offer")
    p.add_argument("--port", type=int, default=server.PERFETTO_PORT,
                   help=f"port on 127.0.0.1 (default {server.PERFETTO_PORT}, the one ui.perfetto.dev may fetch a "
                        "trace from, so its 'Open in Perfetto' link works; 0: any free port)")


def run(args):
    check_profiles(args.profiles, one_timeline=False)  # each profile is opened, and converted, on its own
    for path in args.profiles:
        if is_report(path):
            raise Failure(f"{path} is an Nsight Systems report: the page takes SQLite exports (`nsys export --type "
                          "sqlite`, or `nsystrace` converts a report when nsys is on PATH)")
    server.serve_page(args.profiles, args.port)
    return 0
