-- Top kernels by total GPU time.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/top_kernels.sql"
-- One row per kernel name: launches, total / mean / max duration (ms), share of all kernel time.
select name,
       count(*) as launches,
       round(sum(dur) / 1e6, 3) as total_ms,
       round(avg(dur) / 1e3, 2) as mean_us,
       round(max(dur) / 1e3, 2) as max_us,
       -- the share of all kernel time: the sum over every group (a window over the groups, not a second scan)
       round(100.0 * sum(dur) / sum(sum(dur)) over (), 1) as pct
from trace_events
where kind = 'kernel'
group by name
order by sum(dur) desc, name
limit 20;
