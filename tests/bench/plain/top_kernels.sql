-- Plain-SQL baseline of sql/top_kernels.sql (see README.md).
with k as materialized (
  select coalesce(sn.value, dn.value) as name, max(k."end" - k.start, 0) as dur
  from CUPTI_ACTIVITY_KIND_KERNEL k
  left join StringIds sn on sn.id = k.shortName
  left join StringIds dn on dn.id = k.demangledName
  where k.start is not null
)
select name, count(*) as launches, round(sum(dur) / 1e6, 3) as total_ms, round(avg(dur) / 1e3, 2) as mean_us,
       round(max(dur) / 1e3, 2) as max_us, round(100.0 * sum(dur) / (select sum(dur) from k), 1) as pct
from k group by name order by sum(dur) desc, name limit 20;
