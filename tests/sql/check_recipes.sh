#!/usr/bin/env bash
# Runs every recipe in sql/ with .read, as users do, on the bundled example and on every real export of
# ../shared/fixtures/real (when present): each must run without error, and every number it shows must equal its
# plain-SQL reference over the raw nsys tables (check_recipe_numbers.py). On the example, a few results are also
# checked against values worked out from examples/example_profile.sql (its header lists the rows it generates).
#   check_recipes.sh SQLITE3 EXTENSION.so SOURCE_DIR
set -euo pipefail
sqlite3_bin=$1 so=${2%.so} src=$3
source "$src/tests/profiles.sh"
# Our CPU-sample fixture too: the bundled example has no samples, and it holds every oddity of their stacks.
"$sqlite3_bin" "$tmp/cpu_samples.sqlite" < "$src/tests/fixtures/cpu_samples.sql"
profiles+=("$tmp/cpu_samples.sqlite")
# And generated GPU work that overlaps (sums, unions and spans differ; NCCL partly hidden behind compute).
"$sqlite3_bin" "$tmp/concurrent_gpu_work.sqlite" < "$src/tests/fixtures/concurrent_gpu_work.sql"
profiles+=("$tmp/concurrent_gpu_work.sqlite")
# And a GPU whose breakdown, idle causes and findings are known by construction (its header).
"$sqlite3_bin" "$tmp/gpu_causes.sqlite" < "$src/tests/fixtures/gpu_causes.sql"
profiles+=("$tmp/gpu_causes.sqlite")
# CUDA memory allocated and freed, its peak reached twice, with the calls and NVTX ranges around it (its header).
"$sqlite3_bin" "$tmp/cuda_memory.sqlite" < "$src/tests/fixtures/cuda_memory.sql"
profiles+=("$tmp/cuda_memory.sqlite")
# PyTorch op ranges in each naming (emit_nvtx with and without shapes, PyTorch 1.0's "seq=" / "stashed seq="), with
# GPU work and backward nodes whose seq is stamped on two forward ops (its header).
"$sqlite3_bin" "$tmp/torch_ops.sqlite" < "$src/tests/fixtures/torch_ops.sql"
profiles+=("$tmp/torch_ops.sqlite")
# NVTX ranges of two (domain, name) pairs that print as one "domain:name": domain 'T:x' with ranges 'step' (pid 100)
# and domain 'T' with a range 'x:step' (pid 200), all "T:x:step". nvtx_gpu_proj_sum and nvtx_sum group by the
# printed text, as NVIDIA's reports do: one row of three ranges.
"$sqlite3_bin" "$tmp/nvtx_printed_alike.sqlite" < "$src/tests/fixtures/nvtx_domains_per_process.sql"
"$sqlite3_bin" "$tmp/nvtx_printed_alike.sqlite" "update NVTX_EVENTS set text = 'T:x' where rowid = 1" \
  "update NVTX_EVENTS set text = 'T' where rowid = 2" "update NVTX_EVENTS set text = 'x:step' where rowid = 6"
profiles+=("$tmp/nvtx_printed_alike.sqlite")
# GPU operations of no length at the ends of the span (gpu_busy's last bucket is one an operation of no length lies
# in, or the one before a bucket start an operation ends on) and a GPU with only such operations: overlap_stream with
# its kernels moved, two of them copied to GPU 1 (under correlation ids no call has).
"$sqlite3_bin" "$tmp/gpu_edges.sqlite" < "$src/tests/fixtures/overlap_stream.sql"
"$sqlite3_bin" "$tmp/gpu_edges.sqlite" \
  "update CUPTI_ACTIVITY_KIND_KERNEL set start = 50000000, \"end\" = 100001000 where rowid = 4" \
  "update CUPTI_ACTIVITY_KIND_KERNEL set start = 100001000, \"end\" = 100001000 where rowid = 3" \
  "insert into CUPTI_ACTIVITY_KIND_KERNEL select * from CUPTI_ACTIVITY_KIND_KERNEL where rowid in (1, 2)" \
  "update CUPTI_ACTIVITY_KIND_KERNEL set correlationId = correlationId + 100 where rowid > 4" \
  "update CUPTI_ACTIVITY_KIND_KERNEL set deviceId = 1, start = 250000000, \"end\" = 250000000 where rowid = 5" \
  "update CUPTI_ACTIVITY_KIND_KERNEL set deviceId = 1, start = 350000000, \"end\" = 350000000 where rowid = 6"
profiles+=("$tmp/gpu_edges.sqlite")
# Launches recorded twice (two API rows for one kernel, as exports of about 2022 have; no export here has them): an
# earlier call of another name, and the same call again on another thread of the process. The recipes that take a
# launch's call from trace_events' call_* columns (the earliest call, then the first stored) are checked on it below.
"$sqlite3_bin" "$tmp/launch_twins.sqlite" < "$src/tests/fixtures/correlation_reuse.sql"
"$sqlite3_bin" "$tmp/launch_twins.sqlite" "insert into StringIds values (9, 'cudaLaunchKernel')" \
  "insert into CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
   values (1990, 2100, 0, 281476654432356, 2, 9, 0), (3150, 3180, 0, 281478332154057, 3, 2, 0)"
[ ${#real_exports[@]} -gt 0 ] || echo "check_recipes: ../shared absent: recipes run on the bundled example only"
passed=0 failed=0
python=/usr/bin/python3; [ -x "$python" ] || python=python3
# Every recipe runs without error on every profile: those check_recipe_numbers.py checks (below) show it with every
# run of theirs; the others run here.
numbers_checked=$("$python" "$src/tests/sql/check_recipe_numbers.py" --list)
for p in "${profiles[@]}"; do
  for r in "$src"/sql/*.sql; do
    grep -qxF "$(basename "$r")" <<<"$numbers_checked" && continue
    if out=$("$sqlite3_bin" -bail "file:$p?mode=ro" -cmd ".load $so" ".read $r" 2>&1) && ! grep -qi "error" <<<"$out"; then
      passed=$((passed + 1))
    else
      echo "FAILED: $(basename "$r") on $(basename "$p"): $out" | head -5; failed=$((failed + 1))
    fi
  done
done
# Values on the example: 160 launches of ampere_sgemm_128x64_tn at 150 us = 24 ms, the top kernel; 40 HtoD copies
# of 4 MiB each; 40 'forward' ranges in the PyTorch domain.
check() {  # check LABEL RECIPE AWK_CONDITION [PROFILE]
  local out
  out=$("$sqlite3_bin" -csv "${4:-$tmp/example.sqlite}" -cmd ".load $so" ".read $src/sql/$2")
  if awk -F, "$3 { found = 1 } END { exit !found }" <<<"$out"; then passed=$((passed + 1)); else
    echo "FAILED: $1: $out" | head -5; failed=$((failed + 1)); fi
}
check "top kernel" top_kernels.sql 'NR == 1 && $1 == "ampere_sgemm_128x64_tn" && $2 == 160 && $3 == 24.0'
# 40 x 4 MiB = 167.772 MB (decimal, as nsys reports); 167772160 bytes in 3.36 ms = 49.932 GB/s.
check "HtoD bandwidth" memcpy_bandwidth.sql '$1 == "Host-to-Device" && $3 == 40 && $4 == 167.772 && $6 == 49.932'
check "NVTX GPU time" nvtx_gpu_time.sql '$1 == "PyTorch:forward" && $2 == 40'
check "busy fraction in range" gpu_busy.sql '$4 >= 0 && $4 <= 100'
check "launch latency positive" launch_latency.sql 'NR == 1 && $8 > 0'
check "overlap per GPU" compute_comm_overlap.sql '$1 == 0 && $2 == 40'
# The fixture's thread main (its header): 6 samples; matmul self 2 (33.3%), main on 5 stacks (83.3%) but self 0.
check "CPU hotspot self" cpu_hotspots.sql '$3 == "main" && $5 == "matmul" && $7 == 2 && $8 == 33.3 && $11 == 6' \
  "$tmp/cpu_samples.sqlite"
check "CPU hotspot total" cpu_hotspots.sql '$3 == "main" && $5 == "main" && $7 == 0 && $9 == 5 && $10 == 83.3' \
  "$tmp/cpu_samples.sqlite"
# gpu_causes.sql's values, from its header.
g=$tmp/gpu_causes.sqlite
check "breakdown by construction" gpu_time_breakdown.sql \
  '$1 == 0 && $2 == 230000 && $3 == 100000 && $4 == 20000 && $5 == 4850000 && $6 == 50000 && $12 == 5150000' "$g"
check "idle gap: host" gpu_idle.sql '$2 == 170000 && $3 == 2180000 && $5 == "host" && $8 == 2170000' "$g"
check "idle gap: sync" gpu_idle.sql '$2 == 2200000 && $4 == 1210000 && $5 == "sync" && $6 == "reduce_kernel"' "$g"
check "idle gap: other" gpu_idle.sql '$2 == 3420000 && $4 == 1580000 && $5 == "other" && $8 == 3405000' "$g"
check "pageable async copy" expert_findings.sql '$1 == "cuda_memcpy_async" && $4 == 160000 && $6 == "cudaMemcpyAsync_v3020"' "$g"
check "synchronous copy" expert_findings.sql '$1 == "cuda_memcpy_sync" && $4 == 5150000 && $6 == "cudaMemcpy_v3020"' "$g"
check "sync call" expert_findings.sql '$1 == "cuda_api_sync" && $4 == 2190000 && $5 == 110000' "$g"
if [ "$("$sqlite3_bin" -csv "$g" -cmd ".load $so" ".read $src/sql/expert_findings.sql" | grep -c '^gpu_time_util,')" = 28 ]
then passed=$((passed + 1)); else echo "FAILED: gpu_time_util findings on gpu_causes: not 28"; failed=$((failed + 1)); fi
check "kernel types" kernel_breakdown.sql '$1 == "GEMM" && $2 == 2 && $3 == 200000 && $6 == "ampere_sgemm_128x64_tn"' "$g"
check "launch delay" launch_stats.sql '$1 == "ncclDevKernel_AllReduce_Sum_f32_RING_LL" && $5 == 58000' "$g"
# Stream 7 holds calls 1 and 3's work at once from 4000 to 110000, and calls 6 and 7's from 3405000 to 3420000: depth
# 2; depth x time summed over the first 100 ms bucket is 2081000 ns, a mean of 0.02.
check "queue depth" queue_depth.sql '$1 == 0 && $2 == 7 && $3 == 0 && $5 == 2 && $6 == 0.02' "$g"
check "PyTorch names grouped" nvtx_gpu_time.sql '$1 == "aten::mm" && $2 == 2 && $9 == 2' "$g"
# cuda_memory.sql's peaks, from its header: the first of two moments at 4000 bytes, its thread's three open ranges.
m=$tmp/cuda_memory.sqlite
# (The ranges hold commas: the counts are read from the end of the line.)
check "memory peak: first moment" cuda_memory_peak.sql '$1 == 0 && $2 == "Device" && $3 == 4000 && $4 == 2000 && $8 == 10 &&
  index($0, ",\"step 0 > forward > aten::empty, seq = 1, op_id = 2, sizes = [[]]\",3,") &&
  $(NF - 5) == 7 && $(NF - 2) == 7500 && $(NF - 1) == 7000 && $NF == 500' "$m"
check "memory peak: no call" cuda_memory_peak.sql '$1 == 1 && $3 == 8589934592 && $7 == "" && $11 == 0 && $17 == 0' "$m"
# torch_ops.sql's ops, from its header (shapes hold commas: matched as text).
t=$tmp/torch_ops.sqlite
check "torch ops: shapes, GPU time" torch_op_sum.sql '$1 == "aten::linear" && $2 == "op" && $3 == 3 && $4 == 2500 &&
  $5 == 700 && $6 == 2 && index($0, ",\"[[8, 16], [32, 16], [32]]\",2,,0,,")' "$t"
check "torch ops: backward node and its forward op" torch_op_sum.sql '$1 == "AddmmBackward0" && $2 == "\"backward node\"" &&
  $3 == 2 && $4 == 700 && $5 == 400 && index($0, ",aten::addmm,2,1600,700")' "$t"
check "torch ops: forward op and its backward node" torch_op_sum.sql '$1 == "aten::addmm" && index($0, ",AddmmBackward0,2,700,400")' "$t"
check "torch ops: autograd-nvtx names" torch_op_sum.sql '$1 == "aten::relu" && $7 == "" && index($0, ",ReluBackward0,1,50,0")' "$t"
check "torch ops: a range never closed" torch_op_sum.sql '$1 == "aten::zero_" && $3 == 1 && $4 == 500 && $5 == 500' "$t"
check "torch ops: a bare aten:: name" torch_op_sum.sql '$1 == "aten::empty" && $3 == 1 && $4 == 100' "$t"
check "torch ops: stashed seq" torch_op_sum.sql '$1 == "MulBackward0" && $2 == "\"backward node\"" && index($0, ",aten::mul,1,100,0")' "$t"
if ! "$sqlite3_bin" -csv "$t" -cmd ".load $so" ".read $src/sql/torch_op_sum.sql" | grep -q train_step; then
  passed=$((passed + 1)); else echo "FAILED: torch_op_sum.sql shows a range without PyTorch's fields"; failed=$((failed + 1)); fi
# Before / after (sql/diff.sql): gpu_causes_after.sql's changes, and nothing else, by construction (its header).
cat "$src/tests/fixtures/gpu_causes.sql" "$src/tests/fixtures/changes/gpu_causes_after.sql" | "$sqlite3_bin" "$tmp/gpu_causes_after.sqlite"
diff_out=$("$sqlite3_bin" -csv :memory: -cmd ".load $so" "attach '$g' as before" \
  "attach '$tmp/gpu_causes_after.sqlite' as after" ".read $src/sql/diff.sql")
changed=$(awk -F, '$7 != 0 { print $1 "," $2 "," $3 "," $4 "," $5 "," $6 "," $7 "," $8 "," $9 }' <<<"$diff_out")
expected='event,kernel,5,5,330000,450000,120000,36.4,""
kernel,ampere_sgemm_128x64_tn,2,2,200000,300000,100000,50.0,""
kernel,triton_poi_fused_add_0,0,1,0,30000,30000,,new
kernel,reduce_kernel,1,0,10000,0,-10000,-100.0,vanished'
if [ "$changed" = "$expected" ] && grep -q '^nvtx,aten::mm,2,2,12500,12500,0,0.0,"",' <<<"$diff_out"; then
  passed=$((passed + 1)); else echo "FAILED: diff.sql on gpu_causes -> gpu_causes_after: $diff_out"; failed=$((failed + 1)); fi
# One table of kernel types: gpu_time_breakdown.sql holds kernel_breakdown.sql's, unchanged.
types() { sed -n '/-- BEGIN kernel_types/,/-- END kernel_types/p' "$src/sql/$1"; }
if [ -n "$(types kernel_breakdown.sql)" ] && [ "$(types kernel_breakdown.sql)" = "$(types gpu_time_breakdown.sql)" ]; then
  passed=$((passed + 1)); else echo "FAILED: the kernel_types tables of kernel_breakdown.sql and gpu_time_breakdown.sql differ"
  failed=$((failed + 1)); fi
# A damaged export (tests/fixtures/hostile.sql: GPU work at both ends of the int64 range, a 3 MB name): every
# recipe ends, without error, in bounded time; the bucketed recipes widen their buckets to at most 100,000 (the
# rule in docs/limits.md), their bucket numbers and starts stay exact integers; gpu_idle's totals past 2^63 - 1 ns
# read as a REAL, not an error.
"$sqlite3_bin" "$tmp/hostile.sqlite" < "$src/tests/fixtures/hostile.sql"
h=$tmp/hostile.sqlite
for r in "$src"/sql/*.sql "$src"/sql/nsys_stats/*.sql; do
  if out=$(timeout 60 "$sqlite3_bin" -bail "file:$h?mode=ro" -cmd ".load $so" ".read $r" 2>&1 >/dev/null) && [ -z "$out" ]
  then passed=$((passed + 1)); else echo "FAILED: $(basename "$r") on hostile.sqlite (exit $?): $out" | head -3
    failed=$((failed + 1)); fi
done
# (2^64 - 1624) ns of span in 100,000 buckets: 184467440737096 ns each (the bucket_start_ns of bucket 1 is t0 + w).
check "hostile span: bounded buckets" gpu_busy.sql 'NR == 100000 && $2 == 99999 && $3 == 9223187569414087096' "$h"
check "hostile span: second bucket" gpu_busy.sql 'NR == 2 && $3 == -9223187569414038712' "$h"
check "hostile span: queue depth" queue_depth.sql '$3 == 49999 && $4 == -184467440712904 && $5 == 2' "$h"
check "hostile span: idle totals" gpu_idle.sql 'NR == 1 && $4 == 9223372036854775100 && $10 == "1.84467440737095e+19"' "$h"
# Two (domain, name) pairs printed alike make one row (the extension's groups are merged again in SQL).
check "NVTX names printed alike" nsys_stats/nvtx_gpu_proj_sum.sql '$1 == "T:x:step" && $2 == "PushPop" && $5 == 3' \
  "$tmp/nvtx_printed_alike.sqlite"
check "NVTX names printed alike: nvtx_sum" nsys_stats/nvtx_sum.sql '$9 == "T:x:step" && $3 == 3 && $2 == 2300' \
  "$tmp/nvtx_printed_alike.sqlite"
# CUDA graphs traced per node (tests/fixtures/graph_nodes.sql, values from its header): two replays of one graph,
# the second over two streams with overlapping nodes, and a memset node whose launch call is missing.
"$sqlite3_bin" "$tmp/graph_nodes.sqlite" < "$src/tests/fixtures/graph_nodes.sql"
gn=$tmp/graph_nodes.sqlite
check "graph replays" cuda_graph_sum.sql 'NR == 1 && $1 == 100 && $2 == 8589934592 && $3 == 2 &&
  $4 == "cudaGraphLaunch_v10000" && $5 == 2 && $6 == 2.0 && $7 == 0.0 && $8 == 0.25 && $9 == 0.2 && $10 == 0.3 &&
  $11 == 0.29 && $12 == 0.48 && $13 == 0.025 && $14 == 10.0' "$gn"
check "graph without its launch call" cuda_graph_sum.sql 'NR == 2 && $2 == 8589934594 && $3 == 1 && $4 == "" &&
  $5 == 1 && $6 == 0.0 && $7 == 1.0 && $8 == 0.01 && $11 == "" && $13 == 0.0 && $14 == 0.0' "$gn"
if [ "$("$sqlite3_bin" -csv "$gn" -cmd ".load $so" "select json_extract(args, '\$.graph_node_original_id'),
    json_extract(args, '\$.graph_node_created_by'), json_extract(args, '\$.graph_node_created_ts'),
    json_extract(args, '\$.graph_node_created_correlation_id') from trace_events where kind = 'kernel' and ts = 1100")" \
    = '4294967296,cudaLaunchKernel_v7000,100,1' ]; then passed=$((passed + 1))
else echo "FAILED: graph node creation args on graph_nodes.sqlite"; failed=$((failed + 1)); fi
# Its replay slices in the JSON (name, stream, ts and dur in us, nodes), one per replay and stream, from its header.
replays=$("$sqlite3_bin" -csv "$gn" -cmd ".load $so" "with t(j) as (select chrome_trace(*) from trace_events)
  select group_concat(json_extract(value, '\$.name') || ' ' || json_extract(value, '\$.tid') || ' ' ||
  json_extract(value, '\$.ts') || ' ' || json_extract(value, '\$.dur') || ' ' || json_extract(value, '\$.args.nodes'),
  '; ') from t, json_each(t.j, '\$.traceEvents') where json_extract(value, '\$.cat') = 'graph'")
if [ "$replays" = '"cudaGraphLaunch_v10000 7 1.1 0.3 2; cudaGraphLaunch_v10000 7 1.5 0.1 1; cudaGraphLaunch_v10000 8 1.55 0.15 1; CUDA graph replay 7 2 0.01 1"' ]
then passed=$((passed + 1)); else echo "FAILED: replay slices of graph_nodes.sqlite: $replays"; failed=$((failed + 1)); fi
# Every number against its reference over the raw tables (Debian's python3: standard library only).
if ! ONLY=cuda_graph_sum "$python" "$src/tests/sql/check_recipe_numbers.py" "$sqlite3_bin" "$so" "$gn"; then
  failed=$((failed + 1)); fi
if ! "$python" "$src/tests/sql/check_recipe_numbers.py" "$sqlite3_bin" "$so" "${profiles[@]}"; then failed=$((failed + 1)); fi
reading_call_columns='cuda_kern_exec_sum|launch_stats|launch_latency|queue_depth|expert_findings|gpu_idle'
if ! ONLY=$reading_call_columns "$python" "$src/tests/sql/check_recipe_numbers.py" "$sqlite3_bin" "$so" \
    "$tmp/launch_twins.sqlite"; then failed=$((failed + 1)); fi
# sql/gpu_metrics_busy.sql on the export with GPU metrics (../shared/fixtures/large, kept apart from the real exports
# every recipe runs on), when present: every row equals its plain-SQL reference over the export's tables
# (gpu_metrics_busy_plain.sql: the integers exactly, the means within 1e-9 of each other, relatively), and each NVTX
# range's busy time is its nvtx_kernel_ranges.gpu_busy_time (its work is on one GPU there).
large=$src/../shared/fixtures/large/h200_nccl_1rank_gpu_metrics.sqlite
if [ -f "$large" ]; then
  "$sqlite3_bin" "file:$large?mode=ro" -cmd ".load $so" ".read $src/sql/gpu_metrics_busy.sql" > "$tmp/busy.recipe"
  "$sqlite3_bin" "file:$large?mode=ro" < "$src/tests/sql/gpu_metrics_busy_plain.sql" > "$tmp/busy.plain"
  "$sqlite3_bin" "file:$large?mode=ro" -cmd ".load $so" "select rowid, gpu_busy_time from nvtx_kernel_ranges" \
    > "$tmp/busy.ranges"
  if [ -s "$tmp/busy.plain" ] && awk -F'|' 'NR == FNR { want[FNR] = $0; n = FNR; next }
      { split(want[FNR], w, "|"); for (i = 1; i <= 7; ++i) if ($i != w[i]) exit 1
        if (($8 == "") != (w[8] == "")) exit 1
        if ($8 != "" && ($8 - w[8]) ^ 2 > (1e-9 * w[8]) ^ 2) exit 1; m = FNR }
      END { exit m == n ? 0 : 1 }' "$tmp/busy.plain" "$tmp/busy.recipe" &&
    awk -F'|' 'NR == FNR { busy[$1] = $2; next } $1 == "nvtx" { seen[$2] = 1; if (busy[$2] != $6) exit 1 }
      END { for (r in busy) if (!(r in seen)) exit 1 }' "$tmp/busy.ranges" "$tmp/busy.recipe"
  then passed=$((passed + 1)); else echo "FAILED: gpu_metrics_busy.sql against its plain SQL on $(basename "$large")"
    diff "$tmp/busy.plain" "$tmp/busy.recipe" | head -6; failed=$((failed + 1)); fi
else
  echo "check_recipes: ../shared/fixtures/large absent: gpu_metrics_busy.sql NOT checked against plain SQL"
fi
echo "check_recipes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
