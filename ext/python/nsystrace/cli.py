"""The `nsystrace` command line: `nsystrace PROFILE... [options]` converts (conversion.py does the work), and
`nsystrace NAME ...` runs the subcommand NAME.

A subcommand is a module of this package with
    DESCRIPTION            its --help text
    add_arguments(parser)  its arguments, on an argparse parser whose prog is "nsystrace NAME"
    run(args) -> int       the exit status; it raises errors.Failure for a mistake the user can fix
and one line in SUBCOMMANDS. Errors are reported here, the same way for all: one line on stderr, prefixed with the
prog once.
"""
import argparse
import importlib
import os
import sys

from nsystrace import conversion, server
from nsystrace.errors import reported, stop_on_sigterm

# `nsystrace NAME ...` -> the module that runs it. One line each, in alphabetical order.
SUBCOMMANDS = {
    "diff": "nsystrace.diff",
    "serve": "nsystrace.serve",
    "stats": "nsystrace.stats",
}

# Outputs that are not one trace (the job's archive, `-o job.tar`): the output's suffix -> the module that writes
# it, whose write(args) returns the exit status (args: the conversion's arguments, as parsed). One line each.
OUTPUTS_OF_THEIR_OWN = {
    ".tar": "nsystrace.job",
    ".zip": "nsystrace.job",
}

EPILOG = """
examples:
  nsystrace prof.sqlite                         writes prof.pftrace beside it (Perfetto's own format)
  nsystrace prof.sqlite -o prof.json.gz         Chrome JSON, gzipped (the format follows the extension)
  nsystrace prof.sqlite --kinds kernel,nvtx     only these kinds of events
  nsystrace prof.sqlite --start 2s --end 2.5s   a time window, from the session's start (ns, or us/ms/s; with
                                                several reports, from the earliest session start)
  nsystrace prof.sqlite --gpu 0 --pid 4101      GPU 0's work and process 4101's CPU events
  nsystrace prof.sqlite --nvtx-prefix step      NVTX ranges whose name starts with "step" (other events stay)
  nsystrace rank*.sqlite -o job.pftrace         several reports (ranks, nodes) on one timeline (up to 11)
  nsystrace rank*.sqlite -o job.tar -j 8        any number of reports: one trace each, 8 at a time, in an archive
                                                that Perfetto merges onto one timeline (docs/job.md)
  nsystrace stats top_kernels rank*.sqlite      a recipe on every report: one table (`nsystrace stats --help`)
  nsystrace report.nsys-rep                     runs `nsys export --type sqlite` first (nsys must be on PATH)
  nsystrace prof.sqlite --open                  converts, then opens the trace in ui.perfetto.dev
  nsystrace serve a.sqlite b.sqlite             a local page to look at the profiles and convert them

The profile is only read: the output is never a database (the extension refuses to write over one).
Kinds: """ + ", ".join(conversion.KINDS) + """.
"""


def time_argument(text):
    try:
        return conversion.parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _package_version():
    try:
        from importlib.metadata import version
        return version("nsystrace")
    except Exception:  # running from the source tree
        return "source"


def parser():
    """The conversion's arguments (the command without a subcommand)."""
    p = argparse.ArgumentParser(
        prog="nsystrace", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Convert NVIDIA Nsight Systems profiles (nsys export --type sqlite, or .nsys-rep with nsys on "
                    "PATH) into a trace for https://ui.perfetto.dev: Perfetto's protobuf (.pftrace) or Chrome JSON "
                    "(.json, .json.gz). Subcommands: " + ", ".join(f"`nsystrace {name} --help`" for name in SUBCOMMANDS)
                    + ".")
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".sqlite export(s) or .nsys-rep report(s)")
    p.add_argument("-o", "--output", help="the trace to write (default: the first profile's name, .pftrace); "
                                          ".pftrace / .perfetto-trace: Perfetto, .json / .json.gz: Chrome JSON")
    p.add_argument("--kinds", help="comma-separated kinds of events to keep (default: all)")
    p.add_argument("--start", type=time_argument, help="keep events starting at or after this time")
    p.add_argument("--end", type=time_argument, help="keep events starting at or before this time")
    p.add_argument("--pid", type=int, action="append", default=[],
                   help="keep this process's CPU events, not other processes' (repeatable; GPU work stays unless "
                        "--gpu; with several reports, that pid in each)")
    p.add_argument("--gpu", type=int, action="append", default=[],
                   help="keep this GPU's work, not other GPUs' (repeatable; CPU events stay unless --pid)")
    p.add_argument("--nvtx-prefix", help="keep only the NVTX ranges whose name starts with this")
    p.add_argument("--nvtx-color-scheme", metavar="JSON",
                   help="colors for NVTX ranges by name, as nsys2json takes them: a JSON object (or a file holding "
                        "one) of regular expression -> Chrome color name; Chrome JSON output only")
    p.add_argument("--no-gpu-projection", action="store_true",
                   help="leave out the NVTX ranges drawn on the GPUs that ran their work (computing them costs a "
                        "pass over the profile)")
    p.add_argument("--progress", dest="progress", action="store_true", default=True,
                   help="report progress on stderr (the default): a bar with the percentage and the time left on a "
                        "terminal, a line every 2 s otherwise, once a phase has run 2 s")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("-j", "--jobs", type=int, help="with -o JOB.tar / JOB.zip: reports converted at a time "
                                                    "(default: the cores available); see docs/job.md")
    p.add_argument("--scheduler", metavar="ADDRESS", help="with -o JOB.tar / JOB.zip: convert on a Dask cluster "
                                                          "(tcp://host:8786) instead of local processes")
    p.add_argument("--open", action="store_true",
                   help=f"serve the trace on 127.0.0.1:{server.PERFETTO_PORT} and open it in {server.PERFETTO_UI} "
                        "(stops once the trace has been fetched, or on Ctrl-C); a trace too big for a browser tab is "
                        "opened by Perfetto's trace processor instead, when it is on PATH")
    p.add_argument("--version", action="version", version=f"nsystrace (Python glue) {_package_version()}")
    return p


def convert(args):
    """The command without a subcommand: converts, prints the summary, and with --open serves the trace."""
    if args.output is None:
        args.output = os.path.splitext(args.profiles[0])[0] + ".pftrace"
    for suffix, name in OUTPUTS_OF_THEIR_OWN.items():
        if args.output.lower().endswith(suffix):
            return importlib.import_module(name).write(args)
    warnings = []

    def warn(text):
        warnings.append(text)
        print(f"nsystrace: {text}", file=sys.stderr, flush=True)
    result = conversion.write_trace(conversion.Options.of(args), warn=warn)
    summary = ", ".join(f"{k} {n}" for k, n in result.kinds) or "no events"
    size = os.path.getsize(result.path)
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    kind = "Perfetto protobuf" if result.format == "perfetto" else "Chrome JSON"
    print(f"nsystrace: wrote {args.output} ({shown}, {kind}) in {result.seconds:.1f} s")
    print(f"  events: {result.events} ({summary})")
    print(f"  GPUs: {', '.join(str(g) for g in result.gpus) or 'none'}; profiles: {', '.join(args.profiles)}")
    sys.stdout.flush()  # a closed pipe (`| head`) is reported here, not at exit
    if args.open:
        accelerator = conversion.trace_processor() if warnings else None
        if accelerator:
            server.open_with_trace_processor(accelerator, result.path)
        else:
            server.serve_once(result.path)
    return 0


def subcommand(name, argv):
    """`nsystrace NAME ...`: the subcommand's arguments parsed, and run."""
    module = importlib.import_module(SUBCOMMANDS[name])
    p = argparse.ArgumentParser(prog=f"nsystrace {name}", description=module.DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(p)
    return module.run(p.parse_args(argv))


def main(argv=None):
    """The command, however it is started (the `nsystrace` script, `python -m nsystrace`, `nsystrace serve`). The
    arguments are parsed inside reported(), as everything else is, so that a closed pipe under --help ends as
    quietly as one under a conversion's summary."""
    argv = sys.argv[1:] if argv is None else argv
    stop_on_sigterm()
    if argv[:1] and argv[0] in SUBCOMMANDS:
        return reported(f"nsystrace {argv[0]}", subcommand, argv[0], argv[1:])
    return reported("nsystrace", lambda: convert(parser().parse_args(argv)))
