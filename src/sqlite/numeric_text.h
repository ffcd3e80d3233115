// SQLite's numeric affinity for a TEXT value, computed here instead of by sqlite3_value_numeric_type().
//
// Why: sqlite3_value_numeric_type() converts the value in place, so it may only be called on a value we own, and
// the only way to own a copy is sqlite3_value_dup(). From SQLite 3.53.0 sqlite3_value_numeric_type() takes the
// value's connection mutex, and a value from sqlite3_value_dup() has no connection: the call dereferences a null
// pointer (SIGSEGV in every host on 3.53). So the extension never asks SQLite to convert a value: it reads the
// text, decides here what the conversion would give, and takes a REAL's value from sqlite3_value_double(), which
// converts nothing.
#pragma once
#include <cstdint>
#include <string_view>

namespace nsystrace {

// What numeric affinity (a comparison with an INTEGER column, sqlite3_value_numeric_type) makes of a text.
struct NumericText {
  enum class Kind {
    text,     // not a well-formed number: the value stays TEXT
    integer,  // an integer literal that fits 64 bits: INTEGER `integer`
    real,     // any other number (a decimal point, an exponent, or an integer past 64 bits): REAL
  };
  Kind kind = Kind::text;
  int64_t integer = 0;
};

// SQLite's rule (sqlite3AtoF, alsoAnInt): less leading and trailing white space (space, \t \n \v \f \r), the text
// is [+-]digits[.[digits]][(e|E)[+-]digits] or [+-].digits[(e|E)[+-]digits]; nothing else (no hex, no embedded NUL,
// no "inf"). An integer literal that does not fit 64 bits is a REAL.
NumericText numeric_affinity(std::string_view text);

}  // namespace nsystrace
