// Perfetto's own tools from ../shared/tools/perfetto (import-stats, trace-processor v58.2), the judge of a trace,
// for the tests that ask them: absent (no ../shared) the tests that need them skip, visibly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/test_db.h"

namespace tp {

// The directory holding import-stats and trace-processor, or "" when ../shared has none.
std::string tools_dir();
#define SKIP_WITHOUT_PERFETTO(tools) \
  if ((tools).empty()) GTEST_SKIP() << "../shared/tools/perfetto not found: the check with Perfetto's importer NOT run"

// A shell command's standard output; a command that fails adds a test failure naming it.
std::string run(const std::string& command);
// The trace processor's answer to one SQL query over a trace: CSV, a header line first.
std::string query(const std::string& tools, const std::string& trace, const std::string& sql);
// The same for a query with one integer answer.
int64_t integer(const std::string& tools, const std::string& trace, const std::string& sql);
// The answer's lines without the header, the quotes around a line's text removed (a query of one text column).
std::vector<std::string> lines(const std::string& tools, const std::string& trace, const std::string& sql);

// A Perfetto trace's times are wall-clock times (the default): the export's session start plus its own times. The
// start in ns since the epoch (TARGET_INFO_SESSION_START_TIME), 0 when the export has none.
int64_t session_start_ns(testdb::Db& db);

}  // namespace tp
