// Typed args of one event. Each reader states an event's args once, in the order they are shown; each consumer
// encodes them its own way: JSON object text (trace_events.args, Chrome JSON), Perfetto debug annotations (ints
// stay ints). No reader knows which format it feeds.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/json_writer.h"

namespace nsystrace {

class ArgsSink {
 public:
  virtual ~ArgsSink() = default;
  virtual ArgsSink& integer(std::string_view key, int64_t v) = 0;
  virtual ArgsSink& unsigned_integer(std::string_view key, uint64_t v) = 0;  // above INT64_MAX (NVTX uint64 payloads)
  virtual ArgsSink& real(std::string_view key, double v) = 0;
  virtual ArgsSink& string(std::string_view key, std::string_view v) = 0;
  virtual ArgsSink& boolean(std::string_view key, bool v) = 0;
  virtual ArgsSink& null(std::string_view key) = 0;
  virtual ArgsSink& triple(std::string_view key, int64_t a, int64_t b, int64_t c) = 0;  // [a, b, c] (grid, block)
};

// Args as one JSON object, {"key":value,...}, appended to a string.
class JsonArgs final : public ArgsSink {
 public:
  explicit JsonArgs(std::string& out) : o_(out) {}
  ArgsSink& integer(std::string_view key, int64_t v) override { return o_.integer(key, v), *this; }
  ArgsSink& unsigned_integer(std::string_view key, uint64_t v) override {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    return o_.raw(key, std::string_view(tmp, static_cast<size_t>(r.ptr - tmp))), *this;
  }
  ArgsSink& real(std::string_view key, double v) override { return o_.real(key, v), *this; }
  ArgsSink& string(std::string_view key, std::string_view v) override { return o_.string(key, v), *this; }
  ArgsSink& boolean(std::string_view key, bool v) override { return o_.boolean(key, v), *this; }
  ArgsSink& null(std::string_view key) override { return o_.raw(key, "null"), *this; }
  ArgsSink& triple(std::string_view key, int64_t a, int64_t b, int64_t c) override {
    return o_.triple(key, a, b, c), *this;
  }
  void close() { o_.close(); }

 private:
  JsonObject o_;
};

}  // namespace nsystrace
