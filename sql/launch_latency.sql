-- CUDA API calls with the longest launch-to-GPU-start latency: time from the API call's start to the start of the
-- GPU work it launched (matched on process and correlation id), i.e. how long work waited in the stream's queue.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/launch_latency.sql"
-- work, device_id, stream_id: the launch's first GPU operation (a graph launched per node has several).
with api as (
  select global_tid >> 24 as process, correlation_id, name, ts, pid, tid from trace_events
  where kind = 'cuda_api' and correlation_id is not null
),
ops as (
  select global_tid >> 24 as process, correlation_id, ts as gpu_start, name as work, device_id, stream_id,
         row_number() over (partition by global_tid >> 24, correlation_id order by ts, name) as nth
  from trace_events where kind in ('kernel', 'memcpy', 'memset') and correlation_id is not null
),
gpu as (select * from ops where nth = 1)
select api.name as api_call, gpu.work, api.pid, api.tid, gpu.device_id, gpu.stream_id, api.ts as call_ns,
       round((gpu.gpu_start - api.ts) / 1e3, 1) as latency_us
from api join gpu on gpu.process = api.process and gpu.correlation_id = api.correlation_id
order by gpu.gpu_start - api.ts desc, api.ts, api.pid, api.tid
limit 20;
