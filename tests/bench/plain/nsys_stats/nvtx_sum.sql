-- Plain-SQL baseline of sql/nsys_stats/nvtx_sum.sql (see ../README.md): the median and the sample standard deviation
-- by window functions (plain SQL has no median).
with last(t) as (select max(max(start), coalesce(max("end"), max(start))) from NVTX_EVENTS),
domains as (  -- the last definition of a domain in its process
  select globalTid & ~16777215 as process, domainId, coalesce(text, (select value from StringIds where id = textId)) as name,
         max(rowid)
  from NVTX_EVENTS where eventType = 75 group by process, domainId
),
items as (
  select coalesce(d.name || ':', '') || coalesce(e.text, sn.value, '[unnamed NVTX range]') as Name,
         max(coalesce(e."end", last.t) - e.start, 0) as value
  from NVTX_EVENTS e cross join last
  left join StringIds sn on sn.id = e.textId
  left join domains d on d.process = coalesce(e.globalTid, 0) & ~16777215 and d.domainId = e.domainId and e.domainId <> 0
  where e.eventType in (59, 60, 70, 71) and e.start is not null
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
       s.lo as "Min (ns)", s.hi as "Max (ns)", round(s.sd, 1) as "StdDev (ns)", s.Name as "Name"
from stats s order by s.total desc, s.Name;
