#include "src/sqlite/numeric_text.h"

namespace nsystrace {

namespace {

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // sqlite3Isspace
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

NumericText numeric_affinity(std::string_view s) {
  NumericText result;
  size_t i = 0, end = s.size();
  while (i < end && is_space(s[i])) ++i;
  while (end > i && is_space(s[end - 1])) --end;
  bool negative = false;
  if (i < end && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  size_t integer_digits = i;
  while (i < end && is_digit(s[i])) ++i;
  size_t integer_end = i;
  bool has_integer_part = integer_end > integer_digits, has_fraction = false, integer_syntax = true;
  if (i < end && s[i] == '.') {
    integer_syntax = false;
    ++i;
    while (i < end && is_digit(s[i])) {
      ++i;
      has_fraction = true;
    }
  }
  if (!has_integer_part && !has_fraction) return result;  // no digit in the mantissa
  if (i < end && (s[i] == 'e' || s[i] == 'E')) {
    integer_syntax = false;
    ++i;
    if (i < end && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent = i;
    while (i < end && is_digit(s[i])) ++i;
    if (i == exponent) return result;  // "1e", "1e+": only a prefix is a number
  }
  if (i != end) return result;  // text after the number
  result.kind = NumericText::Kind::real;
  if (!integer_syntax) return result;
  // The magnitude in unsigned arithmetic, so that -9223372036854775808 fits and one more does not.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t magnitude = 0;
  for (size_t d = integer_digits; d < integer_end; ++d) {
    uint64_t digit = static_cast<uint64_t>(s[d] - '0');
    if (magnitude > (limit - digit) / 10) return result;  // past 64 bits: a REAL
    magnitude = magnitude * 10 + digit;
  }
  result.kind = NumericText::Kind::integer;
  result.integer = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return result;
}

}  // namespace nsystrace
