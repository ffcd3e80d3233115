//! nsystrace from Rust with rusqlite, the way it documents loading an extension (`LoadExtensionGuard`,
//! `Connection::load_extension`, feature `load_extension`). Build it offline over Debian's crates
//! (librust-rusqlite-dev) and run it from the clone after the quick start:
//!     cargo build --offline --manifest-path examples/languages/rust/Cargo.toml --target-dir build/rust
//!     build/rust/debug/nsystrace_example
//! (cargo reads examples/languages/rust/.cargo/config.toml only when run in that directory: see docs/languages.md).
//! Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto
//! trace of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward".
use rusqlite::types::ValueRef;
use rusqlite::{Connection, LoadExtensionGuard, OpenFlags, Params};

/// Prints each row of the query as its columns' values joined by '|'.
fn print_rows<P: Params>(conn: &Connection, query: &str, params: P) -> rusqlite::Result<()> {
    let mut statement = conn.prepare(query)?;
    let columns = statement.column_count();
    let mut rows = statement.query(params)?;
    while let Some(row) = rows.next()? {
        let mut fields = Vec::with_capacity(columns);
        for i in 0..columns {
            fields.push(match row.get_ref(i)? {
                ValueRef::Null => String::new(),
                ValueRef::Integer(v) => v.to_string(),
                ValueRef::Real(v) => v.to_string(),
                ValueRef::Text(v) => String::from_utf8_lossy(v).into_owned(),
                ValueRef::Blob(v) => format!("<{} bytes>", v.len()),
            });
        }
        println!("{}", fields.join("|"));
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let conn = Connection::open_with_flags("build/example.sqlite", OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    unsafe {
        let _guard = LoadExtensionGuard::new(&conn)?; // loading stays enabled only while the guard lives
        conn.load_extension("build/nsystrace", None)?;
    }
    println!("# sqlite_version");
    print_rows(&conn, "select sqlite_version()", [])?;
    println!("# kinds");
    print_rows(
        &conn,
        "select kind, count(*) from trace_events group by kind order by kind",
        [],
    )?;

    println!("# top_kernels");
    let top_kernels = std::fs::read_to_string("sql/top_kernels.sql")?;
    print_rows(&conn, &top_kernels, [])?;

    let trace = "build/gpu0_kernels_rust.pftrace";
    println!("# trace {}", trace);
    print_rows(
        &conn,
        "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0",
        [trace],
    )?;

    println!("# nvtx forward");
    print_rows(
        &conn,
        "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns, \
         sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid",
        ["forward"],
    )?;
    Ok(())
}
