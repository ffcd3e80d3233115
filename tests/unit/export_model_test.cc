// The declaration of what an export holds (src/model/export_model.def) against everything that restates or relies on it:
// the readers (each reads the declared columns of its tables, with the declared rowid tags), the schema check
// (each required column is required), the SQL reference (docs/sql-reference.md), the Python command's kind list, and
// the eventType numbers and kind names written in SQL, which cannot include the declaration.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "src/model/event.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

std::string read_source(const std::string& relative) {
  return testdb::file_contents(testdb::source_dir() + "/" + relative);
}

std::vector<std::string> declared_kind_names() {
  std::vector<std::string> out;
  for (const KindSpec& s : kKindSpecs) out.push_back(s.name);
  return out;
}

std::set<int> numbers_in(const std::string& list) {
  std::set<int> out;
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), number); it != std::sregex_iterator(); ++it)
    out.insert(std::stoi(it->str()));
  return out;
}

// "" when `types` are declared eventType values making up whole roles (a list with 59 but not 70, the NVTXt push/pop
// range, would miss ranges), else what is wrong.
std::string whole_roles_problem(const std::set<int>& types) {
  NvtxRoles roles = 0;
  for (int t : types) {
    std::optional<NvtxRole> role = nvtx_role(t);
    if (!role) return "eventType " + std::to_string(t) + " is not declared";
    roles |= nvtx_role_bit(*role);
  }
  std::set<int> whole = numbers_in(nvtx_types_condition(roles));
  if (whole != types) return "lists part of a role: the whole roles are " + nvtx_types_condition(roles);
  return "";
}

TEST(ExportModel, KindNamesRoundTripAndAreUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < kKindCount; ++i) {
    Kind k = static_cast<Kind>(i);
    EXPECT_EQ(kind_spec(k).kind, k);
    EXPECT_TRUE(seen.insert(kind_name(k)).second) << kind_name(k);
    EXPECT_EQ(kind_from_name(kind_name(k)), k);
    EXPECT_EQ(is_derived(k), kind_spec(k).origin == Origin::derived) << kind_name(k);
  }
  EXPECT_FALSE(kind_from_name("kernels"));
  EXPECT_FALSE(kind_from_name(""));
  EXPECT_EQ(kAllKinds, (1u << kKindCount) - 1);
}

TEST(ExportModel, NvtxRoleSets) {
  // The contract with users (docs/sql-reference.md: nvtx rows are these eventTypes; the projection reads these ranges).
  EXPECT_EQ(nvtx_types_condition(kNvtxEvents),
            "(eventType = 34 OR eventType = 59 OR eventType = 60 OR eventType = 70 OR eventType = 71)");
  EXPECT_EQ(nvtx_types_condition(kNvtxRanges), "(eventType = 59 OR eventType = 60 OR eventType = 70 OR eventType = 71)");
  EXPECT_EQ(nvtx_types_condition(kNvtxDefinitions), "(eventType = 33 OR eventType = 75)");
  EXPECT_EQ(nvtx_types_condition(0), "0");
  EXPECT_TRUE(nvtx_type_is(static_cast<int>(NvtxEventType::NvtxtStartEndRange), NvtxRole::start_end_range));
  EXPECT_TRUE(nvtx_type_in(34, kNvtxEvents));
  EXPECT_FALSE(nvtx_type_in(34, kNvtxRanges));
  EXPECT_FALSE(nvtx_role(76));  // domain destroy: not read
  for (const NvtxEventTypeSpec& t : kNvtxEventTypes) EXPECT_EQ(nvtx_role(t.number), t.role) << t.nsys_name;
}

// One export with every declared table, made from the declaration: two rows per table with distinct values in the
// declared time, end and id columns. Kind-specific columns a reader needs to see a row at all are set here.
void create_every_table(testdb::Db& db) {
  int64_t value = 1000;
  for (const RowSource& source : kRowSources) {
    if (source.table == nullptr) continue;
    const KindSpec& k = kind_spec(source.kind);
    std::vector<std::string> columns;
    for (const char* c : required_columns(source.kind)) columns.push_back(c);
    for (const char* c : {k.global_id, k.correlation})
      if (c != nullptr && std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    if (k.pid == PidColumn::device) columns.insert(columns.end(), {"deviceId", "streamId"});
    if (k.pid == PidColumn::metric_type) columns.push_back("typeId");
    if (source.kind == Kind::nvtx) columns.push_back("eventType");
    std::string list;
    for (const std::string& c : columns) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
    db.exec(std::string("CREATE TABLE ") + source.table + "(" + list + ")");
    for (int row = 0; row < 2; ++row) {
      std::string values;
      for (const std::string& c : columns) {
        int64_t v = ++value;
        if (c == "isSchedIn") v = row == 0;  // a sched-in record, then its sched-out (its end)
        if (c == "eventType") v = static_cast<int>(NvtxEventType::NvtxPushPopRange);
        if (c == "deviceId" || c == "typeId" || c == "streamId") v = 1;
        if (k.end != nullptr && c == k.end) v = value + 500;  // after its start
        if (c == "globalTid" || c == "globalPid") v = (int64_t{4101} << 24) + value;
        values += (values.empty() ? "" : ", ") + std::to_string(v);
      }
      db.exec(std::string("INSERT INTO ") + source.table + "(" + list + ") VALUES (" + values + ")");
    }
  }
}

TEST(ExportModel, ReadersReadTheDeclaredColumnsWithTheDeclaredTags) {
  testdb::Db db;
  create_every_table(db);
  std::map<int, const RowSource*> by_tag;
  for (const RowSource& s : kRowSources) by_tag[s.tag] = &s;
  std::map<std::string, int> rows_per_table;
  for (const auto& row : db.rows("select kind, ts, dur, rowid, global_tid, correlation_id from trace_events")) {
    int64_t rowid = std::stoll(row[3]);
    ASSERT_TRUE(by_tag.count(static_cast<int>(rowid & 31))) << "undeclared rowid tag in " << rowid;
    const RowSource& source = *by_tag[static_cast<int>(rowid & 31)];
    const KindSpec& k = kind_spec(source.kind);
    SCOPED_TRACE(source.table);
    ++rows_per_table[source.table];
    EXPECT_EQ(row[0], k.name);
    auto column = [&](const char* c) {
      return db.text(std::string("select \"") + c + "\" from " + source.table + " where rowid = " +
                     std::to_string(rowid >> 5));
    };
    EXPECT_EQ(row[1], column(k.time));
    if (k.end != nullptr) {
      EXPECT_EQ(row[2], std::to_string(std::stoll(column(k.end)) - std::stoll(column(k.time))));
    }
    if (k.extent != Extent::interval) {
      EXPECT_EQ(row[2], "NULL");
    }
    EXPECT_EQ(row[4], k.global_id != nullptr ? column(k.global_id) : "NULL");
    EXPECT_EQ(row[5], k.correlation != nullptr ? column(k.correlation) : "NULL");
  }
  for (const RowSource& s : kRowSources)
    if (s.table != nullptr) {
      EXPECT_GT(rows_per_table[s.table], 0) << s.table << " gave no row";
    }
}

TEST(ExportModel, DerivedRowsCarryTheDeclaredTag) {
  testdb::Db db;
  db.exec_file(testdb::source_dir() + "/tests/fixtures/nvtx_projection.sql");
  for (int i = 0; i < kKindCount; ++i) {
    Kind k = static_cast<Kind>(i);
    if (!is_derived(k)) continue;
    std::string kind = kind_name(k);
    ASSERT_GT(db.integer("select count(*) from trace_events where derived = 1 and kind = '" + kind + "'"), 0);
    EXPECT_EQ(db.rows("select distinct rowid & 31 from trace_events where derived = 1 and kind = '" + kind + "'"),
              (std::vector<std::vector<std::string>>{{std::to_string(derived_rowid_tag(k))}}));
  }
}

// Each required column of each table, left out of a table with a row: an error naming it (or, for a time column
// older exports may lack, the rows counted as skipped); left out of an empty table: no error.
TEST(ExportModel, SchemaCheckRequiresEachDeclaredColumn) {
  for (const RowSource& source : kRowSources) {
    if (source.table == nullptr) continue;
    const KindSpec& k = kind_spec(source.kind);
    std::vector<const char*> required = required_columns(source.kind);
    for (const char* missing : required) {
      SCOPED_TRACE(std::string(source.table) + " without " + missing);
      std::string list = "x";
      for (const char* c : required)
        if (c != missing) list += std::string(", \"") + c + "\"";
      std::string query = std::string("select count(*) from trace_events where kind = '") + k.name + "'";
      const char* marker = "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT)";  // an export
      testdb::Db empty;
      empty.exec(marker);
      empty.exec(std::string("CREATE TABLE ") + source.table + "(" + list + ")");
      EXPECT_EQ(empty.error_of(query), "");
      testdb::Db one_row;
      one_row.exec(marker);
      one_row.exec(std::string("CREATE TABLE ") + source.table + "(" + list + ")");
      one_row.exec(std::string("INSERT INTO ") + source.table + "(x) VALUES (1)");
      if (k.time_may_be_absent && std::string_view(missing) == k.time) {
        EXPECT_EQ(one_row.integer(query), 0);
      } else {
        EXPECT_NE(one_row.error_of(query).find(std::string("table ") + source.table + " has no column '" + missing + "'"),
                  std::string::npos)
            << one_row.error_of(query);
      }
    }
  }
}

// The SQL reference's (docs/sql-reference.md) trace_events `kind` row lists the kinds, in declaration order.
TEST(ExportModel, ReadmeKindRowListsTheDeclaredKinds) {
  std::string readme = read_source("docs/sql-reference.md");
  size_t at = readme.find("\n| kind | TEXT | ");
  ASSERT_NE(at, std::string::npos);
  std::string row = readme.substr(at + 1, readme.find('\n', at + 1) - at - 1);
  std::string outside_parentheses;
  int depth = 0;
  for (char c : row) {
    depth += c == '(';
    if (depth == 0) outside_parentheses += c;
    depth -= c == ')' && depth > 0;
  }
  std::vector<std::string> listed;
  std::regex quoted("`([a-z_]+)`");
  for (auto it = std::sregex_iterator(outside_parentheses.begin(), outside_parentheses.end(), quoted);
       it != std::sregex_iterator(); ++it)
    listed.push_back((*it)[1]);
  EXPECT_EQ(listed, declared_kind_names()) << row;
}

// The SQL reference's rowid tag table is this text, made from the declaration (paste it from the failure message).
TEST(ExportModel, ReadmeRowidTagTableIsTheDeclaredOne) {
  std::vector<const RowSource*> sources;
  for (const RowSource& s : kRowSources) sources.push_back(&s);
  std::sort(sources.begin(), sources.end(), [](const RowSource* a, const RowSource* b) { return a->tag < b->tag; });
  std::string table = "| tag | kind | rows from |\n|---|---|---|\n";
  for (const RowSource* s : sources)
    table += "| " + std::to_string(s->tag) + " | `" + kind_name(s->kind) + "` | " +
             (s->table != nullptr ? "`" + std::string(s->table) + "`" : std::string("the NVTX GPU projection")) +
             " |\n";
  EXPECT_NE(read_source("docs/sql-reference.md").find(table), std::string::npos)
      << "docs/sql-reference.md should hold:\n" << table;
}

// Every "`eventType` 59, 60, 70, 71" in the SQL reference names declared types, in whole roles.
TEST(ExportModel, ReadmeEventTypesAreDeclared) {
  std::string readme = read_source("docs/sql-reference.md");
  std::regex mention("`eventType` ([0-9][0-9, ]*[0-9]|[0-9])");
  int mentions = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), mention); it != std::sregex_iterator(); ++it) {
    ++mentions;
    EXPECT_EQ(whole_roles_problem(numbers_in((*it)[1])), "") << it->str();
  }
  EXPECT_GT(mentions, 0);
}

// The Python command checks --kinds against its own list (conversion.py) (it runs without the extension loaded).
TEST(ExportModel, PythonCommandKnowsTheDeclaredKinds) {
  std::string cli = read_source("ext/python/nsystrace/conversion.py");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cli, m, std::regex(R"(KINDS = \[([^\]]*)\])")));
  std::vector<std::string> listed;
  std::string body = m[1];
  std::regex quoted("\"([a-z_]+)\"");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), quoted); it != std::sregex_iterator(); ++it)
    listed.push_back((*it)[1]);
  EXPECT_EQ(listed, declared_kind_names());
}

// SQL cannot include the declaration: the eventType numbers and kind names written in the shipped SQL and in the
// tests' SQL and scripts are checked against it here.
TEST(ExportModel, SqlNamesDeclaredEventTypesAndKinds) {
  std::regex event_types(R"(eventType\s*(?:=\s*([0-9]+)|in\s*\(([0-9,\s]+)\)))", std::regex::icase);
  std::regex kind_equals(R"(\bkind\s*(?:=|!=|<>)\s*'([^']*)')", std::regex::icase);
  std::regex kind_in(R"(\bkind\s+(?:not\s+)?in\s*\(([^)]*)\))", std::regex::icase);
  std::regex quoted("'([^']*)'");
  int event_type_lists = 0, kind_names = 0;
  for (const char* dir : {"sql", "tests/sql", "tests/bench", "tests/conformance", "examples"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(testdb::source_dir() + "/" + dir)) {
      std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".sql" && ext != ".py" && ext != ".cc" && ext != ".sh")) continue;
      std::string text = read_source(std::filesystem::relative(entry.path(), testdb::source_dir()).string());
      std::string file = entry.path().filename().string();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), event_types); it != std::sregex_iterator(); ++it) {
        ++event_type_lists;
        EXPECT_EQ(whole_roles_problem(numbers_in((*it)[1].matched ? (*it)[1] : (*it)[2])), "")
            << file << ": " << it->str();
      }
      // Kind names: in the SQL run against trace_events (examples/ has SQL making fixtures, with kinds of its own).
      if (ext != ".sql" || std::string(dir) == "examples") continue;
      auto check_kind = [&](const std::string& name) {
        ++kind_names;
        EXPECT_TRUE(kind_from_name(name)) << file << ": kind '" << name << "' is not declared";
      };
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kind_equals); it != std::sregex_iterator(); ++it)
        check_kind((*it)[1]);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kind_in); it != std::sregex_iterator(); ++it) {
        std::string list = (*it)[1];
        for (auto q = std::sregex_iterator(list.begin(), list.end(), quoted); q != std::sregex_iterator(); ++q)
          check_kind((*q)[1]);
      }
    }
  }
  EXPECT_GT(event_type_lists, 0);
  EXPECT_GT(kind_names, 0);
}

}  // namespace
}  // namespace nsystrace
