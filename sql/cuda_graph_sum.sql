-- CUDA graphs traced per node (nsys --cuda-graph-trace=node): one row per graph, i.e. per set of graph node ids its
-- replays ran. A replay is the GPU work (kernels, memcpys, memsets carrying args.graph_node_id) of one launch: one
-- correlation id in one process. Per graph: its launch call, how many replays, kernels and other nodes per replay,
-- the GPU time of a replay (its first node's start to its last node's end: mean, min, max), the launch latency (the
-- launch call's start to the replay's first node's start: mean, max) and the idle time inside a replay (that span
-- less the union of its nodes' intervals: mean, and as a share of all replays' spans). Times in microseconds,
-- rounded to the nanosecond. An export traced per graph (nsys's default) or without graphs gives no rows.
-- Graphs are told apart per process (pid: the launching process).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/cuda_graph_sum.sql"
-- first_node_id: the graph's smallest node id (nsys numbers a graph's nodes consecutively, so the ids tell graphs
-- apart); nodes: how many distinct node ids it has.
with nodes as materialized (
  select global_pid, correlation_id, kind, ts, ts + dur as end_ts, call_ts, call_name,
         json_extract(args, '$.graph_node_id') as node_id
  from trace_events
  where kind in ('kernel', 'memcpy', 'memset') and correlation_id is not null
    and json_extract(args, '$.graph_node_id') is not null
),
-- Each node with its gap after the latest end of the nodes of its replay that started before it (none: 0).
gaps as (
  select *,
         max(0, ts - coalesce(max(end_ts) over (partition by global_pid, correlation_id order by ts, end_ts
                                                 rows between unbounded preceding and 1 preceding), ts)) as gap
  from nodes
),
-- A replay's set of node ids as text: its distinct ids in ascending order (read in that order from the sorted
-- subquery).
node_sets as materialized (
  select global_pid, correlation_id, count(*) as node_count, min(node_id) as first_node_id,
         group_concat(node_id, ' ') as node_set
  from (select distinct global_pid, correlation_id, node_id from nodes order by global_pid, correlation_id, node_id)
  group by global_pid, correlation_id
),
replays as materialized (
  select global_pid, correlation_id, min(ts) as first_start, max(end_ts) as last_end,
         sum(kind = 'kernel') as kernels, sum(kind != 'kernel') as other_nodes,
         min(call_ts) as call_ts, min(call_name) as call_name, sum(gap) as idle
  from gaps group by global_pid, correlation_id
)
select (r.global_pid >> 24) & 16777215 as pid, s.first_node_id, s.node_count as nodes, min(r.call_name) as launch_call, count(*) as replays,
       round(avg(r.kernels), 2) as kernels_per_replay, round(avg(r.other_nodes), 2) as other_nodes_per_replay,
       round(avg(r.last_end - r.first_start) / 1e3, 3) as gpu_mean_us,
       round(min(r.last_end - r.first_start) / 1e3, 3) as gpu_min_us,
       round(max(r.last_end - r.first_start) / 1e3, 3) as gpu_max_us,
       round(avg(r.first_start - r.call_ts) / 1e3, 3) as launch_latency_mean_us,
       round(max(r.first_start - r.call_ts) / 1e3, 3) as launch_latency_max_us,
       round(avg(r.idle) / 1e3, 3) as idle_mean_us,
       round(100.0 * sum(r.idle) / nullif(sum(r.last_end - r.first_start), 0), 2) as idle_pct
from replays r join node_sets s on s.global_pid = r.global_pid and s.correlation_id = r.correlation_id
group by r.global_pid, s.node_set
order by sum(r.last_end - r.first_start) desc, pid, s.first_node_id;
