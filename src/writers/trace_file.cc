#include "src/writers/trace_file.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
// "dir/name" with dir resolved (symbolic links, "..", relative paths): the name a file will have once created.
std::string canonical_target(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  char* resolved = realpath(dir.c_str(), nullptr);
  if (resolved == nullptr) return path;
  std::string out(resolved);
  std::free(resolved);
  return (out == "/" ? out : out + "/") + base;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// 64 unpredictable bits for a temporary name: the kernel's, else (no getrandom) the clock, the pid and a counter
// mixed (still unique within the process; O_EXCL keeps it safe either way).
uint64_t random_bits() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v)) return v;
  static std::atomic<uint64_t> counter{0};
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  v = (static_cast<uint64_t>(t.tv_sec) * 1000000007u) ^ static_cast<uint64_t>(t.tv_nsec) ^
      (static_cast<uint64_t>(getpid()) << 40) ^ (++counter * 0x9E3779B97F4A7C15u);
  return v;
}

bool starts_like_sqlite(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char header[16] = {};
  size_t n = std::fread(header, 1, sizeof header, f);
  std::fclose(f);
  return n == sizeof header && std::memcmp(header, "SQLite format 3", 16) == 0;  // 15 chars and the NUL
}
}  // namespace

bool gzip_name(const std::string& path) {
  if (path.size() < 3) return false;
  std::string tail = path.substr(path.size() - 3);
  return tail[0] == '.' && (tail[1] == 'g' || tail[1] == 'G') && (tail[2] == 'z' || tail[2] == 'Z');
}

int create_exclusive_temp(const std::string& function, const std::string& path, std::string& temp_path,
                          const std::function<uint64_t()>& random) {
  constexpr int kAttempts = 16;  // a taken name is someone else's file or link: try another, a few times
  int err = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    temp_path = fmt::format("{}.{}.{:016x}.partial", path, static_cast<long>(getpid()), random ? random() : random_bits());
    int fd = open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    err = errno;
    if (err != EEXIST && err != ELOOP) break;  // ELOOP: a link planted at the name (O_NOFOLLOW)
  }
  throw Error(fmt::format("nsystrace: {}: cannot create '{}': {}", function, temp_path, std::strerror(err)));
}

void check_not_a_database(const std::string& function, const std::string& path,
                          const std::vector<std::string>& database_files) {
  struct stat target;
  bool exists = stat(path.c_str(), &target) == 0;
  std::string target_name = canonical_target(path);
  for (const std::string& db : database_files) {
    if (db.empty()) continue;  // in-memory and temporary databases have no file
    for (const char* suffix : {"", "-wal", "-journal", "-shm"}) {
      std::string file = db + suffix;
      struct stat st;
      bool same = exists ? stat(file.c_str(), &st) == 0 && same_file(st, target) : canonical_target(file) == target_name;
      if (same)
        throw Error(fmt::format("nsystrace: {}: refusing to write '{}': it is {} of the database '{}' open on this "
                                "connection. A trace file never replaces a database; choose another name, e.g. "
                                "'trace.json.gz'",
                                function, path, *suffix ? fmt::format("the {} file", suffix + 1) : std::string("the file"),
                                db));
    }
  }
  if (exists && starts_like_sqlite(path))
    throw Error(fmt::format("nsystrace: {}: refusing to write '{}': it is an SQLite database, and a trace file never "
                            "replaces a database; choose another name, e.g. 'trace.json.gz'",
                            function, path));
}

TraceFile::TraceFile(std::string path, std::vector<std::string> database_files, std::string function)
    : path_(std::move(path)), function_(std::move(function)), database_files_(std::move(database_files)) {
  if (path_.empty()) throw Error(fmt::format("nsystrace: {}: the file name is empty", function_));
  check_not_a_database(function_, path_, database_files_);
  int fd = create_exclusive_temp(function_, path_, temp_path_);
  struct stat created;
  file_ = fstat(fd, &created) == 0 ? fdopen(fd, "wb") : nullptr;
  if (file_ == nullptr) {
    int err = errno;
    close(fd);
    unlink(temp_path_.c_str());
    throw Error(fmt::format("nsystrace: {}: cannot create '{}': {}", function_, temp_path_, std::strerror(err)));
  }
  if (gzip_name(path_)) {
    int gz_fd = fcntl(fileno(file_), F_DUPFD_CLOEXEC, 0);  // gzip writes through its own descriptor
    gz_ = gz_fd >= 0 ? gzdopen(gz_fd, "wb1") : nullptr;  // level 1: gzip is for size on disk, speed matters more
    if (gz_ == nullptr) {
      if (gz_fd >= 0) close(gz_fd);
      std::fclose(file_);
      file_ = nullptr;
      unlink(temp_path_.c_str());
      throw Error(fmt::format("nsystrace: {}: cannot start gzip on '{}'", function_, temp_path_));
    }
    gzbuffer(static_cast<gzFile>(gz_), 1 << 20);
  }
  temp_device_ = created.st_dev;
  temp_inode_ = created.st_ino;
}

TraceFile::~TraceFile() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) unlink(temp_path_.c_str());  // the temporary file is ours (created exclusively): never a link
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
        throw Error(fmt::format("nsystrace: {}: writing '{}' failed: {}", function_, temp_path_,
                                err == Z_ERRNO ? std::strerror(errno) : msg));
      }
      data += n;
      size -= n;
    }
  } else if (std::fwrite(data, 1, size, file_) != size) {
    throw Error(fmt::format("nsystrace: {}: writing '{}' failed: {}", function_, temp_path_, std::strerror(errno)));
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
    if (rc != Z_OK) throw Error(fmt::format("nsystrace: {}: finishing gzip '{}' failed", function_, temp_path_));
  }
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0)
    throw Error(fmt::format("nsystrace: {}: closing '{}' failed: {}", function_, temp_path_, std::strerror(errno)));
  check_not_a_database(function_, path_, database_files_);  // nothing may have become one meanwhile
  // What is renamed must still be the file created above, not a link or file put in its place since.
  struct stat temp;
  if (lstat(temp_path_.c_str(), &temp) != 0 || !S_ISREG(temp.st_mode) || temp.st_dev != temp_device_ ||
      temp.st_ino != temp_inode_)
    throw Error(fmt::format("nsystrace: {}: '{}' was replaced or removed while the trace was written; '{}' is left "
                            "as it was",
                            function_, temp_path_, path_));
  // rename() replaces the directory entry `path` itself: a link there is replaced, never followed.
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw Error(fmt::format("nsystrace: {}: cannot rename '{}' to '{}': {}", function_, temp_path_, path_,
                            std::strerror(errno)));
  committed_ = true;
  return static_cast<uint64_t>(temp.st_size);
}

}  // namespace nsystrace
