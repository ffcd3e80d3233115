// Perfetto (and so ui.perfetto.dev) drops every event with a negative timestamp, and nsys records a few before the
// session start. Every writer draws such an event at 0, ending where it ended (or at 0), and keeps its recorded
// times in its args (recorded_ts_ns, recorded_dur_ns): one rule, so both formats say the same thing.
#pragma once
#include <algorithm>
#include <cstdint>

namespace nsystrace {

struct ViewerTime {
  int64_t ts, dur;
  bool clamped;  // the event was recorded before 0
};

inline ViewerTime viewer_time(int64_t ts, bool has_dur, int64_t dur) {
  if (ts >= 0) return ViewerTime{ts, dur, false};
  return ViewerTime{0, has_dur ? std::max<int64_t>(0, ts + dur) : 0, true};  // ts < 0 <= dur: no overflow
}

}  // namespace nsystrace
