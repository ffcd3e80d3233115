-- nvtx_gpu_proj_sum: NVIDIA's `nsys stats --report nvtx_gpu_proj_sum` as SQL: NVTX ranges projected onto the GPU
-- (nvtx_kernel_ranges, NVIDIA's definition), by "domain:name" (":name" in the default domain, as NVIDIA prints it)
-- and style. "Proj" time is NVIDIA's projected time: the span from the range's first GPU start to its last GPU end
-- (gpu_span), idle gaps included; nvtx_kernel_ranges.gpu_busy_time has the time the GPU was busy with it. Range
-- Lvl is the nesting depth (0 outermost); Num Child counts the range's children that have GPU work. Graph launches
-- traced per graph count as GPU operations here, which NVIDIA's report leaves out.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/nvtx_gpu_proj_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with scope as not materialized (select * from nvtx_kernel_ranges),  -- read twice, a view both times
-- children: the rows whose parent is this range (counted in the extension: no self-join)
items as (
  select coalesce(s.domain, '') || ':' || s.name as "Range",
         case s.range_type when 'push/pop' then 'PushPop' else 'StartEnd' end as "Style",
         s.gpu_span as value, s."end" - s.start as range_time, s.gpu_ops, s.depth, s.children
  from scope s
),
-- The rows of each (domain, name, range type), handed over grouped by the extension (no sort of the ranges). Two of
-- them can print as one "domain:name" (a domain "a:b" with a range "c", and a domain "a" with a range "b:c"): those
-- are grouped again from their ranges below.
-- (The keys are selected as they are: an expression of them would be computed for every range, not every group.)
by_domain_and_name_keys as materialized (
  select s.domain, s.name, s.range_type,
         sum(s.gpu_span) as total, sum(s."end" - s.start) as range_time, count(*) as n,
         round(avg(s.gpu_span), 1) as "Proj Avg (ns)", round(nsystrace_median(s.gpu_span), 1) as "Proj Med (ns)",
       min(s.gpu_span) as "Proj Min (ns)", max(s.gpu_span) as "Proj Max (ns)", round(nsystrace_stddev(s.gpu_span), 1) as "Proj StdDev (ns)",
         sum(s.gpu_ops) as ops, round(avg(s.gpu_ops), 1) as avg_ops, round(avg(s.depth), 1) as avg_depth,
         round(avg(s.children), 1) as avg_children
  from scope s
  group by s.domain, s.name, s.range_type
),
by_domain_and_name as (
  select coalesce(domain, '') || ':' || name as "Range",
         case range_type when 'push/pop' then 'PushPop' else 'StartEnd' end as "Style", *
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
         sum(value) as total, sum(range_time) as range_time, count(*) as n,
         round(avg(value), 1) as "Proj Avg (ns)", round(nsystrace_median(value), 1) as "Proj Med (ns)",
       min(value) as "Proj Min (ns)", max(value) as "Proj Max (ns)", round(nsystrace_stddev(value), 1) as "Proj StdDev (ns)",
         sum(gpu_ops) as ops, round(avg(gpu_ops), 1) as avg_ops, round(avg(depth), 1) as avg_depth,
         round(avg(children), 1) as avg_children
from items
where exists (select 1 from printed_alike) and ("Range", "Style") in printed_alike
group by "Range", "Style"
order by 3 desc, 1, 2;
