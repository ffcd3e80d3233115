-- nvtx_sum: NVIDIA's `nsys stats --report nvtx_sum` as SQL: NVTX push/pop and start/end ranges by name, as
-- "domain:name" in a non-default domain (domains are numbered per process: each range is named by its own process's
-- domain), their durations summed (marks have no duration and are left out). A range never closed ends, as in
-- NVIDIA's report, at the report's last NVTX timestamp: trace_events' hidden column `nsys_dur` (trace_events draws
-- it to the end of the profile, and args say "last_nvtx_ts"). The domain is the hidden column `domain` (args'
-- "domain"). Both are named in the scope since `*` leaves hidden columns out; neither builds the args.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/nvtx_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with scope as (select *, domain, nsys_dur from trace_events where kind = 'nvtx' and dur is not null),
items as (
  select coalesce(domain || ':', '') || name as Name, nsys_dur as value
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
