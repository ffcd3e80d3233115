-- Why the GPU idles: every gap between GPU work on a device (kernels, memcpys, memsets; work on concurrent streams
-- counted once) longer than min_gap_ns, with its cause, judged from the operation that ended the gap (the first to
-- start after it) and the CUDA API call that launched it (same process and correlation id):
--   sync   the launch came after the GPU went idle, and the launching thread was in a CUDA synchronization
--          (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, ...: a 'sync' row) that ended
--          inside the gap: the host waited for the GPU to drain, then had nothing queued;
--   host   the launch came after the GPU went idle (no work was queued) and no synchronization explains it: the
--          host was late (Python, data loading, launch overhead);
--   other  the work was already queued when the GPU went idle (it waited on a dependency: an event, another
--          stream, another GPU), or no launching call is recorded.
-- Totals per (device, cause) over the gaps shown repeat on each row (cause_gaps, cause_idle_ns; integer ns, or a
-- REAL past 2^63 - 1 ns: only a damaged export's GPU work, at both ends of the int64 range, spans that long).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_idle.sql"
with params(min_gap_ns) as (select 1000000),
work as materialized (
  select device_id, ts as s, ts + dur as e, name, call_ts, call_name, call_global_tid, rowid as id from trace_events
  where kind in ('kernel', 'memcpy', 'memset')
),
-- The gaps in each GPU's work, by the extension's aggregate over intervals (one sort of integers; a window over the
-- operations in start order costs seconds on a million of them); each with the operation after it: the first in
-- (end, name) order of those that start then.
gaps as materialized (
  select d.device_id, json_extract(g.value, '$[0]') as gap_start, json_extract(g.value, '$[1]') as gap_end,
         o.name as next_op, o.call_ts, o.call_name, o.call_global_tid
  from (select device_id, nsystrace_gaps(s, e, p.min_gap_ns + 1) as gaps from work, params p group by device_id) d,
       json_each(d.gaps) g
  join work o on o.id = (select w.id from work w where w.device_id is d.device_id
                         and w.s = json_extract(g.value, '$[1]') order by w.e, w.name, w.id limit 1)
),
-- The call that launched it (trace_events' call_* columns: when an export records two, the earliest).
launches as materialized (
  select device_id, gap_start, call_ts as launch_ts, call_name as launch_call, call_global_tid as global_tid
  from gaps where call_ts is not null
),
-- The CPU side of each synchronization: its API call (the sync row carries the call's correlation id).
sync_calls as materialized (
  select call_global_tid as global_tid, call_ts + call_dur as sync_end
  from trace_events where kind = 'sync' and call_id is not null
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
