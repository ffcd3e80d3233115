-- Plain-SQL baseline of sql/gpu_idle_cpu.sql (see README.md): the same algorithm, over the raw tables (samples:
-- COMPOSITE_EVENTS, the innermost frame of SAMPLING_CALLCHAINS).
with params(min_gap_ns, top_gaps, top_functions) as (select 1000000, 10, 5),
work as materialized (
  select deviceId as device_id, start as s, max("end", start) as e from CUPTI_ACTIVITY_KIND_KERNEL where start is not null
  union all
  select deviceId, start, max("end", start) from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
  union all
  select deviceId, start, max("end", start) from CUPTI_ACTIVITY_KIND_MEMSET where start is not null
),
-- Busy intervals per device: an interval starts a new one when it begins after every earlier end.
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
gaps as materialized (
  select device_id, gap_start, gap_end, row_number() over (partition by device_id order by gap_start) as gap
  from (select device_id, e as gap_start, lead(s) over (partition by device_id order by s) as gap_end from busy), params
  where gap_end - gap_start > min_gap_ns
),
-- The threads that launch each device's work: CUDA API calls and GPU work share a correlation id within a process.
calls as materialized (
  select correlationId as correlation_id, globalTid >> 24 as process, globalTid as global_tid
  from CUPTI_ACTIVITY_KIND_RUNTIME where correlationId is not null and start is not null
),
gpu_ops as materialized (
  select distinct deviceId as device_id, correlationId as correlation_id, globalPid >> 24 as process
  from (select deviceId, correlationId, globalPid from CUPTI_ACTIVITY_KIND_KERNEL where start is not null
        union all select deviceId, correlationId, globalPid from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
        union all select deviceId, correlationId, globalPid from CUPTI_ACTIVITY_KIND_MEMSET where start is not null)
  where correlationId is not null
),
launchers as materialized (
  select distinct o.device_id, c.global_tid from gpu_ops o join calls c
    on c.correlation_id = o.correlation_id and c.process = o.process
),
samples as materialized (
  select l.device_id, s.start as ts, coalesce(sy.value, '[no stack]') as function,
         coalesce(tn.value, 'Thread ' || (s.globalTid & 16777215)) || ' (samples)' as thread_name
  from COMPOSITE_EVENTS s join launchers l on l.global_tid = s.globalTid
  left join SAMPLING_CALLCHAINS f on f.id = s.id and f.stackDepth = 0
  left join StringIds sy on sy.id = f.symbol
  left join (select globalTid, nameId from ThreadNames group by globalTid having priority = max(priority)) t
    on t.globalTid = s.globalTid
  left join StringIds tn on tn.id = t.nameId
  where s.start is not null
),
-- Each sample in the gap that began last before it (gaps of a device do not overlap): one sort, no range join.
marks as (
  select device_id, gap_start as ts, 0 as is_sample, gap, null as function, null as thread_name from gaps
  union all
  select device_id, ts, 1, null, function, thread_name from samples
),
placed as (
  select device_id, ts, is_sample, function, thread_name,
         max(gap) over (partition by device_id order by ts, is_sample rows unbounded preceding) as gap
  from marks
),
in_gaps as (
  select g.device_id, g.gap, g.gap_start, g.gap_end, p.function,
         substr(p.thread_name, 1, length(p.thread_name) - length(' (samples)')) as thread
  from placed p join gaps g on g.device_id = p.device_id and g.gap = p.gap
  where p.is_sample = 1 and p.ts < g.gap_end
),
gap_totals as (select device_id, gap, count(*) as samples from in_gaps group by device_id, gap),
longest as (
  select g.*, row_number() over (order by g.gap_end - g.gap_start desc, g.device_id, g.gap_start) as gap_rank
  from gaps g
),
per_function as (
  select device_id, gap, function, group_concat(distinct thread) as threads, count(*) as samples
  from in_gaps group by device_id, gap, function
),
ranked as (
  select f.*, row_number() over (partition by f.device_id, f.gap order by f.samples desc, f.function) as rank
  from per_function f
)
select l.device_id, l.gap_start as gap_start_ns, l.gap_end - l.gap_start as gap_ns,
       coalesce(t.samples, 0) as gap_samples, r.function, r.threads, r.samples,
       round(100.0 * r.samples / t.samples, 1) as pct_of_gap_samples
from longest l, params p
left join gap_totals t on t.device_id = l.device_id and t.gap = l.gap
left join ranked r on r.device_id = l.device_id and r.gap = l.gap and r.rank <= p.top_functions
where l.gap_rank <= p.top_gaps
order by l.gap_rank, r.rank;
