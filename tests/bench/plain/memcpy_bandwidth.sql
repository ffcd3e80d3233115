-- Plain-SQL baseline of sql/memcpy_bandwidth.sql (see README.md).
with m as (
  select copyKind, srcKind, dstKind, bytes, max("end" - start, 0) as dur
  from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
),
g as (
  select copyKind, srcKind, dstKind, count(*) as copies, sum(bytes) as b, sum(dur) as d,
         max(bytes * 1.0 / nullif(dur, 0)) as peak
  from m group by copyKind, srcKind, dstKind
)
select o.label as direction, coalesce(s.label, '?') || ' -> ' || coalesce(d.label, '?') as memory,
       sum(copies) as copies, round(sum(b) / 1e6, 3) as total_mb, round(sum(g.d) / 1e6, 3) as total_ms,
       round(sum(b) * 1.0 / nullif(sum(g.d), 0), 3) as gb_per_s, round(max(peak), 3) as peak_gb_per_s
from g
left join ENUM_CUDA_MEMCPY_OPER o on o.id = g.copyKind
left join ENUM_CUDA_MEM_KIND s on s.id = g.srcKind
left join ENUM_CUDA_MEM_KIND d on d.id = g.dstKind
group by direction, memory
order by sum(b) desc, direction, memory;
