#!/usr/bin/env bash
# From a report to a trace: examples/nsys_rep_to_trace.sh report.nsys-rep [trace.json.gz]
# A .nsys-rep is first exported with `nsys export --type sqlite` (nsys must be on PATH); a .sqlite export is used
# as it is. The trace is written with chrome_trace_file(), gzipped when the name ends in .gz.
set -euo pipefail
input=${1:?usage: $0 report.nsys-rep|report.sqlite [trace.json.gz]}
here=$(cd "$(dirname "$0")" && pwd)
case "$input" in
  *.nsys-rep|*.qdrep)
    if ! command -v nsys > /dev/null; then
      echo "nsys_rep_to_trace: 'nsys' is not on PATH, so $input cannot be exported to SQLite here." >&2
      echo "Run 'nsys export --type sqlite --output report.sqlite $input' where Nsight Systems is installed," >&2
      echo "then: $0 report.sqlite" >&2
      exit 2
    fi
    profile=${input%.*}.sqlite
    nsys export --type sqlite --force-overwrite true --output "$profile" "$input"
    ;;
  *) profile=$input ;;
esac
out=${2:-${profile%.sqlite}.json.gz}
bytes=$(sqlite3 "file:$profile?mode=ro" ".load $here/../build/nsystrace" "select chrome_trace_file('${out//\'/\'\'}') from trace_events")
echo "wrote $out ($bytes bytes): open it in https://ui.perfetto.dev"
