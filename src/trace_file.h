// The streaming destination of chrome_trace_file(): written under a temporary name next to the target and renamed
// into place only when the whole trace is written, so a failed or interrupted run never leaves a partial trace
// that looks whole. Gzip (zlib) when the name ends in ".gz".
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace nsystrace {

class TraceFile {
 public:
  explicit TraceFile(std::string path);  // throws Error naming the path when it cannot be created
  ~TraceFile();                          // removes the temporary file unless commit() succeeded
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  void write(const char* data, size_t size);  // throws Error (disk full, ...)
  // Flushes, closes and renames into place; returns the size of the file written.
  uint64_t commit();
  const std::string& path() const { return path_; }
  bool gzip() const { return gz_ != nullptr; }

 private:
  void write_behind();

  std::string path_, temp_path_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
  bool committed_ = false;
  uint64_t writeback_started_ = 0, dropped_ = 0;  // file offsets, see write_behind()
};

}  // namespace nsystrace
