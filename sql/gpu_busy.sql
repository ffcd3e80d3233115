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
with params(bucket_ns, max_buckets) as (select 100000000, 100000),
work as (
  select device_id, ts as s, ts + dur as e from trace_events where kind in ('kernel', 'memcpy', 'memset')
),
-- The union of each device's work in one sort: in start order, each operation adds the part of it after every
-- earlier end (the running max); these pieces are disjoint and cover the union.
ordered as (
  select device_id, s, e,
         max(e) over (partition by device_id order by s, e rows between unbounded preceding and 1 preceding) as prev_end
  from work
),
busy as materialized (
  select device_id, max(s, coalesce(prev_end, s)) as s, e from ordered
  where prev_end is null or e > prev_end  -- (and each device's first operation, if it lasts 0 ns)
),
origin as (select min(s) as t0, max(e) as t_end from busy),
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
-- k = floor((s - t0) / w) from floor quotients and remainders, and the bucket's start t0 + k * w in quarters:
-- exact where s - t0 or k * w does not fit in 64 bits.
first_bucket as (
  select b.device_id, b.s, b.e, w.bucket_ns, w.t0,
         case when not w.wide then (b.s - w.t0) / w.bucket_ns
              else (b.s / w.bucket_ns - (b.s % w.bucket_ns < 0)) - (w.t0 / w.bucket_ns - (w.t0 % w.bucket_ns < 0))
                   - ((b.s % w.bucket_ns + (b.s % w.bucket_ns < 0) * w.bucket_ns)
                      < (w.t0 % w.bucket_ns + (w.t0 % w.bucket_ns < 0) * w.bucket_ns)) end as bucket, w.wide
  from busy b, width w
),
-- The few pieces that cross a bucket boundary are split, one row per further bucket.
first_pieces as (
  select device_id, bucket, s, e, bucket_ns,
         case when not wide then t0 + bucket * bucket_ns
              else t0 + bucket / 4 * bucket_ns + bucket / 4 * bucket_ns + bucket / 4 * bucket_ns
                   + bucket / 4 * bucket_ns + bucket % 4 * bucket_ns end as lo
  from first_bucket
),
split as (
  select device_id, bucket + 1 as bucket, s, e, bucket_ns, lo + bucket_ns as lo from first_pieces
  where lo + bucket_ns < e
  union all
  select device_id, bucket + 1, s, e, bucket_ns, lo + bucket_ns from split where lo + bucket_ns < e
),
busy_per_bucket as (
  select device_id, bucket, sum(ns) as busy_ns from (
    select device_id, bucket, min(e, lo + bucket_ns) - s as ns from first_pieces
    union all
    select device_id, bucket, min(e, lo + bucket_ns) - lo from split)
  group by device_id, bucket
),
last as (select max(bucket) as bucket from busy_per_bucket),
series(bucket, bucket_start_ns) as (
  select 0, t0 from width
  union all
  select series.bucket + 1, series.bucket_start_ns + w.bucket_ns from series, last, width w
  where series.bucket < last.bucket
),
devices as (select distinct device_id from busy)
select d.device_id,
       s.bucket,
       s.bucket_start_ns,
       round(coalesce(b.busy_ns, 0) * 100.0 / w.bucket_ns, 1) as busy_pct
from devices d cross join series s cross join width w
left join busy_per_bucket b on b.device_id = d.device_id and b.bucket = s.bucket
order by d.device_id, s.bucket;
