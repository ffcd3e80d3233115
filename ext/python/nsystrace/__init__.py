"""nsystrace: NVIDIA Nsight Systems profiles (nsys export --type sqlite) as Perfetto traces, and the same timeline
in SQL, through a SQLite extension.

    import sqlite3, nsystrace
    conn = sqlite3.connect("prof.sqlite")
    nsystrace.load(conn)
    conn.execute("select perfetto_trace_file('prof.pftrace') from trace_events")

The command `nsystrace prof.sqlite` (also `python -m nsystrace`) converts without SQL; `nsystrace --help`.
"""
import os
import sqlite3

__all__ = ["load", "loadable_path", "ExtensionLoadingUnsupported"]


class ExtensionLoadingUnsupported(RuntimeError):
    """This Python's sqlite3 module cannot load SQLite extensions."""


def loadable_path():
    """The extension's path without its suffix, as SQLite's load_extension() and the sqlite3 shell's .load take it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "nsystrace")


def load(conn):
    """Loads the extension into a sqlite3 connection: trace_events, nvtx_kernel_ranges, perfetto_trace_file(), ..."""
    if not hasattr(conn, "enable_load_extension"):
        raise ExtensionLoadingUnsupported(
            "this Python's sqlite3 module was built without extension loading, so it cannot load nsystrace. Use a "
            "Python that can (Debian's and Ubuntu's /usr/bin/python3 can; with pyenv, rebuild it with "
            "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions pyenv install <version>), or the `nsystrace` "
            "command, which falls back to the sqlite3 shell")
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
