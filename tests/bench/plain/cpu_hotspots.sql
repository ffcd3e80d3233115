-- Plain-SQL baseline of sql/cpu_hotspots.sql (see README.md): samples from COMPOSITE_EVENTS, their stacks from
-- SAMPLING_CALLCHAINS (stackDepth 0 is the innermost frame).
with params(from_ns, to_ns, top_n) as (select NULL, NULL, 10),
samples as materialized (
  select c.id as sample, (c.globalTid >> 24) & 16777215 as pid, c.globalTid & 16777215 as tid, c.globalTid
  from COMPOSITE_EVENTS c, params p
  where c.start >= coalesce(p.from_ns, -9223372036854775808) and c.start <= coalesce(p.to_ns, 9223372036854775807)
),
threads as (
  select s.pid, s.tid, min(p.name) as process_name, min(coalesce(tn.value, 'Thread ' || s.tid)) as thread,
         count(*) as samples
  from samples s
  left join PROCESSES p on p.globalPid = s.globalTid & ~16777215
  left join (select globalTid, nameId from ThreadNames group by globalTid having priority = max(priority)) t
    on t.globalTid = s.globalTid
  left join StringIds tn on tn.id = t.nameId
  group by s.pid, s.tid
),
frames as (
  select s.sample, s.pid, s.tid, f.stackDepth as depth, sy.value as function, mo.value as module
  from samples s join SAMPLING_CALLCHAINS f on f.id = s.sample
  left join StringIds sy on sy.id = f.symbol left join StringIds mo on mo.id = f.module
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
