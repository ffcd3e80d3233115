// Entry point: registers the module and functions on one connection. Non-trivial code lives in src/.
#include <fmt/format.h>

#include <string>

#include "ext/connection_state.h"
#include "src/statement.h"

#ifndef NSYSTRACE_VERSION
#define NSYSTRACE_VERSION "unknown"
#endif

namespace nsystrace {

void ConnectionState::remove_cursor(TraceEventsCursor* c) {
  for (size_t i = 0; i < cursors_.size(); ++i) {
    if (cursors_[i] == c) {
      cursors_.erase(cursors_.begin() + static_cast<long>(i));
      return;
    }
  }
}

std::vector<TraceEventsCursor*> ConnectionState::live_cursors() const {
  std::vector<TraceEventsCursor*> out;
  for (TraceEventsCursor* c : cursors_)
    if (c->scan && !c->scan->eof()) out.push_back(c);
  return out;
}

std::shared_ptr<const ProfileCatalog> ConnectionState::catalog(const std::string& schema) {
  // schema_version changes with DDL, data_version with commits by other connections, total_changes with ours.
  std::string q = quote_identifier(schema);
  Statement sv(db_, "PRAGMA " + q + ".schema_version");
  Statement dv(db_, "PRAGMA " + q + ".data_version");
  sv.step();
  dv.step();
  std::string version = fmt::format("{}/{}/{}", sv.int64(0), dv.int64(0), sqlite3_total_changes(db_));
  auto& slot = catalogs_[schema];
  if (!slot.catalog || slot.version != version) {
    slot.catalog = ProfileCatalog::load(db_, schema);
    slot.projection.reset();
    slot.version = version;
  }
  return slot.catalog;
}

std::shared_ptr<const NvtxProjection> ConnectionState::projection(const std::string& schema) {
  auto current = catalog(schema);
  auto& slot = catalogs_[schema];
  if (!slot.projection) slot.projection = NvtxProjection::compute(db_, *current);
  return slot.projection;
}

namespace {

void version_function(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, NSYSTRACE_VERSION, -1, SQLITE_STATIC);
}

}  // namespace

}  // namespace nsystrace

extern "C" __attribute__((visibility("default"))) int sqlite3_nsystrace_init(sqlite3* db, char** pzErrMsg,
                                                                           const sqlite3_api_routines* pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  using namespace nsystrace;
  std::string error;
  int rc = SQLITE_OK;
  try {
    if (sqlite3_libversion_number() < 3038000) {
      error = fmt::format("nsystrace needs SQLite 3.38 or later; this is {}", sqlite3_libversion());
      rc = SQLITE_ERROR;
    } else {
      rc = sqlite3_create_function_v2(db, "nsystrace_version", 0,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nullptr,
                                      version_function, nullptr, nullptr, nullptr);
      // The module owns the state (destroyed with the connection, or at once if registration fails); the
      // functions borrow it.
      auto* state = rc == SQLITE_OK ? new ConnectionState(db) : nullptr;
      if (rc == SQLITE_OK) rc = register_trace_events(db, state, &error);
      if (rc == SQLITE_OK) rc = register_chrome_trace(db, state, &error);
      if (rc == SQLITE_OK) rc = register_nvtx_kernel_ranges(db, state, &error);
    }
  } catch (const std::exception& e) {
    error = e.what();
    rc = SQLITE_ERROR;
  }
  if (rc != SQLITE_OK && pzErrMsg != nullptr) {
    if (error.empty()) error = sqlite3_errmsg(db);
    *pzErrMsg = sqlite3_mprintf("nsystrace: %s", error.c_str());
  }
  return rc;
}
