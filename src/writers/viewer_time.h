// Where a viewer is given an event. Perfetto (and so ui.perfetto.dev) drops every event with a negative timestamp,
// and nsys records a few before the session start; and Perfetto reads the JSON's microseconds as doubles and
// multiplies them by 1000, which for a time within microseconds of 2^63 ns rounds past 2^63 and wraps to a negative
// time (dropped too). So a viewer is given times in [0, kLatestViewerTs]: an event outside it is drawn inside it,
// starting and ending where it did as far as the window allows, and keeps its recorded times in its args
// (recorded_ts_ns, recorded_dur_ns). One rule in every writer, so both formats say the same thing.
#pragma once
#include <algorithm>
#include <cstdint>

namespace nsystrace {

// 2^63 ns floored to a whole millisecond (about 292 years): Perfetto's conversion of any time and duration up to
// here, rounding included (a few microseconds at most), stays below 2^63.
constexpr int64_t kLatestViewerTs = INT64_MAX / 1000000 * 1000000;

struct ViewerTime {
  int64_t ts, dur;
  bool before_zero;    // recorded before 0
  bool after_latest;   // starting or ending after kLatestViewerTs
  bool moved() const { return before_zero || after_latest; }
};

// latest: the window's end on the writer's clock; lower than kLatestViewerTs where the trace's clock reads more than 0
// at time 0 (a Perfetto trace on wall-clock time: the session start plus the time must stay within 2^63 too).
inline ViewerTime viewer_time(int64_t ts, bool has_dur, int64_t dur, int64_t latest = kLatestViewerTs) {
  // (A negative duration, which only the explicit form can be given, is left to the writer as it was.)
  if (ts >= 0 && ts <= latest && (!has_dur || dur <= latest - ts)) return ViewerTime{ts, dur, false, false};
  int64_t end = ts;
  if (has_dur && __builtin_add_overflow(ts, dur, &end)) end = dur > 0 ? INT64_MAX : INT64_MIN;
  int64_t start = std::clamp<int64_t>(ts, 0, latest);
  int64_t stop = std::clamp<int64_t>(end, start, latest);
  return ViewerTime{start, has_dur ? stop - start : 0, ts < 0, ts > latest || end > latest};
}

}  // namespace nsystrace
