-- GPU busy fraction per device over time buckets: the share of each bucket during which at least one kernel,
-- memcpy or memset ran on the device (overlapping work on several streams counted once). Buckets run over the span
-- the profile holds GPU work in: from the start of the first GPU operation of any device to the end of the last,
-- every one of them for every device (idle buckets inside that span show 0). Not from time 0: a profile sliced out
-- of a longer run (nsys --capture-range, a time window) would show every bucket before its first event as idle.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_busy.sql"
-- Bucket size: 100 ms (change bucket_ns below), widened when the span would need more than max_buckets (100,000:
-- 2.8 hours at 100 ms) to span / max_buckets rounded up, so that no span (a damaged export's GPU work at both ends of
-- the int64 range) makes buckets without bound; bucket_start_ns shows the width used. Bucket arithmetic is exact on
-- the whole int64 range (no difference of two timestamps is taken before the division).
-- How: each GPU's busy time per bucket is one nsystrace_concurrency call over its operations (the union of its
-- operations cut into the buckets, in the extension: one sort), where SQL needs a window over the operations in start
-- order and a recursive split of each busy island into buckets (this file's earlier form: 3.7 s on the 200x profile).
with params(bucket_ns, max_buckets) as (select 100000000, 100000),
work as (
  select device_id, ts as s, ts + dur as e from trace_events where kind in ('kernel', 'memcpy', 'memset')
),
origin as (select min(s) as t0, max(e) as t_end from work),
width as (
  select o.t0, case when (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) < p.bucket_ns then p.bucket_ns
                    else (o.t_end / p.max_buckets - (o.t_end % p.max_buckets < 0))
                         - (o.t0 / p.max_buckets - (o.t0 % p.max_buckets < 0)) + 1 end as bucket_ns,
         -- the span may not fit in 64 bits: only then the exact form below, slower, is needed
         not (o.t0 >= 0 or o.t_end <= 0 or (o.t_end < 4611686018427387904 and o.t0 > -4611686018427387904)) as wide
  from origin o, params p
),
-- Per GPU, in one pass: its busy time per bucket ([k, bucket_start_ns, max_depth, depth_ns, busy_ns] for each bucket
-- in which it was busy), its last end, and the last end of an operation of positive length.
devices as materialized (
  select o.device_id, max(o.e) as last_e, max(case when o.e > o.s then o.e end) as last_positive_e,
         nsystrace_concurrency(o.s, o.e, w.t0, w.bucket_ns) as buckets
  from work o, width w
  group by o.device_id
),
-- The last bucket any GPU's work touches: the one before the bucket of its last end when an operation ends there (an
-- operation ending on a bucket's start is not in that bucket), the one its last end lies in when only operations of
-- no length end there.
last as (
  select max(case when not w.wide then (t - w.t0) / w.bucket_ns
                  else (t / w.bucket_ns - (t % w.bucket_ns < 0)) - (w.t0 / w.bucket_ns - (w.t0 % w.bucket_ns < 0))
                       - ((t % w.bucket_ns + (t % w.bucket_ns < 0) * w.bucket_ns)
                          < (w.t0 % w.bucket_ns + (w.t0 % w.bucket_ns < 0) * w.bucket_ns)) end) as bucket
  from (select case when last_positive_e = last_e then last_e - 1 else last_e end as t from devices), width w
),
busy_per_bucket as (
  select d.device_id, json_extract(k.value, '$[0]') as bucket, json_extract(k.value, '$[4]') as busy_ns
  from devices d, json_each(d.buckets) k
),
series(bucket, bucket_start_ns) as (
  select 0, t0 from width
  union all
  select series.bucket + 1, series.bucket_start_ns + w.bucket_ns from series, last, width w
  where series.bucket < last.bucket
)
select d.device_id,
       s.bucket,
       s.bucket_start_ns,
       round(coalesce(b.busy_ns, 0) * 100.0 / w.bucket_ns, 1) as busy_pct
from devices d cross join series s cross join width w
left join busy_per_bucket b on b.device_id = d.device_id and b.bucket = s.bucket
order by d.device_id, s.bucket;
