#include "tests/support/test_db.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "ext/nsystrace.h"

namespace testdb {

std::string source_dir() { return NSYSTRACE_SOURCE_DIR; }

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string shared_fixtures_dir() {
  const char* env = std::getenv("NSYSTRACE_SHARED_FIXTURES");
  std::string dir = env ? env : std::string(NSYSTRACE_SOURCE_DIR) + "/../shared/fixtures/real";
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? dir : "";
}

namespace {
// The static library calls SQLite through the API table, as the loadable extension does (one compilation serves
// both), and SQLite hands the table over when it runs the extension's init. This runs the init once before main, on
// a connection of its own, so that a test's first call through the library finds the table; the registration is
// withdrawn at once (a test that loads the .so must not find the static extension on its connection too). This file
// includes <sqlite3.h>, not src/sqlite/sqlite_api.h: its calls are direct.
const bool kApiTableBound = [] {
  auto init = reinterpret_cast<void (*)()>(sqlite3_nsystrace_init);
  sqlite3_auto_extension(init);
  sqlite3* db = nullptr;
  bool opened = sqlite3_open(":memory:", &db) == SQLITE_OK;
  sqlite3_close(db);
  sqlite3_cancel_auto_extension(init);
  return opened;
}();

void register_static_once() {
  static bool done = [] {
    sqlite3_auto_extension(reinterpret_cast<void (*)()>(sqlite3_nsystrace_init));
    return true;
  }();
  (void)done;
}
}  // namespace

Db::Db() {
  register_static_once();
  if (sqlite3_open(":memory:", &db_) != SQLITE_OK) throw std::runtime_error("cannot open :memory:");
}

Db::Db(const std::string& path, bool load_shared_object, bool writable) {
  if (!load_shared_object) register_static_once();
  if (sqlite3_open_v2(path.c_str(), &db_, writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    throw std::runtime_error("cannot open " + path + ": " + sqlite3_errmsg(db_));
  if (load_shared_object) {
    sqlite3_enable_load_extension(db_, 1);
    char* err = nullptr;
    if (sqlite3_load_extension(db_, NSYSTRACE_SHARED_OBJECT, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("cannot load " NSYSTRACE_SHARED_OBJECT ": " + msg);
    }
  }
}

Db::~Db() { sqlite3_close_v2(db_); }

void Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw std::runtime_error(msg);
  }
}

void Db::exec_file(const std::string& path) {
  if (!std::ifstream(path)) throw std::runtime_error("cannot read " + path);
  exec(file_contents(path));
}

std::vector<std::vector<std::string>> Db::rows(const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string(sqlite3_errmsg(db_)) + " in: " + sql);
  std::vector<std::vector<std::string>> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      row.push_back(t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(st, i)) : "NULL");
    }
    out.push_back(std::move(row));
  }
  std::string msg = sqlite3_errmsg(db_);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) throw std::runtime_error(msg + " in: " + sql);
  return out;
}

std::string Db::text(const std::string& sql) {
  auto r = rows(sql);
  return r.empty() || r[0].empty() || r[0][0] == "NULL" ? "" : r[0][0];
}

int64_t Db::integer(const std::string& sql) { return std::stoll(rows(sql).at(0).at(0)); }

std::string Db::error_of(const std::string& sql) {
  try {
    rows(sql);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::vector<std::string> real_exports() {
  std::vector<std::string> out;
  std::string dir = shared_fixtures_dir();
  if (dir.empty()) return out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 7 && name.substr(name.size() - 7) == ".sqlite") out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t sanitizer_stride() {
  const char* env = std::getenv("NSYSTRACE_GRID_STRIDE");
  return env ? static_cast<size_t>(std::max(1, std::atoi(env))) : 1;
}

std::string large_export() {
  if (shared_fixtures_dir().empty()) return "";
  std::string path = shared_fixtures_dir() + "/../large/h200_nccl_1rank_gpu_metrics.sqlite";
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

size_t work_weight(Db& db) {
  return 1 + static_cast<size_t>(db.integer("select count(*) from trace_events") / 30000);
}

size_t position_in(const std::vector<std::string>& all, const std::string& item) {
  return static_cast<size_t>(std::find(all.begin(), all.end(), item) - all.begin());
}

std::string not_sampled_under_sanitizers(const std::string& item, const std::vector<std::string>& all) {
  size_t stride = sanitizer_stride();
  if (stride == 1) return "";
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test ? std::string(test->test_suite_name()) + "." + test->name() : "";
  name = name.substr(0, name.find('/', name.find('.')));  // the test, without its parameter
  uint32_t turn = 2166136261u;  // FNV-1a: the same turn on every platform
  for (char c : name) turn = (turn ^ static_cast<unsigned char>(c)) * 16777619u;
  if ((position_in(all, item) + turn) % stride == 0) return "";
  return "sampled under the sanitizers (every " + std::to_string(stride) + "th item, turned by the test's name): " +
         item + " runs this test in the Release pass";
}

std::vector<std::string> fixture_scripts() {
  std::vector<std::string> out;
  if (DIR* d = opendir((source_dir() + "/tests/fixtures").c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.substr(name.size() - 4) == ".sql") out.push_back("tests/fixtures/" + name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  out.insert(out.begin(), "examples/example_profile.sql");
  return out;
}

std::string file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int threads_of_this_process() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

void open_with_second_report(Db& db, const std::string& script, const TempDir& dir, const std::string& second) {
  const std::string copy = dir.file(second + ".sqlite");
  {
    Db file(copy, false, true);
    file.exec_file(source_dir() + "/" + script);
  }
  db.exec_file(source_dir() + "/" + script);
  db.exec("attach 'file:" + copy + "?mode=ro' as " + second);
}

}  // namespace testdb
