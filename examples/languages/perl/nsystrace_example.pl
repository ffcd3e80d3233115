#!/usr/bin/perl
# nsystrace from Perl with DBI and DBD::SQLite (Debian's libdbd-sqlite3-perl, the system SQLite), the way it
# documents loading an extension (sqlite_enable_load_extension, sqlite_load_extension). Run from the clone after the
# quick start:
#   perl examples/languages/perl/nsystrace_example.pl
# Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
# of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
use strict;
use warnings;
use DBI;
use DBD::SQLite::Constants qw(:file_open);

# Prints each row of the query as its columns' values joined by '|'.
sub print_rows {
  my ($dbh, $query, @params) = @_;
  for my $row (@{ $dbh->selectall_arrayref($query, undef, @params) }) {
    print join("|", map { defined $_ ? $_ : "" } @$row), "\n";
  }
}

my $dbh = DBI->connect("dbi:SQLite:dbname=build/example.sqlite", "", "",
                       { RaiseError => 1, sqlite_open_flags => SQLITE_OPEN_READONLY });
$dbh->sqlite_enable_load_extension(1);
$dbh->sqlite_load_extension("build/nsystrace");
$dbh->sqlite_enable_load_extension(0);  # the SQL function load_extension() stays off
print "# sqlite_version\n";
print_rows($dbh, "select sqlite_version()");
print "# kinds\n";
print_rows($dbh, "select kind, count(*) from trace_events group by kind order by kind");

print "# top_kernels\n";
open(my $file, "<", "sql/top_kernels.sql") or die "sql/top_kernels.sql: $!";
print_rows($dbh, do { local $/; <$file> });

my $trace = "build/gpu0_kernels_perl.pftrace";
print "# trace $trace\n";
print_rows($dbh, "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", $trace);

print "# nvtx forward\n";
print_rows($dbh, "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"
               . " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid",
           "forward");
$dbh->disconnect;
