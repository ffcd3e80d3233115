-- Overlap of compute with communication, per GPU: how much NCCL kernel time ran while other (compute) kernels ran
-- on the same device. Communication = kernels whose name starts with 'nccl' (NCCL's device kernels).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/compute_comm_overlap.sql"
-- comm_ms: NCCL kernel time; overlapped_ms: the part of it hidden behind compute kernels; exposed_ms: the rest.
with k as (
  select device_id, ts as s, ts + dur as e, name like 'nccl%' as comm from trace_events where kind = 'kernel'
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
compute_busy as (select device_id, min(s) as s, max(e) as e from compute_grouped group by device_id, grp),
comm as (select row_number() over () as id, device_id, s, e from k where comm),
overlap as (
  select c.device_id, c.s, c.e,
         coalesce(sum(max(0, min(c.e, b.e) - max(c.s, b.s))), 0) as hidden
  from comm c left join compute_busy b on b.device_id = c.device_id and b.s < c.e and b.e > c.s
  group by c.id, c.device_id, c.s, c.e
)
select device_id,
       count(*) as nccl_kernels,
       round(sum(e - s) / 1e6, 3) as comm_ms,
       round(sum(hidden) / 1e6, 3) as overlapped_ms,
       round(sum(e - s - hidden) / 1e6, 3) as exposed_ms,
       round(100.0 * sum(hidden) / sum(e - s), 1) as overlapped_pct
from overlap
group by device_id
order by device_id;
