-- Overlap of compute with communication, per GPU: how much NCCL kernel time ran while other (compute) kernels ran
-- on the same device. Communication = kernels whose name starts with 'nccl' (NCCL's device kernels).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/compute_comm_overlap.sql"
-- comm_ms: NCCL kernel time; overlapped_ms: the part of it hidden behind compute kernels; exposed_ms: the rest.
-- How, in O(n log n) (sorts and window functions, no range join): the compute kernels of a GPU make disjoint busy
-- islands (their union); busy(t), the compute time before t, is the island sums before t's island plus the part of
-- that island before t; the part of an NCCL kernel [s, e] hidden behind compute is busy(e) - busy(s).
with k as (
  select device_id, ts as s, ts + dur as e, name like 'nccl%' as comm from trace_events where kind = 'kernel'
),
compute_ordered as (
  select device_id, s, e,
         max(e) over (partition by device_id order by s, e rows between unbounded preceding and 1 preceding) as prev_end
  from k where not comm
),
-- The islands: in start order, each compute kernel adds the part of it after every earlier end (disjoint pieces
-- that cover the union, from the one sort above), with the compute time before each.
islands as materialized (
  select device_id, s, e,
         coalesce(sum(e - s) over (partition by device_id order by s rows between unbounded preceding and 1 preceding),
                  0) as busy_before
  from (select device_id, max(s, coalesce(prev_end, s)) as s, e from compute_ordered
        where e > max(s, coalesce(prev_end, s)))
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
