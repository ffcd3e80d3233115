-- The plain-SQL reference of sql/gpu_metrics_busy.sql, over the export's own tables only (no extension): the same
-- rows, computed another way. Each union piece is compared with every sample that overlaps it (value x overlap),
-- where the recipe sweeps prefix integrals. The units, from NVIDIA's documents (docs/gpu-model.md), stated here apart
-- from the reader: [MHz] stored in Hz (/ 10^6); [Avg] and [Avg Warps per Cycle] per TPC, shown per SM (x 0.5, the
-- multiplier of the metric set definition the exports we check hold); the others as stored.
-- NVTX ranges: push/pop and start/end ranges ended on their own thread (closed ones: the exports this runs on close
-- all of theirs); a GPU operation (kernel, memcpy, memset; the exports this runs on trace no graphs) belongs to a
-- range when the CUDA API call of its correlation id in its process lies inside it, both ends inclusive, on its
-- thread.
-- Output: scope|range_id|name|device|metric|busy_ns|sampled_ns|mean, as the recipe's rows.
create temp table samples as
  select cast(g.typeId & 255 as integer) as device, i.metricName as metric, g.timestamp as t,
         lead(g.timestamp) over (partition by g.typeId, g.metricId order by g.timestamp, g.rowid) as t_next,
         case when i.metricName like '%[MHz]' then g.value / 1e6
              when i.metricName like '%[Avg]' or i.metricName like '%[Avg Warps per Cycle]' then g.value * 0.5
              else g.value end as v
  from GPU_METRICS g join TARGET_INFO_GPU_METRICS i using (typeId, metricId);
create index temp.samples_by_time on samples(device, metric, t);
create temp table calls as
  select correlationId, globalTid, globalTid - (globalTid % 16777216) as globalPid, start, "end"
  from CUPTI_ACTIVITY_KIND_RUNTIME;
create index temp.calls_by_id on calls(globalPid, correlationId);
create temp table ops as
  select deviceId as device, start as s, "end" as e, globalPid, correlationId, shortName from CUPTI_ACTIVITY_KIND_KERNEL
  union all select deviceId, start, "end", globalPid, correlationId, null from CUPTI_ACTIVITY_KIND_MEMCPY
  union all select deviceId, start, "end", globalPid, correlationId, null from CUPTI_ACTIVITY_KIND_MEMSET;
create temp table work as
  select 'nvtx' as scope, n.rowid as range_id, coalesce(n.text, (select value from StringIds where id = n.textId)) as name,
         o.device, o.s, o.e
  from NVTX_EVENTS n join calls c on c.globalTid = n.globalTid and c.start >= n.start and c."end" <= n."end"
  join ops o on o.globalPid = c.globalPid and o.correlationId = c.correlationId
  where n.eventType in (59, 60, 70, 71) and n."end" is not null and (n.endGlobalTid is null or n.endGlobalTid = n.globalTid)
  union all
  select 'kernel', null, (select value from StringIds where id = o.shortName), o.device, o.s, o.e from ops o
  where o.shortName is not null;
-- Unions: sort each group's intervals, a piece starting where an interval starts after all earlier ones ended.
create temp table pieces as
  with o as (
    select *, max(e) over (partition by scope, range_id, name, device order by s, e
                           rows between unbounded preceding and 1 preceding) as ended_before
    from work where e > s),
  g as (
    select *, sum(ended_before is null or s > ended_before) over (partition by scope, range_id, name, device
                                                                   order by s, e rows unbounded preceding) as piece
    from o)
  select scope, range_id, name, device, min(s) as s, max(e) as e from g group by scope, range_id, name, device, piece;
-- The longest time a sample holds: samples overlapping [s, e) start in [s - that, e).
create temp table longest as select max(t_next - t) as hold from samples;
with metrics as (select distinct device, metric from samples),
-- Every (piece, metric) pair, and each sample overlapping the piece with its overlap (none: no sample row). (The
-- device is an INTEGER column on both sides, so that the index serves the join.)
overlaps as (
  select p.scope, p.range_id, p.name, p.device, m.metric, p.s, p.e, x.v,
         min(p.e, x.t_next) - max(p.s, x.t) as overlap
  from pieces p join metrics m on m.device = p.device
  left join samples x indexed by samples_by_time
    on x.device = p.device and x.metric = m.metric and x.t >= p.s - (select hold from longest) and x.t < p.e
   and x.t_next > p.s),
per_piece as (
  select scope, range_id, name, device, metric, s, e, total(v * overlap) as weighted, coalesce(sum(overlap), 0) as sampled
  from overlaps group by scope, range_id, name, device, metric, s, e)
select scope, coalesce(range_id, ''), name, device, metric, sum(e - s), sum(sampled),
       case when sum(sampled) > 0 then printf('%.17g', sum(weighted) / sum(sampled)) else '' end
from per_piece group by scope, range_id, name, device, metric
order by scope desc, range_id, name, device, metric;
