// The union of a set of intervals: its length, and the gaps between its pieces. SQL computes these with a window
// over the intervals in start order (the latest end among the earlier ones), which on a million GPU operations costs
// seconds; here it is one sort of integers and one pass (nsystrace_union_ns and nsystrace_gaps, used by
// sql/gpu_time_breakdown.sql and sql/expert_findings.sql).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nsystrace {

struct Gap {
  int64_t start = 0, end = 0;  // the latest end of the intervals before it; the start of the interval after it
};

// The intervals [start, end) added. One whose end precedes its start counts as the instant at its start (as
// trace_events draws such an event): it covers nothing but can end or begin a gap.
class IntervalUnion {
 public:
  void add(int64_t start, int64_t end) { intervals_.emplace_back(start, end < start ? start : end); }
  size_t size() const { return intervals_.size(); }
  // The length of the union: the time covered by at least one interval (beyond int64 only for a span that is).
  __int128 length();
  // The gaps of positive length at least min_gap between the union's pieces, in time order. Sorts in place.
  std::vector<Gap> gaps(int64_t min_gap);
  // The union as disjoint pieces of positive length, in time order. Sorts in place.
  std::vector<std::pair<int64_t, int64_t>> pieces();

 private:
  void sort();
  std::vector<std::pair<int64_t, int64_t>> intervals_;
  bool sorted_ = false;
};

// How much of an interval a union covers: its pieces with the time covered before each, so that the answer is two
// binary searches. SQL needs a window over the union's intervals and a join for it (nsystrace_covered_ns; the NCCL
// time hidden behind compute in sql/compute_comm_overlap.sql).
class UnionCover {
 public:
  explicit UnionCover(IntervalUnion& cover);
  // The time of [start, end) inside the union; 0 when end <= start (an instant covers nothing).
  __int128 covered(int64_t start, int64_t end) const;

 private:
  __int128 covered_before(int64_t t) const;  // the union's time before t
  std::vector<std::pair<int64_t, int64_t>> pieces_;
  std::vector<__int128> before_;  // before_[i]: the union's time before pieces_[i]
};

// The gaps as a JSON array of [start, end] arrays.
std::string gaps_json(const std::vector<Gap>& gaps);

}  // namespace nsystrace
