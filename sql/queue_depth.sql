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
-- Each operation from the start of its launching call (trace_events' call_ts: the call of its correlation id in its
-- process; when an export records two calls for one launch, the earliest).
ops as materialized (
  select device_id, stream_id, min(ts, coalesce(call_ts, ts)) as queued, ts + dur as e
  from trace_events where kind in ('kernel', 'memcpy', 'memset')
),
origin as (select min(queued) as t0, max(e) as t_end from ops),
-- The bucket width: bucket_ns, or the span / max_buckets rounded up (computed from quotients: no overflow).
width as (
  select o.t0, case when (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) < p.bucket_ns then p.bucket_ns
                    else (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) + 1 end as bucket_ns
  from origin o, params p
),
-- The depth sweep per stream (+1 when an operation is queued, -1 when it ends) cut into the buckets from t0, in the
-- extension: [bucket, bucket_start_ns, max_depth, depth x ns summed over the bucket] for each bucket with work.
streams as (
  select o.device_id, o.stream_id, nsystrace_concurrency(o.queued, o.e, w.t0, w.bucket_ns) as buckets
  from ops o, width w
  group by o.device_id, o.stream_id
)
select s.device_id as device, s.stream_id as stream, json_extract(b.value, '$[0]') as bucket,
       json_extract(b.value, '$[1]') as bucket_start_ns, json_extract(b.value, '$[2]') as max_depth,
       round(1.0 * json_extract(b.value, '$[3]') / w.bucket_ns, 2) as mean_depth
from streams s, json_each(s.buckets) b, width w
order by device, stream, bucket;
