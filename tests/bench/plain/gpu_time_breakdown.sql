-- Plain-SQL baseline of sql/gpu_time_breakdown.sql (see README.md): the same unions, over the raw tables. The kernel
-- types table is a copy of the recipe's: the bench checks this file prints the recipe's rows, which catches a drift.
with
-- kernel_types: which type a GPU operation is, by its lower-case name (GLOB patterns; the lowest priority that
-- matches wins; no match: 'other'). Edit here: sql/gpu_time_breakdown.sql holds the same table (between the same
-- two marker lines) for its communication kind, and the tests check the two are identical.
-- BEGIN kernel_types
kernel_types(type, priority, pattern) as (values
  ('NCCL', 1, '*nccl*'), ('NCCL', 1, '*allreduce*'), ('NCCL', 1, '*all_reduce*'), ('NCCL', 1, '*allgather*'),
  ('NCCL', 1, '*all_gather*'), ('NCCL', 1, '*reducescatter*'), ('NCCL', 1, '*reduce_scatter*'),
  ('NCCL', 1, '*alltoall*'), ('NCCL', 1, '*all_to_all*'), ('NCCL', 1, '*nvshmem*'),
  ('attention', 2, '*flash*'), ('attention', 2, '*attention*'), ('attention', 2, '*fmha*'), ('attention', 2, '*mha_*'),
  ('GEMM', 3, 'nvjet*'), ('GEMM', 3, '*gemm*'), ('GEMM', 3, '*gemv*'), ('GEMM', 3, '*cublas*'),
  ('GEMM', 3, '*cutlass*'), ('GEMM', 3, '*xmma*'), ('GEMM', 3, '*matmul*'),
  ('memory', 4, 'memcpy *'), ('memory', 4, 'memset'), ('memory', 4, '*copy*'), ('memory', 4, '*fill*'),
  ('reduction', 5, '*reduce*'), ('reduction', 5, '*reduction*'), ('reduction', 5, '*softmax*'), ('reduction', 5, '*norm*'),
  ('elementwise', 6, '*elementwise*'), ('elementwise', 6, '*vectorized*'), ('elementwise', 6, '*unrolled*'),
  ('elementwise', 6, '*pointwise*'), ('elementwise', 6, 'triton_poi*')
),
-- END kernel_types
ops as materialized (
  select k.deviceId as device_id, k.start as s, max(k."end", k.start) as e, 'kernel' as kind,
         coalesce(sn.value, dn.value) as name
  from CUPTI_ACTIVITY_KIND_KERNEL k
  left join StringIds sn on sn.id = k.shortName left join StringIds dn on dn.id = k.demangledName
  where k.start is not null
  union all
  select deviceId, start, max("end", start), 'memcpy', null from CUPTI_ACTIVITY_KIND_MEMCPY where start is not null
  union all
  select deviceId, start, max("end", start), 'memset', null from CUPTI_ACTIVITY_KIND_MEMSET where start is not null
),
-- Each kernel name is typed once (a profile has millions of kernels but thousands of names at most).
comm_names as materialized (
  select name from (select distinct name from ops where kind = 'kernel')
  where exists (select 1 from kernel_types t where t.type = 'NCCL' and lower(name) glob t.pattern)
),
work as (
  select device_id, s, e,
         case when kind <> 'kernel' then 'memory' when name in comm_names then 'comm' else 'compute' end as what
  from ops
),
-- One sort per device: for each operation, the latest end among the earlier operations of its own kind, of
-- compute ∪ comm, and of all (window functions over the same order share one sort).
ordered as (
  select device_id, what, s, e,
         max(e) filter (where what = 'compute') over w as covered_compute,
         max(e) filter (where what = 'comm') over w as covered_comm,
         max(e) filter (where what = 'memory') over w as covered_memory,
         max(e) filter (where what <> 'memory') over w as covered_compute_or_comm,
         max(e) over w as covered_all
  from work
  window w as (partition by device_id order by s, e rows between unbounded preceding and 1 preceding)
),
-- The part of an interval [s, e] beyond every earlier end c: max(0, e - max(s, c)).
per_device as (
  select device_id,
         max(e) - min(s) as span_ns,
         coalesce(sum(max(0, e - max(s, coalesce(covered_compute, s)))) filter (where what = 'compute'), 0) as compute_ns,
         coalesce(sum(max(0, e - max(s, coalesce(covered_comm, s)))) filter (where what = 'comm'), 0) as comm_ns,
         coalesce(sum(max(0, e - max(s, coalesce(covered_memory, s)))) filter (where what = 'memory'), 0) as memory_ns,
         coalesce(sum(max(0, e - max(s, coalesce(covered_compute_or_comm, s)))) filter (where what <> 'memory'), 0)
           as compute_or_comm_ns,
         sum(max(0, e - max(s, coalesce(covered_all, s)))) as busy_ns
  from ordered group by device_id
)
select device_id as device, compute_ns, comm_ns, memory_ns, span_ns - busy_ns as idle_ns,
       compute_ns + comm_ns - compute_or_comm_ns as overlap_ns,
       round(100.0 * compute_ns / nullif(span_ns, 0), 1) as compute_pct,
       round(100.0 * comm_ns / nullif(span_ns, 0), 1) as comm_pct,
       round(100.0 * memory_ns / nullif(span_ns, 0), 1) as memory_pct,
       round(100.0 * (span_ns - busy_ns) / nullif(span_ns, 0), 1) as idle_pct,
       round(100.0 * (compute_ns + comm_ns - compute_or_comm_ns) / nullif(span_ns, 0), 1) as overlap_pct,
       span_ns
from per_device
order by device;
