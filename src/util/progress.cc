#include "src/util/progress.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

namespace nsystrace {

Progress::Progress(bool enabled, std::string phase, std::string unit, uint64_t total, Sink sink)
    : enabled_(enabled), phase_(std::move(phase)), unit_(std::move(unit)), total_(total), sink_(std::move(sink)) {
  started_ = last_line_ = Clock::now();
}

Progress::Sink Progress::stderr_sink() {
  bool terminal = isatty(2) != 0;
  return [terminal](const std::string& line, bool last) {
    if (terminal) {  // rewrite the same line: "\r", clear to its end, the line without its newline until the last
      std::string shown = "\r\033[K" + (last ? line : line.substr(0, line.size() - 1));
      std::fputs(shown.c_str(), stderr);
    } else {
      std::fputs(line.c_str(), stderr);
    }
    std::fflush(stderr);
  };
}

std::string Progress::line(uint64_t done, double elapsed, const std::string& extra, bool last) const {
  std::string out = fmt::format("nsystrace: {}: ", phase_);
  if (last) {
    out += fmt::format("done, {} {} in {:.1f} s", done, unit_, elapsed);
  } else if (total_ > 0) {
    // Totals can be estimates (a filtered scan reads fewer rows than its tables hold): never past 99% before the end.
    double fraction = std::min(0.99, static_cast<double>(done) / static_cast<double>(total_));
    constexpr int kBar = 20;
    int filled = static_cast<int>(fraction * kBar);
    out += "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kBar - filled), '.') + "] ";
    out += fmt::format("{} of {} {} ({:.0f}%), {:.1f} s", done, total_, unit_, 100 * fraction, elapsed);
    if (done > 0) out += fmt::format(", about {:.0f} s left", elapsed * (1 - fraction) / fraction);
  } else {
    out += fmt::format("{} {}, {:.1f} s", done, unit_, elapsed);
  }
  if (!extra.empty()) out += ", " + extra;
  return out + "\n";
}

void Progress::maybe_report(uint64_t done, const std::function<std::string()>& extra, bool last) {
  Clock::time_point now = Clock::now();
  if (last ? !printed_ && !always_end_ : now - last_line_ < std::chrono::seconds(2)) return;  // quick phases say nothing
  last_line_ = now;
  printed_ = true;
  sink_(line(done, std::chrono::duration<double>(now - started_).count(), extra ? extra() : std::string(), last),
        last);
}

}  // namespace nsystrace
