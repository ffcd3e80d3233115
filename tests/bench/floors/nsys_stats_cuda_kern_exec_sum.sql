-- cuda_kern_exec_sum's grouping over a native copy of its items (each kernel with its launch call's times).
create temp table input as
  select k.call_pid as pid, k.call_tid as tid, k.device_id, k.call_name as api, coalesce(k.demangled_name, k.name) as kernel,
         max(k.call_ts + k.call_dur, k.ts + k.dur) - k.call_ts as t, k.call_dur as a,
         case when k.ts > k.call_ts + k.call_dur then k.ts - (k.call_ts + k.call_dur) end as q, k.dur as kd
  from trace_events k where kind = 'kernel' and k.call_ts is not null;
-- timed:
select count(*) from (
  select pid, tid, device_id, count(*), count(q), avg(t), nsystrace_median(t), min(t), max(t), nsystrace_stddev(t),
         avg(a), nsystrace_median(a), min(a), max(a), nsystrace_stddev(a), avg(q), nsystrace_median(q), min(q), max(q),
         nsystrace_stddev(q), avg(kd), nsystrace_median(kd), min(kd), max(kd), nsystrace_stddev(kd), api, kernel
  from input group by pid, tid, device_id, api, kernel order by sum(t) desc, kernel, pid, tid, device_id, api);
