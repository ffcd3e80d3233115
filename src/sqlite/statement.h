// Minimal RAII over prepared statements. Errors are thrown as nsystrace::Error; the glue in ext/ turns them
// into SQLite error messages, so no exception ever unwinds through SQLite.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/sqlite/sqlite_api.h"

namespace nsystrace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A statement failed because its connection was interrupted (sqlite3_interrupt, Ctrl-C, a progress handler that
// returned non-zero): the vtab glue reports it as SQLITE_INTERRUPT, as SQLite reports it for a plain table.
struct Interrupted : Error {
  using Error::Error;
};

// "name" with embedded quotes doubled: the only way identifiers enter SQL text we build.
std::string quote_identifier(std::string_view name);

class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, std::string_view sql);  // throws Error naming the SQL on failure
  // Inline, and no call for an empty one: statements move through heaps and vectors row by row (a merge of runs).
  ~Statement() {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
  }
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      if (stmt_ != nullptr) sqlite3_finalize(stmt_);
      stmt_ = other.stmt_;
      other.stmt_ = nullptr;
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool step();  // true when a row is ready; throws Error on failure
  void reset();
  void bind(int index, int64_t value);
  void bind(int index, std::string_view value);

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }  // NULL reads as 0
  // The integer, or nothing for NULL. One column fetch instead of two (each takes the connection's mutex): the
  // readers call this tens of millions of times.
  std::optional<int64_t> optional_int64(int col) const {
    sqlite3_value* v = sqlite3_column_value(stmt_, col);
    if (sqlite3_value_type(v) == SQLITE_NULL) return std::nullopt;
    return sqlite3_value_int64(v);
  }
  // The text, or nothing for NULL (where text() gives "" for both).
  std::optional<std::string_view> optional_text(int col) const {
    sqlite3_value* v = sqlite3_column_value(stmt_, col);
    if (sqlite3_value_type(v) == SQLITE_NULL) return std::nullopt;
    const unsigned char* p = sqlite3_value_text(v);
    if (p == nullptr) return std::string_view();
    return std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_value_bytes(v)));
  }
  // The bytes of a BLOB (or of any value as a blob), or nothing for NULL.
  std::optional<std::string_view> optional_blob(int col) const {
    sqlite3_value* v = sqlite3_column_value(stmt_, col);
    if (sqlite3_value_type(v) == SQLITE_NULL) return std::nullopt;
    const void* p = sqlite3_value_blob(v);
    if (p == nullptr) return std::string_view();
    return std::string_view(static_cast<const char*>(p), static_cast<size_t>(sqlite3_value_bytes(v)));
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  int type(int col) const { return sqlite3_column_type(stmt_, col); }
  std::string_view text(int col) const { return optional_text(col).value_or(std::string_view()); }  // NULL: ""
  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// Where a forward cursor stands: a statement "SELECT ..., rowid ... WHERE rowid >= ? ORDER BY rowid" (the rowid at
// column `rowid_column`) read by rowids that mostly ascend a few rows apart (a join's lookups, NVTX ranges in start
// order). Stepping a few rows on costs less than a seek (reset, bind, step).
struct ForwardPosition {
  bool on_row = false;  // the statement stands on the row `rowid`
  int64_t rowid = 0;
  bool within_reach(int64_t target, int64_t reach) const {
    return on_row && rowid <= target && target - rowid <= reach;
  }
};
// Moves the cursor to the row `target`: steps when it is within `reach` rows on, else seeks (binding parameter 1).
// True when the cursor then stands on that row; else it stands past it, or on no row.
bool move_forward(Statement& stmt, int rowid_column, ForwardPosition& at, int64_t target, int64_t reach);

// Prepared statements kept for reuse, by their SQL: a join's inner trace_events scan restarts at every outer row and
// would otherwise prepare the same statements each time (half of such a lookup's cost). Owned by one cursor, and
// handed from a closing cursor to the next one opened while other trace_events cursors are open (a correlated
// subquery's: ConnectionState::idle_statements); finalized when the last one closes, before the connection can.
class StatementCache {
 public:
  Statement take(sqlite3* db, const std::string& sql);  // a kept one (reset, its bindings cleared), or a new one
  void give_back(Statement s) noexcept;                   // keeps it (a few per SQL), or finalizes it

 private:
  std::unordered_map<std::string, std::vector<Statement>> kept_;
};

}  // namespace nsystrace
