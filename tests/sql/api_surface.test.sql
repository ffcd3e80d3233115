-- fixture: examples/example_profile.sql
-- The API surface, pinned: every function and module the extension registers (pragma_function_list /
-- pragma_module_list). A change here is a change of the contract users and tools depend on.
select 'functions', (select group_concat(f, ' ') from (select distinct name || '/' || narg as f from pragma_function_list
  where name like 'chrome_trace%' or name like 'perfetto_trace%' or name like 'nsystrace%' order by f))
  = 'chrome_trace/-1 chrome_trace_file/1 chrome_trace_file/2 chrome_trace_file/3 nsystrace_concurrency/4 nsystrace_covered_ns/3 nsystrace_create_indexes/0 nsystrace_create_indexes/1 nsystrace_gaps/3 nsystrace_in_stored_order/2 nsystrace_last_trace_file/0 nsystrace_median/1 nsystrace_option/1 nsystrace_option/2 nsystrace_stddev/1 nsystrace_union_ns/2 nsystrace_version/0 perfetto_trace/0 perfetto_trace/1 perfetto_trace_file/1 perfetto_trace_file/2 perfetto_trace_file/3';
select 'modules', (select group_concat(name, ' ') from (select name from pragma_module_list
  where name in ('trace_events', 'nvtx_kernel_ranges') order by name)) = 'nvtx_kernel_ranges trace_events';
select 'trace_events columns', (select group_concat(name, ' ') from pragma_table_info('trace_events'))
  = 'kind name ts dur pid tid process_name thread_name device_id stream_id correlation_id global_tid args lane global_pid';
select 'nvtx_kernel_ranges columns', (select group_concat(name, ' ') from pragma_table_info('nvtx_kernel_ranges'))
  = 'name domain start end gpu_start gpu_end gpu_ops kernels memcpys memsets pid tid global_tid depth parent devices range_type unclosed graphs gpu_span gpu_op_time gpu_busy_time children';
select 'writers (and the record of the last file written) are direct-only', (select count(*) from pragma_function_list where name in ('chrome_trace_file', 'perfetto_trace_file', 'nsystrace_create_indexes', 'nsystrace_option', 'nsystrace_last_trace_file') and flags & 0x80000 = 0) = 0;
select 'readers are innocuous', (select count(*) from pragma_function_list where name in ('chrome_trace', 'perfetto_trace', 'nsystrace_version') and flags & 0x200000 = 0) = 0;
select 'hidden columns of trace_events', (select group_concat(name, ' ') from pragma_table_xinfo('trace_events') where hidden = 1) = 'schema cname domain demangled_name nsys_dur call_id call_ts call_dur call_name call_pid call_tid call_global_tid size_bytes copy_kind src_kind dst_kind mem_kind derived event';
select 'event is a pointer only the aggregates read', (select count(*) from trace_events where event is not null) = 0;
select 'hidden schema columns', (select count(*) from pragma_table_xinfo('trace_events') where name = 'schema' and hidden = 1) + (select count(*) from pragma_table_xinfo('nvtx_kernel_ranges') where name = 'schema' and hidden = 1) = 2;
