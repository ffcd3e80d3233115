// The streaming destination of the *_file() functions: written under a temporary name next to the target and
// renamed into place only when the whole trace is written, so a failed or interrupted run never leaves a partial
// trace that looks whole. Gzip (zlib) when the name ends in ".gz" (any case).
//
// The temporary file is new and ours alone: "<path>.<pid>.<16 random hex digits>.partial", created with
// O_CREAT|O_EXCL|O_NOFOLLOW, so a file or a symbolic link planted at that name is never opened, followed or
// overwritten, and two writers of one path (two *_file() calls in one query) never share a temporary file: each
// renames a whole trace into place, the last one wins.
//
// A trace file never replaces a database: the target may not be (nor become, by the rename) a database of the
// connection, its -wal, -journal or -shm file, nor any existing SQLite database file. One swapped argument in a
// script (`chrome_trace_file('prof.sqlite')`) must not destroy a profile.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace nsystrace {

// Throws Error, naming `function` and the file, when writing `path` would replace one of `database_files` (the
// connection's databases; their -wal/-journal/-shm files are covered too) or any existing SQLite database.
void check_not_a_database(const std::string& function, const std::string& path,
                          const std::vector<std::string>& database_files);

// Whether the name ends in ".gz", in any case ("trace.json.GZ" too).
bool gzip_name(const std::string& path);

// Creates the temporary file of `path` (see above) and returns its descriptor, its name in `temp_path`. A name that
// exists already (a file, a link) is skipped for another random one; throws Error naming `function` and the file
// when none can be created. `random` gives the names' random part (a test may pin it).
int create_exclusive_temp(const std::string& function, const std::string& path, std::string& temp_path,
                          const std::function<uint64_t()>& random = {});

class TraceFile {
 public:
  // function: the SQL function writing it, for messages. Throws Error naming the path when it cannot be created
  // or must not be written (check_not_a_database).
  TraceFile(std::string path, std::vector<std::string> database_files, std::string function = "chrome_trace_file()");
  ~TraceFile();  // removes the temporary file unless commit() succeeded
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  void write(const char* data, size_t size);  // throws Error (disk full, ...)
  // Flushes, closes and renames into place (checking again that the target is no database); returns the size of
  // the file written.
  uint64_t commit();
  const std::string& path() const { return path_; }
  bool gzip() const { return gz_ != nullptr; }

 private:
  void write_behind();

  std::string path_, temp_path_, function_;
  std::vector<std::string> database_files_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
  bool committed_ = false;
  uint64_t temp_device_ = 0, temp_inode_ = 0;  // the temporary file's identity, checked before the rename
  uint64_t writeback_started_ = 0, dropped_ = 0;  // file offsets, see write_behind()
};

}  // namespace nsystrace
