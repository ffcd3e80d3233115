-- cuda_gpu_mem_time_sum: NVIDIA's `nsys stats --report cuda_gpu_mem_time_sum` as SQL: GPU memory operations
-- (memcpy by copy kind, memset) by operation, e.g. [CUDA memcpy Host-to-Device], their durations summed.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/cuda_gpu_mem_time_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with scope as (select *, copy_kind, size_bytes from trace_events where kind in ('memcpy', 'memset')),
items as (
  select case when kind = 'memset' then '[CUDA memset]'
              else '[CUDA memcpy ' || coalesce(copy_kind, 'Unknown') || ']' end as Name,
         dur as value
  from scope
),
stats as materialized (
  select Name, count(*) as n, sum(value) as total, min(value) as lo, max(value) as hi, avg(value) as mean,
         nsystrace_median(value) as med, nsystrace_stddev(value) as sd
  from items group by Name
)
select round(100.0 * s.total / sum(s.total) over (), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)",
       round(s.sd, 1) as "StdDev (ns)", s.Name as "Name"
from stats s
order by s.total desc, s.Name;
