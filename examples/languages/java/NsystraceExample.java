// nsystrace from Java with sqlite-jdbc (xerial), the way it documents loading an extension:
// SQLiteConfig.enableLoadExtension(true), then the SQL function load_extension(). Debian's
// libxerial-sqlite-jdbc-java uses the system SQLite. Run from the clone after the quick start (Java 11+ runs a
// source file directly):
//   java -cp /usr/share/java/sqlite-jdbc.jar examples/languages/java/NsystraceExample.java
// Prints the host's SQLite version, the events per kind, sql/top_kernels.sql's rows, the bytes of a Perfetto trace
// of GPU 0's kernels, and the GPU time of the NVTX ranges named "forward" (docs/languages.md).
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.sqlite.SQLiteConfig;

public class NsystraceExample {
  /** Prints each row of the query as its columns' values joined by '|'. */
  static void printRows(Connection conn, String query, String... params) throws SQLException {
    try (PreparedStatement statement = conn.prepareStatement(query)) {
      for (int i = 0; i < params.length; i++) statement.setString(i + 1, params[i]);
      try (ResultSet rows = statement.executeQuery()) {
        int columns = rows.getMetaData().getColumnCount();
        while (rows.next()) {
          List<String> fields = new ArrayList<>();
          for (int i = 1; i <= columns; i++) {
            Object value = rows.getObject(i);
            fields.add(value == null ? "" : value.toString());
          }
          System.out.println(String.join("|", fields));
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    SQLiteConfig config = new SQLiteConfig();
    config.setReadOnly(true);
    config.enableLoadExtension(true);
    Connection conn = config.createConnection("jdbc:sqlite:build/example.sqlite");
    try (Statement load = conn.createStatement()) {
      load.execute("select load_extension('build/nsystrace')");
    }
    System.out.println("# sqlite_version");
    printRows(conn, "select sqlite_version()");
    System.out.println("# kinds");
    printRows(conn, "select kind, count(*) from trace_events group by kind order by kind");

    System.out.println("# top_kernels");
    printRows(conn, Files.readString(Path.of("sql/top_kernels.sql")));

    String trace = "build/gpu0_kernels_java.pftrace";
    System.out.println("# trace " + trace);
    printRows(conn, "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0", trace);

    System.out.println("# nvtx forward");
    printRows(conn, "select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"
        + " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid", "forward");
    conn.close();
  }
}
