#include "src/statement.h"

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

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_);
  throw Error(fmt::format("nsystrace: reading the profile failed ({}): {}", sqlite3_errmsg(db), sqlite3_sql(stmt_)));
}

void Statement::reset() { sqlite3_reset(stmt_); }

void Statement::bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

}  // namespace nsystrace
