-- GPU time per NVTX range: how long each annotated region (layer, training step) kept the GPU busy, from the
-- NVTX GPU projection (nvtx_kernel_ranges: the GPU work launched inside each range, as Nsight Systems defines it).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/nvtx_gpu_time.sql"
-- gpu_span_ms: first GPU start to last GPU end of the range's work, summed over instances; cpu_ms: the CPU range.
select coalesce(domain || ':', '') || name as range,
       count(*) as instances,
       round(sum(gpu_end - gpu_start) / 1e6, 3) as gpu_span_ms,
       round(sum("end" - start) / 1e6, 3) as cpu_ms,
       sum(kernels) as kernels,
       round(avg(gpu_end - gpu_start) / 1e3, 1) as mean_gpu_span_us
from nvtx_kernel_ranges
group by range
order by sum(gpu_end - gpu_start) desc, range
limit 20;
