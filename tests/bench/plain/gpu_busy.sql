-- Plain-SQL baseline of sql/gpu_busy.sql (see README.md): the same interval union, over the raw tables.
with params(bucket_ns) as (select 100000000),
work as (
  select deviceId as device_id, start as s, max("end", start) as e from CUPTI_ACTIVITY_KIND_KERNEL where start is not null
  union all
  select deviceId, start, max("end", start) from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
  union all
  select deviceId, start, max("end", start) from CUPTI_ACTIVITY_KIND_MEMSET where start is not null
),
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
origin as (select min(0, min(s)) as t0 from busy),
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
select d.device_id, s.bucket, o.t0 + s.bucket * p.bucket_ns as bucket_start_ns,
       round(coalesce(b.busy_ns, 0) * 100.0 / p.bucket_ns, 1) as busy_pct
from devices d cross join series s cross join origin o cross join params p
left join busy_per_bucket b on b.device_id = d.device_id and b.bucket = s.bucket
order by d.device_id, s.bucket;
