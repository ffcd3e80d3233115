// The streaming destination of the *_file() functions: written under a temporary name next to the target and
// renamed into place only when the whole trace is written, so a failed or interrupted run never leaves a partial
// trace that looks whole. Gzip (zlib) when the name ends in ".gz" (any case).
//
// Gzip is compressed as pigz does it, so that it can run beside the conversion: the text is cut into chunks of a
// fixed size, each deflated on its own (primed with the 32 KB before it, so matches still reach back across the
// cut) and ended byte-aligned by a sync flush, the last by the final block; the chunks are concatenated in order
// into one gzip member whose CRC is combined from theirs. With N threads, N - 1 workers (31 at most) deflate while
// the caller converts (and helps when they fall behind); with 1, the caller deflates each chunk as it fills. The
// cut does not depend on the threads, so neither do the bytes.
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
#include <memory>
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

// How a .gz trace is compressed. The defaults are the product's (see tests/bench/results-gzip-command.md for the
// level's figures); tests take smaller chunks to cut a small trace into many.
struct GzipSettings {
  int level = 2;
  size_t chunk_bytes = size_t{1} << 20;
};

class GzipStream;

class TraceFile {
 public:
  // function: the SQL function writing it, for messages. threads: how many threads may compress a .gz (the
  // caller's included; nsystrace_option('threads')). Throws Error naming the path when it cannot be created or
  // must not be written (check_not_a_database).
  TraceFile(std::string path, std::vector<std::string> database_files, std::string function = "chrome_trace_file()",
            int threads = 1, GzipSettings gzip = {});
  // Removes the temporary file unless commit() succeeded; stops and joins the compressing threads first.
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  void write(const char* data, size_t size);  // throws Error (disk full, ...)
  // Flushes, closes and renames into place (checking again that the target is no database); returns the size of
  // the file written.
  uint64_t commit();
  const std::string& path() const { return path_; }
  bool gzip() const { return gzip_ != nullptr; }

 private:
  void write_out(const char* data, size_t size);  // to the temporary file, as it will be on disk
  void write_behind();

  std::string path_, temp_path_, function_;
  std::vector<std::string> database_files_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<GzipStream> gzip_;  // .gz: compresses into write_out()
  bool committed_ = false;
  uint64_t temp_device_ = 0, temp_inode_ = 0;  // the temporary file's identity, checked before the rename
  uint64_t writeback_started_ = 0, dropped_ = 0;  // file offsets, see write_behind()
};

}  // namespace nsystrace
