# nsystrace from Ruby with the sqlite3 gem (Debian's ruby-sqlite3, the system SQLite), the way it documents loading
# an extension (enable_load_extension, load_extension). Run from the clone after the quick start:
#   ruby examples/languages/ruby/nsystrace_example.rb
# Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
# of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
require "sqlite3"

# Prints each row of the query as its columns' values joined by '|'.
def print_rows(db, query, *params)
  db.execute(query, params).each { |row| puts row.map { |v| v.nil? ? "" : v.to_s }.join("|") }
end

db = SQLite3::Database.new("build/example.sqlite", readonly: true)
db.enable_load_extension(true)
db.load_extension("build/nsystrace")
db.enable_load_extension(false) # the SQL function load_extension() stays off
puts "# sqlite_version"
print_rows(db, "select sqlite_version()")
puts "# kinds"
print_rows(db, "select kind, count(*) from trace_events group by kind order by kind")

puts "# top_kernels"
print_rows(db, File.read("sql/top_kernels.sql"))

trace = "build/gpu0_kernels_ruby.pftrace"
puts "# trace #{trace}"
print_rows(db, "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", trace)

puts "# nvtx forward"
print_rows(db, "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns," \
               " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid",
           "forward")
db.close
