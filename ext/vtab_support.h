// Pieces shared by the virtual tables: the exception boundary and the connection-scoped vtab object.
#pragma once
#include <cstring>
#include <new>
#include <string>

#include "ext/connection_state.h"

namespace nsystrace {

struct ConnectionVtab {
  sqlite3_vtab base;  // must stay first
  ConnectionState* state;
};

inline void set_vtab_error(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
}

// Runs body(); turns exceptions into SQLite result codes (and the message into the vtab's error): no exception
// may unwind through SQLite.
template <class Body>
int guarded(sqlite3_vtab* vtab, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    set_vtab_error(vtab, e.what());
    return SQLITE_ERROR;
  }
}

// xConnect for an eponymous read-only table with the given schema.
inline int connect_vtab(sqlite3* db, void* aux, const char* schema, sqlite3_vtab** out) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) return rc;
  // Reading the profile has no side effects: safe to use from views and triggers of untrusted schemas.
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  auto* vtab = static_cast<ConnectionVtab*>(sqlite3_malloc(sizeof(ConnectionVtab)));
  if (vtab == nullptr) return SQLITE_NOMEM;
  std::memset(vtab, 0, sizeof *vtab);
  vtab->state = static_cast<ConnectionState*>(aux);
  *out = &vtab->base;
  return SQLITE_OK;
}

inline int disconnect_vtab(sqlite3_vtab* vtab) {
  sqlite3_free(vtab);
  return SQLITE_OK;
}

inline void result_text(sqlite3_context* ctx, std::string_view s) {
  sqlite3_result_text64(ctx, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

}  // namespace nsystrace
