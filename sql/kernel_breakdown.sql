-- Kernel breakdown: GPU time by type of operation (NCCL / collectives, attention, GEMM, memory, reduction,
-- elementwise, other), with each type's count, total time and share of all GPU operation time, and its top kernels.
-- Kernels are typed by name (the kernel_types table below: edit it to add your own); memcpys and memsets are
-- 'memory'. Times are sums of operation durations (concurrent operations each count), in integer ns.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/kernel_breakdown.sql"
-- Rows: one per (type, one of its top_n kernels by total time); the type's figures repeat on each of its rows.
with params(top_n) as (select 5),
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
-- One row per distinct name (a profile has millions of operations but thousands of names at most).
per_name as materialized (
  select name, count(*) as n, sum(dur) as total_ns from trace_events
  where kind in ('kernel', 'memcpy', 'memset') group by name
),
typed as (
  select p.*, coalesce((select t.type from kernel_types t where lower(p.name) glob t.pattern
                        order by t.priority limit 1), 'other') as type
  from per_name p
),
ranked as (
  select type, name, n, total_ns,
         sum(n) over (partition by type) as type_count,
         sum(total_ns) over (partition by type) as type_ns,
         sum(total_ns) over () as all_ns,
         row_number() over (partition by type order by total_ns desc, name) as rank
  from typed
)
select type, type_count as type_operations, type_ns as type_total_ns,
       round(100.0 * type_ns / nullif(all_ns, 0), 1) as type_pct,
       rank, name, n as operations, total_ns, round(100.0 * total_ns / nullif(type_ns, 0), 1) as pct_of_type
from ranked, params
where rank <= top_n
order by type_ns desc, type, rank;
