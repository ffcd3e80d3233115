// fmt's formatting engine, compiled once for the whole library.
//
// The extension we ship must load where libfmt is not installed, so its fmt comes from the headers. Header-only fmt
// compiles its engine (fmt::vformat and everything it calls) again in every file that formats: 5 s a file at -O3.
// Instead, this file alone defines FMT_HEADER_ONLY and is compiled with -fkeep-inline-functions, so that it emits every
// inline function of fmt; the other files see fmt as a compiled library would declare it and call these.
// CMakeLists.txt first checks that the compiler and the installed fmt allow it (NSYSTRACE_FMT_ONCE); where they do
// not, this file is left out and every file takes fmt header-only.
#define FMT_HEADER_ONLY 1
#include <fmt/format.h>
