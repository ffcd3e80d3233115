// A small JSON parser for tests. Numbers keep their text, so timestamps can be checked digit for digit.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace testjson {

struct Value {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  bool boolean = false;
  std::string text;  // Number: as written; String: decoded
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  const Value* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  const std::string& str(const std::string& key) const {
    static const std::string empty;
    const Value* v = get(key);
    return v ? v->text : empty;
  }
  int64_t integer(const std::string& key) const { return std::stoll(str(key)); }
};

Value parse(const std::string& text);  // throws std::runtime_error with the offset on bad input

// "1234.567" (microseconds) -> 1234567 (ns), exactly; throws if more than 3 decimals or not a plain number.
int64_t us_text_to_ns(const std::string& us);

}  // namespace testjson
