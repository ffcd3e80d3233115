-- CUDA memory in use: per GPU and memory kind, the peak bytes in use, when it was reached, the allocation that
-- reached it and the NVTX ranges open on the thread that made that allocation at that moment.
-- From trace_events' cuda_memory rows (nsys --cuda-memory-usage=true: CUDA_GPU_MEMORY_USAGE_EVENTS, one row per
-- allocation or free), whose args.value is the bytes of that kind in use on that GPU just after the row: the running
-- sum, in (start, rowid) order, of the allocations' bytes minus the frees', over every process (docs/gpu-model.md).
--   peak_bytes      the largest of those values. A peak reached more than once counts at its FIRST moment: the
--                   earliest row (by start, then rowid) that leaves that many bytes in use. Rows at the same
--                   nanosecond count one after the other, as the counter draws them.
--   peak_ts         that row's start (ns); alloc_bytes, alloc_address its allocation; pid, tid, api_call the CUDA
--                   call that made it (by correlation id in its process; none for memory nsys records without a
--                   call, such as a module's static memory: then no thread and no NVTX ranges).
--   nvtx_ranges     the NVTX ranges of that thread open at peak_ts (start <= peak_ts < end), outermost first,
--                   joined by ' > '; nvtx_depth their number.
--   events, allocations, frees, allocated_bytes, freed_bytes, final_bytes: the kind's rows on the GPU, and the bytes
--                   in use after its last row. A run that never frees (PyTorch's caching allocator keeps what it
--                   got) has peak_bytes = allocated_bytes = final_bytes.
-- Memory allocated before nsys started recording is not counted (the sum starts at 0). No rows: no CUDA memory
-- events in the profile (record with --cuda-memory-usage=true).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/cuda_memory_peak.sql"
with memory as materialized (
  select rowid as event_rowid, pid - 16777216 as device, mem_kind, ts, json_extract(args, '$.value') as in_use,
         json_extract(args, '$.operation') as operation, size_bytes, json_extract(args, '$.address') as address,
         global_pid, call_name, call_pid, call_tid, call_global_tid
  from trace_events
  where kind = 'cuda_memory'
),
ranked as (
  select *,
         row_number() over (partition by device, mem_kind order by in_use desc, ts, event_rowid) as peak_rank,
         row_number() over (partition by device, mem_kind order by ts desc, event_rowid desc) as from_last,
         count(*) over kind_on_gpu as events,
         sum(operation = 'Allocation') over kind_on_gpu as allocations,
         sum(operation = 'Deallocation') over kind_on_gpu as frees,
         sum(case when operation = 'Allocation' then size_bytes else 0 end) over kind_on_gpu as allocated_bytes,
         sum(case when operation = 'Deallocation' then size_bytes else 0 end) over kind_on_gpu as freed_bytes
  from memory
  window kind_on_gpu as (partition by device, mem_kind)
),
peaks as (
  select p.*, f.in_use as final_bytes
  from ranked p join ranked f on f.device = p.device and f.mem_kind is p.mem_kind and f.from_last = 1
  where p.peak_rank = 1
),
-- The allocating thread's NVTX ranges open at the peak, outermost first (a range opened earlier, or longer, encloses):
-- each row's chain is the names so far in that order (group_concat as a window follows the window's order).
open_ranges as (
  select p.device, p.mem_kind,
         row_number() over outermost_first as depth,
         group_concat(n.name, ' > ') over (outermost_first rows between unbounded preceding and current row) as chain
  from peaks p join trace_events n
    on n.kind = 'nvtx' and n.global_tid = p.call_global_tid and n.ts <= p.ts and n.ts + n.dur > p.ts
  window outermost_first as (partition by p.device, p.mem_kind order by n.ts, n.dur desc, n.rowid)
),
-- The innermost row's chain holds them all (SQLite takes a bare column from the row max() picks).
nvtx as (
  select device, mem_kind, chain as nvtx_ranges, max(depth) as nvtx_depth from open_ranges group by device, mem_kind
)
select p.device, p.mem_kind as memory_kind, p.in_use as peak_bytes, p.ts as peak_ts,
       p.size_bytes as alloc_bytes, p.address as alloc_address,
       p.call_pid as pid, p.call_tid as tid, p.call_name as api_call,
       n.nvtx_ranges, coalesce(n.nvtx_depth, 0) as nvtx_depth,
       p.events, p.allocations, p.frees, p.allocated_bytes, p.freed_bytes, p.final_bytes
from peaks p left join nvtx n on n.device = p.device and n.mem_kind is p.mem_kind
order by p.device, peak_bytes desc, memory_kind;
