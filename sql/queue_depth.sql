-- Queue depth per stream over time: how many operations (kernels, memcpys, memsets) a stream held at once —
-- launched (their CUDA API call had started) and not finished — per bucket of bucket_ns (100 ms) from the first
-- launch: the deepest it got, and the mean over the bucket (time-weighted). A stream that stays at depth 0 or 1 while
-- its GPU idles is starved by the host; a deep queue means the host runs ahead. An operation with no recorded
-- launching call (a graph node, a report sliced after the launch) counts from its own start.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/queue_depth.sql"
-- Rows: (device, stream, bucket) for the buckets in which the stream held work. The bucket widens, as in
-- gpu_busy.sql, when the span would need more than max_buckets (100,000) buckets: to span / max_buckets rounded up
-- (bucket_start_ns shows it), with exact bucket arithmetic on the whole int64 range.
with params(bucket_ns, max_buckets) as (select 100000000, 100000),
-- The launching calls read once (SQLite indexes them for the join): cheaper than a lookup per operation.
calls as materialized (
  select correlation_id, global_pid, ts from trace_events where kind = 'cuda_api' and correlation_id is not null
),
ops as materialized (
  select o.device_id, o.stream_id, min(o.ts, coalesce(a.ts, o.ts)) as queued, o.ts + o.dur as e
  from trace_events o left join calls a on a.correlation_id = o.correlation_id and a.global_pid = o.global_pid
  where o.kind in ('kernel', 'memcpy', 'memset')
),
origin as (select min(queued) as t0, max(e) as t_end from ops),
-- The bucket width: bucket_ns, or the span / max_buckets rounded up (computed from quotients: no overflow).
width as (
  select o.t0, case when (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) < p.bucket_ns then p.bucket_ns
                    else (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) + 1 end as bucket_ns,
         -- the span may not fit in 64 bits: only then the exact forms below, slower, are needed
         not (o.t0 >= 0 or o.t_end <= 0 or (o.t_end < 4611686018427387904 and o.t0 > -4611686018427387904)) as wide
  from origin o, params p
),
-- +1 when an operation is queued, -1 when it ends (ends first at equal times): the depth after each event holds
-- until the next event of the stream.
events as (
  select device_id, stream_id, queued as t, 1 as d from ops
  union all select device_id, stream_id, e, -1 from ops
),
depths as (
  select device_id, stream_id, t, sum(d) over w as depth, lead(t) over w as next_t
  from events
  window w as (partition by device_id, stream_id order by t, d rows unbounded preceding)
),
-- Segments of constant, non-zero depth, with the buckets they start and end in (k = floor((t - t0) / w); on a span
-- past 64 bits, from floor quotients and remainders); the few that cross a bucket boundary are split.
segments as (
  select device_id, stream_id, t as s, next_t as e, depth, w.t0, w.bucket_ns, w.wide,
         case when not w.wide then (t - w.t0) / w.bucket_ns
              else (t / w.bucket_ns - (t % w.bucket_ns < 0)) - (w.t0 / w.bucket_ns - (w.t0 % w.bucket_ns < 0))
                   - ((t % w.bucket_ns + (t % w.bucket_ns < 0) * w.bucket_ns)
                      < (w.t0 % w.bucket_ns + (w.t0 % w.bucket_ns < 0) * w.bucket_ns)) end as k,
         case when not w.wide then ((next_t - 1) - w.t0) / w.bucket_ns
              else ((next_t - 1) / w.bucket_ns - ((next_t - 1) % w.bucket_ns < 0)) - (w.t0 / w.bucket_ns - (w.t0 % w.bucket_ns < 0))
                   - (((next_t - 1) % w.bucket_ns + ((next_t - 1) % w.bucket_ns < 0) * w.bucket_ns)
                      < (w.t0 % w.bucket_ns + (w.t0 % w.bucket_ns < 0) * w.bucket_ns)) end as last_k
  from depths, width w
  where next_t > t and depth > 0
),
-- A bucket's start t0 + k * w (in quarters on a span past 64 bits: k * w may not fit).
split(device_id, stream_id, s, e, depth, bucket_ns, k, last_k, lo) as (
  select device_id, stream_id, s, e, depth, bucket_ns, k, last_k,
         case when not wide then t0 + k * bucket_ns
              else t0 + k / 4 * bucket_ns + k / 4 * bucket_ns + k / 4 * bucket_ns + k / 4 * bucket_ns
                   + k % 4 * bucket_ns end
  from segments where k < last_k
  union all
  select device_id, stream_id, s, e, depth, bucket_ns, k + 1, last_k, lo + bucket_ns from split where k < last_k
),
pieces as (
  select device_id, stream_id, k, depth, e - s as ns, bucket_ns from segments where k = last_k
  union all
  select device_id, stream_id, k, depth, min(e, lo + bucket_ns) - max(s, lo), bucket_ns from split
)
select device_id as device, stream_id as stream, k as bucket,
       case when not w.wide then w.t0 + k * w.bucket_ns
            else w.t0 + k / 4 * w.bucket_ns + k / 4 * w.bucket_ns + k / 4 * w.bucket_ns + k / 4 * w.bucket_ns
                 + k % 4 * w.bucket_ns end as bucket_start_ns,
       max(depth) as max_depth, round(1.0 * sum(depth * ns) / w.bucket_ns, 2) as mean_depth
from pieces, width w
group by device_id, stream_id, k
order by device, stream, bucket;
