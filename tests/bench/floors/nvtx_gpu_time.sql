-- nvtx_gpu_time's grouping (per_name, the rest works on its groups) over a native copy of the projected ranges.
create temp table input as
  select domain, name, gpu_busy_time, gpu_op_time, gpu_span, start, "end", kernels from nvtx_kernel_ranges;
-- timed:
select count(*) from (
  select domain, name, count(*) as instances, sum(gpu_busy_time) as busy, sum(gpu_op_time) as op_time,
         sum(gpu_span) as span, sum("end" - start) as cpu, sum(kernels) as kernels
  from input group by domain, name);
