#include "src/trace_file.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "src/statement.h"

namespace nsystrace {

namespace {
bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
}  // namespace

TraceFile::TraceFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("nsystrace: chrome_trace_file(): the file name is empty");
  temp_path_ = fmt::format("{}.partial-{}", path_, static_cast<long>(getpid()));
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr)
    throw Error(fmt::format("nsystrace: chrome_trace_file(): cannot create '{}': {}", temp_path_, std::strerror(errno)));
  if (ends_with(path_, ".gz")) {
    int fd = dup(fileno(file_));
    gz_ = fd >= 0 ? gzdopen(fd, "wb1") : nullptr;  // level 1: gzip is for size on disk, speed matters more
    if (gz_ == nullptr) {
      if (fd >= 0) close(fd);
      std::fclose(file_);
      file_ = nullptr;
      std::remove(temp_path_.c_str());
      throw Error(fmt::format("nsystrace: chrome_trace_file(): cannot start gzip on '{}'", temp_path_));
    }
    gzbuffer(static_cast<gzFile>(gz_), 1 << 20);
  }
}

TraceFile::~TraceFile() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_path_.c_str());
}

void TraceFile::write(const char* data, size_t size) {
  if (size == 0) return;
  if (gz_ != nullptr) {
    auto* gz = static_cast<gzFile>(gz_);
    while (size > 0) {
      unsigned n = size > (1u << 30) ? (1u << 30) : static_cast<unsigned>(size);
      if (gzwrite(gz, data, n) != static_cast<int>(n)) {
        int err = 0;
        const char* msg = gzerror(gz, &err);
        throw Error(fmt::format("nsystrace: chrome_trace_file(): writing '{}' failed: {}", temp_path_,
                                err == Z_ERRNO ? std::strerror(errno) : msg));
      }
      data += n;
      size -= n;
    }
  } else if (std::fwrite(data, 1, size, file_) != size) {
    throw Error(fmt::format("nsystrace: chrome_trace_file(): writing '{}' failed: {}", temp_path_, std::strerror(errno)));
  }
  write_behind();
}

// A trace is written once and never read back by us, so it should not fill the page cache: a multi-GB trace
// would evict what the user has cached (the profile itself, first), and every page it dirties is a new page
// (costly on VMs whose free memory goes back to the host). Every 16 MB, writeback of the new range is started
// (asynchronously), and the range before it, by then mostly on disk, is waited for and dropped from the cache.
// All hints: on file systems that do not support them nothing changes.
void TraceFile::write_behind() {
#ifdef __linux__
  constexpr uint64_t kStep = 16 << 20;
  int fd = fileno(file_);  // gzip writes through a dup() of it: same file offset
  off_t end = lseek(fd, 0, SEEK_CUR);
  if (end < 0 || static_cast<uint64_t>(end) < writeback_started_ + kStep) return;
  uint64_t now = static_cast<uint64_t>(end);
  sync_file_range(fd, static_cast<off_t>(writeback_started_), static_cast<off_t>(now - writeback_started_),
                  SYNC_FILE_RANGE_WRITE);
  if (writeback_started_ > dropped_) {
    off_t from = static_cast<off_t>(dropped_), len = static_cast<off_t>(writeback_started_ - dropped_);
    sync_file_range(fd, from, len, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    posix_fadvise(fd, from, len, POSIX_FADV_DONTNEED);
    dropped_ = writeback_started_;
  }
  writeback_started_ = now;
#endif
}

uint64_t TraceFile::commit() {
  if (gz_ != nullptr) {
    int rc = gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
    if (rc != Z_OK) throw Error(fmt::format("nsystrace: chrome_trace_file(): finishing gzip '{}' failed", temp_path_));
  }
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0)
    throw Error(fmt::format("nsystrace: chrome_trace_file(): closing '{}' failed: {}", temp_path_, std::strerror(errno)));
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw Error(fmt::format("nsystrace: chrome_trace_file(): cannot rename '{}' to '{}': {}", temp_path_, path_,
                            std::strerror(errno)));
  committed_ = true;
  struct stat st;
  return stat(path_.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace nsystrace
