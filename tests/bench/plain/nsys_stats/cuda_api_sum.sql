-- Plain-SQL baseline of sql/nsys_stats/cuda_api_sum.sql (see ../README.md): the median and the sample standard deviation
-- by window functions (plain SQL has no median).
with items as (
  select coalesce(n.value, '[unnamed CUDA API call]') as Name, coalesce(max(r."end" - r.start, 0), 0) as value
  from CUPTI_ACTIVITY_KIND_RUNTIME r left join StringIds n on n.id = r.nameId where r.start is not null
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
select round(100.0 * s.total / (select sum(total) from stats), 1) as "Time (%)",
       s.total as "Total Time (ns)", s.n as "Instances", round(s.mean, 1) as "Avg (ns)", round(s.med, 1) as "Med (ns)",
       s.lo as "Min (ns)", s.hi as "Max (ns)", round(s.sd, 1) as "StdDev (ns)", case substr(s.Name, -6, 2) when '_v' then substr(s.Name, 1, length(s.Name) - 6) else s.Name end as "Name"
from stats s order by s.total desc, s.Name;
