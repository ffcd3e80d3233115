-- CUDA API calls with the longest launch-to-GPU-start latency: time from the API call's start to the start of the
-- GPU work it launched, i.e. how long work waited in the stream's queue. Each launch once: the call is
-- trace_events' call_* columns (the call of the work's correlation id in its process; when an export records two
-- calls for one launch, the earliest).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/launch_latency.sql"
-- work, device_id, stream_id: the launch's first GPU operation (by start, then name: a graph launched per node has
-- several).
with params(top_n) as (select 20),
-- Each launch's first GPU start.
launches as materialized (
  select call_id, call_ts, correlation_id, global_pid, min(ts) as gpu_start
  from trace_events where kind in ('kernel', 'memcpy', 'memset') and call_id is not null
  group by call_id
),
-- The top_n-th launch in the order shown, and every launch that sorts with or before it (ties included): only
-- those need their first operation named. (A negative top_n is SQL's "no limit": then every launch.)
cut as (
  select gpu_start - call_ts as latency, call_ts from launches
  where (select top_n from params) > 0
  order by 1 desc, 2 limit 1 offset (select top_n - 1 from params)
),
top as materialized (
  select l.* from launches l left join cut c
  where c.latency is null or l.gpu_start - l.call_ts > c.latency
     or (l.gpu_start - l.call_ts = c.latency and l.call_ts <= c.call_ts)
),
-- Their first operations, found through trace_events' correlation lookup.
named as (
  select t.gpu_start, o.call_name, o.call_pid, o.call_tid, o.call_ts, o.name as work, o.device_id, o.stream_id,
         row_number() over (partition by t.call_id order by o.name) as nth
  from top t join trace_events o
    on o.correlation_id = t.correlation_id and o.global_pid = t.global_pid
       and o.kind in ('kernel', 'memcpy', 'memset') and o.ts = t.gpu_start
)
select call_name as api_call, work, call_pid as pid, call_tid as tid, device_id, stream_id, call_ts as call_ns,
       round((gpu_start - call_ts) / 1e3, 1) as latency_us
from named where nth = 1
order by gpu_start - call_ts desc, call_ts, pid, tid
limit (select top_n from params);
