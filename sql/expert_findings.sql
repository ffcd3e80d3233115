-- The Nsight Systems expert-system rules an export can answer (nsys analyze; NVIDIA's Analysis Guide, "Expert
-- Systems Analysis"), with NVIDIA's rule names and default thresholds, one row per finding:
--   cuda_memcpy_sync   a memcpy launched by a synchronous API (no "Async" in its name): the host waits for it.
--   cuda_memcpy_async  a memcpy launched by an asynchronous API from or to pageable host memory: the driver stages
--                      it, so it is synchronous after all (pin the host buffer: cudaHostAlloc / cudaHostRegister).
--   cuda_memset_sync   a memset launched by a synchronous API.
--   cuda_api_sync      a synchronization call that blocks the host until the GPU catches up (cudaDeviceSynchronize,
--                      cudaStreamSynchronize, cudaEventSynchronize, ...: the CUDA synchronization rows made by a
--                      *Synchronize call; exports without those rows, nsys 2020's, show none).
--   gpu_gaps           GPU starvation: a gap of at least gap_ns (NVIDIA's default: 500 ms) with no GPU work of a
--                      process on a device.
--   gpu_time_util      low utilization: the span from a process's first to last GPU operation on a device cut into
--                      chunks (NVIDIA's default: 30), each chunk whose utilization (the union of the process's GPU
--                      work on the device in it, concurrent work counted once) is under threshold_pct (default 50 %).
-- Columns: rule, device, pid, start_ns, duration_ns (the finding's interval: the GPU operation, the API call, the
-- gap or the chunk), name (the API call, or the operation after a gap), detail.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/expert_findings.sql"
with params(gap_ns, chunks, threshold_pct) as (select 500000000, 30, 50),
-- Memory operations and synchronizations with the API call that made them (trace_events' call_* columns: the call
-- of their correlation id in their process; when an export records two, the earliest).
mem_ops as materialized (
  select kind, device_id, ts, dur, name as op, size_bytes as bytes, src_kind, dst_kind, mem_kind, call_name as call, call_pid as pid,
         call_tid as tid, call_ts, call_dur
  from trace_events where kind in ('memcpy', 'memset', 'sync') and call_id is not null
),
memory_findings as (
  select case when kind = 'memset' then 'cuda_memset_sync'
              when instr(lower(call), 'async') = 0 then 'cuda_memcpy_sync' else 'cuda_memcpy_async' end as rule,
         device_id as device, pid, ts as start_ns, dur as duration_ns, call as name,
         op || ', ' || bytes || ' bytes, ' ||
           case when kind = 'memset' then coalesce(mem_kind, '?')
                else coalesce(src_kind, '?') || ' -> ' || coalesce(dst_kind, '?')
           end as detail
  from mem_ops
  where kind <> 'sync' and instr(lower(call), 'async') = 0
     or (kind = 'memcpy' and 'Pageable' in (src_kind, dst_kind))
),
-- A blocking synchronization: a sync row (what the call waited for) made by a *Synchronize call; not a stream's
-- wait on an event (cudaStreamWaitEvent: the GPU waits, not the host), nor cudaEventQuery (it polls, returns at
-- once). The finding is the call that blocked the host.
sync_findings as (
  select 'cuda_api_sync' as rule, device_id as device, pid, call_ts as start_ns, call_dur as duration_ns, call as name,
         op || ', thread ' || tid as detail
  from mem_ops
  where kind = 'sync' and op <> 'Stream wait sync' and instr(call, 'Synchronize') > 0
),
-- GPU work per (process, device). The gaps in it and its busy time per chunk come from aggregates over intervals
-- in the extension (nsystrace_gaps, nsystrace_concurrency: a sort of integers each), not from a window over the
-- operations in start order (seconds on a million of them).
gpu_ops as materialized (
  select global_pid, device_id, ts as s, ts + dur as e, name, rowid as id from trace_events
  where kind in ('kernel', 'memcpy', 'memset')
),
-- chunk_ns: (t1 - t0) / chunks, from the quotients and remainders of t0 and t1 (exact, where t1 - t0 may not fit
-- in int64 on a damaged export).
spans as materialized (
  select global_pid, device_id, t0, t1, chunks, gaps,
         max(1, (t1 / chunks - (t1 % chunks < 0)) - (t0 / chunks - (t0 % chunks < 0))
                - (t1 % chunks + chunks * (t1 % chunks < 0) < t0 % chunks + chunks * (t0 % chunks < 0))) as chunk_ns
  from (select global_pid, device_id, min(s) as t0, max(e) as t1, p.chunks, nsystrace_gaps(s, e, p.gap_ns) as gaps
        from gpu_ops, params p group by global_pid, device_id)
),
gap_findings as (
  select 'gpu_gaps' as rule, sp.device_id as device, (sp.global_pid >> 24) & 16777215 as pid,
         json_extract(g.value, '$[0]') as start_ns, json_extract(g.value, '$[1]') - json_extract(g.value, '$[0]') as duration_ns,
         -- the operation after the gap: the first of the process's on the device to start then
         (select o.name from gpu_ops o
          where o.global_pid = sp.global_pid and o.device_id is sp.device_id and o.s = json_extract(g.value, '$[1]')
          order by o.e, o.id limit 1) as name,
         'no GPU work of the process on the device for ' || (json_extract(g.value, '$[1]') - json_extract(g.value, '$[0]'))
           || ' ns' as detail
  from spans sp, json_each(sp.gaps) g
),
-- The busy time per chunk (chunk k: [t0 + k chunk_ns, t0 + (k + 1) chunk_ns), the last one to t1): the union of the
-- work in each bucket of chunk_ns from t0, the buckets past the last chunk added to it.
busy_chunks as (
  select global_pid, device_id, min(json_extract(b.value, '$[0]'), chunks - 1) as k, sum(json_extract(b.value, '$[4]')) as busy_ns
  from (select o.global_pid, o.device_id, sp.chunks, nsystrace_concurrency(o.s, o.e, sp.t0, sp.chunk_ns) as buckets
        from gpu_ops o join spans sp on sp.global_pid = o.global_pid and sp.device_id = o.device_id
        group by o.global_pid, o.device_id), json_each(buckets) b
  group by global_pid, device_id, k
),
all_chunks(global_pid, device_id, k, t0, t1, chunk_ns, chunks) as (
  select global_pid, device_id, 0, t0, t1, chunk_ns, chunks from spans
  union all
  select global_pid, device_id, k + 1, t0, t1, chunk_ns, chunks from all_chunks where k + 1 < chunks
),
util as (
  select c.global_pid, c.device_id, c.k, c.t0 + c.k * c.chunk_ns as start_ns,
         case when c.k = c.chunks - 1 then c.t1 else c.t0 + (c.k + 1) * c.chunk_ns end - (c.t0 + c.k * c.chunk_ns) as len,
         coalesce(b.busy_ns, 0) as busy_ns
  from all_chunks c left join busy_chunks b on b.global_pid = c.global_pid and b.device_id = c.device_id and b.k = c.k
),
util_findings as (
  select 'gpu_time_util' as rule, device_id as device, (global_pid >> 24) & 16777215 as pid, start_ns,
         len as duration_ns, null as name,
         'chunk ' || (k + 1) || ' of ' || p.chunks || ': ' || round(100.0 * busy_ns / len, 1) || ' % utilized' as detail
  from util, params p where len > 0 and 100.0 * busy_ns / len < p.threshold_pct
)
select * from memory_findings
union all select * from sync_findings
union all select * from gap_findings
union all select * from util_findings
order by rule, device, start_ns, name;
