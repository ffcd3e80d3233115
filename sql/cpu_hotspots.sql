-- CPU hotspots: where the sampled CPU time went (nsys --sample, kind 'cpu_sample'), per process and thread: the
-- functions most often running (self: the innermost frame of a sample) and most often on the stack (total: it, or
-- something it called, was running; a recursive function counts once per sample), as sample counts and as a share
-- of the thread's samples. Each sample stands for one sampling interval of the thread. Frames nsys could not
-- resolve to a symbol (shown as their address) count together by module, as function '[unresolved]': libcuda's
-- thousands of addresses are one row, not thousands.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/cpu_hotspots.sql"
-- A time window: set from_ns / to_ns below (trace_events ts, in ns; NULL: the whole profile). Rows per thread: top_n.
with params(from_ns, to_ns, top_n) as (select NULL, NULL, 10),
samples as materialized (
  select s.rowid as sample, s.pid, s.process_name, s.tid, s.thread_name, s.args
  from params p, trace_events s
  where s.kind = 'cpu_sample' and s.ts >= coalesce(p.from_ns, -9223372036854775808)
    and s.ts <= coalesce(p.to_ns, 9223372036854775807)
),
threads as (
  select pid, tid, min(process_name) as process_name,
         -- the samples' track is "<thread> (samples)"
         min(substr(thread_name, 1, length(thread_name) - length(' (samples)'))) as thread, count(*) as samples
  from samples group by pid, tid
),
frames as (
  select s.sample, s.pid, s.tid, cast(f.key as integer) as depth,
         case when json_extract(f.value, '$.unresolved') then '[unresolved]' else json_extract(f.value, '$.symbol') end
           as function,
         json_extract(f.value, '$.module') as module
  from samples s, json_each(s.args, '$.stack') f
),
per_function as (
  select pid, tid, function, module, sum(depth = 0) as self, count(distinct sample) as total
  from frames group by pid, tid, function, module
),
ranked as (
  select f.*, row_number() over (partition by f.pid, f.tid order by f.self desc, f.total desc, f.function, f.module)
           as rank
  from per_function f
)
select t.process_name, r.pid, t.thread, r.tid, r.function, r.module,
       r.self as self_samples, round(100.0 * r.self / t.samples, 1) as self_pct,
       r.total as total_samples, round(100.0 * r.total / t.samples, 1) as total_pct, t.samples as thread_samples
from ranked r join threads t on t.pid = r.pid and t.tid = r.tid, params p
where r.rank <= p.top_n
order by t.samples desc, r.pid, r.tid, r.rank;
