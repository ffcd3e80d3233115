// nsystrace_median(X) and nsystrace_stddev(X): aggregates for the nsys stats reports (sql/nsys_stats). NULLs are
// skipped, as by SQLite's own aggregates; a text or blob value is an error naming the function, not a silent 0.
// nsystrace_concurrency(start, end, t0, bucket_ns): interval concurrency per bucket (sql/queue_depth.sql).
// nsystrace_union_ns(start, end) and nsystrace_gaps(start, end, min_gap_ns): the length of a union of intervals and
// the gaps between its pieces (sql/gpu_time_breakdown.sql, sql/expert_findings.sql).
// nsystrace_covered_ns(start, end, covers): the time of some intervals inside the union of others
// (sql/compute_comm_overlap.sql).
#include <exception>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "ext/connection_state.h"
#include "src/util/concurrency.h"
#include "src/util/interval_union.h"
#include "src/util/statistics.h"

namespace nsystrace {
namespace {

template <class Accumulator>
Accumulator* state_of(sqlite3_context* ctx, bool create) {
  auto** slot = static_cast<Accumulator**>(sqlite3_aggregate_context(ctx, create ? sizeof(Accumulator*) : 0));
  if (slot == nullptr) return nullptr;
  if (*slot == nullptr && create) *slot = new Accumulator();
  return *slot;
}

template <class Accumulator>
void step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return;
  try {
    Accumulator* a = state_of<Accumulator>(ctx, true);
    if (a == nullptr) return sqlite3_result_error_nomem(ctx);
    if (type == SQLITE_INTEGER) {
      if constexpr (std::is_same_v<Accumulator, MedianAccumulator>) a->add(static_cast<int64_t>(sqlite3_value_int64(argv[0])));
      else a->add(static_cast<long double>(sqlite3_value_int64(argv[0])));
    } else if (type == SQLITE_FLOAT) {
      a->add(sqlite3_value_double(argv[0]));
    } else {
      sqlite3_result_error(ctx,
                           std::is_same_v<Accumulator, MedianAccumulator>
                               ? "nsystrace_median(X): X must be a number (or NULL, which is skipped)"
                               : "nsystrace_stddev(X): X must be a number (or NULL, which is skipped)",
                           -1);
    }
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
}

template <class Accumulator>
void finish(sqlite3_context* ctx) {
  Accumulator* a = state_of<Accumulator>(ctx, false);
  if (a == nullptr) return;  // no rows, or only NULLs: NULL
  try {
    if (std::optional<double> r = a->result()) sqlite3_result_double(ctx, *r);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
  delete a;
}

// The interval aggregates' row check: a row whose start or end (argv[0], argv[1]) is NULL is skipped (*skip); else
// all `count` arguments must be integers, or the usage is the error (false).
bool integer_arguments(sqlite3_context* ctx, sqlite3_value** argv, int count, const char* usage, bool* skip) {
  *skip = sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL;
  if (*skip) return true;
  for (int i = 0; i < count; ++i)
    if (sqlite3_value_type(argv[i]) != SQLITE_INTEGER) {
      sqlite3_result_error(ctx, usage, -1);
      return false;
    }
  return true;
}

// nsystrace_concurrency: the intervals are kept (16 bytes each) until the group ends; t0 and bucket_ns must be the
// same integers on every row (they define the buckets), checked so that a mistake is an error, not odd buckets.
struct ConcurrencyState {
  ConcurrencyAccumulator intervals;
  int64_t t0 = 0, width = 0;
};

constexpr const char* kConcurrencyUsage =
    "nsystrace_concurrency(start, end, t0, bucket_ns): start and end must be integers (or NULL: the row is skipped), "
    "t0 and bucket_ns integers, bucket_ns > 0, the same on every row of a group";

void concurrency_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  bool skip = false;
  if (!integer_arguments(ctx, argv, 4, kConcurrencyUsage, &skip) || skip) return;
  int64_t t0 = sqlite3_value_int64(argv[2]), width = sqlite3_value_int64(argv[3]);
  if (width <= 0) return sqlite3_result_error(ctx, kConcurrencyUsage, -1);
  try {
    ConcurrencyState* a = state_of<ConcurrencyState>(ctx, true);
    if (a == nullptr) return sqlite3_result_error_nomem(ctx);
    if (a->intervals.size() == 0) {
      a->t0 = t0;
      a->width = width;
    } else if (a->t0 != t0 || a->width != width) {
      return sqlite3_result_error(ctx, kConcurrencyUsage, -1);
    }
    a->intervals.add(sqlite3_value_int64(argv[0]), sqlite3_value_int64(argv[1]));
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
}

void concurrency_final(sqlite3_context* ctx) {
  ConcurrencyState* a = state_of<ConcurrencyState>(ctx, false);
  if (a == nullptr) return sqlite3_result_text(ctx, "[]", 2, SQLITE_STATIC);  // no intervals: no buckets
  try {
    std::string json = concurrency_json(a->intervals.buckets(a->t0, a->width));
    sqlite3_result_text64(ctx, json.data(), json.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("nsystrace_concurrency: ") + e.what()).c_str(), -1);
  }
  delete a;
}

// nsystrace_union_ns and nsystrace_gaps keep the intervals (16 bytes each) until the group ends. A row with a NULL
// start or end is skipped, as SQLite's own aggregates skip NULLs.
struct UnionState {
  IntervalUnion intervals;
  int64_t min_gap = 0;
};

// A count of ns beyond int64 (only a union of corrupt timestamps gets there) as a real, as concurrency_json does.
void result_ns(sqlite3_context* ctx, __int128 ns) {
  if (ns >= INT64_MIN && ns <= INT64_MAX) sqlite3_result_int64(ctx, static_cast<int64_t>(ns));
  else sqlite3_result_double(ctx, static_cast<double>(ns));
}

constexpr const char* kUnionUsage =
    "nsystrace_union_ns(start, end): start and end must be integers (or NULL: the row is skipped)";

void union_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  bool skip = false;
  if (!integer_arguments(ctx, argv, 2, kUnionUsage, &skip) || skip) return;
  try {
    UnionState* a = state_of<UnionState>(ctx, true);
    if (a == nullptr) return sqlite3_result_error_nomem(ctx);
    a->intervals.add(sqlite3_value_int64(argv[0]), sqlite3_value_int64(argv[1]));
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
}

void union_final(sqlite3_context* ctx) {
  UnionState* a = state_of<UnionState>(ctx, false);
  if (a == nullptr) return sqlite3_result_int64(ctx, 0);  // the union of no intervals
  result_ns(ctx, a->intervals.length());
  delete a;
}

constexpr const char* kGapsUsage =
    "nsystrace_gaps(start, end, min_gap_ns): start and end must be integers (or NULL: the row is skipped), "
    "min_gap_ns an integer, the same on every row of a group";

void gaps_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  bool skip = false;
  if (!integer_arguments(ctx, argv, 3, kGapsUsage, &skip) || skip) return;
  int64_t min_gap = sqlite3_value_int64(argv[2]);
  try {
    UnionState* a = state_of<UnionState>(ctx, true);
    if (a == nullptr) return sqlite3_result_error_nomem(ctx);
    if (a->intervals.size() == 0) a->min_gap = min_gap;
    else if (a->min_gap != min_gap) return sqlite3_result_error(ctx, kGapsUsage, -1);
    a->intervals.add(sqlite3_value_int64(argv[0]), sqlite3_value_int64(argv[1]));
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
}

void gaps_final(sqlite3_context* ctx) {
  UnionState* a = state_of<UnionState>(ctx, false);
  if (a == nullptr) return sqlite3_result_text(ctx, "[]", 2, SQLITE_STATIC);  // no intervals: no gaps
  try {
    std::string json = gaps_json(a->intervals.gaps(a->min_gap));
    sqlite3_result_text64(ctx, json.data(), json.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
  delete a;
}

// nsystrace_covered_ns(start, end, covers): the rows whose covers is true make a union; the answer is the time of
// the other rows' intervals inside it, summed. Both kinds of interval are kept (16 bytes each) until the group ends.
struct CoverState {
  IntervalUnion cover;
  std::vector<std::pair<int64_t, int64_t>> covered;
};

constexpr const char* kCoveredUsage =
    "nsystrace_covered_ns(start, end, covers): start and end must be integers (or NULL: the row is skipped), covers "
    "an integer: non-zero for an interval of the covering union, 0 for one whose covered time is summed (NULL: the "
    "row is skipped)";

void covered_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  bool skip = false;
  if (!integer_arguments(ctx, argv, 2, kCoveredUsage, &skip) || skip) return;
  int covers_type = sqlite3_value_type(argv[2]);
  if (covers_type == SQLITE_NULL) return;
  if (covers_type != SQLITE_INTEGER) return sqlite3_result_error(ctx, kCoveredUsage, -1);
  try {
    CoverState* a = state_of<CoverState>(ctx, true);
    if (a == nullptr) return sqlite3_result_error_nomem(ctx);
    int64_t start = sqlite3_value_int64(argv[0]), end = sqlite3_value_int64(argv[1]);
    if (sqlite3_value_int64(argv[2]) != 0) a->cover.add(start, end);
    else a->covered.emplace_back(start, end);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
}

void covered_final(sqlite3_context* ctx) {
  CoverState* a = state_of<CoverState>(ctx, false);
  if (a == nullptr) return sqlite3_result_int64(ctx, 0);  // nothing to cover
  try {
    UnionCover cover(a->cover);
    __int128 total = 0;
    for (auto [start, end] : a->covered) total += cover.covered(start, end);
    result_ns(ctx, total);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  }
  delete a;
}

}  // namespace

int register_statistics(sqlite3* db, std::string* error) {
  int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function_v2(db, "nsystrace_median", 1, flags, nullptr, nullptr, step<MedianAccumulator>,
                                      finish<MedianAccumulator>, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_stddev", 1, flags, nullptr, nullptr, step<StdDevAccumulator>,
                                    finish<StdDevAccumulator>, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_concurrency", 4, flags, nullptr, nullptr, concurrency_step,
                                    concurrency_final, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_union_ns", 2, flags, nullptr, nullptr, union_step, union_final,
                                    nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_gaps", 3, flags, nullptr, nullptr, gaps_step, gaps_final, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_covered_ns", 3, flags, nullptr, nullptr, covered_step,
                                    covered_final, nullptr);
  if (rc != SQLITE_OK)
    *error = "cannot register the aggregates (nsystrace_median, _stddev, _concurrency, _union_ns, _gaps, _covered_ns)";
  return rc;
}

}  // namespace nsystrace
