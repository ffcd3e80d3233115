#!/usr/bin/env bash
# The whole conversion in one line of shell: examples/one_liner.sh prof.sqlite > prof.json
sqlite3 "file:$1?mode=ro" ".load $(dirname "$0")/../build/nsystrace" "select chrome_trace(*) from trace_events"
