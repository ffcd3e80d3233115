// nsystrace from Go with mattn/go-sqlite3, the way it documents loading an extension: a driver registered with
// Extensions, loaded into every connection the pool opens. Build it in GOPATH mode over Debian's packages
// (golang-go golang-github-mattn-go-sqlite3-dev) and run it from the clone after the quick start:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -tags libsqlite3 -o build/nsystrace_example_go examples/languages/go/nsystrace_example.go
//	build/nsystrace_example_go
//
// Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
// of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
package main

import (
	"database/sql"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// printRows prints each row of the query as its columns' values joined by '|'.
func printRows(db *sql.DB, query string, args ...any) {
	rows, err := db.Query(query, args...)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	columns, _ := rows.Columns()
	values := make([]any, len(columns))
	pointers := make([]any, len(columns))
	for i := range values {
		pointers[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(pointers...); err != nil {
			log.Fatal(err)
		}
		fields := make([]string, len(values))
		for i, v := range values {
			switch v := v.(type) {
			case nil:
				fields[i] = ""
			case []byte:
				fields[i] = string(v)
			default:
				fields[i] = fmt.Sprint(v)
			}
		}
		fmt.Println(strings.Join(fields, "|"))
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
}

func main() {
	sql.Register("sqlite3_nsystrace", &sqlite3.SQLiteDriver{Extensions: []string{"build/nsystrace"}})
	db, err := sql.Open("sqlite3_nsystrace", "file:build/example.sqlite?mode=ro")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fmt.Println("# sqlite_version")
	printRows(db, "select sqlite_version()")
	fmt.Println("# kinds")
	printRows(db, "select kind, count(*) from trace_events group by kind order by kind")

	fmt.Println("# top_kernels")
	topKernels, err := os.ReadFile("sql/top_kernels.sql")
	if err != nil {
		log.Fatal(err)
	}
	printRows(db, string(topKernels))

	trace := "build/gpu0_kernels_go.pftrace"
	fmt.Println("# trace " + trace)
	printRows(db, "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", trace)

	fmt.Println("# nvtx forward")
	printRows(db, "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"+
		" sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid", "forward")
}
