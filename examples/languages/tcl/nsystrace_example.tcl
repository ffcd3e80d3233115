# nsystrace from Tcl with SQLite's own Tcl interface (Debian's libsqlite3-tcl, the system SQLite), the way it
# documents loading an extension (db enable_load_extension, then the SQL function load_extension()). Run from the
# clone after the quick start:
#   tclsh examples/languages/tcl/nsystrace_example.tcl
# Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
# of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
package require sqlite3

# Prints each row of the query as its columns' values joined by '|'. Parameters are Tcl variables ($name) of the
# caller, bound by the sqlite3 command, never substituted into the SQL text.
proc print_rows {query} {
  uplevel 1 [list db eval $query row {
    set fields {}
    foreach column $row(*) { lappend fields $row($column) }
    puts [join $fields |]
  }]
}

sqlite3 db build/example.sqlite -readonly true
db enable_load_extension 1
db eval {select load_extension('build/nsystrace')}
db enable_load_extension 0 ;# the SQL function load_extension() stays off
puts "# sqlite_version"
print_rows {select sqlite_version()}
puts "# kinds"
print_rows {select kind, count(*) from trace_events group by kind order by kind}

puts "# top_kernels"
set file [open sql/top_kernels.sql]
# (a leading space: `db eval` would take SQL that starts with its comment, "--", for an option)
print_rows " [read $file]"
close $file

set trace build/gpu0_kernels_tcl.pftrace
puts "# trace $trace"
print_rows {select perfetto_trace_file($trace) from trace_events where kind = 'kernel' and device_id = 0}

puts "# nvtx forward"
set name forward
print_rows {select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,
            sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = $name group by pid order by pid}
db close
