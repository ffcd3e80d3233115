// libFuzzer target: the bytes are a database file (seeded with real exports, mutated): opening it and running
// trace_events, chrome_trace(*) and nvtx_kernel_ranges must give a result or an error, never a crash, a leak or
// undefined behaviour (built with ASan and UBSan).
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "ext/nsystrace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool registered = [] {
    sqlite3_auto_extension(reinterpret_cast<void (*)()>(sqlite3_nsystrace_init));
    return true;
  }();
  (void)registered;
  // One scratch file per fuzzing process, removed when it exits.
  static const struct ScratchFile {
    std::string path = "/tmp/nsystrace_fuzz_" + std::to_string(getpid()) + ".sqlite";
    ~ScratchFile() { std::remove(path.c_str()); }
  } scratch;
  const std::string& path = scratch.path;
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    // Bound the work per input: corrupt files can describe huge tables.
    sqlite3_progress_handler(db, 100000, [](void*) { return 1; }, nullptr);
    for (const char* sql : {"select count(*), sum(length(args)) from trace_events",
                            "select length(chrome_trace(*)) from trace_events",
                            "select count(*) from nvtx_kernel_ranges"}) {
      sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    }
  }
  sqlite3_close(db);
  return 0;
}
