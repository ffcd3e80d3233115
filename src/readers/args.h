// Typed args of one event. Each reader states an event's args once, in the order they are shown; each consumer
// encodes them its own way: JSON object text (trace_events.args, Chrome JSON), Perfetto debug annotations (ints
// stay ints). No reader knows which format it feeds.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/writers/json_writer.h"

namespace nsystrace {

// One frame of a call stack as nsys recorded it (SAMPLING_CALLCHAINS, OSRT_CALLCHAINS, CUDA_CALLCHAINS).
struct StackFrame {
  std::string_view symbol, module;
  bool kernel = false;      // kernelMode
  bool unresolved = false;  // the symbol is an address nsys could not resolve
};

// A call stack, innermost frame first (stackDepth order). missing_depths: depths below the deepest stored one that
// the export does not hold (a damaged stack); its frames are never invented.
struct Stack {
  std::vector<StackFrame> frames;
  int64_t missing_depths = 0;
};
// The arg that counts a stack's missing depths, beside the stack's own arg ("stack" -> "stack_missing_depths").
inline std::string missing_depths_key(std::string_view stack_key) {
  return std::string(stack_key) + "_missing_depths";
}
// What a CPU sample without any frame is called (its trace_events name; its one frame where a format needs one).
constexpr const char* kNoStack = "[no stack]";

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
  // A call stack: [{"symbol", "module", "kernel": true, "unresolved": true}, ...], innermost first. A format with
  // call stacks of its own (Perfetto) draws it as one instead.
  virtual ArgsSink& stack(std::string_view key, const Stack& stack) = 0;
  // Args recorded by an ArgsRecorder (src/readers/recorded_args.h): true when this sink took the bytes as they are
  // (another recorder: no decoding and encoding again); false, and the caller replays them call by call.
  virtual bool take_recorded(std::string_view bytes) { return false; }
};

// A sink for the args a consumer does not want: override the ones it does.
class IgnoringArgs : public ArgsSink {
 public:
  ArgsSink& integer(std::string_view, int64_t) override { return *this; }
  ArgsSink& unsigned_integer(std::string_view, uint64_t) override { return *this; }
  ArgsSink& real(std::string_view, double) override { return *this; }
  ArgsSink& string(std::string_view, std::string_view) override { return *this; }
  ArgsSink& boolean(std::string_view, bool) override { return *this; }
  ArgsSink& null(std::string_view) override { return *this; }
  ArgsSink& triple(std::string_view, int64_t, int64_t, int64_t) override { return *this; }
  ArgsSink& stack(std::string_view, const Stack&) override { return *this; }
};

// A stack as a JSON array of frame objects.
inline void append_stack_json(std::string& out, const Stack& stack) {
  out.push_back('[');
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    const StackFrame& f = stack.frames[i];
    out.append(i == 0 ? "{\"symbol\":" : ",{\"symbol\":");
    append_json_string(out, f.symbol);
    out.append(",\"module\":");
    append_json_string(out, f.module);
    if (f.kernel) out.append(",\"kernel\":true");
    if (f.unresolved) out.append(",\"unresolved\":true");
    out.push_back('}');
  }
  out.push_back(']');
}

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
  ArgsSink& stack(std::string_view key, const Stack& stack) override {
    scratch_.clear();
    append_stack_json(scratch_, stack);
    o_.raw(key, scratch_);
    if (stack.missing_depths != 0) o_.integer(missing_depths_key(key), stack.missing_depths);
    return *this;
  }
  void close() { o_.close(); }

 private:
  JsonObject o_;
  std::string scratch_;
};

}  // namespace nsystrace
