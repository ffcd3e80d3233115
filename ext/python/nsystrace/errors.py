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
    a mistake (2), a failed conversion (1), Ctrl-C (130), SIGTERM (143), a closed pipe on stdout (`| head`: 141)."""
    import os
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
    except BrokenPipeError:
        # The reader of stdout has gone (`nsystrace ... | head`): quiet, and no second error when Python flushes
        # stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Terminated:
        say("stopped by SIGTERM")
        return 143
    except KeyboardInterrupt:
        say("stopped by Ctrl-C")
        return 130
