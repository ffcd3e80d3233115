#include "tests/support/perfetto_tools.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

namespace tp {

std::string tools_dir() {
  if (testdb::shared_fixtures_dir().empty()) return "";
  std::string tools = testdb::shared_fixtures_dir() + "/../../tools/perfetto";
  return access((tools + "/import-stats").c_str(), X_OK) == 0 ? tools : "";
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << command << ": cannot start it";
    return out;
  }
  char buf[65536];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (int status = pclose(p); status != 0) ADD_FAILURE() << command << " failed:\n" << out;
  return out;
}

std::string query(const std::string& tools, const std::string& trace, const std::string& sql) {
  std::string quoted = "'";  // the shell's single quotes, a quote inside as '\''
  for (char c : sql) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return run(tools + "/trace-processor query " + trace + " " + quoted + "' 2>/dev/null");
}

int64_t integer(const std::string& tools, const std::string& trace, const std::string& sql) {
  std::string out = query(tools, trace, sql);
  return std::stoll(out.substr(out.find('\n') + 1));
}

std::vector<std::string> lines(const std::string& tools, const std::string& trace, const std::string& sql) {
  std::string out = query(tools, trace, sql);
  std::vector<std::string> result;
  size_t at = out.find('\n');  // past the header
  while (at != std::string::npos && at + 1 < out.size()) {
    size_t end = out.find('\n', at + 1);
    std::string line = out.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    if (line.size() >= 2 && line.front() == '"' && line.back() == '"') line = line.substr(1, line.size() - 2);
    result.push_back(line);
    at = end;
  }
  return result;
}

int64_t session_start_ns(testdb::Db& db) {
  if (db.integer("select count(*) from sqlite_schema where name = 'TARGET_INFO_SESSION_START_TIME'") == 0) return 0;
  return db.integer("select coalesce(max(utcEpochNs), 0) from TARGET_INFO_SESSION_START_TIME");
}

}  // namespace tp
