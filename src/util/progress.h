// Progress of a long phase (computing the NVTX projection, writing a trace) on stderr, for the user watching a
// 3 GB profile convert: done/total, percent, time so far and an estimate of the time left. Silent for a phase that
// ends within its first 2 s; then a line every 2 s, and one when it ends. On a terminal the lines replace each
// other (a bar that fills); elsewhere (a log) each is kept.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace nsystrace {

class Progress {
 public:
  using Sink = std::function<void(const std::string& line, bool last)>;
  using Clock = std::chrono::steady_clock;
  // total 0: unknown (then only what is done and the time so far). A disabled Progress costs a branch per update.
  Progress(bool enabled, std::string phase, std::string unit, uint64_t total, Sink sink = stderr_sink());
  bool enabled() const { return enabled_; }
  void set_total(uint64_t total) { total_ = total; }
  // Say when the phase ends even if it was quick (the user asked for progress by name, not by default).
  void always_report_end() { always_end_ = true; }
  // `done` so far; `extra`: more to say (e.g. "41 MB of JSON"), asked for only when a line is printed.
  void update(uint64_t done, const std::function<std::string()>& extra = nullptr) {
    if (enabled_ && ++calls_ % 1024 == 0) maybe_report(done, extra, false);
  }
  void finish(uint64_t done, const std::function<std::string()>& extra = nullptr) {
    if (enabled_) maybe_report(done, extra, true);
  }
  // The line for `done` after `elapsed` (public for the tests).
  std::string line(uint64_t done, double elapsed_s, const std::string& extra, bool last) const;
  static Sink stderr_sink();

 private:
  void maybe_report(uint64_t done, const std::function<std::string()>& extra, bool last);

  bool enabled_;
  std::string phase_, unit_;
  uint64_t total_;
  Sink sink_;
  Clock::time_point started_, last_line_;
  bool printed_ = false, always_end_ = false;
  uint64_t calls_ = 0;
};

}  // namespace nsystrace
