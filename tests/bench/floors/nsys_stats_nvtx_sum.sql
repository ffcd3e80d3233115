-- nvtx_sum's grouping over a native copy of the rows it groups (the NVTX ranges' name, domain and nsys duration).
create temp table input as select name, domain, nsys_dur from trace_events where kind = 'nvtx' and dur is not null;
-- timed:
select count(*) from (
  select name, domain, count(*) as n, sum(nsys_dur) as total, min(nsys_dur) as lo, max(nsys_dur) as hi,
         avg(nsys_dur) as mean, nsystrace_median(nsys_dur) as med, nsystrace_stddev(nsys_dur) as sd
  from input group by name, domain);
