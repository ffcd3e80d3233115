-- A parameter sweep: the same program run with a varying parameter (batch size 8, 16, 32, ...), one report each,
-- ATTACHed under names that say the value:
--   sqlite3 bs8.sqlite ".load ./build/nsystrace" "attach 'bs16.sqlite' as bs16" "attach 'bs32.sqlite' as bs32" \
--           ".read sql/sweep.sql"
-- Tabulates, per report (schema), the GPU time of each NVTX range and of each family of kernels (GEMM, cuDNN /
-- convolution, NCCL, elementwise, reductions, normalization, attention, other): one row per (what, report),
-- ready to pivot or plot.
with reports as (select name as schema from pragma_database_list where name not in ('temp')),
nvtx as (
  select 'nvtx: ' || coalesce(domain || ':', '') || name as what, schema,
         count(*) as n, sum(gpu_end - gpu_start) as gpu_ns
  from nvtx_kernel_ranges where schema in (select schema from reports)
  group by what, schema
),
families as (
  select case
           when name like '%nccl%' then 'kernels: NCCL'
           when name like '%cudnn%' or name like '%conv%' or name like '%wgrad%' or name like '%dgrad%' then 'kernels: cuDNN / convolution'
           when name like '%gemm%' or name like '%cublas%' or name like '%cutlass%' or name like '%matmul%' then 'kernels: GEMM (cuBLAS / CUTLASS)'
           when name like '%flash%' or name like '%attention%' or name like '%fmha%' then 'kernels: attention'
           when name like '%norm%' then 'kernels: normalization'
           when name like '%reduce%' or name like '%softmax%' then 'kernels: reductions / softmax'
           when name like '%elementwise%' or name like '%vectorized%' or name like '%unrolled%' then 'kernels: elementwise'
           else 'kernels: other'
         end as what,
         schema, dur
  from trace_events where kind = 'kernel' and schema in (select schema from reports)
),
kernels as (select what, schema, count(*) as n, sum(dur) as gpu_ns from families group by what, schema)
select what, schema as report, n, round(gpu_ns / 1e6, 3) as gpu_ms
from (select * from nvtx union all select * from kernels)
order by what, report;
