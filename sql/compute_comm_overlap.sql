-- Overlap of compute with communication, per GPU: how much NCCL kernel time ran while other (compute) kernels ran
-- on the same device. Communication = kernels whose name starts with 'nccl' (NCCL's device kernels).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/compute_comm_overlap.sql"
-- comm_ms: NCCL kernel time; overlapped_ms: the part of it hidden behind compute kernels; exposed_ms: the rest.
-- How: nsystrace_covered_ns(start, end, covers) takes a GPU's kernels, makes the union of its compute kernels (the time
-- at least one ran: covers = 1) and sums the time of each NCCL kernel inside it. One sort of the compute kernels and
-- two binary searches per NCCL kernel, in the extension; the same in SQL takes windows over the kernels in start
-- order and a join (this file's earlier form: 4.4 s on the 200x profile).
with k as (
  select device_id, ts as s, ts + dur as e, name like 'nccl%' as comm from trace_events where kind = 'kernel'
),
per_device as (
  select device_id, sum(comm) as nccl_kernels, sum(case when comm then e - s end) as comm_ns,
         nsystrace_covered_ns(s, e, not comm) as hidden_ns
  from k
  group by device_id
)
select device_id,
       nccl_kernels,
       round(comm_ns / 1e6, 3) as comm_ms,
       round(hidden_ns / 1e6, 3) as overlapped_ms,
       round((comm_ns - hidden_ns) / 1e6, 3) as exposed_ms,
       round(100.0 * hidden_ns / comm_ns, 1) as overlapped_pct
from per_device
where nccl_kernels > 0
order by device_id;
