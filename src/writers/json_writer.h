// JSON text generation: a growable output buffer that can hand its memory to SQLite without a copy or drain to
// a stream, string escaping that always yields valid JSON (invalid UTF-8 becomes U+FFFD), and timestamps written
// exactly: integer nanoseconds as decimal microseconds, never through a double.
#pragma once
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace nsystrace {

class OutputBuffer {
 public:
  // Receives full chunks when the buffer is a window over a stream (file output). Unset: everything is kept.
  using Drain = std::function<void(const char* data, size_t size)>;

  OutputBuffer() = default;
  ~OutputBuffer();
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  void set_drain(Drain drain, size_t chunk) { drain_ = std::move(drain); chunk_ = chunk; }
  // Largest size kept in memory without a drain; growing past it throws Error(message).
  void set_limit(size_t limit, std::string message) { limit_ = limit; limit_message_ = std::move(message); }

  void append(const char* p, size_t n) {
    if (size_ + n > capacity_) grow(n);
    std::memcpy(data_ + size_, p, n);
    size_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void push_back(char c) {
    if (size_ == capacity_) grow(1);
    data_[size_++] = c;
  }
  // Drains what is buffered when a drain is set and a chunk is full.
  void maybe_drain() {
    if (drain_ && size_ >= chunk_) drain_now();
  }
  void drain_now();
  size_t size() const { return size_; }
  uint64_t total_written() const { return drained_ + size_; }
  std::string_view view() const { return {data_, size_}; }
  // Gives up the memory: free it with free_released(). The buffer is empty afterwards.
  char* release(size_t* size);
  static void free_released(void* data);

 private:
  void grow(size_t extra);
  // The text lives in an anonymous mapping grown with mremap(): growing never copies, and pages are touched
  // once, so a 1 GB trace costs 1 GB of memory, not the 2-3x a copying realloc() costs at its peak.
  char* data_ = nullptr;
  size_t mapping_size_ = 0;
  size_t size_ = 0, capacity_ = 0;
  Drain drain_;
  size_t chunk_ = 0;
  uint64_t drained_ = 0;
  size_t limit_ = SIZE_MAX;
  std::string limit_message_;
};

template <class Out>
void append_int(Out& out, int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, static_cast<size_t>(r.ptr - tmp));
}

// 1234567891 ns -> "1234567.891"; -1878291120 -> "-1878291.12"; 5000 -> "5". Exact for every int64.
template <class Out>
void append_ns_as_us(Out& out, int64_t ns) {
  char tmp[32];
  char* p = tmp;
  uint64_t a = static_cast<uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    a = ~a + 1;  // magnitude, also for INT64_MIN
  }
  p = std::to_chars(p, tmp + sizeof tmp, a / 1000).ptr;
  unsigned frac = static_cast<unsigned>(a % 1000);
  if (frac != 0) {
    *p++ = '.';
    *p++ = static_cast<char>('0' + frac / 100);
    frac %= 100;
    if (frac != 0) {
      *p++ = static_cast<char>('0' + frac / 10);
      frac %= 10;
      if (frac != 0) *p++ = static_cast<char>('0' + frac);
    }
  }
  out.append(tmp, static_cast<size_t>(p - tmp));
}

// A finite double in shortest round-trip form; NaN and infinities (not JSON) become null.
void append_double(std::string& out, double v);

// Length of the valid UTF-8 sequence at p (1..4), or 0 when the bytes there are not valid UTF-8.
size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end);

// Appends s as a quoted JSON string.
template <class Out>
void append_json_string(Out& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  auto* p = reinterpret_cast<const unsigned char*>(s.data());
  auto* end = p + s.size();
  const unsigned char* run = p;  // start of a stretch copied verbatim
  while (p < end) {
    unsigned char c = *p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      size_t n = utf8_sequence_length(p, end);
      if (n != 0) {
        p += n;
        continue;
      }
    }
    out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
    switch (c) {
      case '"': out.append("\\\"", 2); break;
      case '\\': out.append("\\\\", 2); break;
      case '\n': out.append("\\n", 2); break;
      case '\t': out.append("\\t", 2); break;
      case '\r': out.append("\\r", 2); break;
      default:
        if (c < 0x20) {
          char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          out.append(esc, 6);
        } else {
          out.append("\\ufffd", 6);  // a byte that does not start valid UTF-8
        }
    }
    ++p;
    run = p;
  }
  out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
  out.push_back('"');
}

// Builds one JSON object into a std::string: {"k":v,...}. Keys are escaped like values: some come from the profile
// (export metadata names) or from users (explicit-form kinds).
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_.assign("{"); }
  JsonObject& integer(std::string_view key, int64_t v) { return key_(key), append_int(out_, v), *this; }
  JsonObject& real(std::string_view key, double v) { return key_(key), append_double(out_, v), *this; }
  JsonObject& string(std::string_view key, std::string_view v) {
    return key_(key), append_json_string(out_, v), *this;
  }
  JsonObject& boolean(std::string_view key, bool v) { return key_(key), out_.append(v ? "true" : "false"), *this; }
  JsonObject& raw(std::string_view key, std::string_view json) { return key_(key), out_.append(json), *this; }
  JsonObject& triple(std::string_view key, int64_t a, int64_t b, int64_t c);
  void close() { out_.push_back('}'); }

 private:
  void key_(std::string_view key) {
    if (!first_) out_.push_back(',');
    first_ = false;
    append_json_string(out_, key);
    out_.push_back(':');
  }
  std::string& out_;
  bool first_ = true;
};

// True when s is one syntactically valid JSON value (objects, arrays, strings, numbers, literals), nothing else.
bool is_valid_json(std::string_view s);

}  // namespace nsystrace
