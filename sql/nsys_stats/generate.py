#!/usr/bin/python3
"""Writes sql/nsys_stats/*.sql: NVIDIA's `nsys stats` reports as SQL, one self-contained file per report (each must
run alone with `.read`), from one description: what each report counts (its scope and items) here, the statistics
they share (NVIDIA's columns) once. Edit this file, not the .sql files, then run it.

  generate.py          rewrite the reports
  generate.py --check  exit 1 when a report differs from what this file makes (the tests run it)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

COMMON = """-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/{name}.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file."""

# Per instance: its Name (the report's grouping) and value (a duration in ns, or a size in bytes). The median and the
# sample standard deviation are the extension's aggregates (one pass; in plain SQL they cost a window sort).
STATISTICS = """stats as materialized (
  select Name, count(*) as n, sum(value) as total, min(value) as lo, max(value) as hi, avg(value) as mean,
         nsystrace_median(value) as med, nsystrace_stddev(value) as sd
  from items group by Name
)"""

JOINS = """from stats s
order by s.total desc, s.Name;"""

TIME_COLUMNS = f"""select round(100.0 * s.total / (select sum(total) from stats), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)",
       round(s.sd, 1) as "StdDev (ns)", s.Name as "Name"
{JOINS}"""

SIZE_COLUMNS = f"""select round(s.total / 1e6, 3) as "Total (MB)", s.n as "Count", round(s.mean / 1e6, 3) as "Avg (MB)",
       round(s.med / 1e6, 3) as "Med (MB)", round(s.lo / 1e6, 3) as "Min (MB)", round(s.hi / 1e6, 3) as "Max (MB)",
       round(s.sd / 1e6, 3) as "StdDev (MB)",
       s.Name as "Operation"
{JOINS}"""

# A GPU memory operation's name, as NVIDIA's memory reports name it.
MEMORY_OPERATION = """case when kind = 'memset' then '[CUDA memset]'
              else '[CUDA memcpy ' || coalesce(json_extract(args, '$.copy_kind'), 'Unknown') || ']' end"""
MEMORY_SCOPE = "scope as (select * from trace_events where kind in ('memcpy', 'memset'))"

REPORTS = {
    "cuda_api_sum": (
        """-- cuda_api_sum: NVIDIA's `nsys stats --report cuda_api_sum` as SQL: CUDA runtime and driver API calls by name,
-- their durations summed (nsys records the name with its version suffix, e.g. cudaLaunchKernel_v7000, where it has one).""",
        """scope as (select * from trace_events where kind = 'cuda_api'),
items as materialized (select name as Name, dur as value from scope)""",
        TIME_COLUMNS),
    "cuda_gpu_kern_sum": (
        """-- cuda_gpu_kern_sum: NVIDIA's `nsys stats --report cuda_gpu_kern_sum` as SQL: GPU kernels by name, their
-- durations summed. Named as NVIDIA's report names them: the demangled name (use_short_name = 1: the short name, as
-- `cuda_gpu_kern_sum:base` does).""",
        """params(use_short_name) as (select 0),
scope as (select * from trace_events where kind = 'kernel'),
items as materialized (
  select case when p.use_short_name then s.name else coalesce(json_extract(s.args, '$.demangled_name'), s.name) end
           as Name, s.dur as value
  from scope s, params p
)""",
        TIME_COLUMNS),
    "cuda_gpu_mem_size_sum": (
        """-- cuda_gpu_mem_size_sum: NVIDIA's `nsys stats --report cuda_gpu_mem_size_sum` as SQL: GPU memory operations (memcpy
-- by copy kind, memset) by operation, their sizes summed, in decimal MB (1 MB = 10^6 bytes) as NVIDIA reports them.""",
        f"""{MEMORY_SCOPE},
items as materialized (
  select {MEMORY_OPERATION} as Name,
         json_extract(args, '$.bytes') as value
  from scope
)""",
        SIZE_COLUMNS),
    "cuda_gpu_mem_time_sum": (
        """-- cuda_gpu_mem_time_sum: NVIDIA's `nsys stats --report cuda_gpu_mem_time_sum` as SQL: GPU memory operations
-- (memcpy by copy kind, memset) by operation, e.g. [CUDA memcpy Host-to-Device], their durations summed.""",
        f"""{MEMORY_SCOPE},
items as materialized (
  select {MEMORY_OPERATION} as Name,
         dur as value
  from scope
)""",
        TIME_COLUMNS),
    "nvtx_sum": (
        """-- nvtx_sum: NVIDIA's `nsys stats --report nvtx_sum` as SQL: NVTX push/pop and start/end ranges by name, as
-- "domain:name" in a non-default domain, their durations summed (marks have no duration and are left out; a range
-- never closed runs to the end of the profile, see trace_events' args.unclosed).""",
        """scope as (select * from trace_events where kind = 'nvtx' and dur is not null),
items as materialized (
  select coalesce(json_extract(args, '$.domain') || ':', '') || name as Name, dur as value from scope
)""",
        TIME_COLUMNS),
    "osrt_sum": (
        """-- osrt_sum: NVIDIA's `nsys stats --report osrt_sum` as SQL: OS runtime calls (nsys --trace=osrt) by name, their
-- durations summed ("Instances" is NVIDIA's "Num Calls"). OSRT_API also holds nsys's own markers (eventClass 31/32:
-- "OS runtime libraries profiling started/finished"), which are not calls and which NVIDIA's report leaves out.""",
        """scope as (
  select * from trace_events where kind = 'osrt'
    and name not in ('OS runtime libraries profiling started', 'OS runtime libraries profiling finished')
),
items as materialized (select name as Name, dur as value from scope)""",
        TIME_COLUMNS),
}


def report(name):
    header, items, columns = REPORTS[name]
    return f"{header}\n{COMMON.format(name=name)}\nwith {items},\n{STATISTICS}\n{columns}\n"


def main():
    check = sys.argv[1:] == ["--check"]
    stale = []
    for name in REPORTS:
        path = os.path.join(HERE, f"{name}.sql")
        text = report(name)
        current = open(path).read() if os.path.exists(path) else None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print(f"generate.py --check: {', '.join(stale)} differ from what sql/nsys_stats/generate.py makes; run it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
