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

def aggregates(value):
    """NVIDIA's statistics of `value` over a group, as stats' columns (n, total, lo, hi, mean, med, sd). The median and
    the sample standard deviation are the extension's aggregates (one pass; in plain SQL they cost a window sort)."""
    return (f"count(*) as n, sum({value}) as total, min({value}) as lo, max({value}) as hi, avg({value}) as mean,\n"
            f"         nsystrace_median({value}) as med, nsystrace_stddev({value}) as sd")


# Per instance: its Name (the report's grouping) and value (a duration in ns, or a size in bytes). stats is read once
# (the total time by a window over it): SQLite materializes a CTE read twice together with every CTE under it, which
# would store every column of every row in scope (with args) before grouping.
STATISTICS = f"""stats as materialized (
  select Name, {aggregates("value")}
  from items group by Name
)"""

JOINS = """from stats s
order by s.total desc, s.Name;"""



def time_columns(name="s.Name"):
    """NVIDIA's time columns; `name` is the Name shown (an expression over s.Name)."""
    return f"""select round(100.0 * s.total / sum(s.total) over (), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)",
       round(s.sd, 1) as "StdDev (ns)", {name} as "Name"
{JOINS}"""


TIME_COLUMNS = time_columns()
# NVIDIA's reports show a CUDA API name without its version suffix: '_v' and the four characters after it at the end
# (cudaLaunchKernel_v7000 -> cudaLaunchKernel; cuMemAlloc_v2 and cudaStreamIsCapturing_v10000 are left as they are),
# after grouping by the recorded name.
API_NAME_UNVERSIONED = """case substr(s.Name, -6, 2) when '_v' then substr(s.Name, 1, length(s.Name) - 6)
            else s.Name end"""

SIZE_COLUMNS = f"""select round(s.total / 1e6, 3) as "Total (MB)", s.n as "Count", round(s.mean / 1e6, 3) as "Avg (MB)",
       round(s.med / 1e6, 3) as "Med (MB)", round(s.lo / 1e6, 3) as "Min (MB)", round(s.hi / 1e6, 3) as "Max (MB)",
       round(s.sd / 1e6, 3) as "StdDev (MB)",
       s.Name as "Operation"
{JOINS}"""

# A GPU memory operation's name, as NVIDIA's memory reports name it. copy_kind and size_bytes are trace_events' hidden
# columns (args' "copy_kind" and "bytes", read without building the args; named in the scope since `*` leaves hidden
# columns out).
MEMORY_OPERATION = """case when kind = 'memset' then '[CUDA memset]'
              else '[CUDA memcpy ' || coalesce(copy_kind, 'Unknown') || ']' end"""
MEMORY_SCOPE = "scope as (select *, copy_kind, size_bytes from trace_events where kind in ('memcpy', 'memset'))"

REPORTS = {
    "cuda_api_sum": (
        """-- cuda_api_sum: NVIDIA's `nsys stats --report cuda_api_sum` as SQL: CUDA runtime and driver API calls by name,
-- their durations summed. Grouped by the name nsys records and shown as NVIDIA shows it, without a version suffix of
-- '_v' and four characters (cudaLaunchKernel_v7000 -> cudaLaunchKernel; cuMemAlloc_v2 stays).""",
        """scope as (select * from trace_events where kind = 'cuda_api'),
items as (select name as Name, dur as value from scope)""",
        time_columns(API_NAME_UNVERSIONED)),
    "cuda_gpu_kern_sum": (
        """-- cuda_gpu_kern_sum: NVIDIA's `nsys stats --report cuda_gpu_kern_sum` as SQL: GPU kernels by name, their
-- durations summed. Named as NVIDIA's report names them: the demangled name (use_short_name = 1: the short name, as
-- `cuda_gpu_kern_sum:base` does). The demangled name is trace_events' hidden column `demangled_name` (args'
-- "demangled_name", read without building the args; named in the scope since `*` leaves hidden columns out).""",
        """params(use_short_name) as (select 0),
scope as (select *, demangled_name from trace_events where kind = 'kernel'),
items as (
  select case when p.use_short_name then s.name else coalesce(s.demangled_name, s.name) end
           as Name, s.dur as value
  from scope s, params p
)""",
        TIME_COLUMNS),
    "cuda_gpu_mem_size_sum": (
        """-- cuda_gpu_mem_size_sum: NVIDIA's `nsys stats --report cuda_gpu_mem_size_sum` as SQL: GPU memory operations (memcpy
-- by copy kind, memset) by operation, their sizes summed, in decimal MB (1 MB = 10^6 bytes) as NVIDIA reports them.""",
        f"""{MEMORY_SCOPE},
items as (
  select {MEMORY_OPERATION} as Name,
         size_bytes as value
  from scope
)""",
        SIZE_COLUMNS),
    "cuda_gpu_mem_time_sum": (
        """-- cuda_gpu_mem_time_sum: NVIDIA's `nsys stats --report cuda_gpu_mem_time_sum` as SQL: GPU memory operations
-- (memcpy by copy kind, memset) by operation, e.g. [CUDA memcpy Host-to-Device], their durations summed.""",
        f"""{MEMORY_SCOPE},
items as (
  select {MEMORY_OPERATION} as Name,
         dur as value
  from scope
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
items as (select name as Name, dur as value from scope)""",
        TIME_COLUMNS),
}


# A statistic of NVIDIA's five (avg, median, min, max, sample std dev) over `value`, as columns named with `prefix`.
def five(value, prefix):
    return (f'round(avg({value}), 1) as "{prefix}Avg (ns)", round(nsystrace_median({value}), 1) as "{prefix}Med (ns)",\n'
            f'       min({value}) as "{prefix}Min (ns)", max({value}) as "{prefix}Max (ns)", '
            f'round(nsystrace_stddev({value}), 1) as "{prefix}StdDev (ns)"')


def range_statistics(span, range_time, prefix=""):
    """nvtx_gpu_proj_sum's statistics of a group of ranges: `span` its projected times, `range_time` the ranges'
    own, the others prefix + nvtx_kernel_ranges' column. Written once: the groups that print alike are grouped again
    from their ranges, with the same statistics."""
    return (f"sum({span}) as total, sum({range_time}) as range_time, count(*) as n,\n"
            f"         {five(span, 'Proj ')},\n"
            f"         sum({prefix}gpu_ops) as ops, round(avg({prefix}gpu_ops), 1) as avg_ops, "
            f"round(avg({prefix}depth), 1) as avg_depth,\n"
            f"         round(avg({prefix}children), 1) as avg_children")


def printed_range(prefix=""):
    """A row's "Range" and "Style" as NVIDIA prints them, from nvtx_kernel_ranges' domain, name and range_type (each
    written prefix + column). nvtx_gpu_proj_sum prints its ranges and its groups with it: the groups are grouped again
    where they print alike, so both must print the same way."""
    return (f"coalesce({prefix}domain, '') || ':' || {prefix}name as \"Range\",\n"
            f"         case {prefix}range_type when 'push/pop' then 'PushPop' else 'StartEnd' end as \"Style\"")


# Reports whose rows are not one statistic of one value per name: their whole query. No export carries NVIDIA's
# own results for these two (the --stats tables of 2020 predate them), so the test checks them against independent
# references over the raw tables only (tests/sql/check_recipe_numbers.py).
OWN_QUERY = {
    "cuda_kern_exec_sum": (
        """-- cuda_kern_exec_sum: NVIDIA's `nsys stats --report cuda_kern_exec_sum` as SQL: kernels launched from the CPU,
-- by (process, thread, GPU, launch function, kernel), with four times per launch as NVIDIA defines them:
--   A (API)    the launch call's duration;
--   Q (queue)  from the call's end to the kernel's start, counted only when positive (QCount launches): a kernel can
--              start before its launch call returns;
--   K (kernel) the kernel's duration;
--   T (total)  from the call's start to the later of the call's end and the kernel's end.
-- Kernels are tied to their launch call by correlation id within their process (global_pid); a kernel without a
-- call in the profile (graph or device-side launches) is not counted. When an export records two API rows for one
-- launch (cudaLaunchKernel and cudaLaunchKernel_v7000, about 2022), the launch is counted once, with the earlier call.
-- Kernel names as cuda_gpu_kern_sum: demangled (trace_events' hidden column demangled_name; use_short_name = 1:
-- the short name). Ordered by total time.""",
        f"""with params(use_short_name) as (select 0),
scope as (select *, demangled_name, call_ts, call_dur, call_name, call_pid, call_tid
          from trace_events where kind = 'kernel'),
-- Each kernel with its launch call: trace_events' call_* columns, the call of its correlation id in its process
-- (global_pid); when an export has two rows for one launch, the earliest (the longest at equal starts, then by name,
-- then the first stored).
items as materialized (
  select k.call_pid as pid, k.call_tid as tid, k.device_id, k.call_name as api,
         case when p.use_short_name then k.name else coalesce(k.demangled_name, k.name) end as kernel,
         max(k.call_ts + k.call_dur, k.ts + k.dur) - k.call_ts as t, k.call_dur as a,
         case when k.ts > k.call_ts + k.call_dur then k.ts - (k.call_ts + k.call_dur) end as q, k.dur as kd
  from scope k, params p
  where k.call_ts is not null
)
select pid as "PID", tid as "TID", device_id as "DevId", count(*) as "Count", count(q) as "QCount",
       {five("t", "T")},
       {five("a", "A")},
       {five("q", "Q")},
       {five("kd", "K")},
       api as "API Name", kernel as "Kernel Name"
from items
group by pid, tid, device_id, api, kernel
order by sum(t) desc, "Kernel Name", "PID", "TID", "DevId", "API Name";"""),
    "nvtx_sum": (
        """-- nvtx_sum: NVIDIA's `nsys stats --report nvtx_sum` as SQL: NVTX push/pop and start/end ranges by name, as
-- "domain:name" in a non-default domain (domains are numbered per process: each range is named by its own process's
-- domain), their durations summed (marks have no duration and are left out). A range never closed ends, as in
-- NVIDIA's report, at the report's last NVTX timestamp: trace_events' hidden column `nsys_dur` (trace_events draws
-- it to the end of the profile, and args say "last_nvtx_ts"). The domain is the hidden column `domain` (args'
-- "domain"). Both are named in the scope since `*` leaves hidden columns out; neither builds the args.
-- Grouped first by (name, domain), columns, so that the scan reads each table as stored rather than in time order
-- (SQLite sorts the rows for the GROUP BY either way): a third less time on a large profile.""",
        f"""with scope as not materialized (  -- read twice, a view both times
  select *, domain, nsys_dur from trace_events where kind = 'nvtx' and dur is not null
),
by_name_and_domain_keys as materialized (
  select name, domain,
         {aggregates("nsys_dur")}
  from scope group by name, domain
),
by_name_and_domain as (select coalesce(domain || ':', '') || name as label, * from by_name_and_domain_keys),
-- Two of them can print as one "domain:name" (a domain "a:b" with a range "c", and a domain "a" with a range "b:c"):
-- those are grouped again from their ranges, which the scan reads by name (none when no two print alike). (A NULL
-- label, which trace_events never gives, is kept out: NOT IN a set holding NULL would drop every row.)
printed_alike as materialized (
  select label from by_name_and_domain where label is not null group by label having count(*) > 1
),
stats as materialized (
  select label as Name, n, total, lo, hi, mean, med, sd from by_name_and_domain where label not in printed_alike
  union all
  select coalesce(domain || ':', '') || name as label,
         {aggregates("nsys_dur")}
  from scope
  where name in (select name from by_name_and_domain where label in printed_alike) and label in printed_alike
  group by label
)
{TIME_COLUMNS}"""),
    "nvtx_gpu_proj_sum": (
        """-- nvtx_gpu_proj_sum: NVIDIA's `nsys stats --report nvtx_gpu_proj_sum` as SQL: NVTX ranges projected onto the GPU
-- (nvtx_kernel_ranges, NVIDIA's definition), by "domain:name" (":name" in the default domain, as NVIDIA prints it)
-- and style. "Proj" time is NVIDIA's projected time: the span from the range's first GPU start to its last GPU end
-- (gpu_span), idle gaps included; nvtx_kernel_ranges.gpu_busy_time has the time the GPU was busy with it. Range
-- Lvl is the nesting depth (0 outermost); Num Child counts the range's children that have GPU work. Graph launches
-- traced per graph count as GPU operations here, which NVIDIA's report leaves out.""",
        f"""with scope as not materialized (select * from nvtx_kernel_ranges),  -- read twice, a view both times
-- children: the rows whose parent is this range (counted in the extension: no self-join)
items as (
  select {printed_range("s.")},
         s.gpu_span as value, s."end" - s.start as range_time, s.gpu_ops, s.depth, s.children
  from scope s
),
-- The rows of each (domain, name, range type), handed over grouped by the extension (no sort of the ranges). Two of
-- them can print as one "domain:name" (a domain "a:b" with a range "c", and a domain "a" with a range "b:c"): those
-- are grouped again from their ranges below.
-- (The keys are selected as they are: an expression of them would be computed for every range, not every group.)
by_domain_and_name_keys as materialized (
  select s.domain, s.name, s.range_type,
         {range_statistics("s.gpu_span", 's."end" - s.start', "s.")}
  from scope s
  group by s.domain, s.name, s.range_type
),
by_domain_and_name as (
  select {printed_range()}, *
  from by_domain_and_name_keys
),
printed_alike as materialized (
  select "Range", "Style" from by_domain_and_name group by "Range", "Style" having count(*) > 1
)
select "Range", "Style", total as "Total Proj Time (ns)", range_time as "Total Range Time (ns)",
       n as "Range Instances", "Proj Avg (ns)", "Proj Med (ns)", "Proj Min (ns)", "Proj Max (ns)",
       "Proj StdDev (ns)", ops as "Total GPU Ops", avg_ops as "Avg GPU Ops", avg_depth as "Avg Range Lvl",
       avg_children as "Avg Num Child"
from by_domain_and_name
where ("Range", "Style") not in printed_alike
union all
select "Range", "Style",
         {range_statistics("value", "range_time")}
from items
where exists (select 1 from printed_alike) and ("Range", "Style") in printed_alike
group by "Range", "Style"
order by 3 desc, 1, 2;"""),
}


def report(name):
    if name in OWN_QUERY:
        header, query = OWN_QUERY[name]
        return f"{header}\n{COMMON.format(name=name)}\n{query}\n"
    header, items, columns = REPORTS[name]
    return f"{header}\n{COMMON.format(name=name)}\nwith {items},\n{STATISTICS}\n{columns}\n"


def main():
    check = sys.argv[1:] == ["--check"]
    stale = []
    for name in list(REPORTS) + list(OWN_QUERY):
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
