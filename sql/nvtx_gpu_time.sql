-- GPU time per NVTX range (layer, training step), from the NVTX GPU projection (nvtx_kernel_ranges: the GPU work
-- launched inside each range, as Nsight Systems defines it). Three numbers, each summed over the range's instances:
--   gpu_busy_ms  the time the GPU was busy with the range's work (the union of its operations' intervals): how long
--                the range kept the GPU busy. Ranked by this.
--   gpu_op_ms    the sum of its operations' durations (work on concurrent streams or GPUs counts once per operation,
--                so it can exceed gpu_busy_ms).
--   gpu_span_ms  first GPU start to last GPU end of its work (NVIDIA's "projected" time, nvtx_gpu_proj_sum): idle
--                gaps included, so it can far exceed gpu_busy_ms.
--   cpu_ms       the CPU range itself.
-- Ranges are grouped by name without the fields PyTorch makes different at each call (emit_nvtx's
-- "aten::mm, seq = 12, op_id = 345": the seq and op_id fields, and input_op_ids to the end of the name), so
-- "aten::mm" is one row; names counts the distinct raw names in it. Set raw_names to 1 below for one row per raw name.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nvtx_gpu_time.sql"
with params(raw_names) as (select 0),
-- Per distinct (domain, name) first: a PyTorch profile has a distinct name per call.
per_name as materialized (
  select domain, name, count(*) as instances, sum(gpu_busy_time) as busy, sum(gpu_op_time) as op_time,
         sum(gpu_span) as span, sum("end" - start) as cpu, sum(kernels) as kernels
  from nvtx_kernel_ranges group by domain, name
),
-- The name without ", input_op_ids = ..." (to its end), ", seq = N" and ", op_id = N".
no_input_ids as (
  select *, case when instr(name, ', input_op_ids = ') > 0 then substr(name, 1, instr(name, ', input_op_ids = ') - 1)
                 else name end as n1
  from per_name
),
no_seq as (
  select *, case when instr(n1, ', seq = ') > 0
                 then substr(n1, 1, instr(n1, ', seq = ') - 1) || ltrim(substr(n1, instr(n1, ', seq = ') + 8), '0123456789')
                 else n1 end as n2
  from no_input_ids
),
stable as (
  select *, case when raw_names then name
                 when instr(n2, ', op_id = ') > 0
                 then substr(n2, 1, instr(n2, ', op_id = ') - 1) || ltrim(substr(n2, instr(n2, ', op_id = ') + 10), '0123456789')
                 else n2 end as stable_name
  from no_seq, params
)
select coalesce(domain || ':', '') || stable_name as range,
       sum(instances) as instances,
       round(sum(busy) / 1e6, 3) as gpu_busy_ms,
       round(sum(op_time) / 1e6, 3) as gpu_op_ms,
       round(sum(span) / 1e6, 3) as gpu_span_ms,
       round(sum(cpu) / 1e6, 3) as cpu_ms,
       sum(kernels) as kernels,
       round(sum(busy) / 1e3 / sum(instances), 1) as mean_gpu_busy_us,
       count(*) as names
from stable
group by range
order by sum(busy) desc, range
limit 20;
