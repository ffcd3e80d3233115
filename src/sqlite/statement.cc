#include "src/sqlite/statement.h"

#include <fmt/format.h>

namespace nsystrace {

std::string quote_identifier(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back('"');
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

Statement::Statement(sqlite3* db, std::string_view sql) {
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = fmt::format("nsystrace: cannot prepare [{}]: {}", sql, sqlite3_errmsg(db));
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throw Error(msg);
  }
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_);
  std::string message =
      fmt::format("nsystrace: reading the profile failed ({}): {}", sqlite3_errmsg(db), sqlite3_sql(stmt_));
  if (rc == SQLITE_INTERRUPT) throw Interrupted(message);
  throw Error(message);
}

void Statement::reset() { sqlite3_reset(stmt_); }

Statement StatementCache::take(sqlite3* db, const std::string& sql) {
  auto it = kept_.find(sql);
  if (it == kept_.end() || it->second.empty()) return Statement(db, sql);
  Statement s = std::move(it->second.back());
  it->second.pop_back();
  return s;
}

void StatementCache::give_back(Statement s) noexcept {
  if (!s) return;
  sqlite3_reset(s.get());
  sqlite3_clear_bindings(s.get());
  try {
    constexpr size_t kPerSql = 4, kSqls = 256;  // bounded: a scan opens a statement or two per event table
    const char* sql = sqlite3_sql(s.get());
    if (sql == nullptr || (kept_.size() >= kSqls && kept_.find(sql) == kept_.end())) return;
    std::vector<Statement>& same = kept_[sql];
    if (same.size() < kPerSql) same.push_back(std::move(s));
  } catch (...) {  // no memory to keep it: it is finalized, which is all a cache miss costs
  }
}

void Statement::bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

bool move_forward(Statement& stmt, int rowid_column, ForwardPosition& at, int64_t target, int64_t reach) {
  auto step = [&] {
    at.on_row = stmt.step();
    if (at.on_row) at.rowid = stmt.int64(rowid_column);
  };
  if (!at.within_reach(target, reach)) {
    stmt.reset();
    stmt.bind(1, target);
    step();
  }
  while (at.on_row && at.rowid < target) step();
  return at.on_row && at.rowid == target;
}

}  // namespace nsystrace
