-- GPU time per NVTX range (layer, training step), from the NVTX GPU projection (nvtx_kernel_ranges: the GPU work
-- launched inside each range, as Nsight Systems defines it). Three numbers, each summed over the range's instances:
--   gpu_busy_ms  the time the GPU was busy with the range's work (the union of its operations' intervals): how long
--                the range kept the GPU busy. Ranked by this.
--   gpu_op_ms    the sum of its operations' durations (work on concurrent streams or GPUs counts once per operation,
--                so it can exceed gpu_busy_ms).
--   gpu_span_ms  first GPU start to last GPU end of its work (NVIDIA's "projected" time, nvtx_gpu_proj_sum): idle
--                gaps included, so it can far exceed gpu_busy_ms.
--   cpu_ms       the CPU range itself.
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nvtx_gpu_time.sql"
select coalesce(domain || ':', '') || name as range,
       count(*) as instances,
       round(sum(gpu_busy_time) / 1e6, 3) as gpu_busy_ms,
       round(sum(gpu_op_time) / 1e6, 3) as gpu_op_ms,
       round(sum(gpu_span) / 1e6, 3) as gpu_span_ms,
       round(sum("end" - start) / 1e6, 3) as cpu_ms,
       sum(kernels) as kernels,
       round(avg(gpu_busy_time) / 1e3, 1) as mean_gpu_busy_us
from nvtx_kernel_ranges
group by range
order by sum(gpu_busy_time) desc, range
limit 20;
