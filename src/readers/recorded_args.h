// A row's args as bytes, to replay later: a reader on another thread records the calls it makes into an ArgsSink,
// and whoever consumes the row replays them into its own sink, which sees exactly the calls the reader made.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/readers/args.h"

namespace nsystrace {

// One operation per arg, then its key and value.
enum class ArgOp : uint8_t { integer, unsigned_integer, real, string, boolean, null, triple, stack };

class ArgsRecorder final : public ArgsSink {
 public:
  explicit ArgsRecorder(std::string& out) : out_(out) {}
  ArgsSink& integer(std::string_view key, int64_t v) override { return op(ArgOp::integer, key).raw(v); }
  ArgsSink& unsigned_integer(std::string_view key, uint64_t v) override {
    return op(ArgOp::unsigned_integer, key).raw(v);
  }
  ArgsSink& real(std::string_view key, double v) override { return op(ArgOp::real, key).raw(v); }
  ArgsSink& string(std::string_view key, std::string_view v) override { return op(ArgOp::string, key).text(v); }
  ArgsSink& boolean(std::string_view key, bool v) override { return op(ArgOp::boolean, key).raw(uint8_t{v}); }
  ArgsSink& null(std::string_view key) override { return op(ArgOp::null, key); }
  ArgsSink& triple(std::string_view key, int64_t a, int64_t b, int64_t c) override {
    return op(ArgOp::triple, key).raw(a).raw(b).raw(c);
  }
  ArgsSink& stack(std::string_view key, const Stack& stack) override {
    op(ArgOp::stack, key).raw(stack.missing_depths).raw(static_cast<uint32_t>(stack.frames.size()));
    for (const StackFrame& f : stack.frames)
      text(f.symbol).text(f.module).raw(static_cast<uint8_t>((f.kernel ? 1 : 0) | (f.unresolved ? 2 : 0)));
    return *this;
  }
  bool take_recorded(std::string_view bytes) override {
    out_.append(bytes.data(), bytes.size());
    return true;
  }

 private:
  template <class T>
  ArgsRecorder& raw(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  ArgsRecorder& text(std::string_view s) {
    raw(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
    return *this;
  }
  ArgsRecorder& op(ArgOp o, std::string_view key) {
    raw(o);
    return text(key);
  }
  std::string& out_;
};

// Makes the calls `bytes` recorded, in order.
inline void replay_args(std::string_view bytes, ArgsSink& sink) {
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  auto raw = [&p](auto& v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
  };
  auto text = [&p, &raw] {
    uint32_t n;
    raw(n);
    std::string_view s(p, n);
    p += n;
    return s;
  };
  while (p < end) {
    ArgOp op;
    raw(op);
    std::string_view key = text();
    switch (op) {
      case ArgOp::integer: {
        int64_t v;
        raw(v);
        sink.integer(key, v);
        break;
      }
      case ArgOp::unsigned_integer: {
        uint64_t v;
        raw(v);
        sink.unsigned_integer(key, v);
        break;
      }
      case ArgOp::real: {
        double v;
        raw(v);
        sink.real(key, v);
        break;
      }
      case ArgOp::string: sink.string(key, text()); break;
      case ArgOp::boolean: {
        uint8_t v;
        raw(v);
        sink.boolean(key, v != 0);
        break;
      }
      case ArgOp::null: sink.null(key); break;
      case ArgOp::triple: {
        int64_t a, b, c;
        raw(a), raw(b), raw(c);
        sink.triple(key, a, b, c);
        break;
      }
      case ArgOp::stack: {
        Stack stack;
        uint32_t frames;
        raw(stack.missing_depths);
        raw(frames);
        stack.frames.resize(frames);
        for (StackFrame& f : stack.frames) {
          f.symbol = text();
          f.module = text();
          uint8_t flags;
          raw(flags);
          f.kernel = (flags & 1) != 0;
          f.unresolved = (flags & 2) != 0;
        }
        sink.stack(key, stack);
        break;
      }
    }
  }
}


}  // namespace nsystrace
