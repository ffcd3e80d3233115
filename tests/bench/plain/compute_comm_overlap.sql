-- Plain-SQL baseline of sql/compute_comm_overlap.sql (see README.md): the same algorithm, over the raw tables.
with k as (
  select k.deviceId as device_id, k.start as s, max(k."end", k.start) as e, coalesce(sn.value, dn.value) like 'nccl%' as comm
  from CUPTI_ACTIVITY_KIND_KERNEL k
  left join StringIds sn on sn.id = k.shortName left join StringIds dn on dn.id = k.demangledName
  where k.start is not null
),
compute_ordered as (
  select device_id, s, e,
         max(e) over (partition by device_id order by s, e rows between unbounded preceding and 1 preceding) as prev_end
  from k where not comm
),
compute_grouped as (
  select device_id, s, e, sum(case when prev_end is null or s > prev_end then 1 else 0 end)
           over (partition by device_id order by s, e rows unbounded preceding) as grp
  from compute_ordered
),
islands as materialized (
  select device_id, s, e,
         coalesce(sum(e - s) over (partition by device_id order by s rows between unbounded preceding and 1 preceding),
                  0) as busy_before
  from (select device_id, min(s) as s, max(e) as e from compute_grouped group by device_id, grp)
),
comm as materialized (select row_number() over () as id, device_id, s, e from k where comm),
-- Each NCCL kernel's two ends (sign -1 at its start, +1 at its end), with the start of the last island that starts
-- at or before it (islands sort first at equal times).
ends as (
  select id, device_id, t, sign, is_end,
         max(island_s) over (partition by device_id order by t, is_end rows unbounded preceding) as island_s
  from (select id, device_id, s as t, -1 as sign, null as island_s, 1 as is_end from comm
        union all select id, device_id, e, 1, null, 1 from comm
        union all select null, device_id, s, 0, s, 0 from islands)
),
hidden as (
  select ends.id, sum(ends.sign * (b.busy_before + min(max(ends.t - b.s, 0), b.e - b.s))) as hidden
  from ends join islands b on b.device_id = ends.device_id and b.s = ends.island_s
  where ends.is_end
  group by ends.id
),
overlap as (select c.device_id, c.s, c.e, coalesce(h.hidden, 0) as hidden from comm c left join hidden h on h.id = c.id)
select device_id,
       count(*) as nccl_kernels,
       round(sum(e - s) / 1e6, 3) as comm_ms,
       round(sum(hidden) / 1e6, 3) as overlapped_ms,
       round(sum(e - s - hidden) / 1e6, 3) as exposed_ms,
       round(100.0 * sum(hidden) / sum(e - s), 1) as overlapped_pct
from overlap
group by device_id
order by device_id;
