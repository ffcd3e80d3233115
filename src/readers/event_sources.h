// Readers: one per event table, each yielding its events in (start, longest first) order so that a k-way
// merge of them is the whole timeline in time order, the order the track layout needs.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/readers/args.h"
#include "src/model/event.h"
#include "src/model/profile_catalog.h"
#include "src/sqlite/statement.h"

namespace nsystrace {


// A constraint on trace_events.name: name = 'x', name LIKE 'x%', name GLOB 'x*'.
struct NameMatch {
  enum class Op { eq, like, glob } op;
  std::string pattern;
  const char* sql_operator() const { return op == Op::eq ? "=" : op == Op::like ? "LIKE" : "GLOB"; }
};

// Whether a name satisfies a NameMatch, as SQLite decides it: `=` compares bytes (the BINARY collation, the only one
// pushed down); LIKE and GLOB are SQLite's own operators, so they mean what they mean on this connection
// (case_sensitive_like, an overloaded like()). Readers use it to narrow what they read, the scan to keep exactly the
// rows that match. Its statements are prepared on first use and kept.
class NameMatcher {
 public:
  explicit NameMatcher(sqlite3* db) : db_(db) {}
  bool operator()(const NameMatch& m, std::string_view name);

 private:
  sqlite3* db_;
  Statement like_, glob_;
};

// The order a scan hands its rows over in: time order (ts, longest first at equal ts; the default, which lanes and
// the trace writers need); kind by kind (by the kinds' names, ascending or descending), for a GROUP BY kind, which
// then needs no sort; or any order (each table as stored), for a GROUP BY that SQLite sorts itself. In the last two
// no table's stored order is checked or restored (ProfileCatalog::stored_order) and no lanes are fitted.
enum class RowOrder : uint8_t { time, kind_ascending, kind_descending, any };

// What a scan is restricted to (pushed down from trace_events' constraints). Bounds are inclusive.
struct ScanFilter {
  uint32_t kinds = kAllKinds;
  std::optional<int64_t> ts_min, ts_max;
  std::optional<int64_t> pid;  // Chrome pid: an OS pid, or kGpuPidBase + device (+ report * kReportPidStride)
  std::vector<std::vector<NameMatch>> names;  // all must hold; each is one match or an IN list (any holds)
  std::vector<std::string> schemas;           // reports to merge ("main" when empty)
  bool schemas_named = false;                 // a schema constraint named `schemas` (then in name order)
  // Integer sets a row's correlation_id / global_tid / global_pid must be in (pushed = and IN), sorted and unique.
  std::optional<std::vector<int64_t>> correlations, global_tids, global_pids;
  bool impossible = false;     // the constraints exclude every row
  // A constraint value the scan cannot apply exactly (left to SQLite's own check): then no LIMIT is applied.
  bool inexact = false;
  std::optional<int64_t> limit;  // at most this many rows (a LIMIT SQLite handed to the scan)
  // The rows' args are asked for (trace_events.args or .event, or a trace aggregate). When not, the readers leave
  // out the columns only args show (SQLite neither fetches nor sorts them) and write_args() must not be called.
  bool args = true;
  RowOrder order = RowOrder::time;

  bool wants(Kind k) const { return !impossible && (kinds & kind_bit(k)) != 0; }
  // Whether every row placed before a row of its track in the whole profile is placed before it here too, so its lane
  // and its track's name are the whole profile's: nothing drops some rows of a track and keeps later ones (a report,
  // a pid, an upper time bound and a LIMIT keep whole tracks up to a time; the NVTX projection has tracks of its own).
  bool keeps_placement() const {
    const uint32_t stored = kAllKinds & ~kDerivedKinds;
    const bool whole_kinds = (kinds & stored) == stored || (kinds & stored) == 0;
    return impossible || (whole_kinds && names.empty() && !ts_min && !correlations && !global_tids && !global_pids);
  }
  // Constraints beyond kind and report narrow the rows within the tables read (their sizes say little of the rows).
  bool narrows_rows() const {
    return ts_min || ts_max || pid || !names.empty() || correlations || global_tids || global_pids || limit;
  }
};

class EventSource {
 public:
  friend class PrefetchedSource;  // sets the state below from another reader's
  virtual ~EventSource();  // gives its statements back to the report's StatementCache, if it has one
  virtual bool next();  // moves to the next event; false at the end
  const SourceEvent& event() const { return event_; }
  virtual Kind kind() const = 0;
  void set_tag(int tag) { event_.tag = static_cast<uint8_t>(tag); }
  int tag() const { return event_.tag; }
  // The current event's args, in the order shown.
  virtual void write_args(ArgsSink& args) const = 0;
  uint64_t skipped() const { return skipped_; }  // rows without a start time (cannot be placed)
  // About how many rows this reader yields when unfiltered (its table's rows, from the span of their rowids; 0
  // when it reads nothing): for the thread plan and the total progress reports count against.
  virtual uint64_t estimated_rows() const;
  // Exactly its table's rows (a pass over the table, once per catalog): for a size to allocate.
  uint64_t table_rows() const;
  // The current event's end was missing (where one is required) or before its start: it is drawn with dur 0 and
  // its args carry "invalid_end" (the stored value, or null).
  bool end_invalid() const { return end_invalid_; }
  bool end_was_null() const { return end_was_null_; }
  int64_t stored_end() const { return stored_end_; }
  uint64_t invalid_ends() const { return invalid_ends_; }
  // Whether restart() can reuse this reader: it keeps nothing of a scan but its statements and scratch text.
  bool restartable() const;
  // Makes it the reader a fresh one opened on `filter` would be, where `filter` differs from the one it was opened
  // with only in the values of its correlation_id / global_tid / global_pid sets (a join's inner scan, restarted at
  // every outer row): what restarting saves is building the reader and its SQL. Only for restartable() readers.
  void restart(const ScanFilter& filter);

 protected:
  using Binds = std::vector<std::variant<int64_t, std::string>>;
  EventSource(sqlite3* db, const ProfileCatalog& catalog, const ReportContext& report = {})
      : db_(db), catalog_(catalog), report_(report), name_matcher_(db) {}
  // A condition over this table's columns that every row whose name satisfies `m` meets (a superset is fine:
  // SQLite re-checks the name). "1" when it cannot narrow, "0" when no row of this table can match.
  virtual std::string name_condition(const NameMatch& m, Binds& binds) const { return "1"; }
  // The same for "the name is one of these" (a long IN list), as one condition with the list bound as a JSON array;
  // nothing when the reader names rows by fixed names (then each name is tried with name_condition).
  virtual std::optional<std::string> names_in_condition(const std::vector<std::string_view>& names,
                                                        Binds& binds) const {
    return std::nullopt;
  }
  // Some alternative of `any` holds: "1" (cannot narrow), "0" (no row can), or SQL with its values in binds.
  std::string any_name_condition(const std::vector<NameMatch>& any, Binds& binds) const;
  static std::string json_list(const std::vector<std::string_view>& values);
  static std::string integer_list(const std::vector<int64_t>& values);  // as a JSON array
  // `column` (a StringIds reference) names one of `names` (or a "[missing string N]" among them, or NULL).
  std::string string_column_in(const char* column, const std::vector<std::string_view>& names, Binds& binds) const;
  // The same for an SQL expression whose value is a StringIds reference.
  std::string string_expression_in(const std::string& expr, const std::vector<std::string_view>& names,
                                   Binds& binds) const;
  // Whether the fixed name `candidate` satisfies m.
  bool name_could_be(const NameMatch& m, std::string_view candidate) const { return name_matcher_(m, candidate); }
  // "(SELECT id FROM StringIds WHERE value <op> ?)", the ids of registered strings satisfying m.
  std::string string_ids_matching(const NameMatch& m, Binds& binds) const;
  // A column of this reader's table in SQL, or NULL when the export lacks it (the reader reads it as NULL too).
  std::string column_sql(const char* column) const;
  // For a StringIds reference column whose name can also be a "[missing string N]" placeholder.
  std::string string_column_condition(const char* column, const NameMatch& m, Binds& binds) const;
  std::string string_expression_condition(const std::string& expr, const NameMatch& m, Binds& binds) const;
  // Where and how a reader reads: its kind's declaration (shape_of) gives the time, end, pid and id columns; the
  // reader adds which rows of the table are its rows (`extra_where`) and, for an end it computes, the subquery
  // that computes it (`from_sql`, its `end` naming the computed column).
  struct Shape {
    PidColumn pid = PidColumn::thread;  // how a pid constraint reads on the table
    std::string extra_where;
    std::string time;
    std::string end;                      // "" for points
    std::string from_sql;                 // default: the table itself
    const char* global_id = nullptr;      // read as global_tid (nullptr: the kind has none)
    const char* correlation = nullptr;    // read as correlation_id (nullptr: the kind has none)
    // extra_where as one term of a WHERE ("1" for every row), whatever terms come before or after it.
    std::string condition() const { return extra_where.empty() ? "1" : "(" + extra_where + ")"; }
  };
  static Shape shape_of(Kind kind, std::string extra_where = "") {
    const KindSpec& k = kind_spec(kind);
    Shape s;
    s.pid = k.pid;
    s.extra_where = std::move(extra_where);
    s.time = k.time != nullptr ? k.time : "";
    s.end = k.end != nullptr ? k.end : "";
    s.global_id = k.global_id;
    s.correlation = k.correlation;
    return s;
  }
  // The integer column of one of these Shape fields (nullptr: NULL) in a reader's select list.
  static int read_column(SelectBuilder& b, const char* column) {
    return column != nullptr ? b.column(column) : b.expression("NULL");
  }
  // A statement for sql: from the report's StatementCache when it has one.
  Statement statement(const std::string& sql) {
    return report_.statements ? report_.statements->take(db_, sql) : Statement(db_, sql);
  }
  // Prepares SELECT <list> FROM table WHERE <filter> ORDER BY time, end DESC.
  void prepare(const TableInfo& table, const std::string& select_list, const ScanFilter& filter, const Shape& shape);
  // Fills event_ from the statement's current row; false to skip the row.
  virtual bool read_row() = 0;
  bool step_stream(Statement& s, bool main);
  // restart()'s fast path, for a lookup by correlation id with one value per id set: the row found on a forward
  // cursor (among a few candidates, the one with the lookup's global id; none: no row), no SQL built; false when
  // the point query must answer (several candidates hold that id, or a stored type only SQLite can compare).
  bool rebind_one_row(const ScanFilter& filter);
  bool stragglers_first() const;
  // A merge of the table's sorted runs (ProfileCatalog::StoredOrder::runs): moves to the next row in time order,
  // into stmt_; false at the end.
  bool step_runs();
  void release_runs();  // gives the runs' statements back
  static void bind_all(Statement& s, const Binds& binds);
  // Reads start/end/rowid at columns 0/1/2 into event_ (clamping end < start to a zero duration).
  bool read_interval(bool end_may_be_null);
  // The StringIds value a column refers to ("[missing string N]" for a dangling id), or nothing for NULL.
  std::optional<std::string_view> string_or_placeholder(int col, std::string& scratch) const;
  // The same for the event's name: also records the id in event_.name_id (the text is a function of the id).
  std::optional<std::string_view> name_from_string_id(int col, std::string& scratch);
  // Adds "key": <column value> to o unless the column is NULL.
  void optional_int(ArgsSink& o, std::string_view key, int col) const;
  // An integer column that may be NULL, into one of the event's (has, value) pairs.
  void read_optional(int col, bool& has, int64_t& value) const {
    std::optional<int64_t> v = stmt_.optional_int64(col);
    has = v.has_value();
    value = v.value_or(0);
  }

  sqlite3* db_;
  const ProfileCatalog& catalog_;
  const TableInfo* table_ = nullptr;  // set by prepare()
  std::string qualified_;             // its name, schema-qualified
  const ProfileCatalog::CorrelationIndex* correlation_index_ = nullptr;  // of its column correlation_index_of_
  const char* correlation_index_of_ = nullptr;
  ReportContext report_;
  Statement stmt_;        // the stream the current row comes from
  Statement stragglers_;  // the few rows stored out of order, sorted (may be unused)
  bool opened_ = false;  // prepare() made a statement: the table is read
  bool started_ = false, has_row_ = false, has_straggler_ = false, main_in_stmt_ = true;
  const std::vector<int64_t>* straggler_rowids_ = nullptr;  // the catalog's, in the order the main stream meets them
  size_t next_straggler_ = 0;
  // The merge of sorted runs: stmt_ is the run whose row is current; the other open runs wait in open_runs_ (a heap
  // by their current rows); the runs from next_run_ on are opened when the merge reaches their first rows.
  struct OpenRun {
    int64_t start, end, rowid;  // its current row
    Statement stmt;
  };
  const std::vector<ProfileCatalog::SortedRun>* runs_ = nullptr;  // the catalog's
  size_t next_run_ = 0;
  std::vector<OpenRun> open_runs_;
  std::vector<Statement> spare_runs_;  // finished runs' statements, for the next runs
  std::string run_sql_;                // the rows of one run: the filter's values, then its first and last rowids
  Binds run_binds_;
  bool emitted_ = false;  // the order of the rows handed out so far (see next())
  bool in_any_order_ = false;  // prepare() read the table as stored for a scan in any order: next() checks no order
  int64_t last_start_ = 0, last_end_ = 0;
  SourceEvent event_;
  mutable NameMatcher name_matcher_;
  uint64_t skipped_ = 0, invalid_ends_ = 0;
  bool end_was_null_ = false, end_invalid_ = false;
  int64_t stored_end_ = 0;
  // What prepare() was given, for restart().
  std::string select_list_;
  Shape shape_;
  // stmt_ reads one row by its rowid (a correlation lookup), its values bound in the order rebind_one_row() binds.
  bool one_row_lookup_ = false;
  // From the second such lookup on, stmt_ is a forward cursor instead: SELECT <list>, <global id> ... WHERE
  // <extra_where> AND rowid >= ? ORDER BY rowid. A join looks rows up in ascending rowid order within each of a
  // few interleaved runs (kernels in time order on each GPU, their calls in time order in each process), and
  // stepping a cursor a few rows on costs less than a seek (reset, bind, step, halt): a few cursors are kept, one
  // per run. The global id conditions the point query had in its WHERE are checked on the row (forward_to).
  struct ForwardCursor {
    Statement stmt;
    ForwardPosition at;
    uint64_t used = 0;  // the lookup that last used it
  };
  bool forward_lookup_ = false;
  ForwardCursor forward_;               // its statement is in stmt_ (the readers read stmt_)
  std::vector<ForwardCursor> parked_;   // the others, their statements in place
  std::string forward_sql_;
  uint64_t lookups_ = 0;
  int forward_id_column_ = -1;    // the global id's column in stmt_
  bool forward_found_ = false;    // the looked-up row, which next() hands out once
  // Moves the forward cursor to rowid (on or past it); false when the row's global id cannot be compared here.
  bool forward_to(int64_t rowid, const ScanFilter& filter);
  // The same move: whether the row is there and holds the filter's global id (its start not looked at); nullopt
  // when that id cannot be compared here.
  std::optional<bool> forward_match(int64_t rowid, const ScanFilter& filter);
  void release_parked();  // the parked cursors' statements back to the cache
  bool was_global_tids_ = false, was_global_pids_ = false;  // the id sets prepare() was given
};

class NvtxProjection;
// A reader over the NVTX GPU projection: one 'nvtx_kernel' event per (range, device), in time order.
std::unique_ptr<EventSource> make_projection_source(sqlite3* db, const ProfileCatalog& catalog,
                                                    std::shared_ptr<const NvtxProjection> projection,
                                                    const ScanFilter& filter, const ReportContext& report);

// Opens a reader for every wanted kind whose table the export has.
std::vector<std::unique_ptr<EventSource>> open_sources(sqlite3* db, const ProfileCatalog& catalog,
                                                       const ScanFilter& filter, const ReportContext& report = {});

// The one reader open_sources() opens for (kind, rowid tag), on another connection to the same database (a
// prefetching thread's); nullptr when open_sources() would open none.
std::unique_ptr<EventSource> open_source(sqlite3* db, const ProfileCatalog& catalog, const ScanFilter& filter,
                                         const ReportContext& report, Kind kind, int tag);

// The label args and trace_events' columns show for a memcpy's copy kind (ENUM_CUDA_MEMCPY_OPER) / a memory kind
// (ENUM_CUDA_MEM_KIND): the export's label, else nsys's own for the ids it documents, else empty (the id is shown).
std::string_view copy_kind_text(const ProfileCatalog& catalog, int64_t id);
std::string_view memory_kind_text(const ProfileCatalog& catalog, int64_t id);

// A kind id as args and trace_events' columns show it (copy_kind, src_kind, dst_kind, mem_kind): its label, or the
// id itself when it has none. show() is the one place that rule is written; each sink says how it writes text and
// integers (args' string / integer, a column's text / int64).
struct LabelledId {
  int64_t id = 0;
  std::string_view label;  // empty: none
  template <class Text, class Integer>
  void show(Text&& text, Integer&& integer) const {
    if (!label.empty()) text(label); else integer(id);
  }
};
// A memory operation's stored kind ids (MemoryFields), labelled; nullopt for none.
std::optional<LabelledId> copy_kind_of(const ProfileCatalog& catalog, std::optional<int64_t> id);
std::optional<LabelledId> memory_kind_of(const ProfileCatalog& catalog, std::optional<int64_t> id);

// The OS-level pid a Chrome pid stands for in report `report`, or nullopt when it belongs to another report.
std::optional<int64_t> pid_in_report(int64_t chrome_pid, int report);
// The clock offset and shifted inclusive ts bounds for one report (saturating at the int64 limits).
int64_t saturating_add(int64_t a, int64_t b);

}  // namespace nsystrace
