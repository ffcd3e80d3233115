-- Memcpy bandwidth by direction (Host-to-Device, Device-to-Host, Device-to-Device, Peer-to-Peer, ...) and source /
-- destination memory kind (pageable host memory is the classic slow path).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/memcpy_bandwidth.sql"
-- Units are decimal, as nsys reports them: total_mb in MB (10^6 bytes), bandwidth in GB/s (10^9 bytes a second,
-- which is bytes per ns). gb_per_s: total bytes / total copy time; peak_gb_per_s: the fastest single copy.
-- Each copy's args are parsed twice, not four times (SQLite 3.40 keeps no parsed JSON between calls): the three
-- kinds come out as one JSON array, the group's key, which is taken apart once per group.
with copies as materialized (
  select json_extract(args, '$.copy_kind', '$.src_kind', '$.dst_kind') as kinds, json_extract(args, '$.bytes') as bytes,
         dur
  from trace_events where kind = 'memcpy'
),
by_kinds as (
  select kinds, count(*) as copies, sum(bytes) as bytes, sum(dur) as dur, max(bytes * 1.0 / nullif(dur, 0)) as peak
  from copies group by kinds
)
select json_extract(kinds, '$[0]') as direction,
       coalesce(json_extract(kinds, '$[1]'), '?') || ' -> ' || coalesce(json_extract(kinds, '$[2]'), '?') as memory,
       sum(copies) as copies,
       round(sum(bytes) / 1e6, 3) as total_mb,
       round(sum(dur) / 1e6, 3) as total_ms,
       round(sum(bytes) * 1.0 / nullif(sum(dur), 0), 3) as gb_per_s,
       round(max(peak), 3) as peak_gb_per_s
from by_kinds
group by direction, memory
order by sum(bytes) desc, direction, memory;
