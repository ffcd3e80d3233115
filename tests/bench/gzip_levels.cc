// The CPU cost and size of each gzip level, on TraceFile's own gzip (1 MB chunks), without the conversion: deflates
// a file (a trace written as plain JSON) in 1 MB writes, as the file functions hand it over.
//
//   g++ -O2 -std=c++17 -I. tests/bench/gzip_levels.cc build/libnsystrace_static.a -lsqlite3 -lz -lpthread -o /tmp/gzip_levels
//   /tmp/gzip_levels TRACE.json LEVEL THREADS     -> "LEVEL cpu_seconds bytes" (CPU of every thread: clock())
//
// Writes /tmp/gzip_levels.out.gz.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include "src/writers/trace_file.h"
int main(int argc, char** argv) {
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss; ss << in.rdbuf(); std::string text = ss.str();
  int level = std::stoi(argv[2]);
  std::remove("/tmp/gzip_levels.out.gz");
  clock_t t0 = clock();
  nsystrace::TraceFile f("/tmp/gzip_levels.out.gz", {}, "bench", std::stoi(argv[3]), nsystrace::GzipSettings{level, size_t{1} << 20});
  for (size_t at = 0; at < text.size(); at += 1 << 20) f.write(text.data() + at, std::min<size_t>(1 << 20, text.size() - at));
  uint64_t bytes = f.commit();
  printf("%d %.3f %llu\n", level, double(clock() - t0) / CLOCKS_PER_SEC, (unsigned long long)bytes);
}
