-- A parameter sweep: the same program run with a varying parameter (batch size 8, 16, 32, ...), one report each,
-- ATTACHed under names that say the value:
--   sqlite3 bs8.sqlite ".load ./build/nsystrace" "attach 'bs16.sqlite' as bs16" "attach 'bs32.sqlite' as bs32" \
--           ".read sql/sweep.sql"
-- Tabulates, per report (schema), the GPU time of each NVTX range (the time the GPU was busy with its work: the union
-- of its operations' intervals, nvtx_kernel_ranges.gpu_busy_time) and of each family of kernels (GEMM, cuDNN /
-- convolution, NCCL, attention, Triton, elementwise, reductions, normalization, other: the sum of their durations):
-- one row per (what, report), ready to pivot or plot.
with reports as (select name as schema from pragma_database_list where name not in ('temp')),
-- NVTX names that carry per-call noise (PyTorch's "aten::mm, seq = 123, op_id = 45, sizes = [...]") by their stable part.
nvtx as (
  select 'nvtx: ' || coalesce(domain || ':', '') || case
           when instr(name, ', seq = ') > 0 then substr(name, 1, instr(name, ', seq = ') - 1)
           when instr(name, ', op_id = ') > 0 then substr(name, 1, instr(name, ', op_id = ') - 1)
           when instr(name, ', sizes = ') > 0 then substr(name, 1, instr(name, ', sizes = ') - 1)
           else name end as what, schema,
         count(*) as n, sum(gpu_busy_time) as gpu_ns
  from nvtx_kernel_ranges where schema in (select schema from reports)
  group by what, schema
),
-- Families by kernel name, first match wins (names seen in 2024-2026 exports: Hopper's cuBLAS GEMMs are nvjet_*,
-- cuBLASLt/CUTLASS sm90_xmma_* / cutlass_*, FlashAttention flash_fwd_* / fmha_*, PyTorch's compiled kernels triton_*).
families as (
  select case
           when name like '%nccl%' then 'kernels: NCCL'
           when name like '%flash%' or name like '%attention%' or name like '%fmha%' or name like '%mha_%' then 'kernels: attention'
           when name like 'triton%' then 'kernels: Triton'
           when name like '%cudnn%' or name like '%conv%' or name like '%wgrad%' or name like '%dgrad%' then 'kernels: cuDNN / convolution'
           when name like 'nvjet%' or name like '%gemm%' or name like '%gemv%' or name like '%cublas%' or name like '%cutlass%'
                or name like '%xmma%' or name like '%matmul%' then 'kernels: GEMM (cuBLAS / cuBLASLt / CUTLASS)'
           when name like '%norm%' then 'kernels: normalization'
           when name like '%reduce%' or name like '%reduction%' or name like '%softmax%' then 'kernels: reductions / softmax'
           when name like '%elementwise%' or name like '%vectorized%' or name like '%unrolled%' or name like '%pointwise%' then 'kernels: elementwise'
           else 'kernels: other'
         end as what,
         schema, dur
  from trace_events where kind = 'kernel' and schema in (select schema from reports)
),
kernels as (select what, schema, count(*) as n, sum(dur) as gpu_ns from families group by what, schema)
select what, schema as report, n, round(gpu_ns / 1e6, 3) as gpu_ms
from (select * from nvtx union all select * from kernels)
order by what, report;
