"""nsystrace from Python's sqlite3 module, the way it documents loading an extension (enable_load_extension,
load_extension). Run from the clone after the quick start, with a Python that can load extensions (Debian's
/usr/bin/python3; pyenv's default build cannot):
    /usr/bin/python3 examples/languages/python/nsystrace_example.py
Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
"""
import sqlite3


def print_rows(cursor):
    for row in cursor:
        print("|".join("" if v is None else str(v) for v in row))


conn = sqlite3.connect("file:build/example.sqlite?mode=ro", uri=True)
conn.enable_load_extension(True)
conn.load_extension("build/nsystrace")
conn.enable_load_extension(False)  # the SQL function load_extension() stays off
print("# sqlite_version")
print_rows(conn.execute("select sqlite_version()"))
print("# kinds")
print_rows(conn.execute("select kind, count(*) from trace_events group by kind order by kind"))

print("# top_kernels")
with open("sql/top_kernels.sql") as f:
    print_rows(conn.execute(f.read()))

trace = "build/gpu0_kernels_python.pftrace"
print(f"# trace {trace}")
print_rows(conn.execute("select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0",
                        (trace,)))

print("# nvtx forward")
print_rows(conn.execute("select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"
                        " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid",
                        ("forward",)))
