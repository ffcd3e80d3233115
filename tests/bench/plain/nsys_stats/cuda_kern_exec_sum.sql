-- Plain-SQL baseline of sql/nsys_stats/cuda_kern_exec_sum.sql (see ../README.md): each kernel with the earliest
-- call of its (correlation id, process), medians and standard deviations by window functions.
with calls as (
  select r.correlationId as corr, r.globalTid & ~16777215 as gpid, r.globalTid, r.start as ts, max(r."end", r.start) as e,
         coalesce(n.value, '[unnamed CUDA API call]') as name
  from CUPTI_ACTIVITY_KIND_RUNTIME r left join StringIds n on n.id = r.nameId
  where r.correlationId is not null and r.start is not null
),
first_calls as materialized (
  select * from (select *, row_number() over (partition by corr, gpid order by ts, e desc, name) as nth from calls)
  where nth = 1
),
items as materialized (
  select (c.globalTid >> 24) & 16777215 as pid, c.globalTid & 16777215 as tid, k.deviceId as device_id, c.name as api,
         coalesce(dn.value, sn.value) as kernel, max(c.e, max(k."end", k.start)) - c.ts as t, c.e - c.ts as a,
         case when k.start > c.e then k.start - c.e end as q, max(k."end" - k.start, 0) as kd
  from CUPTI_ACTIVITY_KIND_KERNEL k
  join first_calls c on c.corr = k.correlationId and c.gpid = k.globalPid
  left join StringIds dn on dn.id = k.demangledName left join StringIds sn on sn.id = k.shortName
  where k.start is not null
),
ranked as (
  select *, row_number() over (w order by t) as it, row_number() over (w order by a) as ia,
         row_number() over (w order by q) - (count(*) over w - count(q) over w) as iq,
         row_number() over (w order by kd) as ik, count(*) over w as n, count(q) over w as nq,
         avg(t) over w as mt, avg(a) over w as ma, avg(q) over w as mq, avg(kd) over w as mk
  from items window w as (partition by pid, tid, device_id, api, kernel)
)
select pid as "PID", tid as "TID", device_id as "DevId", count(*) as "Count", count(q) as "QCount",
       round(avg(t), 1) as "TAvg (ns)", round(avg(case when it in ((n + 1) / 2, (n + 2) / 2) then t end), 1) as "TMed (ns)",
       min(t) as "TMin (ns)", max(t) as "TMax (ns)", round(case when count(t) > 1 then sqrt(sum((t - mt) * (t - mt)) / (count(t) - 1)) when count(t) = 1 then 0.0 end, 1) as "TStdDev (ns)",
       round(avg(a), 1) as "AAvg (ns)", round(avg(case when ia in ((n + 1) / 2, (n + 2) / 2) then a end), 1) as "AMed (ns)",
       min(a) as "AMin (ns)", max(a) as "AMax (ns)", round(case when count(a) > 1 then sqrt(sum((a - ma) * (a - ma)) / (count(a) - 1)) when count(a) = 1 then 0.0 end, 1) as "AStdDev (ns)",
       round(avg(q), 1) as "QAvg (ns)", round(avg(case when iq in ((nq + 1) / 2, (nq + 2) / 2) then q end), 1) as "QMed (ns)",
       min(q) as "QMin (ns)", max(q) as "QMax (ns)", round(case when count(q) > 1 then sqrt(sum((q - mq) * (q - mq)) / (count(q) - 1)) when count(q) = 1 then 0.0 end, 1) as "QStdDev (ns)",
       round(avg(kd), 1) as "KAvg (ns)", round(avg(case when ik in ((n + 1) / 2, (n + 2) / 2) then kd end), 1) as "KMed (ns)",
       min(kd) as "KMin (ns)", max(kd) as "KMax (ns)", round(case when count(kd) > 1 then sqrt(sum((kd - mk) * (kd - mk)) / (count(kd) - 1)) when count(kd) = 1 then 0.0 end, 1) as "KStdDev (ns)",
       api as "API Name", kernel as "Kernel Name"
from ranked
group by pid, tid, device_id, api, kernel
order by sum(t) desc, "Kernel Name", "PID", "TID", "DevId", "API Name";
