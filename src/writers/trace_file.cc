#include "src/writers/trace_file.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>

#include "src/sqlite/statement.h"
#include "src/util/worker_pool.h"

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

// One chunk of the text and its deflated form. The producer fills `input`; then exactly one thread (a worker, or
// the producer in run_one() or inline) deflates it, and the producer collects it once `done` says so (under the
// stream's mutex, which also publishes the worker's writes).
struct GzipChunk {
  std::string dictionary;  // the last 32 KB of the text before this chunk (empty for the first)
  std::string input;
  bool last = false;
  std::string output;  // raw deflate blocks, continuing the stream
  uint32_t crc = 0;    // crc32 of input
  std::exception_ptr error;
  bool done = false;
};

namespace {
constexpr size_t kDeflateWindow = 32768;
// Past a few dozen workers deflate outruns any conversion; the cap also bounds the backlog's memory (2 chunks a
// worker) when nsystrace_option('threads') is set high.
constexpr int kMaxGzipWorkers = 31;

struct DeflateEnd {
  z_stream* z;
  ~DeflateEnd() { deflateEnd(z); }
};

// Deflates one chunk; its bytes depend on the chunk alone (dictionary, input, last, level), never on the thread or
// on the other chunks' timing. A sync flush ends a chunk on a byte boundary without ending the stream, so the
// next chunk's blocks follow it directly.
void deflate_chunk(GzipChunk& c, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, -15 /* raw deflate: the gzip wrapper is ours */, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    throw std::bad_alloc();
  DeflateEnd end{&z};
  if (!c.dictionary.empty() &&
      deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(c.dictionary.data()),
                           static_cast<uInt>(c.dictionary.size())) != Z_OK)
    throw std::runtime_error("deflateSetDictionary failed");
  c.output.resize(deflateBound(&z, static_cast<uLong>(c.input.size())) + 64);  // + the sync flush's marker
  z.next_in = reinterpret_cast<Bytef*>(c.input.data());
  z.avail_in = static_cast<uInt>(c.input.size());
  z.next_out = reinterpret_cast<Bytef*>(c.output.data());
  z.avail_out = static_cast<uInt>(c.output.size());
  const int flush = c.last ? Z_FINISH : Z_SYNC_FLUSH;
  for (;;) {
    if (z.avail_out == 0) {  // not expected (deflateBound), but never cut short
      size_t used = c.output.size();
      c.output.resize(used * 2);
      z.next_out = reinterpret_cast<Bytef*>(c.output.data() + used);
      z.avail_out = static_cast<uInt>(c.output.size() - used);
    }
    int rc = deflate(&z, flush);
    if (rc == Z_STREAM_END) break;                                    // Z_FINISH: the final block is out
    if (rc == Z_OK && flush == Z_SYNC_FLUSH && z.avail_out != 0) break;  // all the input taken and flushed
    if (rc != Z_OK) throw std::runtime_error(fmt::format("deflate returned {}", rc));
  }
  c.output.resize(c.output.size() - z.avail_out);
  c.crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(c.input.data()), c.input.size()));
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
}  // namespace

// The gzip member of a .gz trace (see trace_file.h): cuts the text into chunks, has them deflated (on workers, or
// inline with one thread) and hands their output to `sink` in the text's order, with the gzip header and trailer.
class GzipStream {
 public:
  using Sink = std::function<void(const char*, size_t)>;
  // failure: the start of the message of a chunk that could not be deflated (it names the file).
  GzipStream(GzipSettings settings, int threads, Sink sink, std::string failure)
      : settings_(settings),
        workers_(std::clamp(threads - 1, 0, kMaxGzipWorkers)),
        sink_(std::move(sink)),
        failure_(std::move(failure)) {
    if (settings_.chunk_bytes == 0) settings_.chunk_bytes = 1;
    // A bounded backlog: two chunks per worker in flight (one being deflated, one queued) and the one being
    // collected, so memory stays a few MB whatever the trace's size.
    max_in_flight_ = static_cast<size_t>(2 * workers_ + 2);
    filling_ = take_chunk();
  }
  // Stops the workers (a chunk being deflated is finished, the queued ones dropped) before the chunks go.
  ~GzipStream() { pool_.reset(); }

  void write(const char* data, size_t size) {
    check_usable();
    try {
      while (size > 0) {
        size_t n = std::min(size, settings_.chunk_bytes - filling_->input.size());
        filling_->input.append(data, n);
        data += n;
        size -= n;
        total_ += n;
        if (filling_->input.size() == settings_.chunk_bytes) submit(false);
      }
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

  // The rest of the text as the last chunk, every chunk written, then the trailer.
  void finish() {
    check_usable();
    try {
      submit(true);
      collect(true);
      std::string trailer;
      put_le32(trailer, crc_);
      put_le32(trailer, static_cast<uint32_t>(total_));  // ISIZE: the length modulo 2^32, as gzip defines it
      sink_(trailer.data(), trailer.size());
    } catch (...) {
      failed_ = true;
      throw;
    }
    pool_.reset();
  }

 private:
  std::unique_ptr<GzipChunk> take_chunk() {
    std::unique_ptr<GzipChunk> c;
    if (!spare_.empty()) {
      c = std::move(spare_.back());
      spare_.pop_back();
    } else {
      c = std::make_unique<GzipChunk>();
      c->input.reserve(settings_.chunk_bytes);
    }
    c->input.clear();
    c->dictionary.clear();
    c->last = false;
    c->done = false;
    c->error = nullptr;
    return c;
  }

  void submit(bool last) {
    std::unique_ptr<GzipChunk> c = std::move(filling_);
    c->last = last;
    if (!last) {  // the next chunk is primed with the end of this one
      filling_ = take_chunk();
      size_t keep = std::min(c->input.size(), kDeflateWindow);
      filling_->dictionary.assign(c->input, c->input.size() - keep, keep);
    }
    if (workers_ > 0 && !pool_) {
      pool_ = std::make_unique<WorkerPool>(workers_);  // only once a trace outgrows its first chunk
      if (pool_->threads() == 0) {  // the system would not start any: deflate inline
        pool_.reset();
        workers_ = 0;
      }
    }
    GzipChunk* raw = c.get();
    in_flight_.push_back(std::move(c));
    if (!pool_) {
      run(*raw);
    } else {
      pool_->submit([this, raw] { run(*raw); });
    }
    collect(false);
    while (in_flight_.size() > max_in_flight_) {  // the workers are behind: help, or wait for the oldest
      if (!pool_->run_one()) wait_for_oldest();
      collect(false);
    }
  }

  void run(GzipChunk& c) {
    try {
      deflate_chunk(c, settings_.level);
    } catch (...) {
      c.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      c.done = true;
    }
    done_.notify_all();
  }

  bool oldest_done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_flight_.front()->done;
  }

  void wait_for_oldest() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return in_flight_.front()->done; });
  }

  // Writes the deflated chunks at the head of the line, in order; with `all`, every chunk, deflating queued ones
  // on this thread rather than waiting.
  void collect(bool all) {
    while (!in_flight_.empty()) {
      if (!oldest_done()) {
        if (!all) return;
        if (!pool_ || !pool_->run_one()) wait_for_oldest();
        continue;
      }
      std::unique_ptr<GzipChunk> c = std::move(in_flight_.front());
      in_flight_.pop_front();
      if (c->error) {
        try {
          std::rethrow_exception(c->error);
        } catch (const std::bad_alloc&) {
          throw;
        } catch (const std::exception& e) {
          throw Error(failure_ + e.what());
        }
      }
      if (!header_written_) {
        // ID1 ID2, CM = deflate, no flags, MTIME 0 (a trace's bytes depend on its rows only), XFL as zlib sets it,
        // OS = Unix.
        const char header[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0,
                                 static_cast<char>(settings_.level == 9 ? 2 : settings_.level == 1 ? 4 : 0), 3};
        sink_(header, sizeof header);
        header_written_ = true;
      }
      sink_(c->output.data(), c->output.size());
      crc_ = static_cast<uint32_t>(crc32_combine(crc_, c->crc, static_cast<z_off_t>(c->input.size())));
      spare_.push_back(std::move(c));
    }
  }

  // After a failure (a write, a chunk, memory) the stream may have lost a chunk: it is never continued into a file
  // that looks whole.
  void check_usable() const {
    if (failed_) throw Error(failure_ + "an earlier chunk or write failed");
  }

  GzipSettings settings_;
  int workers_;
  Sink sink_;
  std::string failure_;
  size_t max_in_flight_ = 0;
  std::unique_ptr<GzipChunk> filling_;
  std::deque<std::unique_ptr<GzipChunk>> in_flight_;  // submitted, in the text's order
  std::vector<std::unique_ptr<GzipChunk>> spare_;     // written: their buffers are reused
  uint64_t total_ = 0;
  uint32_t crc_ = 0;  // crc32 of the chunks written so far
  bool header_written_ = false, failed_ = false;
  std::mutex mutex_;
  std::condition_variable done_;
  std::unique_ptr<WorkerPool> pool_;  // last: destroyed first, while the chunks and the mutex its tasks use live
};

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

TraceFile::TraceFile(std::string path, std::vector<std::string> database_files, std::string function, int threads,
                     GzipSettings gzip)
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
    try {
      gzip_ = std::make_unique<GzipStream>(gzip, threads, [this](const char* p, size_t n) { write_out(p, n); },
                                           fmt::format("nsystrace: {}: compressing '{}' failed: ", function_, temp_path_));
    } catch (...) {
      std::fclose(file_);
      file_ = nullptr;
      unlink(temp_path_.c_str());
      throw;
    }
  }
  temp_device_ = created.st_dev;
  temp_inode_ = created.st_ino;
}

TraceFile::~TraceFile() {
  gzip_.reset();  // its threads are joined before the file they write to is closed and removed
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) unlink(temp_path_.c_str());  // the temporary file is ours (created exclusively): never a link
}

void TraceFile::write(const char* data, size_t size) {
  if (size == 0) return;
  if (gzip_) gzip_->write(data, size);
  else write_out(data, size);
}

void TraceFile::write_out(const char* data, size_t size) {
  if (std::fwrite(data, 1, size, file_) != size)
    throw Error(fmt::format("nsystrace: {}: writing '{}' failed: {}", function_, temp_path_, std::strerror(errno)));
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
  int fd = fileno(file_);
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
  if (gzip_) {
    gzip_->finish();
    gzip_.reset();
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
