-- How busy was the GPU inside each NVTX range, and inside each kernel name's kernels: the time-weighted mean of
-- every nsys GPU metric (nsys --gpu-metrics-devices; gpu_metric rows, each value in the unit its name states:
-- docs/gpu-model.md) over
--   scope 'nvtx':   each NVTX range's GPU busy time on each GPU: the union of the intervals of the GPU work it
--                   launched (kernels, memcpys, memsets and graph launches whose CUDA API call lies inside the range
--                   on its thread, as nvtx_kernel_ranges.gpu_busy_time counts them), one row per range, GPU and metric;
--   scope 'kernel': each kernel name's kernels on each GPU: the union of their intervals.
-- A metric's sample holds its value from its time until the next sample of that metric; the last one holds no time.
-- Columns: scope, range_id (the range's nvtx_kernel_ranges rowid; NULL for kernels), name, device, metric,
--   busy_ns     the union's length on that GPU;
--   sampled_ns  the part of it some sample of the metric holds (the metric's first sample to its last);
--   mean        sum(value x the time it holds inside the union) / sampled_ns; NULL when sampled_ns is 0.
-- No rows for a profile without GPU metrics. Every number equals plain SQL over GPU_METRICS
-- (tests/sql/check_recipes.sh). The samples are swept once, in time order, with the union's ends: one sort of the
-- samples, whatever the number of ranges.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_metrics_busy.sql"
with
-- The GPU work each NVTX range launched, and each kernel, as (scope, range_id, name, device, start, end).
-- (Nothing to do for a profile without GPU metrics: the constant EXISTS is checked once, before any scan.)
ops as materialized (
  select device_id, ts, dur, call_global_tid, call_ts, call_dur from trace_events
  where kind in ('kernel', 'memcpy', 'memset', 'graph') and call_global_tid is not null
    and exists (select 1 from trace_events where kind = 'gpu_metric')
),
work(scope, range_id, name, device, s, e) as materialized (
  select 'nvtx', r.rowid, r.name, o.device_id, o.ts, o.ts + o.dur
  from nvtx_kernel_ranges r
  join ops o on o.call_global_tid = r.global_tid and o.call_ts >= r.start and o.call_ts + o.call_dur <= r."end"
  union all
  select 'kernel', null, name, device_id, ts, ts + dur from trace_events
  where kind = 'kernel' and exists (select 1 from trace_events where kind = 'gpu_metric')
),
-- Each union, as pieces [s, e): a piece starts where an interval starts after every earlier one has ended.
ordered as (
  select *, max(e) over (partition by scope, range_id, name, device order by s, e
                         rows between unbounded preceding and 1 preceding) as ended_before
  from work where e > s
),
numbered as (
  select *, sum(ended_before is null or s > ended_before) over (partition by scope, range_id, name, device
                                                                 order by s, e rows unbounded preceding) as piece
  from ordered
),
pieces as materialized (
  select row_number() over () as piece_id, scope, range_id, name, device, min(s) as s, max(e) as e
  from numbered group by scope, range_id, name, device, piece
),
-- The samples: each holds [t, t_next); `integral` is the sum of value x held time of the metric's earlier samples
-- (REAL: an integer sum could overflow on a long profile).
samples as materialized (
  select (pid - 25165824) & 255 as device, name as metric, ts as t, json_extract(args, '$.value') as v,
         lead(ts) over w as t_next, row_number() over w as seq
  from trace_events where kind = 'gpu_metric'
  window w as (partition by pid, name order by ts, rowid)
),
prefix as materialized (
  select *, coalesce(sum(v * 1.0 * (t_next - t)) over (partition by device, metric order by seq
                                                 rows between unbounded preceding and 1 preceding), 0.0) as integral
  from samples
),
metrics as (select device, metric, min(t) as t_first, max(t) as t_last from samples group by device, metric),
-- Every piece's two ends among its GPU's samples, in time order: the sample holding at an end is the latest one at
-- or before it (a sample at the very time of an end comes first).
ends as (
  select device, metric, t, seq, null as piece_id, null as side from prefix
  union all
  select m.device, m.metric, p.s, null, p.piece_id, 0 from pieces p join metrics m using (device)
  union all
  select m.device, m.metric, p.e, null, p.piece_id, 1 from pieces p join metrics m using (device)
),
located as (
  select *, max(seq) over (partition by device, metric order by t, seq is null rows unbounded preceding) as at_seq
  from ends
),
-- The integral of the metric from its first sample to each end: the earlier samples' share, and the holding
-- sample's value over the time from its start to the end (no more than it holds).
at_end as (
  select l.piece_id, l.side, l.device, l.metric,
         coalesce(p.integral + coalesce(p.v * 1.0 * (min(l.t, p.t_next) - p.t), 0), 0.0) as integral,
         min(max(l.t, m.t_first), m.t_last) as clipped
  from located l join metrics m using (device, metric)
  left join prefix p on p.device = l.device and p.metric = l.metric and p.seq = l.at_seq
  where l.piece_id is not null
),
-- A piece's share: the integral and the sampled time from its start to its end (one pass, no self-join).
per_piece as materialized (
  select piece_id, metric, sum(case side when 1 then integral else -integral end) as weighted,
         sum(case side when 1 then clipped else -clipped end) as sampled
  from at_end group by piece_id, metric
)
select p.scope, p.range_id, p.name, p.device, x.metric, sum(p.e - p.s) as busy_ns, sum(x.sampled) as sampled_ns,
       case when sum(x.sampled) > 0 then sum(x.weighted) / sum(x.sampled) end as mean
from pieces p join per_piece x using (piece_id)
group by p.scope, p.range_id, p.name, p.device, x.metric
order by p.scope desc, p.range_id, p.name, p.device, x.metric;
