-- Where the GPU time goes, per GPU: time in compute kernels, communication kernels (NCCL and other collectives: the
-- 'NCCL' type of the kernel_types table below), memory operations (memcpys and memsets) and idle, and the time
-- communication overlapped computation. Each kind's time is the union of its intervals on that GPU (work on
-- concurrent streams counted once), so compute + comm + memory can exceed the busy time; idle is the GPU's span
-- (its first operation's start to its last operation's end) not covered by any operation. Integer ns; the _pct
-- columns are shares of the span.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/gpu_time_breakdown.sql"
-- How: each union's length by the aggregate nsystrace_union_ns(start, end) (one sort of integers, in the extension;
-- a window over the operations in start order costs seconds on a million of them); overlap = |comm| + |compute| -
-- |comm ∪ compute|.
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
  select device_id, ts as s, ts + dur as e, kind, name from trace_events where kind in ('kernel', 'memcpy', 'memset')
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
per_device as (
  select device_id,
         max(e) - min(s) as span_ns,
         nsystrace_union_ns(s, e) filter (where what = 'compute') as compute_ns,
         nsystrace_union_ns(s, e) filter (where what = 'comm') as comm_ns,
         nsystrace_union_ns(s, e) filter (where what = 'memory') as memory_ns,
         nsystrace_union_ns(s, e) filter (where what <> 'memory') as compute_or_comm_ns,
         nsystrace_union_ns(s, e) as busy_ns
  from work group by device_id
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
