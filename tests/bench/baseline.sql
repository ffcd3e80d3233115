-- Baseline: SQLite's own JSON functions over the same kernel, memcpy, memset, CUDA API and NVTX rows that
-- `chrome_trace(*) ... where kind in (...)` converts (names resolved, ts/dur as ts/1000.0, no correlation,
-- metadata, flows or lanes). What a "pure SQL" converter costs.
select length(json_group_array(json_object('name', name, 'cat', cat, 'ph', 'X', 'ts', start / 1000.0,
                                           'dur', ("end" - start) / 1000.0, 'pid', pid, 'tid', tid,
                                           'args', json_object('correlation_id', corr))))
from (
  select s.value as name, 'kernel' as cat, k.start, k."end", k.deviceId as pid, k.streamId as tid, k.correlationId as corr
    from CUPTI_ACTIVITY_KIND_KERNEL k left join StringIds s on s.id = k.shortName
  union all
  select 'Memcpy', 'memcpy', start, "end", deviceId, streamId, correlationId from CUPTI_ACTIVITY_KIND_MEMCPY
  union all
  select 'Memset', 'memset', start, "end", deviceId, streamId, correlationId from CUPTI_ACTIVITY_KIND_MEMSET
  union all
  select s.value, 'cuda_api', r.start, r."end", (r.globalTid >> 24) & 16777215, r.globalTid & 16777215, r.correlationId
    from CUPTI_ACTIVITY_KIND_RUNTIME r left join StringIds s on s.id = r.nameId
  union all
  select coalesce(n.text, s.value), 'nvtx', n.start, n."end", (n.globalTid >> 24) & 16777215, n.globalTid & 16777215, null
    from NVTX_EVENTS n left join StringIds s on s.id = n.textId where n.eventType in (34, 59, 60, 70, 71)
);
