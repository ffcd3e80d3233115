-- Memcpy bandwidth by direction (Host-to-Device, Device-to-Host, Device-to-Device, Peer-to-Peer, ...) and source /
-- destination memory kind (pageable host memory is the classic slow path).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/memcpy_bandwidth.sql"
select json_extract(args, '$.copy_kind') as direction,
       coalesce(json_extract(args, '$.src_kind'), '?') || ' -> ' || coalesce(json_extract(args, '$.dst_kind'), '?') as memory,
       count(*) as copies,
       round(sum(json_extract(args, '$.bytes')) / 1048576.0, 1) as total_mb,
       round(sum(dur) / 1e6, 3) as total_ms,
       round(sum(json_extract(args, '$.bytes')) / nullif(sum(dur), 0), 2) as gb_per_s,
       round(max(json_extract(args, '$.bytes') * 1.0 / nullif(dur, 0)), 2) as peak_gb_per_s
from trace_events
where kind = 'memcpy'
group by direction, memory
order by sum(json_extract(args, '$.bytes')) desc;
