-- sweep's grouping of the projected ranges (nvtx_names: per domain, name and report; the rest works on its groups,
-- and on event_totals' kernel totals per name, already grouped) over a native copy of the projected ranges.
create temp table input as select domain, name, schema, gpu_busy_time from nvtx_kernel_ranges;
-- timed:
select count(*) from (
  select domain, name, schema, count(*) as n, sum(gpu_busy_time) as gpu_ns from input group by domain, name, schema);
