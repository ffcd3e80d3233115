-- nvtx_gpu_proj_sum's grouping over a native copy of the projected ranges it groups.
create temp table input as
  select domain, name, range_type, gpu_span, start, "end", gpu_ops, depth, children from nvtx_kernel_ranges;
-- timed:
select count(*) from (
  select domain, name, range_type, sum(gpu_span), sum("end" - start), count(*), round(avg(gpu_span), 1),
         round(nsystrace_median(gpu_span), 1), min(gpu_span), max(gpu_span), round(nsystrace_stddev(gpu_span), 1),
         sum(gpu_ops), round(avg(gpu_ops), 1), round(avg(depth), 1), round(avg(children), 1)
  from input group by domain, name, range_type);
