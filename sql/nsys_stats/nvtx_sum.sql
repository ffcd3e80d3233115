-- nvtx_sum: NVIDIA's `nsys stats --report nvtx_sum` as SQL: NVTX push/pop and start/end ranges by name, as
-- "domain:name" in a non-default domain (domains are numbered per process: each range is named by its own process's
-- domain), their durations summed (marks have no duration and are left out). A range never closed ends, as in
-- NVIDIA's report, at the report's last NVTX timestamp: trace_events' hidden column `nsys_dur` (trace_events draws
-- it to the end of the profile, and args say "last_nvtx_ts"). The domain is the hidden column `domain` (args'
-- "domain"). Both are named in the scope since `*` leaves hidden columns out; neither builds the args.
-- Grouped first by (name, domain), columns, so that the scan reads each table as stored rather than in time order
-- (SQLite sorts the rows for the GROUP BY either way): a third less time on a large profile.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/nvtx_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with scope as not materialized (  -- read twice, a view both times
  select *, domain, nsys_dur from trace_events where kind = 'nvtx' and dur is not null
),
by_name_and_domain_keys as materialized (
  select name, domain,
         count(*) as n, sum(nsys_dur) as total, min(nsys_dur) as lo, max(nsys_dur) as hi, avg(nsys_dur) as mean,
         nsystrace_median(nsys_dur) as med, nsystrace_stddev(nsys_dur) as sd
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
         count(*) as n, sum(nsys_dur) as total, min(nsys_dur) as lo, max(nsys_dur) as hi, avg(nsys_dur) as mean,
         nsystrace_median(nsys_dur) as med, nsystrace_stddev(nsys_dur) as sd
  from scope
  where name in (select name from by_name_and_domain where label in printed_alike) and label in printed_alike
  group by label
)
select round(100.0 * s.total / sum(s.total) over (), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)",
       round(s.sd, 1) as "StdDev (ns)", s.Name as "Name"
from stats s
order by s.total desc, s.Name;
