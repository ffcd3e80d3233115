-- What the CPU was doing while the GPU sat idle: for each gap between GPU work on a device (kernels, memcpys,
-- memsets; overlapping work on several streams counted once) longer than min_gap_ns, the CPU samples (nsys --sample,
-- kind 'cpu_sample') of the threads that launch work on that device (their CUDA API calls' correlation ids), by the
-- function each sample was in (its innermost frame, the sample's name). A data loader, Python overhead or a lock shows
-- up here. Rows: the longest gaps first (top_gaps of them), their top_functions functions.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_idle_cpu.sql"
with params(min_gap_ns, top_gaps, top_functions) as (select 1000000, 10, 5),
-- One scan of the GPU work, for its busy intervals and for who launched it (gpu_ops below).
work as materialized (
  select device_id, ts as s, ts + dur as e, correlation_id, global_tid >> 24 as process from trace_events
  where kind in ('kernel', 'memcpy', 'memset')
),
-- Per device, in start order, the latest end of the operations before each.
ordered as (
  select device_id, s, e,
         max(e) over (partition by device_id order by s, e rows between unbounded preceding and 1 preceding) as prev_end
  from work
),
-- A gap: from that latest end to an operation that starts after it (every earlier one had ended); one sort.
gaps as materialized (
  select device_id, gap_start, gap_end, row_number() over (partition by device_id order by gap_start) as gap
  from (select device_id, prev_end as gap_start, s as gap_end from ordered), params
  where gap_end - gap_start > min_gap_ns
),
calls as materialized (
  select correlation_id, global_tid >> 24 as process, global_tid from trace_events
  where kind = 'cuda_api' and correlation_id is not null
),
gpu_ops as materialized (
  select distinct device_id, correlation_id, process from work where correlation_id is not null
),
launchers as materialized (
  select distinct o.device_id, c.global_tid from gpu_ops o join calls c
    on c.correlation_id = o.correlation_id and c.process = o.process
),
samples as materialized (
  select l.device_id, s.ts, s.name as function, s.thread_name from trace_events s join launchers l
    on l.global_tid = s.global_tid
  where s.kind = 'cpu_sample'
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
