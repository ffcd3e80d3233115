-- Plain-SQL baseline of sql/launch_latency.sql (see README.md).
with ops as (
  select k.globalPid >> 24 as process, k.correlationId as corr, k.start, coalesce(sn.value, dn.value) as work,
         k.deviceId, k.streamId
  from CUPTI_ACTIVITY_KIND_KERNEL k
  left join StringIds sn on sn.id = k.shortName left join StringIds dn on dn.id = k.demangledName
  where k.correlationId is not null and k.start is not null
  union all
  select globalPid >> 24, correlationId, start, case copyKind when 1 then 'Memcpy HtoD' when 2 then 'Memcpy DtoH' when 3 then 'Memcpy HtoA' when 4 then 'Memcpy AtoH' when 5 then 'Memcpy AtoA' when 6 then 'Memcpy AtoD' when 7 then 'Memcpy DtoA' when 8 then 'Memcpy DtoD' when 9 then 'Memcpy HtoH' when 10 then 'Memcpy PtoP' when 11 then 'Memcpy UVM HtoD' when 12 then 'Memcpy UVM DtoH' when 13 then 'Memcpy UVM DtoD' else 'Memcpy' end, deviceId, streamId
  from CUPTI_ACTIVITY_KIND_MEMCPY where correlationId is not null and start is not null
  union all
  select globalPid >> 24, correlationId, start, 'Memset', deviceId, streamId
  from CUPTI_ACTIVITY_KIND_MEMSET where correlationId is not null and start is not null
),
gpu as materialized (
  select * from (select *, row_number() over (partition by process, corr order by start, work) as nth from ops)
  where nth = 1
)
select coalesce(n.value, '[unnamed CUDA API call]') as api_call, g.work, (r.globalTid >> 24) & 16777215 as pid,
       r.globalTid & 16777215 as tid, g.deviceId as device_id, g.streamId as stream_id, r.start as call_ns,
       round((g.start - r.start) / 1e3, 1) as latency_us
from CUPTI_ACTIVITY_KIND_RUNTIME r
join gpu g on g.process = r.globalTid >> 24 and g.corr = r.correlationId
left join StringIds n on n.id = r.nameId
where r.start is not null
order by g.start - r.start desc, r.start, pid, tid
limit 20;
