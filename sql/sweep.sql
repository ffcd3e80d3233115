-- A parameter sweep: the same program run with a varying parameter (batch size 8, 16, 32, ...), one report each,
-- ATTACHed under names that say the value:
--   sqlite3 bs8.sqlite ".load ./build/nsystrace" "attach 'bs16.sqlite' as bs16" "attach 'bs32.sqlite' as bs32" \
--           ".read sql/sweep.sql"
-- Tabulates, per report (schema), the GPU time of each NVTX range (the time the GPU was busy with its work: the union
-- of its operations' intervals, nvtx_kernel_ranges.gpu_busy_time) and of each family of kernels (GEMM, cuDNN /
-- convolution, NCCL, attention, Triton, elementwise, reductions, normalization, other: the sum of their durations):
-- one row per (what, report), ready to pivot or plot.
with reports as (select name as schema from pragma_database_list where name not in ('temp')),
-- Each name is classified once: rows are first summed per distinct name (a profile has millions of rows, but
-- thousands of names at most).
nvtx_names as (
  select domain, name, schema, count(*) as n, sum(gpu_busy_time) as gpu_ns
  from nvtx_kernel_ranges where schema in (select schema from reports)
  group by domain, name, schema
),
-- NVTX names that carry per-call noise (PyTorch's "aten::mm, seq = 123, op_id = 45, sizes = [...]") by their stable part.
nvtx as (
  select 'nvtx: ' || coalesce(domain || ':', '') || case
           when instr(name, ', seq = ') > 0 then substr(name, 1, instr(name, ', seq = ') - 1)
           when instr(name, ', op_id = ') > 0 then substr(name, 1, instr(name, ', op_id = ') - 1)
           when instr(name, ', sizes = ') > 0 then substr(name, 1, instr(name, ', sizes = ') - 1)
           else name end as what, schema,
         sum(n) as n, sum(gpu_ns) as gpu_ns
  from nvtx_names
  group by what, schema
),
-- Kernel names in lower case (materialized: a subquery would be re-evaluated at each mention of n), from the
-- kernels totalled per name by event_totals (lower() once per name, not per kernel; no sort of the kernels).
kernel_names as materialized (
  select lower(name) as n, schema, sum(events) as instances, sum(total_ns) as gpu_ns
  from event_totals where kind = 'kernel' and schema in (select schema from reports)
  group by n, schema
),
-- Families by kernel name, first match wins (names seen in 2024-2026 exports: Hopper's cuBLAS GEMMs are nvjet_*,
-- cuBLASLt/CUTLASS sm90_xmma_* / cutlass_*, FlashAttention flash_fwd_* / fmha_*, PyTorch's compiled kernels triton_*),
-- compared as substrings of the lower-case name (not LIKE patterns: '_' is a character here).
families as (
  select case
           when instr(n, 'nccl') then 'kernels: NCCL'
           when instr(n, 'flash') or instr(n, 'attention') or instr(n, 'fmha') or instr(n, 'mha_') then 'kernels: attention'
           when n glob 'triton*' then 'kernels: Triton'
           when instr(n, 'cudnn') or instr(n, 'conv') or instr(n, 'wgrad') or instr(n, 'dgrad') then 'kernels: cuDNN / convolution'
           when n glob 'nvjet*' or instr(n, 'gemm') or instr(n, 'gemv') or instr(n, 'cublas') or instr(n, 'cutlass')
                or instr(n, 'xmma') or instr(n, 'matmul') then 'kernels: GEMM (cuBLAS / cuBLASLt / CUTLASS)'
           when instr(n, 'norm') then 'kernels: normalization'
           when instr(n, 'reduce') or instr(n, 'reduction') or instr(n, 'softmax') then 'kernels: reductions / softmax'
           when instr(n, 'elementwise') or instr(n, 'vectorized') or instr(n, 'unrolled') or instr(n, 'pointwise') then 'kernels: elementwise'
           else 'kernels: other'
         end as what,
         schema, instances, gpu_ns
  from kernel_names
),
kernels as (select what, schema, sum(instances) as n, sum(gpu_ns) as gpu_ns from families group by what, schema)
select what, schema as report, n, round(gpu_ns / 1e6, 3) as gpu_ms
from (select * from nvtx union all select * from kernels)
order by what, report;
