-- expert_findings' groupings of the GPU operations (gaps, span and busy time per chunk of each process and device)
-- over a native copy of the operations it groups.
create temp table input as
  select global_pid, device_id, ts as s, ts + dur as e from trace_events where kind in ('kernel', 'memcpy', 'memset');
-- timed:
select (select count(*) from (select global_pid, device_id, min(s), max(e), nsystrace_gaps(s, e, 500000000)
                              from input group by global_pid, device_id))
     + (select count(*) from (select o.global_pid, o.device_id, nsystrace_concurrency(o.s, o.e, sp.t0, sp.chunk_ns)
                              from input o join (select global_pid, device_id, min(s) as t0,
                                                        max(1, (max(e) - min(s)) / 30) as chunk_ns
                                                 from input group by global_pid, device_id) sp
                                on sp.global_pid = o.global_pid and sp.device_id = o.device_id
                              group by o.global_pid, o.device_id));
