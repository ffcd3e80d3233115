// nsystrace_median(X) and nsystrace_stddev(X): aggregates for the nsys stats reports (sql/nsys_stats). NULLs are
// skipped, as by SQLite's own aggregates; a text or blob value is an error naming the function, not a silent 0.
#include <new>
#include <type_traits>

#include "ext/connection_state.h"
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

}  // namespace

int register_statistics(sqlite3* db, std::string* error) {
  int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function_v2(db, "nsystrace_median", 1, flags, nullptr, nullptr, step<MedianAccumulator>,
                                      finish<MedianAccumulator>, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "nsystrace_stddev", 1, flags, nullptr, nullptr, step<StdDevAccumulator>,
                                    finish<StdDevAccumulator>, nullptr);
  if (rc != SQLITE_OK) *error = "cannot register nsystrace_median / nsystrace_stddev";
  return rc;
}

}  // namespace nsystrace
