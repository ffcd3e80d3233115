-- Memcpy bandwidth by direction (Host-to-Device, Device-to-Host, Device-to-Device, Peer-to-Peer, ...) and source /
-- destination memory kind (pageable host memory is the classic slow path).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/memcpy_bandwidth.sql"
-- Units are decimal, as nsys reports them: total_mb in MB (10^6 bytes), bandwidth in GB/s (10^9 bytes a second,
-- which is bytes per ns). gb_per_s: total bytes / total copy time; peak_gb_per_s: the fastest single copy.
with by_kinds as (
  select copy_kind, src_kind, dst_kind, count(*) as copies, sum(size_bytes) as bytes, sum(dur) as dur,
         max(size_bytes * 1.0 / nullif(dur, 0)) as peak
  from trace_events where kind = 'memcpy' group by copy_kind, src_kind, dst_kind
)
select copy_kind as direction, coalesce(src_kind, '?') || ' -> ' || coalesce(dst_kind, '?') as memory,
       sum(copies) as copies,
       round(sum(bytes) / 1e6, 3) as total_mb,
       round(sum(dur) / 1e6, 3) as total_ms,
       round(sum(bytes) * 1.0 / nullif(sum(dur), 0), 3) as gb_per_s,
       round(max(peak), 3) as peak_gb_per_s
from by_kinds
group by direction, memory
order by sum(bytes) desc, direction, memory;
