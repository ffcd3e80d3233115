// nsystrace from Node.js with better-sqlite3, the way it documents loading an extension (db.loadExtension).
// better-sqlite3 carries its own SQLite (3.53.2 in 12.11.1). Install it from source, then run from the clone after
// the quick start (docs/languages.md):
//   (cd examples/languages/node && npm_config_nodedir=/usr npm ci --build-from-source)
//   node examples/languages/node/nsystrace_example.js
// Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
// of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward".
const fs = require("fs");

// Each row as its columns' values joined by '|' (.raw(): as arrays, in the query's column order).
function printRows(statement, ...params) {
  for (const row of statement.raw().iterate(...params)) console.log(row.map((v) => (v === null ? "" : v)).join("|"));
}

const Database = require("better-sqlite3");
const db = new Database("build/example.sqlite", { readonly: true });
db.loadExtension("build/nsystrace");
console.log("# sqlite_version");
printRows(db.prepare("select sqlite_version()"));
console.log("# kinds");
printRows(db.prepare("select kind, count(*) from trace_events group by kind order by kind"));

console.log("# top_kernels");
printRows(db.prepare(fs.readFileSync("sql/top_kernels.sql", "utf8")));

const trace = "build/gpu0_kernels_node.pftrace";
console.log(`# trace ${trace}`);
printRows(db.prepare("select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0"), trace);

console.log("# nvtx forward");
printRows(
  db.prepare(
    "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns," +
      " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid"
  ),
  "forward"
);
db.close();
