-- cuda_kern_exec_sum: NVIDIA's `nsys stats --report cuda_kern_exec_sum` as SQL: kernels launched from the CPU,
-- by (process, thread, GPU, launch function, kernel), with four times per launch as NVIDIA defines them:
--   A (API)    the launch call's duration;
--   Q (queue)  from the call's end to the kernel's start, counted only when positive (QCount launches): a kernel can
--              start before its launch call returns;
--   K (kernel) the kernel's duration;
--   T (total)  from the call's start to the later of the call's end and the kernel's end.
-- Kernels are tied to their launch call by correlation id within their process (global_pid); a kernel without a
-- call in the profile (graph or device-side launches) is not counted. When an export records two API rows for one
-- launch (cudaLaunchKernel and cudaLaunchKernel_v7000, about 2022), the launch is counted once, with the earlier call.
-- Kernel names as cuda_gpu_kern_sum: demangled (trace_events' hidden column demangled_name; use_short_name = 1:
-- the short name). Ordered by total time.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nsys_stats/cuda_kern_exec_sum.sql"
-- Composes: narrow `scope` (a WHERE over trace_events) to a time window (ts between A and B), one process (pid = P),
-- one GPU (device_id = D), or the inside of one NVTX range (its ts and ts + dur), which nsys stats cannot do.
-- StdDev is the sample standard deviation (n - 1), 0 for a single instance, as NVIDIA reports it.
-- Made by sql/nsys_stats/generate.py (the statistics shared by every report are written once there): edit it, not
-- this file.
with params(use_short_name) as (select 0),
scope as (select *, demangled_name, call_ts, call_dur, call_name, call_pid, call_tid
          from trace_events where kind = 'kernel'),
-- Each kernel with its launch call: trace_events' call_* columns, the call of its correlation id in its process
-- (global_pid); when an export has two rows for one launch, the earliest (the longest at equal starts, then by name,
-- then the first stored).
items as materialized (
  select k.call_pid as pid, k.call_tid as tid, k.device_id, k.call_name as api,
         case when p.use_short_name then k.name else coalesce(k.demangled_name, k.name) end as kernel,
         max(k.call_ts + k.call_dur, k.ts + k.dur) - k.call_ts as t, k.call_dur as a,
         case when k.ts > k.call_ts + k.call_dur then k.ts - (k.call_ts + k.call_dur) end as q, k.dur as kd
  from scope k, params p
  where k.call_ts is not null
)
select pid as "PID", tid as "TID", device_id as "DevId", count(*) as "Count", count(q) as "QCount",
       round(avg(t), 1) as "TAvg (ns)", round(nsystrace_median(t), 1) as "TMed (ns)",
       min(t) as "TMin (ns)", max(t) as "TMax (ns)", round(nsystrace_stddev(t), 1) as "TStdDev (ns)",
       round(avg(a), 1) as "AAvg (ns)", round(nsystrace_median(a), 1) as "AMed (ns)",
       min(a) as "AMin (ns)", max(a) as "AMax (ns)", round(nsystrace_stddev(a), 1) as "AStdDev (ns)",
       round(avg(q), 1) as "QAvg (ns)", round(nsystrace_median(q), 1) as "QMed (ns)",
       min(q) as "QMin (ns)", max(q) as "QMax (ns)", round(nsystrace_stddev(q), 1) as "QStdDev (ns)",
       round(avg(kd), 1) as "KAvg (ns)", round(nsystrace_median(kd), 1) as "KMed (ns)",
       min(kd) as "KMin (ns)", max(kd) as "KMax (ns)", round(nsystrace_stddev(kd), 1) as "KStdDev (ns)",
       api as "API Name", kernel as "Kernel Name"
from items
group by pid, tid, device_id, api, kernel
order by sum(t) desc, "Kernel Name", "PID", "TID", "DevId", "API Name";
