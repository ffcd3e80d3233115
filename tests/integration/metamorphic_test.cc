// Metamorphic tests of trace_events, after SQLancer (Rigger & Su: Ternary Logic Partitioning, and NoREC): a seeded
// generator makes predicates p over every column (hidden ones too) with values the profile holds and values it does
// not, and checks answers that must agree whatever the scan was told. The contract: trace_events' rows are a function
// of the profile alone (every report on the connection; stored rows, derived 0, and derived ones, derived 1), so
// constraints, the select list, joins, CTE materialization and SQLite's version change how fast an answer comes,
// never which rows and values there are; and no comparison errors because of its value.
//
// Seed: NSYSTRACE_METAMORPHIC_SEED when set, else kDefaultSeed; every failure names it (and the profile's own seed
// derived from it) and the query. With NSYSTRACE_GRID_STRIDE set (the sanitizer passes, the host matrix) fewer
// predicates run.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/support/test_db.h"

namespace {

using Rows = std::vector<std::vector<std::string>>;

constexpr uint64_t kDefaultSeed = 20240613;

uint64_t base_seed() {
  const char* env = std::getenv("NSYSTRACE_METAMORPHIC_SEED");
  return env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 0) : kDefaultSeed;
}

// How many predicates a check runs on one profile: `release` in the Release pass, 1/NSYSTRACE_GRID_STRIDE of it
// (at least 1) where that is set.
size_t predicates(size_t release) { return std::max<size_t>(1, release / testdb::sanitizer_stride()); }

// ---------------------------------------------------------------------------------------------------------------
// The columns.

enum class Type { text, integer, untyped };
struct ColumnSpec {
  const char* name;
  Type type;
};

// Every column of trace_events the predicates compare: all but `event` (a row pointer for the trace aggregates) and
// `args` (big: only its nullness and length are tested). `rowid` too: constraints on it reach the scan.
const std::vector<ColumnSpec> kColumns = {
    {"kind", Type::text},           {"name", Type::text},
    {"ts", Type::integer},          {"dur", Type::integer},
    {"pid", Type::integer},         {"tid", Type::integer},
    {"process_name", Type::text},   {"thread_name", Type::text},
    {"device_id", Type::integer},   {"stream_id", Type::integer},
    {"correlation_id", Type::integer}, {"global_tid", Type::integer},
    {"lane", Type::integer},        {"global_pid", Type::integer},
    {"schema", Type::text},         {"cname", Type::text},
    {"domain", Type::text},         {"demangled_name", Type::text},
    {"nsys_dur", Type::integer},    {"call_id", Type::integer},
    {"call_ts", Type::integer},     {"call_dur", Type::integer},
    {"call_name", Type::text},      {"call_pid", Type::integer},
    {"call_tid", Type::integer},    {"call_global_tid", Type::integer},
    {"size_bytes", Type::integer},  {"copy_kind", Type::untyped},
    {"src_kind", Type::untyped},    {"dst_kind", Type::untyped},
    {"mem_kind", Type::untyped},    {"derived", Type::integer},
    {"rowid", Type::integer},
};

// What the wrappers compare: the row count and exact integer checksums of the rows (sums of residues, so that no sum
// overflows and the order rows come in cannot round it), over names, times, placement and identity.
const std::vector<std::string> kSummedIntegers = {"ts", "dur", "lane", "rowid", "global_tid", "pid", "correlation_id"};
const std::vector<std::string> kSummedTexts = {"name", "thread_name", "process_name", "kind"};
std::string checksum(const std::string& q) {
  std::string s = "count(*)";
  for (const std::string& c : kSummedIntegers) s += ", sum(" + q + c + " % 1000003)";
  for (const std::string& c : kSummedTexts) s += ", sum(length(" + q + c + ")), sum(unicode(" + q + c + "))";
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Predicates.

// A predicate, rendered with a qualifier ("" or "e." ...) before every column of the scanned table.
struct Predicate {
  enum class Op { atom, all, any, negate };
  Op op = Op::atom;
  std::string before, column, after;  // atom: before + qualifier + column + after
  std::vector<Predicate> parts;

  // The columns of the scanned table it names (not those of its subqueries' own scans).
  void columns(std::set<std::string>& out) const {
    if (op == Op::atom) out.insert(column);
    for (const Predicate& p : parts) p.columns(out);
  }

  std::string sql(const std::string& q = "") const {
    switch (op) {
      case Op::atom: return before + q + column + after;
      case Op::negate: return "not (" + parts[0].sql(q) + ")";
      case Op::all:
      case Op::any: {
        std::string s;
        for (const Predicate& p : parts)
          s += (s.empty() ? "" : (op == Op::all ? " and " : " or ")) + ("(" + p.sql(q) + ")");
        return s;
      }
    }
    return "";
  }
};

// The select list that carries through a subquery or CTE what the checksum and `p` name (`select *` would drop the
// hidden columns; `rowid as rowid` keeps the name resolving).
std::string carried_columns(const Predicate& p) {
  std::set<std::string> names(kSummedIntegers.begin(), kSummedIntegers.end());
  names.insert(kSummedTexts.begin(), kSummedTexts.end());
  p.columns(names);
  std::string s;
  for (const std::string& c : names) s += (s.empty() ? "" : ", ") + (c == "rowid" ? "rowid as rowid" : c);
  return s;
}

// Values of a column the profile holds (as SQL literals, from quote()) and LIKE/GLOB patterns made from them.
struct ColumnSample {
  std::vector<std::string> literals;
  std::vector<std::string> patterns;
};

// Plain queries: every distinct non-NULL value of each column up to 64 characters (the hostile fixture's
// 3,000,000-character name stays out of the literals; its prefixes make patterns), from one scan of every column.
// NULL is among the foreign values.
std::vector<ColumnSample> sample_columns(testdb::Db& db) {
  std::string select;
  for (const ColumnSpec& c : kColumns)
    select += std::string(select.empty() ? "" : ", ") + "case when length(" + c.name + ") <= 64 then quote(" + c.name +
              ") end";
  std::vector<std::set<std::string>> held(kColumns.size());
  for (const auto& row : db.rows("select " + select + " from trace_events"))
    for (size_t i = 0; i < kColumns.size(); ++i)
      if (row[i] != "NULL") held[i].insert(row[i]);
  std::vector<ColumnSample> out;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    const ColumnSpec& c = kColumns[i];
    ColumnSample s;
    const std::string col = c.name;
    s.literals.assign(held[i].begin(), held[i].end());
    if (c.type != Type::integer) {  // prefixes, suffixes, infixes, upper-cased (LIKE ignores ASCII case), GLOB's *
      std::set<std::string> patterns;
      for (const auto& row : db.rows(
               "select quote(substr(v, 1, k) || '%'), quote('%' || substr(v, -k)), quote('%' || substr(v, 2, k) || "
               "'%'), quote(upper(substr(v, 1, k)) || '%'), quote(substr(v, 1, k) || '*'), quote('_' || substr(v, 2, "
               "k) || '%') from (select distinct " + col + " as v, min(1 + length(" + col + ") / 2, 12) as k from "
               "trace_events where typeof(" + col + ") = 'text')"))
        patterns.insert(row.begin(), row.end());
      s.patterns.assign(patterns.begin(), patterns.end());
    }
    out.push_back(std::move(s));
  }
  return out;
}

// A profile's samples, made once for the checks that run on it (they depend on the profile alone).
const std::vector<ColumnSample>& samples_of(const std::string& label, testdb::Db& db) {
  static std::map<std::string, std::vector<ColumnSample>> made;
  auto it = made.find(label);
  if (it == made.end()) it = made.emplace(label, sample_columns(db)).first;
  return it->second;
}

class PredicateMaker {
 public:
  PredicateMaker(std::mt19937_64& rng, const std::vector<ColumnSample>& samples) : rng_(rng), samples_(samples) {}

  // A predicate of up to `depth` levels of AND / OR / NOT over atoms.
  Predicate make(int depth) {
    if (depth == 0 || chance(0.3)) return atom();
    Predicate p;
    double r = uniform();
    if (r < 0.2) {
      p.op = Predicate::Op::negate;
      p.parts.push_back(make(depth - 1));
      return p;
    }
    p.op = r < 0.6 ? Predicate::Op::all : Predicate::Op::any;
    int n = 2 + static_cast<int>(rng_() % 2);
    for (int i = 0; i < n; ++i) p.parts.push_back(make(depth - 1));
    return p;
  }

 private:
  bool chance(double p) { return uniform() < p; }
  double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[rng_() % v.size()];
  }

  // A value for column i: mostly one the column holds, else one it cannot hold or that only SQL's affinity and
  // type order decide (a real with a fraction, a number as text, a text for an integer column, NULL...).
  std::string value(size_t i) {
    const ColumnSpec& c = kColumns[i];
    const std::vector<std::string>& held = samples_[i].literals;
    if (!held.empty() && chance(0.65)) return pick(held);
    if (!held.empty() && chance(0.5)) return near(c, pick(held));
    static const std::vector<std::string> foreign = {
        "'no_such'", "2", "-1", "0", "1.0", "'1'", "NULL", "2.5", "-0.5", "'0'", "''", "x'00'",
        "9223372036854775807", "-9223372036854775808", "1e300", "-1e300", "'%'", "' 1'"};
    return pick(foreign);
  }

  // A value next to a held one: v + 1, v - 1, v + 0.5, v as text (integers); v upper-cased, extended by a
  // character, with a trailing space (texts).
  std::string near(const ColumnSpec& c, const std::string& v) {
    if (v.empty() || v == "NULL") return v;
    if (v[0] == '\'') {  // a text
      switch (rng_() % 3) {
        case 0: {
          std::string u = v;
          std::transform(u.begin(), u.end(), u.begin(), [](unsigned char ch) { return std::toupper(ch); });
          return u;
        }
        case 1: return v.substr(0, v.size() - 1) + "x'";
        default: return c.type == Type::text ? "'" + v.substr(1, v.size() - 2) + " '" : v;
      }
    }
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (errno != 0 || end == nullptr || *end != '\0') return v;  // a real or a blob: as held
    switch (rng_() % 4) {
      case 0: return n < INT64_MAX ? std::to_string(n + 1) : v;
      case 1: return n > INT64_MIN ? std::to_string(n - 1) : v;
      case 2: return std::to_string(n) + ".5";
      default: return "'" + std::to_string(n) + "'";
    }
  }

  Predicate atom() {
    Predicate p;
    double r = uniform();
    if (r < 0.04) {  // args: its nullness and length only
      static const std::vector<std::string> forms = {" is null", " is not null"};
      if (chance(0.5)) {
        p.column = "args";
        p.after = pick(forms);
      } else {
        p.before = "length(";
        p.column = "args";
        p.after = ") > " + pick(std::vector<std::string>{"0", "10", "40", "100", "1000"});
      }
      return p;
    }
    size_t i = rng_() % kColumns.size();
    if (chance(0.15)) i = column_index(pick(kContractColumns));
    const ColumnSpec& c = kColumns[i];
    p.column = c.name;
    const bool text = c.type != Type::integer;
    if (r < 0.40) {  // a comparison, the column on either side
      static const std::vector<std::string> ops = {"=", "!=", "<>", "<", "<=", ">", ">=", "is", "is not", "=="};
      std::string op = pick(ops);
      std::string v = value(i);
      std::string collate = text && chance(0.15) ? " collate nocase" : "";
      if (chance(0.2) && op != "is" && op != "is not") {
        static const std::vector<std::pair<std::string, std::string>> flipped = {
            {"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
        for (const auto& [from, to] : flipped)
          if (op == from) {
            op = to;
            break;
          }
        p.before = v + " " + op + " ";
        p.after = collate;
      } else {
        p.after = " " + op + " " + v + collate;
      }
    } else if (r < 0.58) {  // IN / NOT IN a list, rarely a subquery over trace_events itself
      if (chance(0.1)) {
        Predicate inner = atom();
        p.after = std::string(chance(0.3) ? " not" : "") + " in (select " + c.name + " from trace_events where " +
                  inner.sql() + ")";
      } else {
        std::string list;
        int n = 1 + static_cast<int>(rng_() % 4);
        for (int k = 0; k < n; ++k) list += (k ? ", " : "") + value(i);
        p.after = std::string(chance(0.3) ? " not" : "") + " in (" + list + ")";
      }
    } else if (r < 0.70) {  // BETWEEN, bounds in either order
      p.after = std::string(chance(0.25) ? " not" : "") + " between " + value(i) + " and " + value(i);
    } else if (r < 0.84 && text && !samples_[i].patterns.empty()) {  // LIKE / GLOB
      static const std::vector<std::string> fixed = {"'%'", "''", "'no_such%'", "'%_%'", "'%x%'"};
      std::string pattern = chance(0.8) ? pick(samples_[i].patterns) : pick(fixed);
      static const std::vector<std::string> ops = {" like ", " like ", " not like ", " glob "};
      p.after = pick(ops) + pattern;
    } else {  // nullness
      static const std::vector<std::string> forms = {" is null", " is not null", " notnull", " isnull"};
      p.after = pick(forms);
    }
    return p;
  }

  // The columns the contract names (which reports, stored or derived rows, the derived kind): drawn more often.
  inline static const std::vector<std::string> kContractColumns = {"schema", "derived", "kind"};
  static size_t column_index(const std::string& name) {
    for (size_t i = 0; i < kColumns.size(); ++i)
      if (name == kColumns[i].name) return i;
    return 0;
  }

  std::mt19937_64& rng_;
  const std::vector<ColumnSample>& samples_;
};

// ---------------------------------------------------------------------------------------------------------------
// Profiles.

// `predicates` and `trace_predicates`: how many each check draws in the Release pass (a profile's queries cost
// with its rows: the example's 4,404 rows, twice with a second report; hostile's 3,000,000-character name).
struct Profile {
  std::string label;
  std::string script;         // relative to source_dir()
  std::string second_report;  // "": none; else the script ATTACHed again under this name
  size_t predicates, trace_predicates;
  // The trace checks AND `length(name) < 1000 and ts <= T` (T: the 256th-smallest ts) to every predicate, so that
  // each trace holds a few hundred rows (a whole trace of the example's two reports costs 1 s under ASan).
  bool bounded_traces = false;
};

const Profile kExample{"example", "examples/example_profile.sql", "", 48, 6, true};
const Profile kTwoReports{"example_and_a_second_report", "examples/example_profile.sql", "r1", 24, 3, true};
// NULL starts, INT64 extremes, invalid UTF-8. Its 3,000,000-character name would cost 30 ms in each trace.
const Profile kHostile{"hostile", "tests/fixtures/hostile.sql", "", 16, 3, true};
const Profile kNvtxProjection{"nvtx_projection", "tests/fixtures/nvtx_projection.sql", "", 96, 8};  // derived rows
const Profile kMoreKinds{"more_kinds", "tests/fixtures/more_kinds.sql", "", 64, 8};
const Profile kCudaMemory{"cuda_memory", "tests/fixtures/cuda_memory.sql", "", 64, 8};  // size_bytes, mem_kind
const Profile kNullIdentities{"null_identities", "tests/fixtures/null_identities.sql", "", 64, 8};

// A profile's connection (in memory, the extension registered), with its second report when it has one.
struct OpenProfile {
  explicit OpenProfile(const Profile& p) {
    if (p.second_report.empty())
      db.exec_file(testdb::source_dir() + "/" + p.script);
    else
      testdb::open_with_second_report(db, p.script, tmp, p.second_report);
  }
  testdb::TempDir tmp{"nsystrace_metamorphic"};  // declared first: removed after db has closed its files
  testdb::Db db;
};

// The profile's own seed: the base seed turned by its label (so that profiles draw different predicates).
uint64_t profile_seed(const Profile& p) {
  uint64_t h = base_seed();
  for (char c : p.label) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::string seed_note(const Profile& p) {
  return "profile " + p.label + ", NSYSTRACE_METAMORPHIC_SEED=" + std::to_string(base_seed()) +
         " (profile seed " + std::to_string(profile_seed(p)) + ")";
}

// A query's rows, or its error as the only cell of a row starting with "ERROR: ".
Rows run(testdb::Db& db, const std::string& sql) {
  try {
    return db.rows(sql);
  } catch (const std::exception& e) {
    return Rows{{std::string("ERROR: ") + e.what()}};
  }
}
bool failed(const Rows& r) { return r.size() == 1 && r[0].size() == 1 && r[0][0].rfind("ERROR: ", 0) == 0; }

std::string show(const Rows& rows, size_t at_most = 4) {
  std::string s = std::to_string(rows.size()) + " rows:";
  for (size_t i = 0; i < rows.size() && i < at_most; ++i) {
    s += " [";
    for (size_t j = 0; j < rows[i].size(); ++j) {
      const std::string& v = rows[i][j];
      s += (j ? "|" : "") + (v.size() <= 200 ? v : "(" + std::to_string(v.size()) + " bytes) " + v.substr(0, 120) + "...");
    }
    s += "]";
  }
  return s;
}

// One row of integers (NULL, the sum of no rows, as 0).
std::vector<int64_t> integers(const Rows& r) {
  std::vector<int64_t> out;
  for (const std::string& v : r.at(0)) out.push_back(v == "NULL" ? 0 : std::stoll(v));
  return out;
}

// Collects failures, at most kMaxFailures reported, so a broken core ends the test quickly with readable output.
struct Failures {
  static constexpr int kMaxFailures = 12;
  int count = 0;
  void add(const std::string& what) {
    if (++count <= kMaxFailures) ADD_FAILURE() << what;
  }
  bool enough() const { return count >= kMaxFailures; }
};

// ---------------------------------------------------------------------------------------------------------------
// The predicate checks: TLP, NoREC, wrappers, placement.

struct PredicateReport {
  int predicates = 0, selecting_some = 0, selecting_not_all = 0;
};

PredicateReport check_predicates(const Profile& profile, size_t how_many) {
  SCOPED_TRACE(seed_note(profile));
  OpenProfile open(profile);
  testdb::Db& db = open.db;
  std::mt19937_64 rng(profile_seed(profile));
  const std::vector<ColumnSample>& samples = samples_of(profile.label, db);
  PredicateMaker maker(rng, samples);
  Failures failures;
  PredicateReport report;

  const int64_t rows = db.integer("select count(*) from trace_events");
  EXPECT_GT(rows, 0);
  // rowid names a row: the placement check finds rows by it.
  EXPECT_EQ(db.integer("select count(distinct rowid) from trace_events"), rows);
  const Rows whole_rows = run(db, "select " + checksum("") + " from trace_events");
  if (failed(whole_rows)) {
    ADD_FAILURE() << "the whole table's checksum: " << whole_rows[0][0];
    return report;
  }
  const std::vector<int64_t> whole = integers(whole_rows);
  // The UNION ALL split: the median ts; ts < M and NOT (ts < M) partition the rows with a ts, `ts is null` the rest.
  std::string split = db.text("select quote(ts) from trace_events where ts is not null order by ts limit 1 offset " +
                               std::to_string(rows / 2));
  if (split.empty()) split = "0";
  // The placement reference: every row's values (lane, thread and process names first) from one unconstrained scan.
  const std::string values = "lane, thread_name, process_name, kind, name, ts, dur, pid, tid, global_tid, "
                             "global_pid, correlation_id, device_id, stream_id, schema, cname, domain, call_id, "
                             "call_name, derived";
  db.exec("create temp table meta_placement as select rowid as r, " + values +
          ", length(args) as args_length from trace_events");

  for (size_t n = 0; n < how_many && !failures.enough(); ++n) {
    const Predicate pred = maker.make(1 + static_cast<int>(rng() % 3));
    const std::string p = pred.sql(), cols = carried_columns(pred);
    const std::string where = "predicate " + std::to_string(n) + ": " + p + "\n";
    ++report.predicates;

    // TLP: p, NOT p and p IS NULL partition the rows, checksums included.
    const Rows direct = run(db, "select " + checksum("") + " from trace_events where " + p);
    const Rows negated = run(db, "select " + checksum("") + " from trace_events where not (" + p + ")");
    const Rows unknown = run(db, "select " + checksum("") + " from trace_events where (" + p + ") is null");
    if (failed(direct) || failed(negated) || failed(unknown)) {
      failures.add(where + "a comparison errored: " + show(direct) + " / " + show(negated) + " / " + show(unknown));
      continue;
    }
    std::vector<int64_t> sum = integers(direct), b = integers(negated), c = integers(unknown);
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += b[k] + c[k];
    if (sum != whole)
      failures.add(where + "TLP: count(p) " + direct[0][0] + " + count(not p) " + negated[0][0] +
                   " + count(p is null) " + unknown[0][0] + " (checksums summed) != the whole table's " +
                   std::to_string(whole[0]) + " (first checksum: " + std::to_string(sum.size() > 1 ? sum[1] : 0) +
                   " vs " + std::to_string(whole.size() > 1 ? whole[1] : 0) + ")");
    const int64_t count = integers(direct)[0];
    report.selecting_some += count > 0;
    report.selecting_not_all += count < rows;

    // NoREC: the same count with p evaluated by SQLite on every row of an unconstrained scan.
    const Rows norec = run(db, "select sum(case when " + p + " then 1 else 0 end) from trace_events");
    if (failed(norec) || integers(norec)[0] != count)
      failures.add(where + "NoREC: count(*) where p = " + std::to_string(count) +
                   ", sum(case when p then 1 else 0 end) = " + show(norec));

    // Wrappers: the same rows (count and checksums) whatever stands between the scan and p.
    const std::vector<std::pair<std::string, std::string>> wrappers = {
        {"subquery with limit -1",
         "select " + checksum("") + " from (select " + cols + " from trace_events limit -1) where " + p},
        {"materialized CTE", "with s as materialized (select " + cols + " from trace_events) select " + checksum("") +
                                 " from s where " + p},
        {"not materialized CTE", "with s as not materialized (select " + cols + " from trace_events) select " +
                                     checksum("") + " from s where " + p},
        {"materialized CTE filtered inside", "with s as materialized (select " + cols + " from trace_events where " +
                                                 p + ") select " + checksum("") + " from s"},
        {"left join", "select " + checksum("e.") + " from trace_events e left join (select 1 as one) t on 1 where " +
                          pred.sql("e.")},
        {"union all split on ts", "select " + checksum("") + " from (select " + cols + " from trace_events where (" +
                                      p + ") and ts < " + split + " union all select " + cols +
                                      " from trace_events where (" + p + ") and not (ts < " + split +
                                      ") union all select " + cols + " from trace_events where (" + p +
                                      ") and ts is null)"},
    };
    for (const auto& [label, sql] : wrappers) {
      const Rows got = run(db, sql);
      if (got != direct)
        failures.add(where + label + ": " + show(got) + ", the table directly: " + show(direct) + "\n  query: " + sql);
    }

    // Placement: a row's values (lane, thread and process names, ...) are the ones the unconstrained scan gave it.
    const std::string filtered =
        "select rowid, " + values + ", length(args) from trace_events where " + p + " order by 1";
    const std::string reference = "select r, " + values + ", args_length" +
                                  " from temp.meta_placement where r in (select rowid from trace_events where " + p +
                                  ") order by 1";
    const Rows got = run(db, filtered), want = run(db, reference);
    if (got != want || failed(got)) {
      size_t i = 0;
      while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
      failures.add(where + "placement: " + show(got) + " vs the unconstrained scan's " + show(want) +
                   "; first difference at row " + std::to_string(i) + ": " +
                   (i < got.size() ? show({got[i]}) : "(none)") + " vs " + (i < want.size() ? show({want[i]}) : "(none)") +
                   "\n  query: " + filtered);
    }
  }
  std::printf("%s: %d predicates, %d selecting some rows, %d selecting fewer than all %lld rows\n", profile.label.c_str(),
              report.predicates, report.selecting_some, report.selecting_not_all, static_cast<long long>(rows));
  return report;
}

// The generator reaches both sides: predicates that select rows and predicates that leave some out.
void check_predicates_and_reach(const Profile& profile) {
  const size_t how_many = predicates(profile.predicates);
  PredicateReport r = check_predicates(profile, how_many);
  if (how_many >= 20 && !::testing::Test::HasFailure()) {
    EXPECT_GE(r.selecting_some, r.predicates / 10) << seed_note(profile);
    EXPECT_GE(r.selecting_not_all, r.predicates / 10) << seed_note(profile);
  }
}

TEST(Metamorphic, Example) { check_predicates_and_reach(kExample); }
TEST(Metamorphic, Hostile) { check_predicates_and_reach(kHostile); }
TEST(Metamorphic, NvtxProjection) { check_predicates_and_reach(kNvtxProjection); }
TEST(Metamorphic, MoreKinds) { check_predicates_and_reach(kMoreKinds); }
TEST(Metamorphic, CudaMemory) { check_predicates_and_reach(kCudaMemory); }
TEST(Metamorphic, NullIdentities) { check_predicates_and_reach(kNullIdentities); }
TEST(Metamorphic, ExampleAndASecondReport) { check_predicates_and_reach(kTwoReports); }

// The contract's own examples: every report and both kinds of rows are there without a constraint, and a value
// no row holds (or one of another type) selects what SQL says rather than erroring.
TEST(Metamorphic, EveryReportAndDerivedRowsWithoutAConstraint) {
  OpenProfile open(kTwoReports);
  testdb::Db& db = open.db;
  const int64_t all = db.integer("select count(*) from trace_events");
  const int64_t main_rows = db.integer("select count(*) from trace_events where schema = 'main'");
  const int64_t r1_rows = db.integer("select count(*) from trace_events where schema = 'r1'");
  EXPECT_GT(main_rows, 0);
  EXPECT_EQ(r1_rows, main_rows);  // the same script twice
  EXPECT_EQ(all, main_rows + r1_rows);
  EXPECT_EQ(db.integer("select count(distinct schema) from trace_events"), 2);
  const int64_t derived = db.integer("select count(*) from trace_events where derived = 1");
  EXPECT_GT(derived, 0) << "the example has NVTX ranges over kernels";
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 0") + derived, all);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'nvtx_kernel'"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 1.0"), derived);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = '1'"), derived);  // INTEGER affinity
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 2"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where derived = 0.5"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where kind = 'no_such'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts = 'no_such'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where ts < 'no_such'"),  // every number sorts before text
            db.integer("select count(*) from trace_events where ts is not null"));
  EXPECT_EQ(db.integer("select count(*) from trace_events where schema = 'no_such'"), 0);
  EXPECT_EQ(db.integer("select count(*) from trace_events where schema in ('main', 'no_such')"), main_rows);
}

// ---------------------------------------------------------------------------------------------------------------
// The (*) trace aggregates: in the plain shape they draw exactly the rows of `where p` (what the row form, t.event,
// draws); in every other shape they draw exactly that shape's rows or refuse, naming the row form. Never a trace of
// other rows.

struct StarReport {
  int shapes = 0, refused = 0, drawn = 0;
};

// `star` (a query of chrome_trace(*) or perfetto_trace(*)) against `want`, the answer of `exact` (the same rows
// through t.event): equal, or refused with an error naming `function`(t.event) when `may_refuse`.
void compare_star(testdb::Db& db, const std::string& function, const std::string& label, const std::string& star,
                  const std::string& exact, const Rows& want, bool may_refuse, Failures& failures, StarReport& report) {
  ++report.shapes;
  if (failed(want)) {
    failures.add(label + ": the row form errored: " + want[0][0] + "\n  query: " + exact);
    return;
  }
  const Rows got = run(db, star);
  if (failed(got)) {
    ++report.refused;
    if (!may_refuse)
      failures.add(label + ": the plain shape was refused: " + got[0][0] + "\n  query: " + star);
    else if (got[0][0].find(function + "(t.event)") == std::string::npos)
      failures.add(label + ": refused without naming " + function + "(t.event): " + got[0][0] + "\n  query: " + star);
    return;
  }
  ++report.drawn;
  if (got != want) {
    std::string where_first;  // for two whole traces: where they part
    if (got.size() == 1 && want.size() == 1 && got[0].size() == 1 && want[0].size() == 1) {
      const std::string &a = got[0][0], &b = want[0][0];
      size_t k = std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first - a.begin();
      where_first = "; they differ first at byte " + std::to_string(k) + ": " + show({{a.substr(k, 120)}}) +
                    " vs " + show({{b.substr(k, 120)}});
    }
    failures.add(label + ": " + function + "(*) gave " + show(got) + ", the rows' trace is " + show(want) +
                 where_first + "\n  query: " + star + "\n  exact: " + exact);
  }
}
void compare_star(testdb::Db& db, const std::string& function, const std::string& label, const std::string& star,
                  const std::string& exact, bool may_refuse, Failures& failures, StarReport& report) {
  compare_star(db, function, label, star, exact, run(db, exact), may_refuse, failures, report);
}

// Statement A (`paused`) stepped to its first row and left open while `query` runs: the answer is the one without A.
Rows run_beside_a_paused_scan(testdb::Db& db, const std::string& paused, const std::string& query) {
  sqlite3_stmt* a = nullptr;
  if (sqlite3_prepare_v2(db.get(), paused.c_str(), -1, &a, nullptr) != SQLITE_OK)
    return Rows{{std::string("ERROR: ") + sqlite3_errmsg(db.get())}};
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(a, sqlite3_finalize);
  if (sqlite3_step(a) != SQLITE_ROW) return Rows{{"ERROR: the paused statement has no row: " + paused}};
  return run(db, query);
}

StarReport check_trace_aggregates(const Profile& profile, size_t how_many) {
  SCOPED_TRACE(seed_note(profile));
  OpenProfile open(profile);
  testdb::Db& db = open.db;
  std::mt19937_64 rng(profile_seed(profile) ^ 0x5eed5eed5eedull);
  const std::vector<ColumnSample>& samples = samples_of(profile.label, db);
  PredicateMaker maker(rng, samples);
  Failures failures;
  StarReport report;
  // Three rows of the profile in a table of their own (with their rowids, to name them in trace_events).
  db.exec("create temp table meta_star_rows as select rowid as r, kind, name, ts, dur from trace_events "
          "order by rowid limit 3");
  Predicate short_name, early;  // see Profile::bounded_traces
  short_name.before = "length(";
  short_name.column = "name";
  short_name.after = ") < 1000";
  early.column = "ts";
  early.after = " <= " + db.text("select quote(max(ts)) from (select ts from trace_events where ts is not null "
                                 "order by ts limit 256)");

  for (size_t n = 0; n < how_many && !failures.enough(); ++n) {
    Predicate pred = maker.make(1 + static_cast<int>(rng() % 2));
    if (profile.bounded_traces) pred = Predicate{Predicate::Op::all, "", "", "", {pred, short_name, early}};
    const Predicate other = maker.make(1);
    const std::string p = pred.sql(), pt = pred.sql("t."), q = other.sql();
    const std::string head = "predicate " + std::to_string(n) + ": " + p + " (other: " + q + ")\n";
    for (const std::string& function : {std::string("chrome_trace"), std::string("perfetto_trace")}) {
      const std::string star = "select length(" + function + "(*))", row = "select length(" + function + "(t.event))";
      // The plain shape: the rows of p, never refused (unless p holds a subquery over trace_events: then the
      // statement reads trace_events twice, a shape that may refuse), the whole trace the row form writes.
      const bool one_scan = p.find("from trace_events") == std::string::npos;
      const std::string plain = "select " + function + "(*) from trace_events where " + p;
      const std::string plain_exact = "select " + function + "(t.event) from trace_events t where " + pt;
      const Rows plain_want = run(db, plain_exact);
      compare_star(db, function, head + "plain", plain, plain_exact, plain_want, !one_scan, failures, report);
      // The other shapes compare lengths (a trace's events may come in another order).
      const std::string exact = row + " from trace_events t where " + pt;
      const Rows want = run(db, exact);
      // Windowed first: the first 10 rows by rowid.
      compare_star(db, function, head + "window",
                   star + " from (select *, row_number() over (order by rowid) n from trace_events where " + p +
                       ") where n <= 10",
                   row + " from trace_events t where " + pt +
                       " and t.rowid in (select rowid from trace_events where " + p + " order by rowid limit 10)",
                   true, failures, report);
      // Sorted first: the same rows.
      compare_star(db, function, head + "sorted subquery",
                   star + " from (select * from trace_events where " + p + " order by dur)", exact, want, true,
                   failures, report);
      // A second trace_events scan in WHERE that stops at its LIMIT (its cursor left on a row).
      const std::string at_limit = "(select count(*) from (select 1 from trace_events where " + q + " limit 2)) = 2";
      compare_star(db, function, head + "subquery at its limit in where",
                   star + " from trace_events where " + p + " and " + at_limit,
                   row + " from trace_events t where " + pt + " and " + at_limit, true, failures, report);
      compare_star(db, function, head + "rowids of a limited subquery",
                   star + " from trace_events where " + p + " and rowid in (select rowid from trace_events where " + q +
                       " limit 5)",
                   row + " from trace_events t where " + pt + " and t.rowid in (select rowid from trace_events where " +
                       q + " limit 5)",
                   true, failures, report);
      // Rows of another table, a trace_events scan stopped at its LIMIT beside them: the table's rows or a refusal.
      const std::string p_at_limit = "(select count(*) from (select 1 from trace_events where " + p + " limit 2)) = 2";
      compare_star(db, function, head + "temp table, a limited trace_events subquery",
                   star + " from temp.meta_star_rows where " + p_at_limit,
                   row + " from trace_events t where t.rowid in (select r from temp.meta_star_rows) and " + p_at_limit,
                   true, failures, report);
      // Two statements on the connection: A paused mid-rows while the plain shape runs gives the answer it gives
      // alone (the whole trace, or the same refusal), and so does the row form.
      const Rows plain_alone = run(db, plain);
      for (const std::string& paused : {std::string("select * from trace_events"),
                                        "select rowid, kind from trace_events where " + q + " or 1"}) {
        ++report.shapes;
        const Rows beside = run_beside_a_paused_scan(db, paused, plain);
        if (beside != plain_alone)
          failures.add(head + "beside a paused statement (" + paused + "): " + show(beside) + ", alone " +
                       show(plain_alone) + "\n  query: " + plain);
        const Rows row_form = run_beside_a_paused_scan(db, paused, plain_exact);
        if (row_form != plain_want)
          failures.add(head + "row form beside a paused statement (" + paused + "): " + show(row_form) + ", alone " +
                       show(plain_want) + "\n  query: " + plain_exact);
      }
    }
  }
  std::printf("%s: %d trace-aggregate shapes, %d drawn, %d refused\n", profile.label.c_str(), report.shapes,
              report.drawn, report.refused);
  return report;
}

void check_trace_aggregates_on(const Profile& profile) {
  StarReport r = check_trace_aggregates(profile, predicates(profile.trace_predicates));
  EXPECT_GT(r.drawn, 0) << seed_note(profile);
}

TEST(MetamorphicTraceAggregates, Example) { check_trace_aggregates_on(kExample); }
TEST(MetamorphicTraceAggregates, Hostile) { check_trace_aggregates_on(kHostile); }
TEST(MetamorphicTraceAggregates, NvtxProjection) { check_trace_aggregates_on(kNvtxProjection); }
TEST(MetamorphicTraceAggregates, MoreKinds) { check_trace_aggregates_on(kMoreKinds); }
TEST(MetamorphicTraceAggregates, CudaMemory) { check_trace_aggregates_on(kCudaMemory); }
TEST(MetamorphicTraceAggregates, NullIdentities) { check_trace_aggregates_on(kNullIdentities); }
TEST(MetamorphicTraceAggregates, ExampleAndASecondReport) { check_trace_aggregates_on(kTwoReports); }

}  // namespace
