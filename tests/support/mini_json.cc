#include "tests/support/mini_json.h"

#include <cstring>

namespace testjson {
namespace {

struct Parser {
  const std::string& s;
  size_t i = 0;

  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(std::string("JSON: ") + what + " at offset " + std::to_string(i));
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  void expect(char c) {
    if (i >= s.size() || s[i] != c) fail("unexpected character");
    ++i;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i + 4 > s.size()) fail("short \\u escape");
    uint32_t v = static_cast<uint32_t>(std::stoul(s.substr(i, 4), nullptr, 16));
    i += 4;
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s[i++]);
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i >= s.size()) fail("bad escape");
      char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            expect('\\');
            expect('u');
            uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Value value() {
    ws();
    if (i >= s.size()) fail("unexpected end");
    Value v;
    char c = s[i];
    if (c == '{') {
      v.type = Value::Object;
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') {
        ++i;
        return v;
      }
      while (true) {
        ws();
        std::string key = string();
        ws();
        expect(':');
        Value item = value();
        v.members.emplace_back(std::move(key), std::move(item));
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Value::Array;
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
        return v;
      }
      while (true) {
        v.items.push_back(value());
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Value::String;
      v.text = string();
      return v;
    }
    if (s.compare(i, 4, "null") == 0) { i += 4; return v; }
    if (s.compare(i, 4, "true") == 0) { i += 4; v.type = Value::Bool; v.boolean = true; return v; }
    if (s.compare(i, 5, "false") == 0) { i += 5; v.type = Value::Bool; return v; }
    size_t start = i;
    if (s[i] == '-') ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || std::strchr(".eE+-", s[i]))) ++i;
    if (i == start) fail("unexpected character");
    v.type = Value::Number;
    v.text = s.substr(start, i - start);
    return v;
  }
};

}  // namespace

Value parse(const std::string& text) {
  Parser p{text};
  Value v = p.value();
  p.ws();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

int64_t us_text_to_ns(const std::string& us) {
  size_t i = 0;
  bool neg = !us.empty() && us[0] == '-';
  if (neg) ++i;
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < us.size() && std::isdigit(static_cast<unsigned char>(us[i])); ++i, ++digits) whole = whole * 10 + (us[i] - '0');
  if (digits == 0) throw std::runtime_error("not a plain number: " + us);
  int64_t frac = 0;
  int places = 0;
  if (i < us.size() && us[i] == '.') {
    for (++i; i < us.size() && std::isdigit(static_cast<unsigned char>(us[i])); ++i, ++places) {
      if (places == 3) throw std::runtime_error("more than 3 decimals (sub-ns): " + us);
      frac = frac * 10 + (us[i] - '0');
    }
    if (places == 0) throw std::runtime_error("bad number: " + us);
  }
  if (i != us.size()) throw std::runtime_error("not a plain decimal: " + us);
  for (int p = places; p < 3; ++p) frac *= 10;
  // Built on the side of its sign, so that INT64_MIN (-9223372036854775.808 us) does not overflow.
  return neg ? -(whole * 1000) - frac : whole * 1000 + frac;
}

}  // namespace testjson
