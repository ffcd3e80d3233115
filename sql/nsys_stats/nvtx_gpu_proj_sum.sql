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
with scope as (select * from nvtx_kernel_ranges),
-- children: the rows whose parent is this range (counted in the extension: no self-join)
items as materialized (
  select coalesce(s.domain, '') || ':' || s.name as "Range",
         case s.range_type when 'push/pop' then 'PushPop' else 'StartEnd' end as "Style",
         s.gpu_span as value, s."end" - s.start as range_time, s.gpu_ops, s.depth, s.children
  from scope s
)
select "Range", "Style", sum(value) as "Total Proj Time (ns)", sum(range_time) as "Total Range Time (ns)",
       count(*) as "Range Instances",
       round(avg(value), 1) as "Proj Avg (ns)", round(nsystrace_median(value), 1) as "Proj Med (ns)",
       min(value) as "Proj Min (ns)", max(value) as "Proj Max (ns)", round(nsystrace_stddev(value), 1) as "Proj StdDev (ns)",
       sum(gpu_ops) as "Total GPU Ops", round(avg(gpu_ops), 1) as "Avg GPU Ops", round(avg(depth), 1) as "Avg Range Lvl",
       round(avg(children), 1) as "Avg Num Child"
from items
group by "Range", "Style"
order by sum(value) desc, "Range", "Style";
