-- PyTorch ops from their NVTX ranges: torch.autograd.profiler.emit_nvtx, or nsys --pytorch=autograd-nvtx /
-- autograd-shapes-nvtx (which turn on emit_nvtx with record_shapes False / True). PyTorch names every call
-- differently ("aten::mm, seq = 12, op_id = 345, sizes = [[256, 4096], [4096, 1024]], input_op_ids = [...]"), so
-- NVIDIA's nvtx_sum has a row per call; this has a row per op.
--   op             the name up to its first ', ' ("aten::mm", "MmBackward0",
--                  "autograd::engine::evaluate_function: MmBackward0").
--   kind           'backward node' for the ranges of autograd's backward nodes (an op named *Backward or
--                  *Backward<N> with a seq, or one marked "stashed seq", older PyTorch's name for it); 'op' for the rest.
--   calls, cpu_ns  its ranges and the sum of their durations as NVIDIA's nvtx_sum counts them (nsys_dur: a range
--                  never closed ends at the last NVTX timestamp), so cpu_ns is the sum of nvtx_sum's Total Time over
--                  the op's names. A range includes the ops nested in it (aten::linear's time holds its
--                  aten::addmm's), so the rows do not add up.
--   gpu_ns         the GPU time of the work its calls launched: per range, the union of the intervals of the
--                  kernels, memcpys and memsets launched inside it (nvtx_kernel_ranges.gpu_busy_time, nested ops'
--                  work included), summed over its ranges; gpu_calls the ranges that launched any.
--   top_shapes, top_shapes_calls: the most common input shapes (the "sizes = [...]" field; record_shapes=True
--                  only) and how many calls had them (ties: the first in text order).
--   paired_op, paired_calls, paired_cpu_ns, paired_gpu_ns: forward and backward side by side. A backward node's
--                  "seq = N" is the sequence number its forward op had (PyTorch's docs, emit_nvtx): the forward
--                  range of a backward node is the range of the same process with the same seq, not itself a
--                  backward node, that started last before it (PyTorch stamps the ops that start before the node is
--                  made with the same seq; the last of them, the innermost, made it: aten::conv1d, then
--                  aten::convolution, which makes ConvolutionBackward0). On an 'op' row: the backward nodes its
--                  calls made (the most common name; all of them counted); on a 'backward node' row: the forward op.
-- Only PyTorch's op ranges count: those that carry one of its fields (", seq = ", ", seq=", ", stashed seq",
-- ", op_id = ", ", sizes = "), and those named aten::... (older PyTorch names an op outside autograd by its bare
-- name). User ranges (train_step, forward) are left out, and so would be another bare-named op (a custom op's).
-- Usage: sqlite3 prof.sqlite ".load ./build/nsystrace" ".read sql/torch_op_sum.sql"
--        nsystrace stats torch_op_sum rank*.sqlite
with ranges as materialized (
  select rowid >> 5 as nvtx_rowid, global_pid, ts, nsys_dur as dur, name,
         case when instr(name, ', ') > 0 then substr(name, 1, instr(name, ', ') - 1) else name end as op,
         case when instr(name, ', seq = ') > 0 then cast(substr(name, instr(name, ', seq = ') + 8) as integer)
              when instr(name, ', seq=') > 0 then cast(substr(name, instr(name, ', seq=') + 6) as integer)
              when instr(name, ', stashed seq = ') > 0 then cast(substr(name, instr(name, ', stashed seq = ') + 16) as integer)
              when instr(name, ', stashed seq=') > 0 then cast(substr(name, instr(name, ', stashed seq=') + 14) as integer)
         end as seq,
         instr(name, ', stashed seq') > 0 as stashed,
         case when instr(name, ', sizes = ') > 0 then substr(name, instr(name, ', sizes = ') + 10) end as sizes_on
  from trace_events
  where kind = 'nvtx' and dur is not null
    and (instr(name, ', seq = ') or instr(name, ', seq=') or instr(name, ', stashed seq') or instr(name, ', op_id = ')
         or instr(name, ', sizes = ') or name glob 'aten::*')
),
-- The projection only when there are PyTorch ranges to give it to (it is most of the cost on a large profile).
gpu as materialized (select rowid as nvtx_rowid, gpu_busy_time from nvtx_kernel_ranges where exists (select 1 from ranges)),
calls as materialized (
  select r.*, g.gpu_busy_time,
         case when instr(sizes_on, ', input_op_ids = ') > 0 then substr(sizes_on, 1, instr(sizes_on, ', input_op_ids = ') - 1)
              else sizes_on end as shapes,
         seq is not null and (stashed or ((op glob '*Backward' or op glob '*Backward[0-9]' or op glob '*Backward[0-9][0-9]')
                                           and op not glob 'autograd::*')) as backward_node
  from ranges r left join gpu g using (nvtx_rowid)
),
-- Each backward node with the forward range that made it.
pairs as materialized (
  select b.nvtx_rowid as backward_rowid,
         (select f.nvtx_rowid from calls f
          where f.global_pid = b.global_pid and f.seq = b.seq and not f.backward_node and f.ts <= b.ts
          order by f.ts desc, f.nvtx_rowid desc limit 1) as forward_rowid
  from calls b where b.backward_node
),
paired as (
  select f.op as forward_op, b.op as backward_op, count(*) as n, sum(b.dur) as b_cpu, sum(coalesce(b.gpu_busy_time, 0)) as b_gpu,
         sum(f.dur) as f_cpu, sum(coalesce(f.gpu_busy_time, 0)) as f_gpu
  from pairs p join calls b on b.nvtx_rowid = p.backward_rowid join calls f on f.nvtx_rowid = p.forward_rowid
  group by f.op, b.op
),
-- Per row: (op, kind) -> its partner, ranked by count, then name.
partners as (
  select forward_op as op, 'op' as kind, backward_op as partner, n, b_cpu as cpu, b_gpu as gpu from paired
  union all
  select backward_op, 'backward node', forward_op, n, f_cpu, f_gpu from paired
),
partner_totals as (
  select op, kind, sum(n) as paired_calls, sum(cpu) as paired_cpu_ns, sum(gpu) as paired_gpu_ns,
         (select p2.partner from partners p2 where p2.op = p.op and p2.kind = p.kind
          order by p2.n desc, p2.partner limit 1) as paired_op
  from partners p group by op, kind
),
ops as (
  select op, case when backward_node then 'backward node' else 'op' end as kind, count(*) as calls, sum(dur) as cpu_ns,
         coalesce(sum(gpu_busy_time), 0) as gpu_ns, count(gpu_busy_time) as gpu_calls
  from calls group by 1, 2
),
shape_counts as (
  select op, case when backward_node then 'backward node' else 'op' end as kind, shapes, count(*) as n
  from calls where shapes is not null group by 1, 2, 3
),
top_shapes as (
  select op, kind, shapes, n from (
    select *, row_number() over (partition by op, kind order by n desc, shapes) as r from shape_counts) where r = 1
)
select o.op, o.kind, o.calls, o.cpu_ns, o.gpu_ns, o.gpu_calls, s.shapes as top_shapes, s.n as top_shapes_calls,
       t.paired_op, coalesce(t.paired_calls, 0) as paired_calls, t.paired_cpu_ns, t.paired_gpu_ns
from ops o
left join top_shapes s on s.op = o.op and s.kind = o.kind
left join partner_totals t on t.op = o.op and t.kind = o.kind
order by o.gpu_ns desc, o.cpu_ns desc, o.op, o.kind;
