-- Plain-SQL baseline of sql/nsys_stats/cuda_gpu_mem_size_sum.sql (see ../README.md): the median and the sample standard deviation
-- by window functions (plain SQL has no median).
with items as (
  select '[CUDA memcpy ' || coalesce(o.label, 'Unknown') || ']' as Name, bytes as value
  from CUPTI_ACTIVITY_KIND_MEMCPY m left join ENUM_CUDA_MEMCPY_OPER o on o.id = m.copyKind where m.start is not null
  union all
  select '[CUDA memset]', bytes from CUPTI_ACTIVITY_KIND_MEMSET where start is not null
),
ranked as (
  select Name, value, row_number() over (partition by Name order by value) as i, count(*) over (partition by Name) as cnt,
         avg(value) over (partition by Name) as mean
  from items
),
stats as materialized (
  select Name, count(*) as n, sum(value) as total, min(value) as lo, max(value) as hi, avg(value) as mean,
         avg(case when i in ((cnt + 1) / 2, (cnt + 2) / 2) then value end) as med,
         case when count(*) > 1 then sqrt(sum((value - mean) * (value - mean)) / (count(*) - 1)) else 0.0 end as sd
  from ranked group by Name
)
select round(s.total / 1e6, 3) as "Total (MB)", s.n as "Count", round(s.mean / 1e6, 3) as "Avg (MB)",
       round(s.med / 1e6, 3) as "Med (MB)", round(s.lo / 1e6, 3) as "Min (MB)", round(s.hi / 1e6, 3) as "Max (MB)",
       round(s.sd / 1e6, 3) as "StdDev (MB)", s.Name as "Operation"
from stats s order by s.total desc, s.Name;
