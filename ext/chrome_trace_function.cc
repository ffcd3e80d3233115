// chrome_trace(*) and chrome_trace(kind, name, ts, dur, pid, tid [, process_name, thread_name, args,
// correlation_id, global_tid]): aggregates returning Chrome Trace Event JSON.
//
// The (*) form takes no arguments (SQLite passes none for "*"): it reads the current row of the trace_events scan
// it runs over, straight from the cursor. Whether that row is the one aggregated is decided once, from the
// statement's bytecode (src/sqlite/feeding_loop.h): the aggregate must be stepped inside the loop of the statement's
// one trace_events scan, with no loop between. Every other shape (rows sorted, grouped, windowed or materialized
// first, from another table, a join, a subquery) is refused with an error naming the exact form, chrome_trace(t.event).
//
// chrome_trace_file(path [, progress]) takes the rows the same way and streams the trace to a file as it goes
// (gzip when path ends in .gz), so the trace is never held in memory; it returns the bytes written.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "ext/vtab_support.h"
#include "src/readers/chrome_colors.h"
#include "src/writers/chrome/chrome_trace_writer.h"
#include "src/util/progress.h"
#include "src/writers/row_writer.h"
#include "src/writers/row_pipeline.h"
#include "src/timeline/scan_plan.h"
#include "src/sqlite/feeding_loop.h"
#include "src/sqlite/statement.h"
#include "src/writers/trace_file.h"

#ifndef NSYSTRACE_VERSION
#define NSYSTRACE_VERSION "unknown"
#endif

namespace nsystrace {
namespace {

constexpr const char* kExplicitForm =
    "chrome_trace(kind, name, ts, dur, pid, tid, process_name, thread_name, args, correlation_id, global_tid, cname)";

// The texts of one statement's chrome_trace(*) results, handed to SQLite as SQLITE_STATIC and freed when the
// statement ends.
//
// Why: SQLite deep-copies every text that is not static when it moves an aggregate's result into the output row
// (OP_Copy -> sqlite3VdbeMemMakeWriteable), so a 1 GB trace would cost 2 GB at its peak and a second 1 GB
// memcpy. A static text moves by pointer. It must then outlive every register that may point at it, which is
// the statement's run: the texts are auxiliary data of the statement, set from xStep (sqlite3_set_auxdata needs
// the statement, which xFinal's context lacks), and SQLite destroys a statement's auxiliary data when it halts,
// is reset or is finalized, after it has closed the cursors and released every register (closeAllCursors() in
// vdbeaux.c). Rows returned earlier are no longer valid by then under SQLite's own API contract.
// Only the (*) form uses it: it cannot be grouped, so one statement holds one trace per run of the aggregate.
struct StatementTexts {
  std::vector<char*> texts;
  static void destroy(void* p) {
    auto* self = static_cast<StatementTexts*>(p);
    for (char* t : self->texts) OutputBuffer::free_released(t);
    delete self;
  }
};
constexpr int kStatementTextsSlot = 0;

// This statement's StatementTexts, made on first use; nullptr when SQLite would not keep it (out of memory).
// Call from xStep only.
StatementTexts* statement_texts(sqlite3_context* ctx) {
  if (auto* existing = static_cast<StatementTexts*>(sqlite3_get_auxdata(ctx, kStatementTextsSlot))) return existing;
  auto* made = new StatementTexts();
  sqlite3_set_auxdata(ctx, kStatementTextsSlot, made, StatementTexts::destroy);  // destroys `made` on failure
  return static_cast<StatementTexts*>(sqlite3_get_auxdata(ctx, kStatementTextsSlot));
}

const char* file_function_name(TraceFormat f) {
  return f == TraceFormat::perfetto_protobuf ? "perfetto_trace_file" : "chrome_trace_file";
}
const char* file_function(TraceFormat f) {
  return f == TraceFormat::perfetto_protobuf ? "perfetto_trace_file()" : "chrome_trace_file()";
}

struct Aggregate {
  // The value form: the trace is one SQLite value (text or BLOB), capped by SQLITE_LIMIT_LENGTH.
  Aggregate(sqlite3* db, TraceFormat f, GpuModel gpu_model) : format(f), gpu_model(gpu_model) {
    int64_t limit = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1);
    out.set_limit(static_cast<size_t>(limit) + 1,  // + the NUL handed over with the text
                  fmt::format("nsystrace: the trace is larger than SQLite's largest value (SQLITE_LIMIT_LENGTH = {} "
                              "bytes). Write it to a file instead, as it goes: "
                              "SELECT {}('trace{}') FROM trace_events",
                              limit, f == TraceFormat::perfetto_protobuf ? "perfetto_trace_file" : "chrome_trace_file",
                              f == TraceFormat::perfetto_protobuf ? ".pftrace" : ".json.gz"));
  }
  // The file form: the buffer drains to the file in 1 MB chunks. show_progress: asked for by the call's argument
  // (then the end is always reported), or by the connection's setting (nsystrace_option('progress')). threads:
  // the connection's setting, for compressing a .gz beside the conversion.
  Aggregate(TraceFormat f, const std::string& path, std::vector<std::string> database_files, bool show_progress,
            bool asked, int threads, GpuModel gpu_model)
      : format(f),
        gpu_model(gpu_model),
        file(std::make_unique<TraceFile>(path, std::move(database_files), file_function(f), threads)),
        writing(show_progress, "writing " + path, "events", 0) {
    out.set_drain([this](const char* p, size_t n) { file->write(p, n); }, 1 << 20);
    if (asked) writing.always_report_end();
  }
  // Makes the writer, at the first row (or at the end of an empty trace): a Perfetto trace begins with its clocks,
  // and REALTIME at its time 0 is known once the scan is (realtime_at_zero()).
  void start_writer(std::optional<int64_t> realtime, bool wall_clock = false) {
    realtime_at_zero = realtime;
    writer = make_row_writer(format, out, gpu_model, realtime, wall_clock && realtime ? *realtime : 0);
  }
  // Called for each row (cheap: the clock is read every 1024 rows).
  void report_progress(bool last) {
    auto written = [this] {
      return fmt::format("{:.0f} MB of {}", writer->bytes_written() / 1048576.0,
                         format == TraceFormat::perfetto_protobuf ? "protobuf" : "JSON");
    };
    if (last) writing.finish(writer->events(), written);
    else writing.update(writer->events(), written);
  }
  TraceFormat format;
  GpuModel gpu_model;  // how a Perfetto trace writes GPU work (nsystrace_option('gpu_model'))
  OutputBuffer out;
  bool failed = false;  // a row was refused: the result can only be an error
  std::unique_ptr<TraceFile> file;
  Progress writing{false, "", "", 0};  // of the file form; its total is the scan's, known at the first row
  std::unique_ptr<RowWriter> writer;  // made by start_writer()
  std::optional<int64_t> realtime_at_zero;
  // The (*) form's scan.
  bool star = false, explicit_form = false;
  uint64_t cursor_id = 0, generation = 0;
  int64_t last_row = 0;
  std::shared_ptr<const ProfileCatalog> catalog;
  // Where the text result goes when it is handed over without a copy; nullptr: SQLite copies it. Used only
  // while the scan's cursor is open, which it is for as long as the statement (and so its texts) lives.
  StatementTexts* statement_texts = nullptr;
  std::set<int64_t> gpus;  // device_id of the rows written, for nsystrace_last_trace_file()
  int64_t last_gpu = 0;    // the device of the last GPU row
};

struct Slot {
  Aggregate* agg;
};

// The aggregate of this call, made by `make` on the first row; throws std::bad_alloc when SQLite has no memory.
template <class Make>
Aggregate* get_aggregate(sqlite3_context* ctx, Make make) {
  auto* slot = static_cast<Slot*>(sqlite3_aggregate_context(ctx, sizeof(Slot)));
  if (slot == nullptr) throw std::bad_alloc();
  if (slot->agg == nullptr) slot->agg = make();
  return slot->agg;
}

Aggregate* existing_aggregate(sqlite3_context* ctx) {
  auto* slot = static_cast<Slot*>(sqlite3_aggregate_context(ctx, 0));
  return slot ? slot->agg : nullptr;
}

void free_aggregate(sqlite3_context* ctx) {
  auto* slot = static_cast<Slot*>(sqlite3_aggregate_context(ctx, 0));
  if (slot != nullptr) {
    delete slot->agg;
    slot->agg = nullptr;
  }
}


// The UTC ns of the scan's time 0: a report's session start minus its shift from that time 0 (every report with a
// session start gives the same); none when no report has one, or before 1970 (a clock snapshot is unsigned).
std::optional<int64_t> realtime_at_zero(const TimelineScan& scan) {
  for (const auto& r : scan.reports()) {
    std::optional<int64_t> start = r.catalog->session_start_utc_ns();
    int64_t zero;
    if (!start) continue;
    if (__builtin_sub_overflow(*start, r.context.clock_offset, &zero) || zero < 0) return std::nullopt;
    return zero;
  }
  return std::nullopt;
}

// Feeds the current row of `cursor` to the aggregate: every row of one scan, each once, in the scan's order (the
// writers lay out tracks over the scan that placed the rows).
// The args of a CUDA graph replay's slice (TimelineScan::replay_opened).
class GraphReplayArgs final : public RowArgs {
 public:
  GraphReplayArgs(const GraphReplay& replay, const TraceRow& slice) : replay_(replay), slice_(slice) {}
  void write(ArgsSink& o) const override {
    o.boolean("graph_replay", true);
    o.integer("correlation_id", slice_.correlation_id);
    o.integer("nodes", replay_.nodes).integer("kernels", replay_.kernels);
    o.integer("first_node_id", replay_.first_node_id);
  }

 private:
  const GraphReplay& replay_;
  const TraceRow& slice_;
};

void step_cursor(sqlite3_context* ctx, Aggregate& agg, TraceEventsCursor* cursor) {
  if (cursor->grouped)
    throw Error(fmt::format(
        "nsystrace: chrome_trace(*) is fed the rows of a DISTINCT or GROUP BY over trace_events, where one row "
        "stands for a whole group, so it cannot draw the events. Aggregate over trace_events directly, or pass the "
        "columns: {}",
        kExplicitForm));
  // A query that names no args opened its scan without them (ScanFilter::args); the trace needs them.
  TimelineScan& scan = scan_with_args(*cursor, *static_cast<ConnectionState*>(sqlite3_user_data(ctx)));
  if (agg.star) {
    if (cursor->id != agg.cursor_id || cursor->generation != agg.generation)
      throw Error(fmt::format(
          "nsystrace: chrome_trace(*) saw its trace_events scan restart or another one begin (trace_events is the "
          "inner loop of a join, in a correlated subquery, or in several arms of a compound SELECT), so its rows "
          "would repeat or mix. Aggregate over one trace_events scan, or use {}",
          kExplicitForm));
    if (scan.row_number() == agg.last_row)
      throw Error(fmt::format(
          "nsystrace: chrome_trace(*) was fed the same trace_events row twice (a join multiplies the rows, or a "
          "subquery over trace_events is evaluated for each row): each event is drawn once. Keep the other table "
          "in an EXISTS or IN subquery, or use {}",
          kExplicitForm));
  } else {
    agg.star = true;
    agg.cursor_id = cursor->id;
    agg.start_writer(realtime_at_zero(scan), static_cast<ConnectionState*>(sqlite3_user_data(ctx))->wall_clock);
    // The rows of a scan are encoded on a second thread when the connection allows one (nsystrace_option
    // 'threads') and that shortens the conversion (TimelineScan::read_on_threads): the same bytes
    // (src/writers/row_pipeline.h).
    if (scan.wants_a_writer_thread())
      agg.writer = std::make_unique<PipelinedRowWriter>(std::move(agg.writer), agg.out);
    agg.catalog = scan.shared_catalog();
    if (agg.writing.enabled()) agg.writing.set_total(scan.estimated_rows());
    if (!agg.file) agg.statement_texts = statement_texts(ctx);
  }
  agg.generation = cursor->generation;
  agg.last_row = scan.row_number();

  // Rows come in runs on a GPU: the set is looked up only when the device changes.
  if (scan.row().on_gpu && (agg.gpus.empty() || scan.row().device_id != agg.last_gpu)) {
    agg.gpus.insert(scan.row().device_id);
    agg.last_gpu = scan.row().device_id;
  }
  // A CUDA graph replay traced per node opens with its first node: its slice goes first, so the nodes nest in it.
  TraceRow replay_slice;
  if (const GraphReplay* replay = scan.replay_opened(&replay_slice))
    agg.writer->add(replay_slice, GraphReplayArgs(*replay, replay_slice));
  agg.writer->add(scan.row(), scan);
  if (agg.file) agg.report_progress(false);
}

// What EXPLAIN shows for a virtual table in VOpen's P4: "vtab:" and its address, in SQLite's own printf.
std::string vtab_text(const sqlite3_vtab* vtab) {
  char* text = sqlite3_mprintf("vtab:%p", static_cast<const void*>(vtab));
  if (text == nullptr) throw std::bad_alloc();
  std::string out(text);
  sqlite3_free(text);
  return out;
}

// The cursor a (*) form is stepped with: where the bytecode of the connection's running statements (EXPLAIN of each:
// the plan SQLite made for that SQL on this connection) shows every call of `function` with `argc` arguments fed
// straight from a trace_events scan (src/sqlite/feeding_loop.h), the cursor with one of those scans' plans that moved
// to a row last. Throws the refusal otherwise.
TraceEventsCursor* cursor_fed_straight(ConnectionState& state, const char* function, int argc) {
  sqlite3* db = state.db();
  if (state.trace_events_vtab == nullptr) throw Error("nsystrace: internal: trace_events is not connected");
  std::vector<std::string> running;  // their SQL, taken before preparing anything (which changes the list)
  for (sqlite3_stmt* s = sqlite3_next_stmt(db, nullptr); s != nullptr; s = sqlite3_next_stmt(db, s))
    if (sqlite3_stmt_busy(s) && sqlite3_stmt_isexplain(s) == 0 && sqlite3_sql(s) != nullptr)
      running.emplace_back(sqlite3_sql(s));
  const std::string scan = vtab_text(state.trace_events_vtab);
  std::vector<std::string> others;
  for (const sqlite3_vtab* v : state.vtabs())
    if (v != state.trace_events_vtab) others.push_back(vtab_text(v));
  std::vector<std::string> plans;
  std::string why_not = "no running statement of this connection shows the call";
  bool found = false;
  for (const std::string& sql : running) {
    std::vector<Instruction> listing;
    for (Statement explain(db, "EXPLAIN " + sql); explain.step();)
      listing.push_back(Instruction{explain.int64(0), std::string(explain.text(1)), explain.int64(2),
                                    explain.int64(3), explain.int64(4), std::string(explain.text(5)),
                                    explain.int64(6)});
    FeedingCheck check = feeding_check(listing, function, argc, scan, others);
    if (!check.has_aggregate) continue;
    if (!check.straight) {
      why_not = check.why_not;
      found = false;
      break;
    }
    found = true;
    plans.insert(plans.end(), check.scan_plans.begin(), check.scan_plans.end());
  }
  TraceEventsCursor* cursor = found ? state.latest_cursor(plans) : nullptr;
  if (cursor == nullptr || !cursor->scan || cursor->scan->eof())
    throw Error(fmt::format(
        "nsystrace: {}(*) draws the trace_events rows SQLite feeds straight into it, and here it cannot: {}. Name the "
        "rows instead: SELECT {}(t.event) FROM trace_events t ... (exact in any query shape); or pass the columns: {}",
        function, why_not, std::string_view(function).substr(0, std::string_view(function).find("_file")),
        kExplicitForm));
  return cursor;
}

// The (*) and path-only forms: no argument names the row. At the first row the statement's bytecode decides which
// scan feeds the aggregate (cursor_fed_straight); every later row must come from that scan (step_cursor).
void step_star(sqlite3_context* ctx, Aggregate& agg, const char* function, int argc) {
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  TraceEventsCursor* cursor = agg.star ? state->find_cursor(agg.cursor_id) : cursor_fed_straight(*state, function, argc);
  if (cursor == nullptr || !cursor->scan || cursor->scan->eof())
    throw Error("nsystrace: internal: the trace_events scan feeding the aggregate is not on a row");
  step_cursor(ctx, agg, cursor);
}

// The row forms: trace_events.event names the row exactly (a token SQLite hands over only from the scan itself).
void step_row(sqlite3_context* ctx, Aggregate& agg, sqlite3_value* event) {
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  void* token = sqlite3_value_pointer(event, kTraceRowPointerType);
  if (token == nullptr)
    throw Error(
        "nsystrace: the trace aggregates take trace_events.event as it comes from the scan, but here it is NULL or "
        "not a trace_events row: SQLite drops the row pointer wherever rows are sorted, grouped, materialized or "
        "copied (ORDER BY, GROUP BY, DISTINCT, a window function, a compound SELECT, a subquery or view that is not "
        "flattened). Aggregate directly over trace_events; WHERE clauses, joins and subqueries in WHERE are fine");
  TraceEventsCursor* cursor = state->cursor_on(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(token)));
  if (cursor == nullptr)
    throw Error("nsystrace: the trace_events row handed to the aggregate is no longer current (its value was kept "
                "past its row, e.g. by min()/max() or a subquery): aggregate directly over trace_events");
  step_cursor(ctx, agg, cursor);
}

int64_t integer_arg(sqlite3_value* v, const char* what, bool* is_null) {
  *is_null = sqlite3_value_type(v) == SQLITE_NULL;
  if (*is_null) return 0;
  FilterValue f = filter_value(v, true);  // numeric affinity, as SQLite gives it
  if (f.numeric == FilterValue::Type::integer) return f.integer;
  if (f.numeric == FilterValue::Type::real) {
    double d = f.real;
    if (d == static_cast<double>(static_cast<int64_t>(d)) && d < 9.2e18 && d > -9.2e18)
      return static_cast<int64_t>(d);
  }
  throw Error(fmt::format("nsystrace: chrome_trace(): {} must be an integer, got '{}'", what, text_of(v)));
}

void step_explicit(sqlite3_context* ctx, Aggregate& agg, int argc, sqlite3_value** argv) {
  if (agg.star) throw Error("nsystrace: chrome_trace() cannot mix the (*) and the explicit forms");
  if (!agg.writer) agg.start_writer(std::nullopt);
  if (agg.writer->chrome() == nullptr) throw Error("nsystrace: the explicit form is chrome_trace()'s only");
  agg.explicit_form = true;
  bool null = false;
  ChromeEvent ev;
  std::string kind(text_of(argv[0]));
  ev.kind = kind;
  ev.kind_id = kind_from_name(kind);  // a kind of trace_events: drawn and linked as such
  ev.name = text_of(argv[1]);
  ev.ts = integer_arg(argv[2], "ts", &null);
  if (null) throw Error("nsystrace: chrome_trace(): ts must not be NULL");
  ev.dur = integer_arg(argv[3], "dur", &null);
  ev.has_dur = !null;
  if (ev.has_dur && ev.dur < 0) throw Error(fmt::format("nsystrace: chrome_trace(): dur must not be negative, got {}", ev.dur));
  ev.pid = integer_arg(argv[4], "pid", &null);
  if (null || ev.pid < 0 || ev.pid > INT32_MAX)
    throw Error("nsystrace: chrome_trace(): pid must be an integer from 0 to 2^31-1 (Chrome's track ids)");
  ev.tid = integer_arg(argv[5], "tid", &null);
  if (null || ev.tid < 0 || ev.tid > INT32_MAX)
    throw Error("nsystrace: chrome_trace(): tid must be an integer from 0 to 2^31-1 (Chrome's track ids)");
  std::string_view process_name, thread_name;
  if (argc > 6 && sqlite3_value_type(argv[6]) != SQLITE_NULL) {
    process_name = text_of(argv[6]);
    ev.process_name = &process_name;
  }
  if (argc > 7 && sqlite3_value_type(argv[7]) != SQLITE_NULL) {
    thread_name = text_of(argv[7]);
    ev.thread_name = &thread_name;
  }
  std::string wrapped;
  if (argc > 8 && sqlite3_value_type(argv[8]) != SQLITE_NULL) {
    std::string_view args = text_of(argv[8]);
    if (!args.empty() && args.front() == '{' && is_valid_json(args)) {
      ev.args = args;
    } else {  // not a JSON object: keep it, as a string
      JsonObject(wrapped).string("value", args).close();
      ev.args = wrapped;
    }
  }
  if (argc > 9) {
    ev.flow.correlation_id = integer_arg(argv[9], "correlation_id", &null);
    ev.flow.has_correlation = !null;
  }
  if (argc > 10) {
    ev.flow.global_tid = integer_arg(argv[10], "global_tid", &null);
    ev.flow.has_global_tid = !null;
  }
  if (argc > 11 && sqlite3_value_type(argv[11]) != SQLITE_NULL) {  // a color rule's result
    std::string_view cname = text_of(argv[11]);
    if (!is_chrome_color(cname.data(), cname.size()))
      throw Error(fmt::format("nsystrace: chrome_trace(): cname '{}' is not one of Chrome's reserved color names "
                              "(thread_state_running, thread_state_iowait, good, bad, terrible, yellow, ...)",
                              cname));
    ev.cname = cname;
  }
  agg.writer->chrome()->add(ev);
}

// One row into the aggregate made by `make`: a refused row marks the aggregate failed (so it can only end in an
// error) and becomes the statement's error; no exception reaches SQLite.
template <class Make, class Step>
void guarded_step(sqlite3_context* ctx, Make make, Step step) {
  try {
    Aggregate* agg = get_aggregate(ctx, make);
    try {
      step(*agg);
    } catch (...) {
      agg->failed = true;
      throw;
    }
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

void x_step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc > 1 && (argc < 6 || argc > 12)) {
    std::string msg = fmt::format("nsystrace: chrome_trace() takes *, a trace_events row (t.event), or 6 to 12 "
                                  "arguments: {}", kExplicitForm);
    sqlite3_result_error(ctx, msg.c_str(), -1);
    return;
  }
  guarded_step(
      ctx, [&] { return new Aggregate(sqlite3_context_db_handle(ctx), TraceFormat::chrome_json, GpuModel::typed); },
      [&](Aggregate& agg) {
        if (argc == 0) step_star(ctx, agg, "chrome_trace", 0);
        else if (argc == 1) step_row(ctx, agg, argv[0]);
        else step_explicit(ctx, agg, argc, argv);
      });
}

void x_step_perfetto(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guarded_step(
      ctx,
      [&] {
        auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
        return new Aggregate(sqlite3_context_db_handle(ctx), TraceFormat::perfetto_protobuf, state->gpu_model);
      },
      [&](Aggregate& agg) {
        if (argc == 0) step_star(ctx, agg, "perfetto_trace", 0);
        else step_row(ctx, agg, argv[0]);
      });
}

// (path), (path, progress), (path, event) or (path, progress, event): `event` is the trace_events.event pointer.
template <TraceFormat format>
void x_step_file(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  bool row_given = argc == 3 || (argc == 2 && sqlite3_value_pointer(argv[1], kTraceRowPointerType) != nullptr);
  sqlite3_value* progress_arg = argc == 3 || (argc == 2 && !row_given) ? argv[1] : nullptr;
  guarded_step(
      ctx,
      [&] {
        if (sqlite3_value_type(argv[0]) != SQLITE_TEXT)
          throw Error(fmt::format("nsystrace: {}: path must be a file name (the arguments are: path [, progress] "
                                  "[, event])",
                                  file_function(format)));
        auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
        state->last_trace_file.clear();  // until this one is committed
        bool asked = progress_arg != nullptr && sqlite3_value_int(progress_arg) != 0;
        bool progress = progress_arg != nullptr ? asked : state->progress;
        return new Aggregate(format, std::string(text_of(argv[0])), state->database_files(), progress, asked,
                             state->threads, state->gpu_model);
      },
      [&](Aggregate& agg) {
        if (row_given) step_row(ctx, agg, argv[argc - 1]);
        else step_star(ctx, agg, file_function_name(format), argc);
      });
}

// The trace_events scan a (*)-form aggregate read, while its cursor is still open; else nullptr.
const TimelineScan* aggregated_scan(sqlite3_context* ctx, const Aggregate* agg) {
  if (agg == nullptr || !agg->star) return nullptr;
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  TraceEventsCursor* c = state->find_cursor(agg->cursor_id);
  return c != nullptr ? c->scan.get() : nullptr;
}

// A database's file as otherData shows it: its name only, unless identifying metadata was asked for (a full path
// often holds a home directory).
void source_file(JsonObject& o, sqlite3* db, const std::string& schema, bool identifying) {
  const char* file = sqlite3_db_filename(db, schema.c_str());
  if (file == nullptr || *file == '\0') return;
  std::string_view f(file);
  if (!identifying && f.rfind('/') != std::string_view::npos) f.remove_prefix(f.rfind('/') + 1);
  o.string("source_file", f);
}

std::string other_data(sqlite3_context* ctx, const Aggregate* agg, sqlite3* db) {
  const TimelineScan* scan = aggregated_scan(ctx, agg);
  bool identifying = static_cast<ConnectionState*>(sqlite3_user_data(ctx))->identifying_metadata;
  std::string json;
  JsonObject o(json);
  o.string("generator", "nsystrace " NSYSTRACE_VERSION);
  if (agg != nullptr && agg->catalog) {
    const ProfileCatalog& c = *agg->catalog;
    source_file(o, db, c.schema().schema(), identifying);
    std::string meta, left_out = "[";
    JsonObject m(meta);
    for (const auto& [k, v] : c.export_metadata()) {
      if (identifying || !is_identifying_metadata(k, v)) {
        m.string(k, v);
      } else {
        if (left_out.size() > 1) left_out += ',';
        append_json_string(left_out, k);
      }
    }
    m.close();
    o.raw("export", meta);
    // Named, so a user who needs them knows they exist and how to get them.
    if (left_out.size() > 1) o.raw("export_left_out", left_out + "]");
    if (c.session_start_utc_ns()) o.integer("session_start_utc_ns", *c.session_start_utc_ns());
    if (scan != nullptr && scan->reports().size() > 1) {
      std::string reports = "[";
      for (const auto& r : scan->reports()) {
        if (!r.read) continue;
        std::string one;
        JsonObject ro(one);
        ro.string("schema", r.context.schema);
        source_file(ro, db, r.context.schema, identifying);
        ro.integer("pid_offset", r.context.index * kReportPidStride).integer("clock_offset_ns", r.context.clock_offset);
        if (!r.catalog->session_start_utc_ns()) ro.boolean("clock_not_aligned", true);
        ro.close();
        reports += (reports.size() > 1 ? "," : "") + one;
      }
      o.raw("reports", reports + "]");
    }
    std::string gpus;
    JsonObject g(gpus);
    for (const auto& [id, name] : c.gpus()) g.string(std::to_string(id), name);
    g.close();
    o.raw("gpus", gpus);
  }
  if (scan != nullptr) {  // rows the scan could not place, or placed with a repaired duration
    std::string skipped, invalid;
    JsonObject s(skipped), v(invalid);
    for (int k = 0; k < kKindCount; ++k) {
      if (uint64_t n = scan->skipped(static_cast<Kind>(k))) s.integer(kind_name(static_cast<Kind>(k)), static_cast<int64_t>(n));
      if (uint64_t n = scan->invalid_ends(static_cast<Kind>(k))) v.integer(kind_name(static_cast<Kind>(k)), static_cast<int64_t>(n));
    }
    s.close();
    v.close();
    if (skipped != "{}") o.raw("skipped_rows_without_start", skipped);
    if (!scan->pids_shared_by_machines().empty()) {  // a limit of the pid space, said rather than hidden
      std::string pids = "[";
      for (int32_t pid : scan->pids_shared_by_machines()) pids += (pids.size() > 1 ? "," : "") + std::to_string(pid);
      o.raw("pids_shared_by_processes_of_several_machines", pids + "]");
    }
    if (invalid != "{}") o.raw("rows_with_invalid_end", invalid);
  }
  if (agg != nullptr) {
    std::string counts;
    JsonObject k(counts);
    for (const auto& [kind, n] : agg->writer->kind_counts()) k.integer(kind, static_cast<int64_t>(n));
    k.close();
    o.raw("event_counts", counts);
    o.integer("flows", static_cast<int64_t>(agg->writer->flows()));
    // The wall-clock time of the trace's time 0, as a Perfetto trace's clock snapshot gives it (merging the traces
    // of a job relies on it); said in both formats, whose metadata is the same.
    if (agg->star) {
      if (agg->realtime_at_zero) o.integer("realtime_ns_at_time_zero", *agg->realtime_at_zero);
      else o.string("realtime_ns_at_time_zero", "unknown: no session start (TARGET_INFO_SESSION_START_TIME) in the "
                    "export, so a Perfetto trace of it has no REALTIME clock and merges with others at zero offset");
    }
    if (uint64_t n = agg->writer->clamped_to_zero()) o.integer("events_clamped_to_zero", static_cast<int64_t>(n));
    if (uint64_t n = agg->writer->clamped_to_latest()) o.integer("events_clamped_to_latest", static_cast<int64_t>(n));
  }
  o.close();
  return json;
}

// The statement is finishing normally, not being abandoned. When a statement fails (an error anywhere in it, an
// interrupt) or is reset part-way, SQLite closes its cursors first and only then releases the aggregate, calling
// xFinal (closeAllCursors() in vdbeaux.c); when it completes, OP_AggFinal runs while the cursor is still open. So
// an open cursor of the same scan is what makes the rows whole: every row the query selects, which may be fewer
// than the scan's when a LIMIT cut it (the first N events). Only then is a file committed.
void check_rows_whole(sqlite3_context* ctx, const Aggregate& agg) {
  if (agg.failed) throw Error("nsystrace: a row was refused (see the error above); no trace was produced");
  if (!agg.star) return;
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(ctx));
  TraceEventsCursor* c = state->find_cursor(agg.cursor_id);
  if (c == nullptr || c->generation != agg.generation)
    throw Error("nsystrace: the statement was stopped (an error, an interrupt or a reset) before the trace was "
                "whole; no trace was produced");
}

// chrome_trace(*) and perfetto_trace(*): the trace as one value (text, or a BLOB), handed over without a copy.
template <TraceFormat format>
void x_final(sqlite3_context* ctx) {
  try {
    Aggregate* agg = existing_aggregate(ctx);
    std::unique_ptr<Aggregate> empty;
    if (agg == nullptr) {  // no rows: an empty but valid trace
      empty = std::make_unique<Aggregate>(sqlite3_context_db_handle(ctx), format,
                                          static_cast<ConnectionState*>(sqlite3_user_data(ctx))->gpu_model);
      agg = empty.get();
      agg->start_writer(std::nullopt);
      agg->writer->finish(other_data(ctx, nullptr, sqlite3_context_db_handle(ctx)));
    } else {
      check_rows_whole(ctx, *agg);
      agg->writer->drain();  // every row written: the counts in the metadata are whole
      agg->writer->finish(other_data(ctx, agg, sqlite3_context_db_handle(ctx)));
    }
    // Hand a text over NUL-terminated with length -1: SQLite then marks it terminated and never copies it (it
    // copies a text given with an explicit length the first time anyone asks for it as a C string).
    if (format == TraceFormat::chrome_json) agg->out.push_back('\0');
    // The scan completed, so its cursor (and the statement, which owns `keep`) is live. Only a statement's first
    // trace is kept without a copy until the statement ends: a trace made again by the same statement (a subquery
    // evaluated per row) is handed to SQLite to own, so a statement that makes many holds one at a time.
    StatementTexts* keep = agg->statement_texts;
    if (keep != nullptr && !keep->texts.empty()) keep = nullptr;
    if (keep != nullptr) keep->texts.reserve(keep->texts.size() + 1);  // nothing may throw once the value is out
    size_t size = 0;
    char* value = agg->out.release(&size);
    if (keep != nullptr) keep->texts.push_back(value);
    void (*release)(void*) = keep != nullptr ? SQLITE_STATIC : OutputBuffer::free_released;
    if (format == TraceFormat::chrome_json) sqlite3_result_text(ctx, value, -1, release);
    else sqlite3_result_blob64(ctx, value, size, release);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
  free_aggregate(ctx);
}

// What nsystrace_last_trace_file() says of a committed file: the counts the writer kept as it wrote (the same as
// otherData's), so a summary needs no second scan.
std::string trace_file_record(const Aggregate& agg, uint64_t bytes) {
  std::string record, counts, gpus = "[";
  JsonObject r(record);
  r.string("path", agg.file->path())
      .string("format", agg.format == TraceFormat::perfetto_protobuf ? "perfetto_protobuf" : "chrome_json")
      .integer("bytes", static_cast<int64_t>(bytes))
      .integer("events", static_cast<int64_t>(agg.writer->events()))
      .integer("flows", static_cast<int64_t>(agg.writer->flows()));
  JsonObject k(counts);
  for (const auto& [kind, n] : agg.writer->kind_counts()) k.integer(kind, static_cast<int64_t>(n));
  k.close();
  r.raw("event_counts", counts);
  for (int64_t gpu : agg.gpus) gpus += (gpus.size() > 1 ? "," : "") + std::to_string(gpu);
  r.raw("gpus", gpus + "]");
  r.close();
  return record;
}

void x_final_file(sqlite3_context* ctx) {
  static_cast<ConnectionState*>(sqlite3_user_data(ctx))->last_trace_file.clear();  // set again once committed
  try {
    Aggregate* agg = existing_aggregate(ctx);
    if (agg == nullptr)
      throw Error("nsystrace: the query selected no rows, so no file was written");
    check_rows_whole(ctx, *agg);
    if (!agg->star)
      throw Error(fmt::format("nsystrace: {}: no trace_events row was aggregated; no file was written",
                              file_function(agg->format)));
    agg->writer->drain();  // every row written: the counts in the metadata are whole
    agg->writer->finish(other_data(ctx, agg, sqlite3_context_db_handle(ctx)));
    agg->out.drain_now();
    agg->report_progress(true);
    uint64_t bytes = agg->file->commit();
    static_cast<ConnectionState*>(sqlite3_user_data(ctx))->last_trace_file = trace_file_record(*agg, bytes);
    sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(bytes));
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
  free_aggregate(ctx);  // removes the temporary file unless it was committed
}

}  // namespace

int register_chrome_trace(sqlite3* db, ConnectionState* state, std::string* error) {
  // Not SQLITE_DETERMINISTIC: the (*) form depends on the scan it runs over, not on its (absent) arguments.
  int rc = sqlite3_create_function_v2(db, "chrome_trace", -1, SQLITE_UTF8 | SQLITE_INNOCUOUS, state, nullptr,
                                      x_step, x_final<TraceFormat::chrome_json>, nullptr);
  if (rc != SQLITE_OK) {
    *error = "cannot register chrome_trace";
    return rc;
  }
  for (int n : {0, 1}) {
    rc = sqlite3_create_function_v2(db, "perfetto_trace", n, SQLITE_UTF8 | SQLITE_INNOCUOUS, state, nullptr,
                                    x_step_perfetto, x_final<TraceFormat::perfetto_protobuf>, nullptr);
    if (rc != SQLITE_OK) {
      *error = "cannot register perfetto_trace";
      return rc;
    }
  }
  // Writes files: never callable from a view or trigger of a (possibly untrusted) database schema.
  for (int n : {1, 2, 3}) {
    rc = sqlite3_create_function_v2(db, "chrome_trace_file", n, SQLITE_UTF8 | SQLITE_DIRECTONLY, state, nullptr,
                                    x_step_file<TraceFormat::chrome_json>, x_final_file, nullptr);
    if (rc == SQLITE_OK)
      rc = sqlite3_create_function_v2(db, "perfetto_trace_file", n, SQLITE_UTF8 | SQLITE_DIRECTONLY, state, nullptr,
                                      x_step_file<TraceFormat::perfetto_protobuf>, x_final_file, nullptr);
    if (rc != SQLITE_OK) {
      *error = "cannot register chrome_trace_file / perfetto_trace_file";
      return rc;
    }
  }
  return rc;
}

}  // namespace nsystrace
