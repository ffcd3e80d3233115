-- GPU busy fraction per device over time buckets: the share of each bucket during which at least one kernel,
-- memcpy or memset ran on the device (overlapping work on several streams counted once). Buckets run over the span
-- the profile holds GPU work in: from the start of the first GPU operation of any device to the end of the last,
-- every one of them for every device (idle buckets inside that span show 0). Not from time 0: a profile sliced out
-- of a longer run (nsys --capture-range, a time window) would show every bucket before its first event as idle.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_busy.sql"
-- Bucket size: 100 ms (change bucket_ns below).
with params(bucket_ns) as (select 100000000),
work as (
  select device_id, ts as s, ts + dur as e from trace_events where kind in ('kernel', 'memcpy', 'memset')
),
-- Merge overlapping intervals per device: an interval starts a new group when it begins after every earlier end.
ordered as (
  select device_id, s, e,
         max(e) over (partition by device_id order by s, e rows between unbounded preceding and 1 preceding) as prev_end
  from work
),
grouped as (
  select device_id, s, e, sum(case when prev_end is null or s > prev_end then 1 else 0 end)
           over (partition by device_id order by s, e rows unbounded preceding) as grp
  from ordered
),
busy as (select device_id, min(s) as s, max(e) as e from grouped group by device_id, grp),
origin as (select min(s) as t0 from busy),
buckets as (
  select b.device_id, (b.s - o.t0) / p.bucket_ns as bucket, b.s, b.e, p.bucket_ns, o.t0 from busy b, origin o, params p
  union all
  select device_id, bucket + 1, s, e, bucket_ns, t0 from buckets where t0 + (bucket + 1) * bucket_ns < e
),
busy_per_bucket as (
  select device_id, bucket,
         sum(min(e, t0 + (bucket + 1) * bucket_ns) - max(s, t0 + bucket * bucket_ns)) as busy_ns
  from buckets group by device_id, bucket
),
last as (select max(bucket) as bucket from busy_per_bucket),
series(bucket) as (select 0 union all select series.bucket + 1 from series, last where series.bucket < last.bucket),
devices as (select distinct device_id from busy)
select d.device_id,
       s.bucket,
       o.t0 + s.bucket * p.bucket_ns as bucket_start_ns,
       round(coalesce(b.busy_ns, 0) * 100.0 / p.bucket_ns, 1) as busy_pct
from devices d cross join series s cross join origin o cross join params p
left join busy_per_bucket b on b.device_id = d.device_id and b.bucket = s.bucket
order by d.device_id, s.bucket;
