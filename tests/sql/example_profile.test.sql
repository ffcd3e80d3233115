-- fixture: examples/example_profile.sql
-- SQL-level checks through the sqlite3 shell with the built .so. One ('label', boolean) row per check.
select 'version is x.y.z', nsystrace_version() glob '[0-9]*.[0-9]*.[0-9]*';
select 'one kernel row per kernel', (select count(*) from trace_events where kind = 'kernel') = (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL);
select 'one memcpy row per memcpy', (select count(*) from trace_events where kind = 'memcpy') = (select count(*) from CUPTI_ACTIVITY_KIND_MEMCPY);
select 'one memset row per memset', (select count(*) from trace_events where kind = 'memset') = (select count(*) from CUPTI_ACTIVITY_KIND_MEMSET);
select 'one sync row per sync', (select count(*) from trace_events where kind = 'sync') = (select count(*) from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
select 'one cuda_api row per call', (select count(*) from trace_events where kind = 'cuda_api') = (select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME);
select 'nvtx rows exclude definitions', (select count(*) from trace_events where kind = 'nvtx') = (select count(*) from NVTX_EVENTS where eventType in (34, 59, 60, 70, 71));
select 'kernel (ts, dur) equal the profile', not exists (select start, end - start from CUPTI_ACTIVITY_KIND_KERNEL except select ts, dur from trace_events where kind = 'kernel');
select 'two GPU processes', (select count(distinct pid) from trace_events where device_id is not null) = 2;
select 'GPU named by TARGET_INFO_GPU', (select process_name from trace_events where kind = 'kernel' and device_id = 1 limit 1) = 'GPU 1 (NVIDIA H100 80GB HBM3)';
select 'streams are tracks', (select group_concat(distinct thread_name) from (select thread_name from trace_events where kind = 'kernel' and device_id = 0 order by 1)) = 'Stream 13,Stream 7';
select 'CPU events have no device', (select count(*) from trace_events where kind in ('cuda_api', 'nvtx') and (device_id is not null or stream_id is not null)) = 0;
select 'marks are instants', (select count(*) from trace_events where kind = 'nvtx' and dur is null) = (select count(*) from NVTX_EVENTS where eventType = 34);
select 'registered NVTX names resolve', (select count(*) from trace_events where kind = 'nvtx' and name in ('forward', 'backward', 'optimizer')) > 0;
select 'domain in args', (select json_extract(args, '$.domain') from trace_events where name = 'forward' limit 1) = 'PyTorch';
select 'args are JSON objects', (select count(*) from trace_events where json_type(args) is not 'object') = 0;
select 'pids and tids are Chrome-sized', (select count(*) from trace_events where pid < 0 or pid >= 2147483648 or tid < 0 or tid >= 2147483648) = 0;
select 'trace is valid JSON', json_valid(chrome_trace(*)) from trace_events;
select 'trace holds every event', json_extract(t, '$.otherData.event_counts.kernel') = (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL) from (select chrome_trace(*) as t from trace_events);
select 'display unit ns', json_extract(chrome_trace(*), '$.displayTimeUnit') = 'ns' from trace_events;
select 'a flow per launched GPU op', json_extract(chrome_trace(*), '$.otherData.flows') = (select count(*) from trace_events where kind in ('kernel', 'memcpy', 'memset')) from trace_events;
select 'export metadata carried', json_extract(chrome_trace(*), '$.otherData.export.EXPORT_SCHEMA_VERSION') is not null from trace_events;
select 'filters compose', json_extract(chrome_trace(*), '$.otherData.event_counts') = '{"kernel":' || (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL where start < (select min(start) + 1000000 from CUPTI_ACTIVITY_KIND_KERNEL)) || '}' from trace_events where kind = 'kernel' and ts < (select min(start) + 1000000 from CUPTI_ACTIVITY_KIND_KERNEL);
select 'ts written exactly in us', instr(chrome_trace(*), '"ts":' || (ts / 1000) || '.' || substr('00' || (ts % 1000), -3, 3)) > 0 from trace_events where kind = 'kernel' and ts = (select max(start) from CUPTI_ACTIVITY_KIND_KERNEL where start % 10 != 0);
