-- cuda_gpu_kern_sum: NVIDIA's `nsys stats --report cuda_gpu_kern_sum` as SQL: GPU kernels by name, their
-- durations summed. Named as NVIDIA's report names them: the demangled name (use_short_name = 1: the short name, as
-- `cuda_gpu_kern_sum:base` does). The demangled name is trace_events' hidden column `demangled_name` (args'
-- "demangled_name", read without building the args; named in the scope since `*` leaves hidden columns out).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/cuda_gpu_kern_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with params(use_short_name) as (select 0),
scope as (select *, demangled_name from trace_events where kind = 'kernel'),
items as (
  select case when p.use_short_name then s.name else coalesce(s.demangled_name, s.name) end
           as Name, s.dur as value
  from scope s, params p
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
