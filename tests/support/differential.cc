#include "tests/support/differential.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "src/timeline/scan_plan.h"
#include "tests/support/mini_json.h"

namespace testdiff {

namespace {

// The columns of trace_events as declared (src/timeline/scan_plan.h), from which every list below is made: a column
// added there is compared by these checks unless it is left out here, for a reason given.
struct DeclaredColumn {
  const char* name;
  const char* type;
};
const DeclaredColumn kDeclared[] = {
#define NSYSTRACE_DECLARED_COLUMN(name, type) {#name, type},
    NSYSTRACE_TRACE_EVENTS_COLUMNS(NSYSTRACE_DECLARED_COLUMN)
#undef NSYSTRACE_DECLARED_COLUMN
};

bool is_call_column(const std::string& c) { return c.rfind("call_", 0) == 0; }

// Left out of every comparison: columns that depend on which other rows a scan reads (lane is laid out over the
// rows of the scan, and a track's name says which process claimed a stream id first), and `event`, the row handed
// to an aggregate by pointer (NULL to SQL). args and schema are placed by each list.
bool compared(const std::string& c) { return c != "lane" && c != "thread_name" && c != "event"; }

// "rowid, " then the declared columns that `keep` keeps, in declaration order, then `last`.
std::string column_list(bool (*keep)(const std::string&), const std::string& last = "") {
  std::string out = "rowid";
  for (const DeclaredColumn& c : kDeclared)
    if (keep(c.name)) out += std::string(", ") + c.name;
  return last.empty() ? out : out + ", " + last;
}

// check_pushdown's columns: every compared column, args included, `derived` last (a query without it drops it). The
// call_* columns are the launch join's, which the query grid compares; here they would add the join to each query.
const std::string kStableColumns = column_list([](const std::string& c) {
  return compared(c) && c != "schema" && c != "derived" && !is_call_column(c);
}, "derived");
std::string quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// Up to n values spread evenly over the sorted distinct values (first and last always included).
std::vector<std::string> spread(const std::vector<std::string>& all, size_t n) {
  if (all.size() <= n) return all;
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(all[i * (all.size() - 1) / (n - 1)]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The connection's databases that are exports (they have StringIds), by name: the reports a scan reads.
std::vector<std::string> reports_of(testdb::Db& db) {
  std::vector<std::string> out;
  for (auto& r : db.rows("select name from pragma_database_list where name != 'temp' order by name"))
    if (db.integer("select count(*) from pragma_table_list where schema = " + quoted(r[0]) +
                   " and name = 'StringIds'") != 0)
      out.push_back(r[0]);
  return out;
}

std::vector<std::string> column(testdb::Db& db, const std::string& sql) {
  std::vector<std::string> out;
  for (auto& r : db.rows(sql)) out.push_back(r[0]);
  return out;
}

}  // namespace

void add_covering_indexes(testdb::Db& db) {
  for (auto& r : db.rows("select m.name, (select count(*) from pragma_table_info(m.name) where name = 'end'), "
                         "(select count(*) from pragma_table_info(m.name) where name = 'start'), "
                         "(select count(*) from pragma_table_info(m.name) where name = 'timestamp') "
                         "from sqlite_schema m where m.type = 'table'")) {
    const std::string& t = r[0];
    std::string cols = r[2] == "1" ? (r[1] == "1" ? "start, \"end\"" : "start") : r[3] == "1" ? "timestamp" : "";
    if (!cols.empty()) db.exec("create index if not exists \"cover_" + t + "\" on \"" + t + "\"(" + cols + ")");
  }
}

Report check_pushdown(testdb::Db& db, size_t cap) {
  Report rep;
  db.exec("drop table if exists temp.unfiltered");
  // Every row, derived ones too (`derived` is a parameter: the scans compared below all ask for both).
  db.exec("create temp table unfiltered as select " + kStableColumns +
          ", row_number() over () as scan_order from trace_events where derived in (0, 1)");
  // Invariants of the unfiltered scan.
  if (int64_t dup = db.integer("select count(*) - count(distinct rowid) from temp.unfiltered"); dup != 0)
    rep.failures.push_back(std::to_string(dup) + " rowids are not unique");
  if (int64_t bad = db.integer("select count(*) from (select ts, lag(ts) over (order by scan_order) as prev "
                               "from temp.unfiltered) where ts < prev");
      bad != 0)
    rep.failures.push_back(std::to_string(bad) + " rows out of time order in the unfiltered scan");

  // `expected_where`: what SQLite filters the unfiltered rows with, when not `where` itself.
  auto compare = [&](const std::string& where, const std::string& expected_where = "") {
    ++rep.queries;
    // Without a constraint on `derived` (expected_where given), the scan has every row, stored and derived, whether
    // or not the query selects derived (every other such query does not).
    std::string cols = expected_where.empty() || rep.queries % 4 < 2
                           ? kStableColumns
                           : kStableColumns.substr(0, kStableColumns.rfind(", derived"));
    // Every other query names no args: its scan reads no args-only column (ScanFilter::args), and must give the
    // same rows as the unfiltered scan that read them.
    if (rep.queries % 2 == 0) cols.replace(cols.find(", args"), 6, "");
    std::string pushed_where = expected_where.empty() ? "derived in (0, 1) and (" + where + ")" : where;
    auto pushed = db.rows("select " + cols + " from trace_events where " + pushed_where + " order by rowid");
    auto expected = db.rows("select " + cols + " from temp.unfiltered where " +
                            (expected_where.empty() ? where : expected_where) + " order by rowid");
    if (pushed != expected)
      rep.failures.push_back("where " + (where.size() > 200 ? where.substr(0, 200) + "..." : where) + ": " + std::to_string(pushed.size()) + " rows pushed down, " +
                             std::to_string(expected.size()) + " when SQLite filters");
  };
  auto distinct = [&](const std::string& col) {
    return spread(column(db, "select distinct " + col + " from temp.unfiltered where " + col +
                                 " is not null order by 1"),
                  cap);
  };

  for (const std::string& k : distinct("kind")) {
    compare("kind = " + quoted(k));
    compare("kind != " + quoted(k));
  }
  std::vector<std::string> kinds = distinct("kind");
  if (kinds.size() >= 2) compare("kind in (" + quoted(kinds.front()) + ", " + quoted(kinds.back()) + ")");

  std::vector<std::string> names = distinct("name");
  for (const std::string& n : names) {
    compare("name = " + quoted(n));
    std::string head = n.substr(0, std::min<size_t>(n.size(), 4));
    compare("name like " + quoted(head + "%"));
    compare("name glob " + quoted(head + "*"));
  }
  if (names.size() >= 3)
    compare("name in (" + quoted(names[0]) + ", " + quoted(names[names.size() / 2]) + ", " + quoted(names.back()) + ")");

  // A long IN list (bound as one JSON array by the readers): every distinct name, and a thousand that match nothing.
  {
    std::string list;
    for (const std::string& n : column(db, "select distinct name from temp.unfiltered where length(name) < 200 "
                                           "order by 1 limit 300"))
      list += quoted(n) + ",";
    for (int i = 0; i < 1000; ++i) list += "'no such name " + std::to_string(i) + "',";
    list.pop_back();
    compare("name in (" + list + ")");
    compare("name in (" + list.substr(list.find("'no such name")) + ")");
  }
  for (const std::string& t : distinct("ts")) {
    compare("ts = " + t);
    compare("ts >= " + t);
    compare("ts < " + t);
  }
  for (const std::string& p : column(db, "select distinct pid from temp.unfiltered order by 1")) compare("pid = " + p);
  // Integer keys of joins (correlation_id through the catalog's index), alone, as IN lists and with other constraints.
  for (const char* col : {"correlation_id", "global_tid", "global_pid"}) {
    std::vector<std::string> values = distinct(col);
    for (const std::string& v : values) {
      compare(std::string(col) + " = " + v);
      compare(std::string(col) + " = " + v + " and kind in ('cuda_api', 'kernel', 'nvtx')");
    }
    // A one-value lookup (one row id, one id) reads with "= ?", a longer one through a JSON list: both, and an IN
    // list of one value.
    if (!values.empty()) compare(std::string(col) + " in (" + values.front() + ")");
    std::string list;
    for (const std::string& v : values) list += v + ", ";
    compare(std::string(col) + " in (" + list + "-1)");
    compare(std::string(col) + " in (" + list + "-1) and ts >= " + db.text("select coalesce(max(ts) / 2, 0) from temp.unfiltered"));
    compare(std::string(col) + " = -1");
  }
  if (db.integer("select count(*) from temp.unfiltered where correlation_id is not null") > 0)
    compare("correlation_id = " + db.text("select max(correlation_id) from temp.unfiltered") + " and global_pid = " +
            db.text("select max(global_pid) from temp.unfiltered where correlation_id = "
                    "(select max(correlation_id) from temp.unfiltered)"));
  // Without a constraint on `derived`, the scan has every row, stored and derived (selected or not: each shape twice).
  for (int twice = 0; twice < 2; ++twice) {
    compare("1", "derived in (0, 1)");
    compare("kind != 'kernel'", "derived in (0, 1) and kind != 'kernel'");
  }
  return rep;
}

namespace {

// The grid's: every compared column, schema last; without args, and with them (%A, before schema): the two classes
// of colUsed a scan tells apart (a query that names args or event reads the args-only columns, one that names
// neither does not: ScanFilter::args). %A is kArgsDigest over trace_events, the column every_row keeps it in over
// every_row: the args' length and head only (the hostile fixture's are megabytes; check_pushdown compares them whole).
bool in_grid_select(const std::string& c) { return compared(c) && c != "args" && c != "schema"; }
const std::string kGridSelect = column_list(in_grid_select, "schema");
const std::string kGridSelectWithArgs = column_list(in_grid_select, "%A, schema");
// The columns the grid constrains (= and IN over their values, ranges, IS NULL, ...): every column of the select but
// the launch join's call_id, call_dur, call_pid, call_tid and call_global_tid, for the grid's time (call_ts and
// call_name, read by the same join, stand for them).
std::vector<std::string> grid_columns() {
  std::vector<std::string> out;
  for (const DeclaredColumn& c : kDeclared)
    if ((in_grid_select(c.name) || std::string(c.name) == "schema") &&
        (!is_call_column(c.name) || std::string(c.name) == "call_ts" || std::string(c.name) == "call_name"))
      out.push_back(c.name);
  return out;
}
const char* const kArgsDigest = "length(args) || ':' || substr(args, 1, 100)";
// The grid's select list without any hidden column (the parameters derived and schema among them): a prefix of
// kGridSelect, so that a query's rows can be compared with and without them (their values the first columns').
bool is_hidden(const char* type) { return std::string(type).find("HIDDEN") != std::string::npos; }
std::vector<std::string> visible_in_grid() {
  std::vector<std::string> out;
  for (const DeclaredColumn& c : kDeclared)
    if (in_grid_select(c.name) && !is_hidden(c.type)) out.push_back(c.name);
  return out;
}
const std::string kGridVisibleSelect = [] {
  std::string out = "rowid";
  for (const std::string& c : visible_in_grid()) out += ", " + c;
  return out;
}();
const size_t kGridVisibleColumns = visible_in_grid().size() + 1;

// Declared INTEGER (the memory kinds are declared without a type: a label or, without one, the id).
bool is_integer_column(const std::string& c) {
  for (const DeclaredColumn& d : kDeclared)
    if (c == d.name) return std::string(d.type).rfind("INTEGER", 0) == 0;
  return false;
}

}  // namespace

std::vector<std::string> check_columns_args_carry(testdb::Db& db) {
  // Each hidden column that args also carry: its args key and the kinds that may have it.
  struct Carried {
    const char* column;
    const char* key;
    const char* kinds;
  };
  static const Carried kCarried[] = {{"domain", "$.domain", "('nvtx', 'nvtx_kernel')"},
                                     {"demangled_name", "$.demangled_name", "('kernel')"},
                                     {"size_bytes", "$.bytes", "('memcpy', 'memset', 'cuda_memory')"},
                                     {"copy_kind", "$.copy_kind", "('memcpy')"},
                                     {"src_kind", "$.src_kind", "('memcpy')"},
                                     {"dst_kind", "$.dst_kind", "('memcpy')"},
                                     {"mem_kind", "$.mem_kind", "('memset', 'cuda_memory')"}};
  std::vector<std::string> failures;
  const std::string every = " from trace_events where derived in (0, 1) and schema in "
                            "(select name from pragma_database_list where name != 'temp')";
  for (const Carried& c : kCarried) {
    const std::string col = c.column, from_args = std::string("json_extract(args, '") + c.key + "')";
    // `is not` alone would let an INTEGER column's affinity equate a text value with a number: the types must match.
    for (auto& r : db.rows("select kind, quote(name), quote(" + col + "), quote(" + from_args + ")" + every + " and (" +
                           col + " is not " + from_args + " or typeof(" + col + ") != typeof(" + from_args +
                           ")) limit 5"))
      failures.push_back("a " + r[0] + " row named " + r[1] + ": " + col + " " + r[2] + ", args' " + r[3]);
    std::string plan;
    for (auto& r : db.rows("explain query plan select schema, rowid, " + col + every)) plan += r.back();
    if (plan.find("no-args") == std::string::npos)
      failures.push_back("a query naming " + col + " but not args reads args: " + plan);
    if (db.rows("select schema, rowid, " + col + every + " order by 1, 2") !=
        db.rows("select schema, rowid, " + from_args + every + " order by 1, 2"))
      failures.push_back(col + " read without args differs from args' " + c.key);
    int64_t others = db.integer("select count(*)" + every + " and kind not in " + c.kinds + " and " + col +
                                " is not null");
    if (others != 0) failures.push_back(std::to_string(others) + " rows of other kinds with a " + col);
  }
  return failures;
}

std::vector<std::string> check_call_columns(testdb::Db& db) {
  std::vector<std::string> failures;
  for (const std::string& report : reports_of(db)) {
    const std::string schema = quoted(report);
    const std::string rows = " from trace_events where schema = " + schema + " and derived in (0, 1)";
    // The join over plain copies of the two sides, the calls indexed by their key: joined as two scans of
    // trace_events, it read every call for every launch (minutes on an export of 30,000 launches).
    db.exec("drop table if exists temp.launches");
    db.exec("drop table if exists temp.calls");
    db.exec("create temp table launches as select rowid as id, correlation_id, global_pid" + rows +
            " and kind != 'cuda_api' and correlation_id is not null");
    db.exec("create temp table calls as select rowid as call_id, correlation_id, global_pid, ts, dur, name, pid, tid, "
            "global_tid" + rows + " and kind = 'cuda_api' and correlation_id is not null");
    db.exec("create index temp.calls_by_key on calls(correlation_id, global_pid)");
    const std::string joined =
        "with j as (select k.id, c.call_id, c.ts, c.dur, c.name, c.pid, c.tid, c.global_tid, "
        "row_number() over (partition by k.id order by c.ts, c.dur desc, c.name, c.call_id) as nth "
        "from temp.launches k join temp.calls c on c.correlation_id = k.correlation_id and "
        "c.global_pid = k.global_pid) "
        "select id, call_id, ts, dur, name, pid, tid, global_tid from j where nth = 1 order by id";
    auto want = db.rows(joined);
    auto got = db.rows("select rowid, call_id, call_ts, call_dur, call_name, call_pid, call_tid, call_global_tid" +
                       rows + " and call_id is not null order by rowid");
    if (got != want) {
      size_t at = 0;
      while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
      auto show = [](const std::vector<std::vector<std::string>>& v, size_t i) {
        std::string out;
        if (i < v.size())
          for (const std::string& x : v[i]) out += x + " ";
        return i < v.size() ? out : std::string("(none)");
      };
      failures.push_back("report " + schema + ": " + std::to_string(got.size()) + " rows with a call, the join gives " +
                         std::to_string(want.size()) + "; first difference: " + show(got, at) + "against " +
                         show(want, at));
    }
    // Rows the join finds no call for read NULL in every call column (call_id alone was compared above).
    int64_t partial = db.integer("select count(*)" + rows + " and call_id is null and (call_ts is not null or "
                                 "call_dur is not null or call_name is not null or call_pid is not null or "
                                 "call_tid is not null or call_global_tid is not null)");
    if (partial != 0)
      failures.push_back("report " + schema + ": " + std::to_string(partial) + " rows with some call columns NULL, "
                         "not all");
  }
  return failures;
}

Report check_query_grid(testdb::Db& db, size_t cap, size_t stride, size_t phase) {
  Report rep;
  std::string reports;
  for (const std::string& report : reports_of(db)) reports += (reports.empty() ? "" : ", ") + quoted(report);
  if (reports.empty()) reports = "'main'";
  db.exec("drop table if exists temp.every_row");
  // SQLite's answer is the same wherever it keeps the table; in memory, the grid's thousands of reads of it (a 3 MB
  // name in the hostile fixture's) do not go through a temporary file.
  db.exec("pragma temp_store = memory");
  // Every row of every report, derived ones too, as a plain table: SQLite's answer to any question about them. Read
  // with args: the queries without them are compared with a scan that read every column. With the lanes and track
  // names this whole scan gives (those of a query that reads every row too).
  std::string every_row_select = kGridSelectWithArgs;
  every_row_select.replace(every_row_select.find("%A"), 2, std::string(kArgsDigest) + " as args_digest");
  db.exec("create temp table every_row as select " + every_row_select +
          ", lane, thread_name from trace_events where derived in (0, 1) and schema in (" + reports + ")");
  // An index changes SQLite's plan, not its answer: without it, a shape whose subquery matches correlation_id against
  // a list (IN) reads the whole table once per row (71 s on an export of 20,000 rows).
  db.exec("create index temp.every_row_correlation on every_row(correlation_id)");
  size_t shape = 0;
  // `tail`: ORDER BY / LIMIT / OFFSET after the WHERE. unordered: compare as sets (LIMIT without a total order
  // picks any rows: then each returned row must be one SQLite selects, and as many).
  auto compare = [&](const std::string& where, const std::string& tail = "", bool limit_without_order = false) {
    if (shape++ % stride != phase % stride) return;
    ++rep.queries;
    // Without a tail, both sides are ordered by (schema, rowid), the identity of a row: an ORDER BY changes no
    // constraint the scan is handed (only whether it may take a LIMIT, and there is none here).
    std::string order = tail.empty() ? "order by schema, rowid" : tail;
    // Each shape in turn with and without args (the colUsed classes), whatever the stride.
    const std::string& select = (shape / std::max<size_t>(stride, 1)) % 2 ? kGridSelectWithArgs : kGridSelect;
    std::string q = "select " + select + " from %s where " + where + " " + order;
    std::string q_reference = "select " + select + " from %s where " + ("(" + where + ")") + " " + order;
    auto run = [&](const std::string& sql_template, const char* table) {
      std::string sql = sql_template;
      sql.replace(sql.find("%s"), 2, table);
      bool ours = std::string(table) == "trace_events";
      for (size_t at; (at = sql.find("%T")) != std::string::npos;) sql.replace(at, 2, ours ? "trace_events" : "every_row");
      for (size_t at; (at = sql.find("%S")) != std::string::npos;) sql.replace(at, 2, table);
      for (size_t at; (at = sql.find("%A")) != std::string::npos;) sql.replace(at, 2, ours ? kArgsDigest : "args_digest");
      return db.rows(sql);
    };
    std::vector<std::vector<std::string>> got, want;
    std::string err;
    try {
      got = run(q, "trace_events");
    } catch (const std::exception& e) {
      err = e.what();
    }
    want = run(q_reference, "temp.every_row");
    if (!err.empty()) {
      rep.failures.push_back("where " + where + " " + tail + ": error " + err);
      return;
    }
    // The same query without the hidden columns in its select list: the same rows (as a multiset; a LIMIT without
    // a total order may pick others, so there as many). Every other pair of shapes (so with and without args in
    // turn): a second scan of the profile for every shape doubled the work on our side.
    if ((shape / std::max<size_t>(stride, 1)) / 2 % 2 == 0) {
      std::string visible_q = "select " + kGridVisibleSelect + " from %s where " + where + " " + order;
      std::vector<std::vector<std::string>> visible, projected;
      try {
        visible = run(visible_q, "trace_events");
      } catch (const std::exception& e) {
        rep.failures.push_back("where " + where + " " + tail + ", without the hidden columns: error " + e.what());
        return;
      }
      for (const auto& r : got) projected.emplace_back(r.begin(), r.begin() + kGridVisibleColumns);
      std::sort(visible.begin(), visible.end());
      std::sort(projected.begin(), projected.end());
      if (limit_without_order ? visible.size() != projected.size() : visible != projected)
        rep.failures.push_back("where " + (where.size() > 200 ? where.substr(0, 200) + "..." : where) + " " + tail +
                               ": " + std::to_string(visible.size()) + " rows without the hidden columns selected, " +
                               std::to_string(projected.size()) + " with them");
    }
    if (limit_without_order) {  // as many rows, each one SQLite selects
      bool ok = got.size() == want.size();
      for (auto& r : got) {
        if (!ok) break;
        std::string one = std::string("select ") + select + " from %s where " + ("(" + where + ")") + " and rowid = " + r[0] +
                          " and schema = " + quoted(r.back());
        ok = run(one, "temp.every_row") == std::vector<std::vector<std::string>>{r};
      }
      if (!ok)
        rep.failures.push_back("where " + where + " " + tail + ": " + std::to_string(got.size()) +
                               " rows, not all of them rows SQLite selects (" + std::to_string(want.size()) + ")");
      return;
    }
    if (got != want)
      rep.failures.push_back("where " + (where.size() > 200 ? where.substr(0, 200) + "..." : where) + " " + tail +
                             ": " + std::to_string(got.size()) + " rows from trace_events, " +
                             std::to_string(want.size()) + " from the same rows as a plain table");
  };

  for (const std::string& col : grid_columns()) {
    std::vector<std::string> values = spread(
        // (values under 200 bytes: a hostile profile's megabyte names would only copy megabytes through each query)
        column(db, "select distinct quote(" + col + ") from temp.every_row where " + col + " is not null and length(" +
                       col + ") < 200 order by " + col),
        cap);
    if (values.empty()) values.push_back(is_integer_column(col) ? "0" : "'x'");
    std::vector<std::string> probes = values;
    probes.push_back("NULL");
    // Values no row has too: a comparison never fails because of its value (kind = 'no_such', derived = 2).
    if (is_integer_column(col)) {
      probes.push_back(values.front() + " + 0.5");                       // a real between two integers
      probes.push_back("'" + db.text("select " + values.back()) + "'");  // an integer written as text
    } else {
      probes.push_back("5");  // a number compared with a text column
      probes.push_back("'no_such'");
    }
    for (const std::string& v : probes) {
      for (const char* op : {"=", "!=", "<", "<=", ">", ">=", "is", "is not"}) compare(col + " " + op + " " + v);
      if (!is_integer_column(col)) {
        std::string text = db.text("select " + v);
        std::string head = quoted(text.substr(0, std::min<size_t>(text.size(), 3)));
        compare(col + " like " + head + " || '%'");
        compare(col + " glob " + head + " || '*'");
        compare(col + " = " + v + " collate nocase");
      }
    }
    std::string list;
    for (const std::string& v : values) list += v + ", ";
    compare(col + " in (" + list + "NULL)");
    compare(col + " not in (" + list.substr(0, list.size() - 2) + ")");
    // An IN list with no members (handed over whole, empty): no row, and every row for NOT IN.
    compare(col + " in (select " + values.front() + " where 0)");
    compare(col + " not in (select " + values.front() + " where 0)");
    compare(col + " between " + values.front() + " and " + values.back());
    compare(col + " is null");
    compare(col + " is not null");
    // ORDER BY that the scan does not produce, with a LIMIT: SQLite sorts after the scan, so the scan must not stop.
    compare(col + " is not null", "order by " + col + " desc, rowid limit 3");
    compare(col + " is not null", "order by " + col + ", rowid limit 2 offset 1");
    compare(col + " in (" + list + "NULL)", "limit 2", true);
    compare(col + " in (" + list + "NULL)", "limit 2 offset 1", true);
    compare(col + " != " + values.front(), "limit 3", true);
  }
  // Several constraints at once, and the shapes of the original defects.
  std::string kind = db.text("select quote(kind) from temp.every_row group by kind order by count(*) desc limit 1");
  if (!kind.empty()) {
    compare("kind = " + kind, "order by dur desc, rowid limit 3");
    compare("kind = " + kind + " and ts >= (select min(ts) from trace_events)", "order by ts, rowid limit 5");
    compare("pid in (select pid from temp.every_row group by pid)", "limit 5", true);
    compare("kind = " + kind + " and name like '%a%' and ts > 0", "limit 4", true);
  }
  // Subqueries in the WHERE (uncorrelated, correlated, EXISTS, IN), over the same table as the outer query.
  // (`schema is not null and derived is not null` names the parameters: every report, every row, as every_row.)
  const std::string every = " schema is not null and derived is not null ";
  compare("ts > (select min(ts) from %S where kind = 'kernel' and" + every + ")");
  compare("rowid in (select rowid from %S where kind = 'nvtx' and" + every + "order by ts, rowid limit 3)");
  compare("exists (select 1 from %S a where a.correlation_id = %T.correlation_id and a.global_pid = "
          "%T.global_pid and a.kind = 'cuda_api' and a.schema = %T.schema) and kind != 'cuda_api'");
  // The inner scan restarted in place with one value, then two (one row id, then a list), and back.
  compare("exists (select 1 from %S a where a.correlation_id in (%T.correlation_id, %T.correlation_id + %T.rowid % 2) "
          "and a.kind = 'cuda_api' and a.schema = %T.schema) and kind != 'cuda_api'");
  // (on a sample of the outer rows: each one runs the subquery, a scan of its kind)
  compare("rowid % 61 = 0 and dur > (select avg(dur) from %S t where t.derived = %T.derived and t.kind = %T.kind and "
          "t.schema = %T.schema)");
  // GROUP BY kind, which the scan answers kind by kind (no sort; idxStr's by-kind), ascending or descending, under
  // constraints; and with lane or thread_name named, which keeps the rows in time order (their values need it).
  {
    const std::string kind_rows = "select kind, count(*), sum(dur), min(ts), max(ts), count(distinct name), "
                                  "sum(pid), total(length(name)), sum(rowid % 1000) from %s where" + every;
    std::vector<std::string> wheres = {"", " and kind != 'nvtx'", " and ts > (select avg(ts) from %S where" + every + ")",
                                       " and name like '%e%'", " and derived = 0", " and schema = 'main'"};
    for (const std::string& w : wheres)
      for (const char* tail : {" group by kind", " group by kind order by kind desc", " group by kind order by kind",
                               " group by kind having count(*) > 1 order by kind desc"}) {
        if (shape++ % stride != phase % stride) continue;
        ++rep.queries;
        std::string q = kind_rows + w + tail;
        auto run = [&](const std::string& table) {
          std::string sql = q;
          for (size_t at; (at = sql.find("%s")) != std::string::npos;) sql.replace(at, 2, table);
          for (size_t at; (at = sql.find("%S")) != std::string::npos;) sql.replace(at, 2, table);
          return db.rows(sql);
        };
        if (run("trace_events") != run("temp.every_row")) rep.failures.push_back(q + ": differs");
      }
    for (const char* q : {"select kind, max(lane), sum(lane), count(*) from %s where schema is not null and derived is "
                          "not null group by kind",
                          "select kind, count(distinct thread_name), min(thread_name), max(thread_name) from %s where "
                          "schema is not null and derived is not null group by kind order by kind desc",
                          // Other GROUP BYs take the tables as stored (any-order), which SQLite sorts.
                          "select name, kind, count(*), sum(dur), min(ts), max(ts), sum(rowid % 1000) from %s where "
                          "schema is not null and derived is not null group by name, kind",
                          "select pid, tid, device_id, count(*), sum(dur), max(ts) from %s where schema is not null and "
                          "derived is not null and kind != 'nvtx' group by pid, tid, device_id order by pid desc",
                          "select domain, demangled_name, count(*), total(dur) from %s where schema is not null and "
                          "derived is not null group by domain, demangled_name having count(*) > 0",
                          "select schema, stream_id, count(*), min(ts) from %s where schema is not null and derived "
                          "is not null and ts > 0 group by schema, stream_id",
                          "select correlation_id % 7, count(*) from %s where schema is not null and derived is not "
                          "null and correlation_id is not null group by correlation_id % 7",
                          // and with a column whose value needs the placement order: in time order
                          "select pid, max(lane), count(distinct process_name), min(process_name) from %s where "
                          "schema is not null and derived is not null group by pid",
                          "select name, max(lane), count(*) from %s where schema is not null and derived is not null "
                          "group by name"}) {
      if (shape++ % stride != phase % stride) continue;
      ++rep.queries;
      auto run = [&](const std::string& table) {
        std::string sql = q;
        sql.replace(sql.find("%s"), 2, table);
        return db.rows(sql);
      };
      if (run("trace_events") != run("temp.every_row")) rep.failures.push_back(std::string(q) + ": differs");
    }
  }
  // event_totals: the rows totalled per (schema, kind, name, domain). Whatever its WHERE (on a group's columns,
  // which the scan applies to the rows, or on the totals, which SQLite applies), ORDER BY, LIMIT and OFFSET, it must
  // answer as the same query over every_row's GROUP BY does: with its groups hashed, and past its memory budget
  // (totals_memory_mb 0: at once), grouped by SQLite.
  const std::string default_budget = db.text("select nsystrace_option('totals_memory_mb')");
  for (const std::string& budget : {default_budget, std::string("0")}) {
    db.exec("select nsystrace_option('totals_memory_mb', " + budget + ")");
    const std::string columns = "kind, name, domain, events, timed, total_ns, min_ns, max_ns, schema, derived";
    const std::string grouped =
        "(select kind, name, domain, count(*) as events, count(dur) as timed, sum(dur) as total_ns, min(dur) as "
        "min_ns, max(dur) as max_ns, schema, derived from temp.every_row group by schema, kind, name, domain)";
    const std::string first = " from temp.every_row where kind in ('kernel', 'nvtx') and length(name) < 200 "
                              "order by schema, rowid limit 1";
    std::string name = db.text("select quote(name)" + first), head = db.text("select quote(substr(name, 1, 2))" + first);
    if (name.empty()) name = head = "'x'";
    auto result = [&](const std::string& sql) {
      try {
        return db.rows(sql);
      } catch (const std::exception& e) {  // (a sum past int64: SQLite's "integer overflow", which both must give)
        return std::vector<std::vector<std::string>>{{std::string("error: ") + e.what()}};
      }
    };
    std::string key = "schema, kind, name, domain";
    // A query that names neither schema nor derived reads every report's rows, stored and derived, as trace_events.
    for (const std::string& where : {std::string("1"), std::string("kind in ('kernel', 'nvtx', 'cuda_api')")}) {
      if (shape++ % stride != phase % stride) continue;
      ++rep.queries;
      const std::string some = "kind, name, domain, events, timed, total_ns, min_ns, max_ns";
      auto got = result("select " + some + " from event_totals where " + where + " order by kind, name, domain");
      auto want = result("select " + some + " from " + grouped + " where " + where +
                         " order by kind, name, domain");
      if (got != want)
        rep.failures.push_back("event_totals (totals_memory_mb " + budget + ") where " + where + ": " +
                               std::to_string(got.size()) + " rows, " +
                               std::to_string(want.size()) + " from every row's groups");
    }
    std::vector<std::pair<std::string, std::string>> shapes = {  // (WHERE over event_totals, over the groups)
        {"1", "1"},  // no constraint on schema or derived: every report's rows, stored and derived
        {every, every},
        {every + "and kind = 'kernel'", every + "and kind = 'kernel'"},
        {every + "and kind != 'nvtx'", every + "and kind != 'nvtx'"},
        {"kind in ('kernel', 'nvtx', 'cuda_api', 'memcpy')", "kind in ('kernel', 'nvtx', 'cuda_api', 'memcpy')"},
        {every + "and name like '%a%'", every + "and name like '%a%'"},
        {every + "and name glob '*e*'", every + "and name glob '*e*'"},
        {every + "and name = " + name, every + "and name = " + name},
        {every + "and name in (" + name + ", 'x', NULL)", every + "and name in (" + name + ", 'x', NULL)"},
        {every + "and name like " + head + " || '%' and kind != 'cuda_api'",
         every + "and name like " + head + " || '%' and kind != 'cuda_api'"},
        {every + "and domain is not null", every + "and domain is not null"},
        {every + "and timed > 0 and events > 1", every + "and timed > 0 and events > 1"},
        {every + "and total_ns > 1000 and min_ns < max_ns", every + "and total_ns > 1000 and min_ns < max_ns"},
        {"schema = 'main' and derived = 1", "schema = 'main' and derived = 1"},
        {"derived in (0, 1) and kind = 'nvtx_kernel' and schema = 'main'",
         "derived in (0, 1) and kind = 'nvtx_kernel' and schema = 'main'"},
        {every + "and schema != 'main' and kind = 'nvtx'", every + "and schema != 'main' and kind = 'nvtx'"},
        // IN lists with no members, handed over whole and empty: no group
        {every + "and kind in (select 'kernel' where 0)", every + "and kind in (select 'kernel' where 0)"},
        {every + "and name in (select " + name + " where 0)", every + "and name in (select " + name + " where 0)"},
        {"derived in (select 0 where 0) and schema in (select 'main' where 0)",
         "derived in (select 0 where 0) and schema in (select 'main' where 0)"},
    };
    // A LIMIT without ORDER BY (SQLite may hand it to the scan): as many groups as it allows, each one a group.
    for (const auto& [ours, reference] : shapes) {
      if (shape++ % stride != phase % stride) continue;
      ++rep.queries;
      const std::string limited = "(select " + columns + " from event_totals where " + ours + " limit 2)";
      // (EXCEPT compares NULLs as equal: the groups not among the reference's, none)
      auto got = result("select (select count(*) from " + limited + "), (select count(*) from (select * from " +
                        limited + " except select " + columns + " from " + grouped + " where " + reference + "))");
      auto want = result("select min(2, count(*)), 0 from " + grouped + " where " + reference);
      if (got != want)
        rep.failures.push_back("event_totals (totals_memory_mb " + budget + ") where " + ours +
                               " limit 2: not the groups it allows");
    }
    for (const auto& [ours, reference] : shapes)
      for (const std::string& tail : {"order by " + key, "order by total_ns desc, " + key + " limit 3",
                                      "order by events, " + key + " limit 2 offset 1"}) {
        if (shape++ % stride != phase % stride) continue;
        ++rep.queries;
        auto got = result("select " + columns + " from event_totals where " + ours + " " + tail);
        auto want = result("select " + columns + " from " + grouped + " where " + reference + " " + tail);
        if (got != want)
          rep.failures.push_back("event_totals (totals_memory_mb " + budget + ") where " + ours + " " + tail +
                                 ": " + std::to_string(got.size()) +
                                 " rows, " + std::to_string(want.size()) + " from every_row's GROUP BY");
      }
  }
  db.exec("select nsystrace_option('totals_memory_mb', " + default_budget + ")");
  // Joins: the launch join (the inner scan takes the constraints), and a join on a non-key column.
  {
    // (the call's thread and pid: its track, set aside and taken back between lookups, TrackLayout::reset)
    std::string q = "select k.rowid, a.rowid, k.name, a.name, k.ts - a.ts, a.thread_name, a.pid, a.tid from %s k "
                    "join %s a on a.correlation_id = "
                    "k.correlation_id and a.global_pid = k.global_pid and a.kind = 'cuda_api' where k.kind in "
                    "('kernel', 'memcpy', 'memset') and k.schema is not null and a.schema = k.schema order by 1, 2";
    auto run = [&](const std::string& t) {
      std::string sql = q;
      for (size_t at; (at = sql.find("%s")) != std::string::npos;) sql.replace(at, 2, t);
      for (size_t at; (at = sql.find("%A")) != std::string::npos;)
        sql.replace(at, 2, t == "trace_events" ? "length(k.args) || ':' || substr(k.args, 1, 100)" : "k.args_digest");
      return db.rows(sql);
    };
    if (shape++ % stride == phase % stride) {
      ++rep.queries;
      if (run("trace_events") != run("temp.every_row")) rep.failures.push_back("the launch join differs");
    }
    // The other way round: each call's GPU work, an inner scan of three tables restarted at every call (with
    // correlation ids that have no GPU work, and several operations for one id).
    // (with the GPU work's args: an inner scan that reads them, restarted in place)
    q = "select a.rowid, k.rowid, k.kind, k.name, k.ts - a.ts, %A from %s a join %s k on k.correlation_id = "
        "a.correlation_id and k.global_pid = a.global_pid and k.kind in ('kernel', 'memcpy', 'memset') "
        "where a.kind = 'cuda_api' and a.schema is not null and k.schema = a.schema order by 1, 2";
    if (shape++ % stride == phase % stride) {
      ++rep.queries;
      if (run("trace_events") != run("temp.every_row")) rep.failures.push_back("the call -> GPU work join differs");
    }
  }
  return rep;
}

namespace {

// What is compared of an event: its name and ts, except where a viewer's limits change them as documented (a ts at
// or before 0 or past 2^53 ns is drawn clamped, the recorded time kept in args; a name that is not printable ASCII
// is escaped or replaced): "~" there, on both sides, so that the count and the other values still decide.
std::pair<std::string, std::string> comparable(const std::string& name, int64_t ts) {
  bool plain = std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  bool drawn_as_is = ts > 0 && ts < (int64_t{1} << 53);
  return {plain ? name : "~", drawn_as_is ? std::to_string(ts) : "~"};
}

// A Chrome trace's events as comparable (name, ts in ns), sorted: its slices, instants and counters, less the GPU
// utilization counter the writer derives from the GPU work among the rows.
std::vector<std::pair<std::string, std::string>> trace_events_of(testdb::Db&, const std::string& json) {
  std::vector<std::pair<std::string, std::string>> out;
  testjson::Value root = testjson::parse(json);
  for (const auto& e : root.get("traceEvents")->items) {
    const std::string& ph = e.str("ph");
    if (e.str("cat") == "gpu_utilization" || (ph != "X" && ph != "i" && ph != "C")) continue;
    // A CUDA graph replay's slice is drawn with the first of its nodes among the rows, not for a row of its own
    // (docs/sql-reference.md): left out, as the utilization counters are; sql.graph_nodes checks the replays.
    const testjson::Value* args = e.get("args");
    if (e.str("cat") == "graph" && args != nullptr && args->get("graph_replay") != nullptr) continue;
    out.push_back(comparable(e.str("name"), testjson::us_text_to_ns(e.str("ts"))));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The input's rows as (name, ts), sorted.
std::vector<std::pair<std::string, std::string>> input_events(testdb::Db& db, const std::string& input) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& r : db.rows("select name, ts from (" + input + ")")) out.push_back(comparable(r[0], std::stoll(r[1])));
  std::sort(out.begin(), out.end());
  return out;
}

bool names_a_reliable_form(const std::string& error) {
  return error.find("chrome_trace(t.event)") != std::string::npos ||
         error.find("chrome_trace(kind, name, ts") != std::string::npos;
}

}  // namespace

StarReport check_star_forms(testdb::Db& db, size_t stride, size_t phase) {
  StarReport rep;
  // The two most common kinds (a fixture may have one), and whether the launch join has rows to find.
  std::vector<std::string> kinds = column(db, "select quote(kind) from trace_events group by kind order by count(*) "
                                              "desc, kind limit 2");
  if (kinds.empty()) return rep;
  const std::string k1 = kinds[0], k2 = kinds.size() > 1 ? kinds[1] : kinds[0];
  const std::string call = "(select a.ts from trace_events a where a.kind = 'cuda_api' and a.correlation_id = "
                           "k.correlation_id and a.global_pid = k.global_pid)";
  const std::string has_call = "exists (select 1 from trace_events a where a.kind = 'cuda_api' and "
                               "a.correlation_id = k.correlation_id and a.global_pid = k.global_pid)";
  db.exec("drop table if exists temp.star_one");
  db.exec("drop table if exists temp.star_three");
  db.exec("create temp table star_one as select * from trace_events where kind = " + k1 + " limit 1");
  db.exec("create temp table star_three as select * from trace_events where kind = " + k1 + " limit 3");
  std::vector<std::string> inputs = {
      "select * from trace_events where kind = " + k1,
      "select * from trace_events where kind in (" + k1 + ", " + k2 + ")",
      "select * from trace_events where kind = " + k1 + " limit 1",
      "select * from trace_events where kind = " + k1 + " limit 3",
      "select * from trace_events where kind = " + k1 + " and dur >= 0 limit 1",
      "select * from trace_events where kind = " + k1 + " limit 2 offset 1",
      // nested and correlated: the issue's shape, a scalar subquery in WHERE and in the select list
      "select * from trace_events k where kind = " + k1 + " and k.ts > " + call + " limit 1",
      "select * from trace_events k where kind = " + k1 + " and k.ts > " + call + " limit 3",
      "select * from trace_events k where kind = " + k1 + " and k.ts > " + call,
      "select k.*, " + call + " as call_ts2 from trace_events k where k.kind = " + k1 + " limit 1",
      "select k.*, " + call + " as call_ts2 from trace_events k where k.kind = " + k1,
      "select * from trace_events k where k.kind = " + k1 + " and " + has_call,
      "select * from trace_events k where k.kind = " + k1 + " and not " + has_call,
      "select * from trace_events k where k.ts > (select min(ts) from trace_events where kind = " + k2 + ")",
      "select * from trace_events k where k.correlation_id in (select correlation_id from trace_events where kind = "
      "'cuda_api' limit 5)",
      // joined
      "select k.* from trace_events k join trace_events a on a.correlation_id = k.correlation_id and a.global_pid = "
      "k.global_pid and a.kind = 'cuda_api' where k.kind = " + k1,
      "select k.* from temp.star_three t join trace_events k on k.kind = t.kind and k.ts = t.ts",
      // compound
      "select * from trace_events where kind = " + k1 + " union all select * from trace_events where kind = " + k2,
      "select * from temp.star_one union all select * from trace_events where kind = " + k2 + " limit 2",
      // temp tables: alone, and beside a subquery over trace_events (uncorrelated and correlated)
      "select * from temp.star_one",
      "select * from temp.star_three",
      "select * from temp.star_one where exists (select 1 from trace_events a where a.kind = " + k2 + ")",
      "select * from temp.star_three where exists (select 1 from trace_events a where a.kind = " + k2 + ")",
      "select * from temp.star_one k where " + has_call,
      "select * from temp.star_three k where " + has_call,
      "select * from temp.star_one t where t.ts >= (select a.ts from trace_events a where a.kind = t.kind)",
  };
  auto run = [&](const std::string& input, const std::string& label) {
    ++rep.queries;
    std::vector<std::pair<std::string, std::string>> want;
    try {
      want = input_events(db, input);
    } catch (const std::exception& e) {
      rep.failures.push_back(label + ": the input itself fails: " + e.what());
      return;
    }
    std::string json, error;
    try {
      json = db.text("select chrome_trace(*) from (" + input + ")");
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::string perfetto_error = db.error_of("select length(perfetto_trace(*)) from (" + input + ")");
    if (!error.empty()) {
      ++rep.refused;
      if (!names_a_reliable_form(error))
        rep.failures.push_back(label + ": refused without naming a reliable form: " + error);
      if (perfetto_error.empty()) rep.failures.push_back(label + ": chrome_trace(*) refused, perfetto_trace(*) drew");
      return;
    }
    ++rep.accepted;
    if (!perfetto_error.empty())
      rep.failures.push_back(label + ": chrome_trace(*) drew, perfetto_trace(*) refused: " + perfetto_error);
    auto got = trace_events_of(db, json);
    if (got != want) {
      std::string first_got = got.empty() ? "(none)" : got.front().first + " @" + got.front().second;
      std::string first_want = want.empty() ? "(none)" : want.front().first + " @" + want.front().second;
      rep.failures.push_back(label + ": the trace has " + std::to_string(got.size()) + " events (first " +
                             first_got + "), the input " + std::to_string(want.size()) + " rows (first " +
                             first_want + ")");
    }
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i % stride == phase % stride) run(inputs[i], "from (" + inputs[i] + ")");
  // The same inputs written directly (no subquery around them), where they are a scan of trace_events k.
  for (const std::string& where : {"k.kind = " + k1 + " and k.ts > " + call, "k.kind = " + k1 + " and " + has_call,
                                   std::string("k.kind = ") + k1}) {
    const std::string direct = "select * from trace_events k where " + where;
    run(direct, direct);
    // The typed form is given the scan's rows: it always draws exactly them.
    ++rep.queries;
    try {
      auto got = trace_events_of(db, db.text("select chrome_trace(k.event) from trace_events k where " + where));
      if (got != input_events(db, direct)) rep.failures.push_back("chrome_trace(k.event) where " + where + ": differs");
    } catch (const std::exception& e) {
      rep.failures.push_back("chrome_trace(k.event) where " + where + ": " + e.what());
    }
  }
  // While another statement of the connection is in the middle of a trace_events scan (stepped once, not reset):
  // the temp table's rows, or a refusal; never that statement's row.
  {
    sqlite3_stmt* other = nullptr;
    std::string sql = "select ts from trace_events where kind = " + k2;
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &other, nullptr) == SQLITE_OK &&
        sqlite3_step(other) == SQLITE_ROW) {
      for (const char* t : {"temp.star_one", "temp.star_three"})
        run(std::string("select * from ") + t, std::string("from ") + t + " while another statement reads " + k2);
      // and over trace_events itself: its own rows, or a refusal
      run("select * from trace_events where kind = " + k1, "over trace_events while another statement reads " + k2);
    }
    sqlite3_finalize(other);
  }
  db.exec("drop table temp.star_one");
  db.exec("drop table temp.star_three");
  return rep;
}

}  // namespace testdiff
