// The translation between SQLite's planner and the core's (src/timeline/scan_plan.h), and the opening of a planned
// scan, shared by the tables that read the timeline: trace_events and event_totals.
#include "ext/vtab_support.h"

#include <fmt/format.h>

#include <algorithm>


namespace nsystrace {

namespace {

OfferedConstraint::Op op_of(unsigned char op) {
  using Op = OfferedConstraint::Op;
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return Op::eq;
    case SQLITE_INDEX_CONSTRAINT_NE: return Op::ne;
    case SQLITE_INDEX_CONSTRAINT_LT: return Op::lt;
    case SQLITE_INDEX_CONSTRAINT_LE: return Op::le;
    case SQLITE_INDEX_CONSTRAINT_GT: return Op::gt;
    case SQLITE_INDEX_CONSTRAINT_GE: return Op::ge;
    case SQLITE_INDEX_CONSTRAINT_LIKE: return Op::like;
    case SQLITE_INDEX_CONSTRAINT_GLOB: return Op::glob;
    case SQLITE_INDEX_CONSTRAINT_LIMIT: return Op::limit;
    case SQLITE_INDEX_CONSTRAINT_OFFSET: return Op::offset;
    default: return Op::other;  // IS, IS NOT, ISNULL, REGEXP, MATCH, functions...: SQLite applies them
  }
}

FilterValue::Type storage_type(int t) {
  switch (t) {
    case SQLITE_INTEGER: return FilterValue::Type::integer;
    case SQLITE_FLOAT: return FilterValue::Type::real;
    case SQLITE_TEXT: return FilterValue::Type::text;
    case SQLITE_BLOB: return FilterValue::Type::blob;
    default: return FilterValue::Type::null;
  }
}

}  // namespace

FilterValue filter_value(sqlite3_value* v, bool numeric_column) {
  FilterValue f;
  f.type = storage_type(sqlite3_value_type(v));
  f.numeric = f.type;
  switch (f.type) {
    case FilterValue::Type::integer:  // the launch join's ids: its text as SQLite writes it
      f.integer = sqlite3_value_int64(v);
      f.text = std::to_string(f.integer);
      return f;
    case FilterValue::Type::real: f.real = sqlite3_value_double(v); break;
    case FilterValue::Type::text:
      f.text = std::string(text_of(v));
      // Compared with an INTEGER column, a text is first given numeric affinity: SQLite's own conversion, on the
      // value SQLite handed us (protected, with its connection). It converts in place and drops the text, so the
      // text is read first; only a value compared with an INTEGER column is converted.
      if (numeric_column) {
        int numeric = sqlite3_value_numeric_type(v);
        if (numeric == SQLITE_INTEGER) {
          f.numeric = FilterValue::Type::integer;
          f.integer = sqlite3_value_int64(v);
        } else if (numeric == SQLITE_FLOAT) {
          f.numeric = FilterValue::Type::real;
          f.real = sqlite3_value_double(v);
        }
      }
      return f;
    default: break;  // NULL and BLOB: numeric affinity leaves them as they are
  }
  f.text = std::string(text_of(v));
  return f;
}

std::vector<OfferedConstraint> offered_constraints(sqlite3_index_info* info, std::optional<int64_t>* limit_value) {
  std::vector<OfferedConstraint> offered(info->nConstraint);
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    OfferedConstraint& o = offered[i];
    o.column = c.iColumn;
    o.op = op_of(c.op);
    o.usable = c.usable != 0;
    if (!o.usable) continue;
    if (o.op == OfferedConstraint::Op::limit) {
      sqlite3_value* n = nullptr;  // a literal LIMIT is known now; a bound one is not
      if (sqlite3_vtab_rhs_value(info, i, &n) == SQLITE_OK) {
        FilterValue v = filter_value(n, false);  // read, not converted: the value is SQLite's, lent until we return
        if (v.numeric == FilterValue::Type::integer) *limit_value = v.integer;
      }
      continue;
    }
    if (o.op == OfferedConstraint::Op::offset) continue;
    o.binary = std::strcmp(sqlite3_vtab_collation(info, i), "BINARY") == 0;
    o.whole_in_list = o.op == OfferedConstraint::Op::eq && sqlite3_vtab_in(info, i, -1);
  }
  return offered;
}

int hand_plan_to_sqlite(const ScanPlan& plan, sqlite3_index_info* info) {
  for (int i = 0; i < info->nConstraint; ++i) {
    const ScanPlan::Use& use = plan.uses[i];
    if (use.argv == 0) continue;
    if (use.whole_in_list) sqlite3_vtab_in(info, i, 1);  // hand us the whole IN list at once
    info->aConstraintUsage[i].argvIndex = use.argv;
    info->aConstraintUsage[i].omit = use.omit;
  }
  info->estimatedRows = static_cast<sqlite3_int64>(plan.estimated_rows);
  info->estimatedCost = plan.estimated_cost;
  info->idxNum = plan.idx_num();
  std::string idx = plan.idx_str();
  if (!idx.empty()) {
    info->idxStr = sqlite3_mprintf("%s", idx.c_str());
    if (info->idxStr == nullptr) return SQLITE_NOMEM;
    info->needToFreeIdxStr = 1;
  }
  return SQLITE_OK;
}

// xFilter's argv, each entry as its value or the members of its IN list (the plan's list tokens), read into `args` in
// place: a join's inner scan is filtered once per outer row with mostly the same values, and a TEXT value equal to
// the one already in its place (`kind = 'cuda_api'`) is kept as it is, without reading it again.
void read_filter_arguments(std::vector<FilterArgument>& args, const ScanPlan& plan, int argc, sqlite3_value** argv) {
  args.resize(static_cast<size_t>(argc));
  for (int i = 0; i < argc; ++i) {
    FilterArgument& values = args[static_cast<size_t>(i)];
    const bool list = static_cast<size_t>(i) < plan.tokens.size() && is_list(plan.tokens[static_cast<size_t>(i)]);
    const bool numeric = static_cast<size_t>(i) < plan.tokens.size() && on_integer_column(plan.tokens[static_cast<size_t>(i)]);
    size_t n = 0;
    for_each_in(argv[i], [&](sqlite3_value* x) {
      if (n < values.size() && values[n].type == FilterValue::Type::text && sqlite3_value_type(x) == SQLITE_TEXT &&
          values[n].text == text_of(x)) {
        ++n;
        return;
      }
      if (n < values.size()) values[n] = filter_value(x, numeric);
      else values.push_back(filter_value(x, numeric));
      ++n;
    }, list);
    values.resize(n);
  }
}

namespace {

void check_is_export(const ProfileCatalog& catalog, sqlite3* db) {
  if (is_export(catalog)) return;
  const char* file = sqlite3_db_filename(db, catalog.schema().schema().c_str());
  throw Error(fmt::format(
      "nsystrace: database '{}' ({}) is not an Nsight Systems export: it has none of the tables nsys writes "
      "(StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, ...). Export the report with "
      "`nsys export --type sqlite report.nsys-rep` and open the .sqlite file it writes.",
      catalog.schema().schema(), file && *file ? file : "in memory"));
}

}  // namespace

std::unique_ptr<TimelineScan> open_scan(ConnectionState& state, std::vector<TimelineScan::Report> reports,
                                        const ScanFilter& filter) {
  ConnectionState* s = &state;
  return std::make_unique<TimelineScan>(
      state.db(), std::move(reports), filter,
      [s](const std::string& schema, const std::optional<ProjectionWindow>& window) {
        return s->projection(schema, window);
      },
      state.threads);
}


std::unique_ptr<TimelineScan> open_planned_scan(ConnectionState& state, const ScanPlan& plan,
                                                const std::vector<FilterArgument>& arguments, bool& reports_listed,
                                                ConnectionReports& reports_of_connection, StatementCache& statements,
                                                std::unique_ptr<TimelineScan> previous) {
  ScanFilter filter = build_filter(plan, arguments);
  if (!reports_listed) {
    reports_of_connection = state.reports();
    reports_listed = true;
  }
  // Every report of the connection, or those a schema constraint names: a name that is no report (a database that
  // is not an export, or none at all) names no rows, as any other value no row has.
  if (reports_of_connection.empty()) check_is_export(*state.catalog("main"), state.db());  // says what main lacks
  std::vector<std::string> read;
  for (const auto& r : reports_of_connection)
    if (!filter.schemas_named || std::binary_search(filter.schemas.begin(), filter.schemas.end(), r.first))
      read.push_back(r.first);
  if (read.empty()) {
    filter.impossible = true;
    read.push_back(reports_of_connection.front().first);
  }
  filter.schemas = std::move(read);
  std::shared_ptr<const ProfilePlacement> placement;
  if (plan.reads_placement && !filter.keeps_placement()) placement = state.placement(reports_of_connection);
  if (previous && previous->restart(filter)) {
    previous->use_placement(std::move(placement));
    return previous;
  }
  previous.reset();  // its statements back to the cache before the new scan takes them
  std::vector<TimelineScan::Report> reports =
      TimelineScan::align_reports(state.db(), reports_of_connection, filter.schemas);
  for (TimelineScan::Report& r : reports) r.context.statements = &statements;
  std::unique_ptr<TimelineScan> scan = open_scan(state, std::move(reports), filter);
  scan->use_placement(std::move(placement));
  return scan;
}

}  // namespace nsystrace
