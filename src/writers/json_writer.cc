#include "src/writers/json_writer.h"

#include <cctype>
#include <algorithm>
#include <cmath>
#include <new>
#include <sys/mman.h>

#include "src/util/mapped_array.h"
#include "src/sqlite/statement.h"

namespace nsystrace {

namespace {
// A mapping starts with one header page-aligned block holding its size, so free_released() can unmap it.
constexpr size_t kHeader = 64;
}  // namespace

OutputBuffer::~OutputBuffer() {
  if (data_ != nullptr) munmap(data_ - kHeader, mapping_size_);
}

void OutputBuffer::grow(size_t extra) {
  if (drain_ && size_ >= chunk_) {
    drain_now();
    if (size_ + extra <= capacity_) return;
  }
  size_t need = size_ + extra;
  if (need > limit_) throw Error(limit_message_);
  size_t cap = capacity_ < 65536 ? 65536 : capacity_ + capacity_ / 2;
  if (cap < need) cap = need;
  size_t mapping = whole_pages(cap + kHeader);
  void* p = resize_mapping(data_ == nullptr ? nullptr : data_ - kHeader, mapping_size_, mapping);
  *static_cast<size_t*>(p) = mapping;
  data_ = static_cast<char*>(p) + kHeader;
  mapping_size_ = mapping;
  capacity_ = std::min(mapping - kHeader, limit_);  // so that growing past the limit comes back here
}

void OutputBuffer::free_released(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  munmap(base, *reinterpret_cast<size_t*>(base));
}

void OutputBuffer::drain_now() {
  if (size_ == 0) return;
  drain_(data_, size_);
  drained_ += size_;
  size_ = 0;
}

char* OutputBuffer::release(size_t* size) {
  if (data_ == nullptr) grow(1);  // always hand out a mapping, even for an empty text
  char* p = data_;
  *size = size_;
  data_ = nullptr;
  size_ = capacity_ = mapping_size_ = 0;
  return p;
}

void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out.append("null");
    return;
  }
  char tmp[40];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, static_cast<size_t>(r.ptr - tmp));
}

size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  unsigned char c = p[0];
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;  // continuation byte, overlong lead (C0, C1) or beyond U+10FFFF (F5..FF)
  }
  if (static_cast<size_t>(end - p) < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;  // overlong / too big
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                                        // UTF-16 surrogate
  return n;
}

JsonObject& JsonObject::triple(std::string_view key, int64_t a, int64_t b, int64_t c) {
  key_(key);
  out_.push_back('[');
  append_int(out_, a);
  out_.push_back(',');
  append_int(out_, b);
  out_.push_back(',');
  append_int(out_, c);
  out_.push_back(']');
  return *this;
}

namespace {

// A small recursive-descent validator (depth-limited), used for user-supplied args.
struct Validator {
  const char* p;
  const char* end;
  int depth = 0;

  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, word, n) != 0) return false;
    p += n;
    return true;
  }
  bool string() {
    if (p >= end || *p != '"') return false;
    ++p;
    while (p < end) {
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == '"') {
        ++p;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++p;
        if (p >= end) return false;
        char e = *p;
        if (e == 'u') {
          for (int i = 0; i < 4; ++i) {
            ++p;
            if (p >= end || !std::isxdigit(static_cast<unsigned char>(*p))) return false;
          }
        } else if (std::strchr("\"\\/bfnrt", e) == nullptr || e == '\0') {
          return false;
        }
        ++p;
      } else if (c >= 0x80) {
        size_t n = utf8_sequence_length(reinterpret_cast<const unsigned char*>(p),
                                        reinterpret_cast<const unsigned char*>(end));
        if (n == 0) return false;
        p += n;
      } else {
        ++p;
      }
    }
    return false;
  }
  bool digits() {
    const char* s = p;
    while (p < end && *p >= '0' && *p <= '9') ++p;
    return p > s;
  }
  bool number() {
    if (p < end && *p == '-') ++p;
    if (p < end && *p == '0') {
      ++p;
    } else if (!digits()) {
      return false;
    }
    if (p < end && *p == '.') {
      ++p;
      if (!digits()) return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (!digits()) return false;
    }
    return true;
  }
  bool value() {
    if (++depth > 200) return false;
    ws();
    bool ok;
    if (p >= end) return false;
    switch (*p) {
      case '{': ok = container('}', true); break;
      case '[': ok = container(']', false); break;
      case '"': ok = string(); break;
      case 't': ok = literal("true"); break;
      case 'f': ok = literal("false"); break;
      case 'n': ok = literal("null"); break;
      default: ok = number();
    }
    --depth;
    ws();
    return ok;
  }
  bool container(char close, bool object) {
    ++p;
    ws();
    if (p < end && *p == close) {
      ++p;
      return true;
    }
    for (;;) {
      if (object) {
        ws();
        if (!string()) return false;
        ws();
        if (p >= end || *p != ':') return false;
        ++p;
      }
      if (!value()) return false;
      if (p < end && *p == ',') {
        ++p;
        continue;
      }
      if (p < end && *p == close) {
        ++p;
        return true;
      }
      return false;
    }
  }
};

}  // namespace

bool is_valid_json(std::string_view s) {
  Validator v{s.data(), s.data() + s.size()};
  return v.value() && v.p == v.end;
}

}  // namespace nsystrace
