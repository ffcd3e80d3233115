-- Before / after: what changed between two reports of the same program (a code change, a new library version).
-- ATTACH them as `before` and `after` (or set their schema names below; a report not ATTACHed under its name
-- is `main`, so on one report alone every delta is 0):
--   sqlite3 :memory: ".load ./build/nsystrace" "attach 'before.sqlite' as before" "attach 'after.sqlite' as after" \
--           ".read sql/diff.sql"
-- One row per (kind, name): kind 'kernel' per kernel name (the sum of its durations), 'nvtx' per NVTX range name
-- (domain:name; the sum of the ranges' durations), 'event' per kind of event (kernel, memcpy, cuda_api, nvtx, ...:
-- every event of that kind). Names are matched after removing what differs between runs of the same program:
-- PyTorch's per-call fields (", seq = N", ", op_id = N", ", input_op_ids = ..." to the end) and addresses (a 0x
-- and 4 or more hex digits at the start of a word become 0x?). count_before and count_after, total_ns_before and
-- total_ns_after (integer ns), delta_ns = after - before, delta_pct = delta_ns against the time before (NULL for a
-- name new in after); change: 'new' (only in after), 'vanished' (only in before) or ''; mean_ns_before/after.
-- Sorted by the absolute delta, the largest first.
with params(before, after) as (
  select coalesce((select name from pragma_database_list where name = 'before'), 'main'),
         coalesce((select name from pragma_database_list where name = 'after'), 'main')
),
-- Each report read alone (schema = one name): reports need not share a clock to be compared. Each report's totals
-- per (kind, name, domain) come from one scan of event_totals, which totals trace_events' rows as it reads them
-- (timed: the rows with a duration; total_ns: the sum of their durations; a GROUP BY over trace_events would sort
-- every row first, and one scan of every kind reads the tables on the cores there are). The events stored in the
-- profiles (derived = 0): an NVTX range's GPU projection would count its time a second time.
raw_rows as materialized (
  select 'before' as side, kind, name, domain, timed as n, total_ns as ns from event_totals
  where schema = (select before from params) and derived = 0 and timed > 0
  union all
  select 'after', kind, name, domain, timed, total_ns from event_totals
  where schema = (select after from params) and derived = 0 and timed > 0
),
-- Kernels per name, NVTX ranges per domain:name, and every kind per kind (the 'event' rows below).
named_rows as (
  select side, kind, case kind when 'nvtx' then coalesce(domain || ':', '') || name else name end as name, n, ns
  from raw_rows where kind in ('kernel', 'nvtx')
),
names as (select distinct name from named_rows),
no_input_ids as (
  select name, case when instr(name, ', input_op_ids = ') > 0
                    then substr(name, 1, instr(name, ', input_op_ids = ') - 1) else name end as n1
  from names
),
no_seq as (
  select name, case when instr(n1, ', seq = ') > 0
                    then substr(n1, 1, instr(n1, ', seq = ') - 1) || ltrim(substr(n1, instr(n1, ', seq = ') + 8), '0123456789')
                    else n1 end as n2
  from no_input_ids
),
no_op_id as (
  select name, case when instr(n2, ', op_id = ') > 0
                    then substr(n2, 1, instr(n2, ', op_id = ') - 1) || ltrim(substr(n2, instr(n2, ', op_id = ') + 10), '0123456789')
                    else n2 end as n3
  from no_seq
),
-- done: the part already rewritten; rest: the part after it. Each step rewrites up to the next "0x" in rest: an
-- address when 4 or more hex digits follow it and it starts a word (no letter, digit or _ before it).
addresses(name, done, rest) as (
  select name, '', n3 from no_op_id
  union all
  select name,
         done || case when (length(rest) - instr(rest, '0x') - 1 - length(ltrim(substr(rest, instr(rest, '0x') + 2), '0123456789abcdefABCDEF')) >= 4
               and substr(done || substr(rest, 1, instr(rest, '0x') - 1), -1) not glob '[0-9A-Za-z_]')
                      then substr(rest, 1, instr(rest, '0x') - 1) || '0x?' else substr(rest, 1, instr(rest, '0x') + 1) end,
         case when (length(rest) - instr(rest, '0x') - 1 - length(ltrim(substr(rest, instr(rest, '0x') + 2), '0123456789abcdefABCDEF')) >= 4
               and substr(done || substr(rest, 1, instr(rest, '0x') - 1), -1) not glob '[0-9A-Za-z_]')
              then ltrim(substr(rest, instr(rest, '0x') + 2), '0123456789abcdefABCDEF') else substr(rest, instr(rest, '0x') + 2) end
  from addresses where instr(rest, '0x') > 0
),
normalized as (select name, done || rest as stable from addresses where instr(rest, '0x') = 0),
keyed as (
  select side, r.kind, coalesce(m.stable, r.name) as name, n, ns
  from named_rows r left join normalized m on m.name = r.name
  union all
  select side, 'event', kind, sum(n), sum(ns) from raw_rows group by side, kind
),
joined as (
  select kind, name,
         coalesce(sum(n) filter (where side = 'before'), 0) as count_before,
         coalesce(sum(n) filter (where side = 'after'), 0) as count_after,
         coalesce(sum(ns) filter (where side = 'before'), 0) as total_ns_before,
         coalesce(sum(ns) filter (where side = 'after'), 0) as total_ns_after
  from keyed group by kind, name
)
select kind, name, count_before, count_after, total_ns_before, total_ns_after,
       total_ns_after - total_ns_before as delta_ns,
       round(100.0 * (total_ns_after - total_ns_before) / nullif(total_ns_before, 0), 1) as delta_pct,
       case when count_before = 0 then 'new' when count_after = 0 then 'vanished' else '' end as change,
       round(1.0 * total_ns_before / nullif(count_before, 0), 1) as mean_ns_before,
       round(1.0 * total_ns_after / nullif(count_after, 0), 1) as mean_ns_after
from joined
order by abs(total_ns_after - total_ns_before) desc, kind, name;
