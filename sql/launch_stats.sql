-- Kernel launch statistics, per kernel name (HTA's "CUDA kernel launch stats"): how long each kernel waited from
-- the start of the CUDA API call that launched it (same process and correlation id) to its own start on the GPU
-- (launch delay: launch overhead plus time queued behind earlier work), and how many kernels ran shorter than the
-- call that launched them (short_kernels: the GPU finished the kernel faster than the CPU could launch it, so
-- launches of such kernels cannot keep the GPU busy; fuse them or capture them in a CUDA graph).
-- Kernels without a recorded launching call (a graph node launched as part of its graph is one) are counted in
-- kernels and unlaunched, not in the delays.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/launch_stats.sql"
-- Rows: the top_n names by total launch delay. Delays in integer ns; median (as nsys computes it: the mean of the
-- two middle values for an even count) and mean rounded to 1 decimal.
with params(top_n) as (select 20),
-- Each kernel with its launching call: trace_events' call_* columns (the call of its correlation id in its process;
-- when an export records two calls for one launch, the earliest).
launched as materialized (
  select name, dur, call_ts as call_ns, call_dur, ts - call_ts as delay from trace_events where kind = 'kernel'
)
select name, count(*) as kernels, count(call_ns) as launched, count(*) - count(call_ns) as unlaunched,
       min(delay) as min_delay_ns, round(nsystrace_median(delay), 1) as median_delay_ns,
       round(avg(delay), 1) as mean_delay_ns, max(delay) as max_delay_ns, sum(delay) as total_delay_ns,
       sum(dur < call_dur) as short_kernels, round(100.0 * sum(dur < call_dur) / nullif(count(call_ns), 0), 1) as short_pct,
       sum(dur) as kernel_ns, sum(call_dur) as launch_call_ns
from launched, params
group by name
order by sum(delay) desc nulls last, name
limit (select top_n from params);
