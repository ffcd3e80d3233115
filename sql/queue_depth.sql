-- Queue depth per stream over time: how many operations (kernels, memcpys, memsets) a stream held at once —
-- launched (their CUDA API call had started) and not finished — per bucket of bucket_ns (100 ms) from the first
-- launch: the deepest it got, and the mean over the bucket (time-weighted). A stream that stays at depth 0 or 1 while
-- its GPU idles is starved by the host; a deep queue means the host runs ahead. An operation with no recorded
-- launching call (a graph node, a report sliced after the launch) counts from its own start.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/queue_depth.sql"
-- Rows: (device, stream, bucket) for the buckets in which the stream held work.
with params(bucket_ns) as (select 100000000),
-- The launching calls read once (SQLite indexes them for the join): cheaper than a lookup per operation.
calls as materialized (
  select correlation_id, global_pid, ts from trace_events where kind = 'cuda_api' and correlation_id is not null
),
ops as materialized (
  select o.device_id, o.stream_id, min(o.ts, coalesce(a.ts, o.ts)) as queued, o.ts + o.dur as e
  from trace_events o left join calls a on a.correlation_id = o.correlation_id and a.global_pid = o.global_pid
  where o.kind in ('kernel', 'memcpy', 'memset')
),
origin as (select min(queued) as t0 from ops),
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
-- Segments of constant, non-zero depth, with the buckets they start and end in; the few that cross a bucket
-- boundary are split.
segments as (
  select device_id, stream_id, t as s, next_t as e, depth, o.t0, p.bucket_ns,
         (t - o.t0) / p.bucket_ns as k, (next_t - 1 - o.t0) / p.bucket_ns as last_k
  from depths, origin o, params p
  where next_t > t and depth > 0
),
split(device_id, stream_id, s, e, depth, t0, bucket_ns, k, last_k) as (
  select * from segments where k < last_k
  union all
  select device_id, stream_id, s, e, depth, t0, bucket_ns, k + 1, last_k from split where k < last_k
),
pieces as (
  select device_id, stream_id, k, depth, e - s as ns, bucket_ns from segments where k = last_k
  union all
  select device_id, stream_id, k, depth, min(e, t0 + (k + 1) * bucket_ns) - max(s, t0 + k * bucket_ns), bucket_ns
  from split
)
select device_id as device, stream_id as stream, k as bucket, (select t0 from origin) + k * bucket_ns as bucket_start_ns,
       max(depth) as max_depth, round(1.0 * sum(depth * ns) / bucket_ns, 2) as mean_depth
from pieces
group by device_id, stream_id, k
order by device, stream, bucket;
