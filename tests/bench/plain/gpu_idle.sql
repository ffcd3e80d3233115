-- Plain-SQL baseline of sql/gpu_idle.sql (see README.md): the same gaps, launches and syncs, over the raw tables.
with params(min_gap_ns) as (select 1000000),
work as (
  select k.deviceId as device_id, k.start as s, max(k."end", k.start) as e, coalesce(sn.value, dn.value) as name,
         k.globalPid as global_pid, k.correlationId as correlation_id
  from CUPTI_ACTIVITY_KIND_KERNEL k
  left join StringIds sn on sn.id = k.shortName left join StringIds dn on dn.id = k.demangledName
  where k.start is not null
  union all
  select deviceId, start, max("end", start), case copyKind when 1 then 'Memcpy HtoD' when 2 then 'Memcpy DtoH' when 3 then 'Memcpy HtoA' when 4 then 'Memcpy AtoH' when 5 then 'Memcpy AtoA' when 6 then 'Memcpy AtoD' when 7 then 'Memcpy DtoA' when 8 then 'Memcpy DtoD' when 9 then 'Memcpy HtoH' when 10 then 'Memcpy PtoP' when 11 then 'Memcpy UVM HtoD' when 12 then 'Memcpy UVM DtoH' when 13 then 'Memcpy UVM DtoD' else 'Memcpy' end, globalPid, correlationId
  from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
  union all
  select deviceId, start, max("end", start), 'Memset', globalPid, correlationId
  from CUPTI_ACTIVITY_KIND_MEMSET where start is not null
),
ordered as (
  select device_id, s, e, name, global_pid, correlation_id,
         max(e) over (partition by device_id order by s, e, name rows between unbounded preceding and 1 preceding)
           as covered
  from work
),
-- The operations that start after every earlier one ended, gap_ns after the last end.
gaps as materialized (
  select o.device_id, o.covered as gap_start, o.s as gap_end, o.name as next_op, o.global_pid, o.correlation_id
  from ordered o, params p
  where o.s - o.covered > p.min_gap_ns
),
launches as materialized (
  select g.device_id, g.gap_start, a.ts as launch_ts, a.name as launch_call, a.global_tid
  from gaps g
  join (select r.start as ts, n.value as name, r.globalTid as global_tid, r.correlationId, r.globalTid >> 24 as process
        from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds n on n.id = r.nameId) a
    on a.correlationId = g.correlation_id and a.process = g.global_pid >> 24
),
-- The CPU side of each synchronization: its API call (the sync row carries the call's correlation id).
sync_calls as materialized (
  select a.globalTid as global_tid, max(a."end", a.start) as sync_end
  from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y join CUPTI_ACTIVITY_KIND_RUNTIME a
    on a.correlationId = y.correlationId and a.globalTid >> 24 = y.globalPid >> 24
  where y.start is not null
),
-- For each launch after a gap, the end of the last synchronization of its thread that ended before the launch:
-- one sort of the syncs and those launches per thread.
marks as (
  select global_tid, sync_end as t, 0 as is_launch, sync_end, null as device_id, null as gap_start from sync_calls
  union all
  select global_tid, launch_ts, 1, null, device_id, gap_start from launches
),
last_sync as (
  select device_id, gap_start, is_launch,
         max(sync_end) over (partition by global_tid order by t, is_launch rows unbounded preceding) as last_sync_end
  from marks
),
classified as (
  select g.device_id, g.gap_start, g.gap_end, g.gap_end - g.gap_start as gap_ns, g.next_op, l.launch_call,
         l.launch_ts,
         case when l.launch_ts is null or l.launch_ts < g.gap_start then 'other'
              when ls.last_sync_end >= g.gap_start then 'sync'
              else 'host' end as cause
  from gaps g
  left join launches l on l.device_id = g.device_id and l.gap_start = g.gap_start
  left join last_sync ls on ls.is_launch and ls.device_id = g.device_id and ls.gap_start = g.gap_start
)
select device_id as device, gap_start as gap_start_ns, gap_end as gap_end_ns, gap_ns, cause, next_op, launch_call,
       launch_ts as launch_ns,
       count(*) over (partition by device_id, cause) as cause_gaps,
       -- in halves: a damaged export's gaps can sum past 2^63 - 1 ns (the total then reads as a REAL, not an error)
       sum(gap_ns / 2) over (partition by device_id, cause) * 2 + sum(gap_ns % 2) over (partition by device_id, cause)
         as cause_idle_ns
from classified
order by device, gap_start;
