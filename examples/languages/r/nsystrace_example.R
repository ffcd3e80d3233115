# nsystrace from R with RSQLite (its own SQLite), the way it documents loading an extension: a connection opened
# with loadable.extensions = TRUE (the default), then the SQL function load_extension(). Run from the clone after the
# quick start:
#   Rscript examples/languages/r/nsystrace_example.R
# Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
# of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
library(DBI)

# Prints each row of the query as its columns' values joined by '|' (numbers with up to 15 significant digits,
# as the sqlite3 shell prints them).
print_rows <- function(con, query, params = NULL) {
  rows <- dbGetQuery(con, query, params = params)
  for (column in seq_along(rows)) {
    if (is.numeric(rows[[column]])) rows[[column]] <- format(rows[[column]], digits = 15, trim = TRUE)
  }
  if (nrow(rows) > 0) writeLines(do.call(paste, c(unname(as.list(rows)), sep = "|")))
}

con <- dbConnect(RSQLite::SQLite(), "build/example.sqlite", flags = RSQLite::SQLITE_RO, loadable.extensions = TRUE)
invisible(dbGetQuery(con, "select load_extension('build/nsystrace')"))
cat("# sqlite_version\n")
print_rows(con, "select sqlite_version()")
cat("# kinds\n")
print_rows(con, "select kind, count(*) from trace_events group by kind order by kind")

cat("# top_kernels\n")
print_rows(con, paste(readLines("sql/top_kernels.sql"), collapse = "\n"))

trace <- "build/gpu0_kernels_r.pftrace"
cat("# trace ", trace, "\n", sep = "")
print_rows(con, "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", list(trace))

cat("# nvtx forward\n")
print_rows(con, paste("select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,",
                      "sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid"),
           list("forward"))
dbDisconnect(con)
