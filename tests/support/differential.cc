#include "tests/support/differential.h"

#include <algorithm>
#include <set>

namespace testdiff {

namespace {

// Columns that do not depend on which other rows a scan reads (lane is laid out over the rows of the scan, and a
// track's name says which process claimed a stream id first).
const char* const kStableColumns =
    "rowid, kind, name, ts, dur, pid, tid, process_name, device_id, stream_id, correlation_id, global_tid, global_pid, "
    "args, cname, derived";

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
  db.exec(std::string("create temp table unfiltered as select ") + kStableColumns +
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
    std::string cols = kStableColumns;
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
  // Without `derived`, the scan has the stored events only.
  compare("1", "derived = 0");
  compare("kind != 'kernel'", "derived = 0 and kind != 'kernel'");
  return rep;
}

}  // namespace testdiff
