"""The exceptions every module of the command raises for what it reports in one line (no traceback)."""


class Failure(Exception):
    """A mistake the user can fix, reported in one line naming the file it is about; the command exits with 2."""
    exit_status = 2


class ConversionFailed(Failure):
    """The conversion itself failed (SQLite or the extension said why); the command exits with 1."""
    exit_status = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: the conversion is interrupted and nothing is left behind."""


def stop_on_sigterm():
    """SIGTERM raises Terminated in the main thread, so that it cleans up as Ctrl-C does (Python's default would end
    the process at once, leaving the trace's temporary file and the temporary directory behind)."""
    import signal
    import threading

    def terminate(signum, frame):
        raise Terminated()
    if threading.current_thread() is threading.main_thread():  # Python sets handlers there only
        signal.signal(signal.SIGTERM, terminate)


def reported(prog, run, *args):
    """run(*args)'s exit status; what went wrong becomes one line on stderr, prefixed with prog once, no traceback:
    a mistake (2), a failed conversion (1), Ctrl-C (130), SIGTERM (143), a closed pipe on stdout (`| head`: 141).

    Every entry point runs all of its work through here, its argument parsing included: cli.main (the `nsystrace`
    command, each subcommand, `python -m nsystrace`, the page's server) and conversion.main (the page's
    conversions). argparse prints --help, --version and its usage errors itself and then raises SystemExit; what it
    printed is flushed here, so that a closed pipe is caught here too, at every stage, and never at exit (where
    Python would print a traceback for it)."""
    import sys

    try:
        try:
            return _one_line(prog, run, *args)
        finally:
            sys.stdout.flush()  # whatever ended run (a return, argparse's SystemExit): a closed pipe shows here
    except BrokenPipeError:
        if not _quiet_closed_pipes():  # not stdout's or stderr's reader: some other pipe, an error to show
            raise
        return 141


def _one_line(prog, run, *args):
    """run(*args)'s exit status, its errors said in one line (reported())."""
    import sqlite3
    import sys

    import nsystrace

    def say(message):
        message = str(message)
        for prefix in ("nsystrace: ", prog + ": "):  # the extension's messages start with "nsystrace: " already
            if message.startswith(prefix):
                message = message[len(prefix):]
        print(f"{prog}: {message}", file=sys.stderr, flush=True)
    try:
        return run(*args)
    except Failure as e:
        say(e)
        return e.exit_status
    except nsystrace.ExtensionLoadingUnsupported as e:
        say(e)
        return 2
    except sqlite3.Error as e:
        say(e)
        return 1
    except Terminated:
        say("stopped by SIGTERM")
        return 143
    except KeyboardInterrupt:
        say("stopped by Ctrl-C")
        return 130


def _quiet_closed_pipes():
    """After a BrokenPipeError: whether the reader of stdout or of stderr has gone (`nsystrace ... | head`); each such
    stream is pointed at /dev/null, so that what is still buffered for it, flushed when Python exits, raises no
    second error."""
    import os
    import select
    import sys

    gone = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            poll = select.poll()
            poll.register(fd, select.POLLOUT)
            if any(events & select.POLLERR for _, events in poll.poll(0)):  # a pipe whose every reader has closed
                gone.append(fd)
        except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO), or already closed
            pass
    for fd in gone:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    return bool(gone)
