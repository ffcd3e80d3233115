# Sourced by recipes_bench.sh and recipe_floors.sh: the baseline their "x scan" ratios divide by, SQLite reading every
# row of the event tables the recipes read (NVTX, CUDA API calls, kernels, and memcpys and memsets where the export
# has them), no extension loaded.
#   recipes_scan_sql URI   prints the statement
recipes_scan_sql() {
  local uri=$1 t
  local sql="select (select count(*) + sum(\"end\" - start) from NVTX_EVENTS) + (select count(*) + sum(\"end\" - start) from CUPTI_ACTIVITY_KIND_RUNTIME) + (select count(*) + sum(\"end\" - start) from CUPTI_ACTIVITY_KIND_KERNEL)"
  for t in CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET; do
    [ "$(sqlite3 "$uri" "select count(*) from sqlite_schema where name = '$t'")" = 1 ] &&
      sql="$sql + (select count(*) + sum(\"end\" - start) from $t)"
  done
  echo "$sql"
}
