-- cuda_api_sum: NVIDIA's `nsys stats --report cuda_api_sum` as SQL: CUDA runtime and driver API calls by name,
-- their durations summed. Grouped by the name nsys records and shown as NVIDIA shows it, without a version suffix of
-- '_v' and four characters (cudaLaunchKernel_v7000 -> cudaLaunchKernel; cuMemAlloc_v2 stays).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/cuda_api_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with scope as (select * from trace_events where kind = 'cuda_api'),
items as (select name as Name, dur as value from scope),
stats as materialized (
  select Name, count(*) as n, sum(value) as total, min(value) as lo, max(value) as hi, avg(value) as mean,
         nsystrace_median(value) as med, nsystrace_stddev(value) as sd
  from items group by Name
)
select round(100.0 * s.total / sum(s.total) over (), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)",
       round(s.sd, 1) as "StdDev (ns)", case substr(s.Name, -6, 2) when '_v' then substr(s.Name, 1, length(s.Name) - 6)
            else s.Name end as "Name"
from stats s
order by s.total desc, s.Name;
