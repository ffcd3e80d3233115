#include "src/model/nvtx_projection.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "src/model/export_model.h"
#include "src/readers/prefetched_source.h"
#include "src/util/progress.h"
#include "src/sqlite/statement.h"

namespace nsystrace {
namespace {

// Time order, the longest first at equal starts (the enclosing range before the ranges it encloses).
bool starts_before(const ProjectedRange& x, const ProjectedRange& y) {
  if (x.start != y.start) return x.start < y.start;
  if (x.end != y.end) return x.end > y.end;
  return x.nvtx_rowid < y.nvtx_rowid;
}

// The ranges of one thread, sorted by (start, end descending, rowid), with the running maximum of their ends
// (whether a call lies in any range: a binary search) and, when their nesting asks for it, a max-end segment tree
// (each range's innermost enclosing range in O(log n)).
class ThreadRanges {
 public:
  std::vector<uint32_t> order;  // indices into the range list

  void build(const MappedArray<ProjectedRange>& all) {
    auto by_start = [&](size_t a, size_t b) { return starts_before(all[a], all[b]); };
    // Exports store NVTX rows nearly in time order, and then a thread's list usually needs no sort at all.
    if (!std::is_sorted(order.begin(), order.end(), by_start)) std::sort(order.begin(), order.end(), by_start);
    starts_.resize(order.size());
    ends_.resize(order.size());
    max_end_so_far_.resize(order.size());
    int64_t max_end = INT64_MIN;
    for (size_t i = 0; i < order.size(); ++i) {
      starts_[i] = all[order[i]].start;
      ends_[i] = all[order[i]].end;
      max_end_so_far_[i] = max_end = std::max(max_end, ends_[i]);
    }
  }
  // The range at position p (in sort order): its start and end, kept here so that the sweeps over a thread's
  // ranges walk two arrays rather than the ranges themselves (112 bytes each, far apart).
  int64_t start(size_t p) const { return starts_[p]; }
  int64_t end(size_t p) const { return ends_[p]; }
  void build_tree() {
    size_ = 1;
    while (size_ < order.size()) size_ <<= 1;
    max_end_.assign(2 * size_, INT64_MIN);
    for (size_t i = 0; i < order.size(); ++i) max_end_[size_ + i] = ends_[i];
    for (size_t i = size_ - 1; i >= 1; --i) max_end_[i] = std::max(max_end_[2 * i], max_end_[2 * i + 1]);
  }
  // After build_tree(): the last position p < limit whose range ends at or after `end` (the innermost enclosing
  // range), or -1.
  long last_ending_after(size_t limit, int64_t end) const { return last(1, 0, size_, limit, end); }
  // Number of ranges starting at or before t, galloping out from position h: O(log d) for an answer d positions
  // away.
  size_t started_by_near(int64_t t, size_t h) const {
    const size_t n = starts_.size();
    h = std::min(h, n);
    auto upper = [&](size_t from, size_t to) {  // within [from, to), or to
      return static_cast<size_t>(std::upper_bound(starts_.begin() + from, starts_.begin() + to, t) - starts_.begin());
    };
    if (h < n && starts_[h] <= t) {  // the answer is past h
      size_t bound = 1;
      while (h + bound < n && starts_[h + bound] <= t) bound *= 2;
      return upper(h + bound / 2 + 1, std::min(n, h + bound));
    }
    if (h > 0 && starts_[h - 1] > t) {  // the answer is below h
      const size_t j = h - 1;
      size_t bound = 1;
      while (j >= bound && starts_[j - bound] > t) bound *= 2;
      return upper(j >= bound ? j - bound + 1 : 0, j - bound / 2);
    }
    return h;
  }
  // Whether some range holds [start, end] (starts at or before start, ends at or after end). Asked for calls nearly
  // in time order (by correlation id): the search starts where the previous one ended.
  bool holds(int64_t start, int64_t end) {
    size_t n = started_by_near(start, last_started_by_);
    last_started_by_ = n;
    return n > 0 && max_end_so_far_[n - 1] >= end;
  }

 private:
  long last(size_t node, size_t lo, size_t hi, size_t limit, int64_t end) const {
    if (lo >= limit || max_end_[node] < end) return -1;
    if (hi - lo == 1) return static_cast<long>(lo);
    size_t mid = (lo + hi) / 2;
    long right = last(2 * node + 1, mid, hi, limit, end);
    return right >= 0 ? right : last(2 * node, lo, mid, limit, end);
  }
  std::vector<int64_t> starts_, ends_;
  std::vector<int64_t> max_end_so_far_;  // [i]: the latest end among positions 0..i
  size_t last_started_by_ = 0;  // holds()'s last answer: where its next search starts
  std::vector<int64_t> max_end_;
  size_t size_ = 1;
};

enum OpKind : int { kKernelOp = 0, kMemcpyOp = 1, kMemsetOp = 2, kGraphOp = 3 };

[[noreturn]] void beyond_int64(const ProjectedRange& r, const char* what, int64_t from, int64_t to) {
  throw Error(fmt::format("nsystrace: NVTX projection: the {} of the NVTX range at NVTX_EVENTS rowid {} (GPU work "
                          "from {} to {} ns) is beyond 64-bit nanoseconds: the export's GPU timestamps are corrupt",
                          what, r.nvtx_rowid, from, to));
}

// to - from (to >= from), or an Error naming the range when it does not fit.
int64_t checked_span(const ProjectedRange& r, const char* what, int64_t from, int64_t to) {
  int64_t span;
  if (__builtin_sub_overflow(to, from, &span)) beyond_int64(r, what, from, to);
  return span;
}

// (correlationId, process): CUDA's correlation, unique per process.
struct Key {
  int64_t corr, process;
  bool operator<(const Key& o) const { return corr != o.corr ? corr < o.corr : process < o.process; }
  bool operator==(const Key& o) const { return corr == o.corr && process == o.process; }
  bool operator!=(const Key& o) const { return !(*this == o); }
};

// A CUDA API call that lies inside at least one range of its thread.
struct Call {
  Key key;
  int64_t global_tid;
  int64_t start, end;
  uint32_t group;  // index of its key among the kept calls' keys (set as those are listed)
};

// A GPU operation whose key some kept call has. end >= start: an end before the start is an instant at its start.
struct Op {
  uint32_t group;
  int32_t kind;
  int64_t device, start, end;
};

// An operation as read, before its key is known to matter.
struct KeyedOp {
  Key key;
  Op op;
};

// Runs `work` on a thread of its own. wait() joins it and rethrows its error; destroyed without wait() (this
// thread failed first), it interrupts the statement running on `connection` (the work's) and joins it: no thread
// outlives the projection.
class BackgroundJob {
 public:
  BackgroundJob(sqlite3* connection, std::function<void()> work) : connection_(connection) {
    thread_ = std::thread([this, work = std::move(work)] {
      try {
        work();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~BackgroundJob() {
    if (!thread_.joinable()) return;
    sqlite3_interrupt(connection_);
    thread_.join();
  }
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  void wait() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  sqlite3* connection_;
  std::exception_ptr error_;  // written by the thread, read after the join
  std::thread thread_;
};

// A table's rowids cut into chunks that two threads take, one from the front and one from the back, until they meet:
// each reads as much as its other work leaves it time for. Chunk i is `rowid BETWEEN first(i) AND last(i)`; the
// chunks cover [lowest, INT64_MAX] without a gap or an overlap. Rowids may lie anywhere in int64, so offsets are
// unsigned (the span of two rowids is up to 2^64 - 1) and a first rowid past INT64_MAX is INT64_MAX: the chunks it
// saturates are empty, but for the last one, which ends at INT64_MAX.
class RowidChunks {
 public:
  static constexpr int64_t kChunks = 64;
  RowidChunks(int64_t lowest, int64_t highest) : lowest_(lowest) {
    back_ = highest >= lowest ? kChunks : 0;
    width_ = (static_cast<uint64_t>(highest) - static_cast<uint64_t>(lowest)) / kChunks + 1;  // at most 2^58
  }
  std::optional<int64_t> from_front() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (front_ < back_) return front_++;
    return std::nullopt;
  }
  std::optional<int64_t> from_back() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (front_ < back_) return --back_;
    return std::nullopt;
  }
  int64_t first(int64_t chunk) const {
    const uint64_t offset = static_cast<uint64_t>(chunk) * width_;  // below 2^64: chunk < 64
    const uint64_t room = static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(lowest_);
    return offset > room ? INT64_MAX : static_cast<int64_t>(static_cast<uint64_t>(lowest_) + offset);
  }
  int64_t last(int64_t chunk) const { return chunk + 1 == kChunks ? INT64_MAX : first(chunk + 1) - 1; }

 private:
  std::mutex mutex_;
  int64_t lowest_;
  uint64_t width_;
  int64_t front_ = 0, back_;
};

// The GPU work of one key: what every range holding a call with that key counts, once however many of its calls
// the range holds.
struct Group {
  int64_t gpu_start = INT64_MAX, gpu_end = INT64_MIN;
  unsigned __int128 op_time = 0;  // the sum of its durations: each fits in 64 bits unsigned, the sum may not
  int64_t kernels = 0, memcpys = 0, memsets = 0, graphs = 0;
  uint32_t first_op = 0, op_count = 0;          // ops[first_op, +op_count), sorted by (device, start)
  uint32_t first_device = 0, device_count = 0;  // its extent per device, sorted by device
};
struct GroupDevice {
  int64_t device, gpu_start, gpu_end;
};

// Fenwick tree over ranks 0..n-1 of Nodes that add (sums with signs, min, max); prefix(k) covers ranks < k.
template <class Node>
class Fenwick {
 public:
  explicit Fenwick(size_t n) : tree_(n + 1) {}
  void add(size_t rank, const Node& v) {
    for (size_t i = rank + 1; i < tree_.size(); i += i & (~i + 1)) tree_[i].add(v);
  }
  Node prefix(size_t count) const {
    Node acc;
    for (size_t i = count; i > 0; i -= i & (~i + 1)) acc.add(tree_[i]);
    return acc;
  }

 private:
  std::vector<Node> tree_;
};

// A range's totals, added up over the staircase points it dominates (see StaircasePoint). Count and Time are
// int32_t and int64_t when a thread's points cannot overflow them (48 bytes a node instead of 80), else wider.
template <class Count, class Time>
struct Totals {
  Count ops = 0, kernels = 0, memcpys = 0, memsets = 0, graphs = 0;
  Time op_time = 0;
  int64_t gpu_start = INT64_MAX, gpu_end = INT64_MIN;
  void add(const Totals& o) {
    ops += o.ops, kernels += o.kernels, memcpys += o.memcpys, memsets += o.memsets, graphs += o.graphs;
    op_time += o.op_time;
    gpu_start = std::min(gpu_start, o.gpu_start), gpu_end = std::max(gpu_end, o.gpu_end);
  }
};
struct DeviceTotals {
  int64_t ops = 0;
  int64_t gpu_start = INT64_MAX, gpu_end = INT64_MIN;
  void add(const DeviceTotals& o) {
    ops += o.ops;
    gpu_start = std::min(gpu_start, o.gpu_start), gpu_end = std::max(gpu_end, o.gpu_end);
  }
};
struct Length {
  uint64_t ns = 0;  // modulo 2^64: every answer is a measure of int64 time, below 2^64, so it comes out exact
  void add(const Length& o) { ns += o.ns; }
};

// A range holds a call [s, e] when range.start <= s and range.end >= e: the ranges holding any call of one key
// on a thread are a union of such quadrants. Its staircase (the calls that hold no other call of the key, by s)
// counts each range once: +1 at each step (s_i, e_i), -1 at each corner (s_i, e_{i+1}) where two steps overlap
// (the steps a range dominates are consecutive, so +1s minus -1s is 1). One point for a key with one call.
struct StaircasePoint {
  int64_t s, e;
  uint32_t group;
  int32_t weight;
};

// The union of the GPU intervals painted so far, each part labelled with the largest key painted over it (the key:
// the rank of the painting call's start). With calls painted in order of their end, the busy time of a range is
// the length labelled at or above the rank of its start: the union of the work of the calls it holds.
class LabelledUnion {
 public:
  explicit LabelledUnion(size_t keys) : lengths_(keys) {}
  void paint(int64_t a, int64_t b, uint32_t key) {
    if (a >= b) return;
    auto it = parts_.upper_bound(a);
    if (it != parts_.begin() && std::prev(it)->second.end > a) --it;
    pieces_.clear();
    int64_t cursor = a;
    while (it != parts_.end() && it->first < b) {
      const int64_t begin = it->first, end = it->second.end;
      const uint32_t old = it->second.key;
      if (begin < a) {
        pieces_.push_back({begin, a, old});
      } else if (cursor < begin) {
        credit(key, cursor, begin, +1);
        pieces_.push_back({cursor, begin, key});
      }
      const int64_t from = std::max(begin, a), to = std::min(end, b);
      if (old < key) {
        credit(old, from, to, -1);
        credit(key, from, to, +1);
      }
      pieces_.push_back({from, to, std::max(old, key)});
      if (end > b) pieces_.push_back({b, end, old});
      cursor = to;
      it = parts_.erase(it);
    }
    if (cursor < b) {
      credit(key, cursor, b, +1);
      pieces_.push_back({cursor, b, key});
    }
    // Touching pieces with one label become one part, so that painting in increasing key order (calls that do not
    // nest) keeps the parts few: amortized O(log n) a paint.
    for (size_t i = 0; i < pieces_.size();) {
      Piece p = pieces_[i];
      for (++i; i < pieces_.size() && pieces_[i].key == p.key && pieces_[i].begin == p.end; ++i) p.end = pieces_[i].end;
      parts_.emplace_hint(it, p.begin, Part{p.end, p.key});
    }
  }
  // Length labelled with a key >= from_key.
  uint64_t length_from(size_t from_key) const { return total_ - lengths_.prefix(from_key).ns; }
  // Drops the earliest parts while their key is below `key`, when no query will ask below it any more: a part that
  // was never asked for again counts for nothing, and painting over its time later labels it as if it were bare,
  // which gives the same answers at or above `key`. Keeps the union small (work from long ago is forgotten).
  void forget_below(uint32_t key) {
    while (!parts_.empty() && parts_.begin()->second.key < key) {
      auto first = parts_.begin();
      credit(first->second.key, first->first, first->second.end, -1);
      parts_.erase(first);
    }
  }

 private:
  void credit(uint32_t key, int64_t from, int64_t to, int sign) {
    uint64_t n = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
    if (sign < 0) n = ~n + 1;
    lengths_.add(key, Length{n});
    total_ += n;
  }
  struct Part {
    int64_t end;
    uint32_t key;
  };
  struct Piece {
    int64_t begin, end;
    uint32_t key;
  };
  std::map<int64_t, Part> parts_;  // by begin; disjoint
  std::vector<Piece> pieces_;
  Fenwick<Length> lengths_;
  uint64_t total_ = 0;
};

// Nesting: the ranges enclosing one are those before it in sort order that end at or after its end; its depth is
// their number, its parent the innermost, the last of them.
// Ranges that nest or follow one another (push/pop ranges always do) are a stack: a range that ends before the
// next one starts can enclose nothing after it, so the open ones are exactly those enclosing the next: O(1) each.
// A range that ends inside the next one (start/end ranges may overlap that way) may still enclose a later one;
// then, for the whole thread: a Fenwick tree over the ends seen so far for the depth and a descent of the max-end
// tree for the parent, O(log n) each, however deep the nesting (leaked ranges nest without bound).
void nest_thread(ThreadRanges& t, MappedArray<ProjectedRange>& all, const std::vector<char>& has_work) {
  const std::vector<uint32_t>& order = t.order;
  auto set = [&](size_t p, size_t depth, long parent) {  // only the ranges with work are kept: the others' unset
    if (!has_work[p]) return;
    ProjectedRange& r = all[order[p]];
    r.depth = static_cast<int32_t>(depth);
    r.parent_rowid = parent >= 0 ? all[order[static_cast<size_t>(parent)]].nvtx_rowid : -1;
  };
  std::vector<uint32_t> open;  // positions
  bool stacked = true;
  for (size_t p = 0; p < order.size() && stacked; ++p) {
    for (; !open.empty() && t.end(open.back()) < t.end(p); open.pop_back())
      if (t.end(open.back()) >= t.start(p)) stacked = false;  // overlaps p: may enclose a later range
    set(p, open.size(), open.empty() ? -1 : static_cast<long>(open.back()));
    open.push_back(static_cast<uint32_t>(p));
  }
  if (stacked) return;
  t.build_tree();
  std::vector<int64_t> ends;
  ends.reserve(order.size());
  for (size_t p = 0; p < order.size(); ++p) ends.push_back(t.end(p));
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<int32_t> fenwick(ends.size() + 1, 0);  // count of seen ends by rank
  auto rank = [&](int64_t e) { return static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), e) - ends.begin()); };
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const int64_t end = t.end(pos);
    size_t below = 0;  // seen ranges ending before this one
    for (size_t i = rank(end); i > 0; i -= i & (~i + 1)) below += static_cast<size_t>(fenwick[i]);
    set(pos, pos - below, t.last_ending_after(pos, end));
    for (size_t i = rank(end) + 1; i <= ends.size(); i += i & (~i + 1)) ++fenwick[i];
  }
}

// The work of one thread: its ranges and the calls they hold (a slice of the call list).
struct ThreadJob {
  ThreadRanges* ranges = nullptr;
  Call* calls = nullptr;
  size_t call_count = 0;
  std::vector<std::pair<uint32_t, DeviceExtent>> devices;  // out: (range index, extent)
  std::optional<int64_t> single_device;  // out: every key of the thread ran there alone (then devices is empty)
  std::vector<uint32_t> op_time_overflows, busy_overflows;  // out: range indices
};

struct JoinedWork {
  std::vector<Group> groups;
  std::vector<GroupDevice> group_devices;
  MappedArray<Op> ops;
};

// Step 2 of project_thread: the totals of each range, by start, latest first; the points starting at or after a
// range's start are in the tree, and those ending by its end are the ones it holds.
template <class Count, class Time>
void add_up_totals(ThreadJob& job, MappedArray<ProjectedRange>& all, const JoinedWork& work,
                   const std::vector<StaircasePoint>& points, const std::vector<int64_t>& ends,
                   std::vector<char>& has_work) {
  using T = Totals<Count, Time>;
  const ThreadRanges& ranges = *job.ranges;
  const std::vector<uint32_t>& order = ranges.order;
  Fenwick<T> tree(ends.size());
  size_t next = 0;
  int64_t earliest_end = INT64_MAX;  // of the points in the tree: a range ending before it holds no call
  bool any = false;
  for (size_t p = order.size(); p-- > 0;) {
    const int64_t start = ranges.start(p), end = ranges.end(p);
    for (; next < points.size() && points[next].s >= start; ++next) {
      const StaircasePoint& pt = points[next];
      if (pt.weight > 0) earliest_end = std::min(earliest_end, pt.e), any = true;
      const Group& g = work.groups[pt.group];
      const Count w = static_cast<Count>(pt.weight);
      T t;
      t.ops = w, t.kernels = w * static_cast<Count>(g.kernels), t.memcpys = w * static_cast<Count>(g.memcpys);
      t.memsets = w * static_cast<Count>(g.memsets), t.graphs = w * static_cast<Count>(g.graphs);
      t.op_time = static_cast<Time>(pt.weight) * static_cast<Time>(g.op_time);
      if (pt.weight > 0) t.gpu_start = g.gpu_start, t.gpu_end = g.gpu_end;  // a corner adds nothing new
      tree.add(static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), pt.e) - ends.begin()), t);
    }
    if (!any || earliest_end > end) continue;
    T t = tree.prefix(static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), end) - ends.begin()));
    if (t.ops <= 0) continue;
    has_work[p] = 1;
    const uint32_t index = order[p];
    ProjectedRange& r = all[index];
    r.gpu_ops = static_cast<uint32_t>(t.ops);
    r.kernels = static_cast<uint32_t>(t.kernels), r.memcpys = static_cast<uint32_t>(t.memcpys);
    r.memsets = static_cast<uint32_t>(t.memsets), r.graphs = static_cast<uint32_t>(t.graphs);
    r.gpu_start = t.gpu_start, r.gpu_end = t.gpu_end;
    if (t.op_time > INT64_MAX)
      job.op_time_overflows.push_back(index);
    else
      r.gpu_op_time = static_cast<int64_t>(t.op_time);
  }
}

// Every total of every range of one thread, without enumerating (range, call) pairs: sweeps over the ranges by
// start (Fenwick trees over the calls' ends) and by end (the labelled union). O((ranges + calls + ops) log n).
void project_thread(ThreadJob& job, MappedArray<ProjectedRange>& all, const JoinedWork& work) {
  const std::vector<uint32_t>& order = job.ranges->order;
  Call* const calls = job.calls;
  const size_t call_count = job.call_count;
  if (call_count == 0) return;  // no range of the thread has work: their nesting does not matter either
  const ThreadRanges& ranges = *job.ranges;
  // 1. The staircase of each key's calls.
  std::sort(calls, calls + call_count, [](const Call& x, const Call& y) {
    if (x.group != y.group) return x.group < y.group;
    return x.start != y.start ? x.start < y.start : x.end < y.end;
  });
  std::vector<StaircasePoint> points;
  points.reserve(call_count);
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (size_t i = 0; i < call_count;) {
    size_t j = i + 1;
    while (j < call_count && calls[j].group == calls[i].group) ++j;
    const uint32_t g = calls[i].group;
    if (j == i + 1) {
      points.push_back({calls[i].start, calls[i].end, g, +1});
    } else {
      // From the latest start down, a call is a step when it ends before every later one (holds none of them).
      steps.clear();
      for (size_t k = j; k-- > i;)
        if (steps.empty() || calls[k].end < steps.back().second) {
          if (!steps.empty() && steps.back().first == calls[k].start) steps.pop_back();  // same start: the shorter
          steps.emplace_back(calls[k].start, calls[k].end);
        }
      // steps: starts and ends both decreasing.
      for (size_t k = 0; k < steps.size(); ++k) {
        points.push_back({steps[k].first, steps[k].second, g, +1});
        if (k + 1 < steps.size()) points.push_back({steps[k + 1].first, steps[k].second, g, -1});
      }
    }
    i = j;
  }
  std::vector<int64_t> ends;
  ends.reserve(points.size());
  for (const StaircasePoint& p : points) ends.push_back(p.e);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  auto end_rank = [&](int64_t e) { return static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), e) - ends.begin()); };
  auto ending_by = [&](int64_t e) { return static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), e) - ends.begin()); };
  std::sort(points.begin(), points.end(), [](const StaircasePoint& x, const StaircasePoint& y) { return x.s > y.s; });

  // 2. Totals. No partial sum can leave int32 counts and int64 time when all the points' absolute values together
  // stay within them (always, but on corrupt timestamps).
  unsigned __int128 time_bound = 0;
  for (const StaircasePoint& p : points) time_bound += work.groups[p.group].op_time;
  int64_t count_bound = 0;
  for (const StaircasePoint& p : points) {
    const Group& g = work.groups[p.group];
    count_bound += 1 + g.kernels + g.memcpys + g.memsets + g.graphs;
  }
  std::vector<char> has_work(order.size(), 0);  // by position
  if (time_bound <= static_cast<unsigned __int128>(INT64_MAX) && count_bound <= INT32_MAX)
    add_up_totals<int32_t, int64_t>(job, all, work, points, ends, has_work);
  else
    add_up_totals<int64_t, __int128>(job, all, work, points, ends, has_work);
  nest_thread(*job.ranges, all, has_work);

  // 3. Per device. A thread whose every key ran on one and the same device (the usual case) has the totals above.
  std::vector<int64_t> devices;
  bool one_device = true;
  for (const StaircasePoint& p : points) {
    const Group& g = work.groups[p.group];
    one_device = one_device && g.device_count == 1;
    for (uint32_t d = 0; d < g.device_count; ++d) devices.push_back(work.group_devices[g.first_device + d].device);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (one_device && devices.size() == 1) {
    job.single_device = devices[0];  // every range's extent there is its whole extent: nothing to store
  } else {
    for (int64_t device : devices) {
      Fenwick<DeviceTotals> tree(ends.size());
      size_t next = 0;
      for (size_t p = order.size(); p-- > 0;) {
        for (; next < points.size() && points[next].s >= ranges.start(p); ++next) {
          const StaircasePoint& pt = points[next];
          const Group& g = work.groups[pt.group];
          for (uint32_t d = g.first_device; d < g.first_device + g.device_count; ++d) {
            const GroupDevice& gd = work.group_devices[d];
            if (gd.device != device) continue;
            DeviceTotals t;
            t.ops = pt.weight;
            if (pt.weight > 0) t.gpu_start = gd.gpu_start, t.gpu_end = gd.gpu_end;
            tree.add(end_rank(pt.e), t);
          }
        }
        if (!has_work[p]) continue;
        DeviceTotals t = tree.prefix(ending_by(ranges.end(p)));
        if (t.ops > 0) job.devices.push_back({order[p], DeviceExtent{device, t.gpu_start, t.gpu_end, t.ops}});
      }
    }
  }

  // 4. Busy time: calls by end, ranges by end; each call paints its key's intervals with the rank of its start.
  std::vector<int64_t> starts;
  starts.reserve(call_count);
  for (const Call* c = calls; c < calls + call_count; ++c) starts.push_back(c->start);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::sort(calls, calls + call_count, [](const Call& x, const Call& y) { return x.end < y.end; });
  // (end, start, index) of the ranges with work, sorted here: the ranges themselves are far apart in memory.
  struct ByEnd {
    int64_t end, start;
    uint32_t index;
  };
  std::vector<ByEnd> by_end;
  for (size_t p = 0; p < order.size(); ++p)
    if (has_work[p]) by_end.push_back({ranges.end(p), ranges.start(p), order[p]});
  std::sort(by_end.begin(), by_end.end(), [](const ByEnd& x, const ByEnd& y) { return x.end < y.end; });
  // The lowest start rank any later range asks for: parts labelled below it can be forgotten.
  std::vector<uint32_t> lowest_ahead(by_end.size() + 1, UINT32_MAX);
  for (size_t i = by_end.size(); i-- > 0;)
    lowest_ahead[i] = std::min(lowest_ahead[i + 1], static_cast<uint32_t>(std::lower_bound(starts.begin(), starts.end(),
                                                                                         by_end[i].start) - starts.begin()));
  LabelledUnion painted(starts.size());
  size_t next = 0;
  for (size_t i = 0; i < by_end.size(); ++i) {
    const ByEnd& r = by_end[i];
    painted.forget_below(lowest_ahead[i]);
    for (; next < call_count && calls[next].end <= r.end; ++next) {
      const Call& c = calls[next];
      const Group& g = work.groups[c.group];
      const uint32_t key =
          static_cast<uint32_t>(std::lower_bound(starts.begin(), starts.end(), c.start) - starts.begin());
      for (uint32_t o = g.first_op; o < g.first_op + g.op_count; ++o) painted.paint(work.ops[o].start, work.ops[o].end, key);
    }
    uint64_t busy = painted.length_from(
        static_cast<size_t>(std::lower_bound(starts.begin(), starts.end(), r.start) - starts.begin()));
    if (busy > static_cast<uint64_t>(INT64_MAX))
      job.busy_overflows.push_back(r.index);
    else
      all[r.index].gpu_busy_time = static_cast<int64_t>(busy);
  }
}

// Runs work(0..jobs-1) on up to `threads` threads (this one included); every thread is joined before it returns,
// and the first exception of any job is rethrown here.
void run_jobs(size_t jobs, int threads, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next.store(jobs);
      }
    }
  };
  std::vector<std::thread> pool;
  size_t wanted = std::min<size_t>(jobs, threads > 1 ? static_cast<size_t>(threads) : 1);
  try {
    for (size_t i = 1; i < wanted; ++i) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started and this one do the work.
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

std::shared_ptr<const NvtxProjection> NvtxProjection::compute(sqlite3* db, const ProfileCatalog& catalog,
                                                             bool progress, int threads,
                                                             const std::optional<ProjectionWindow>& window) {
  auto result = std::make_shared<NvtxProjection>();
  result->window_ = window;
  const ExportSchema& schema = catalog.schema();
  const TableInfo* nvtx = schema.table("NVTX_EVENTS");
  const TableInfo* runtime = schema.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (nvtx == nullptr || runtime == nullptr || !nvtx->has("eventType") || !nvtx->has("globalTid")) return result;
  if (!runtime->has("correlationId") || !runtime->has("globalTid")) return result;

  // The GPU operations: kernels, memcpys, memsets and graph launches traced per graph (NVIDIA's own projection
  // report leaves those out), in the tables' own order (no sort: the join below is in memory).
  std::vector<std::string> op_selects;
  struct OpTable {
    const char* table;
    int kind;
  };
  for (OpTable ot : {OpTable{"CUPTI_ACTIVITY_KIND_KERNEL", kKernelOp}, OpTable{"CUPTI_ACTIVITY_KIND_MEMCPY", kMemcpyOp},
                     OpTable{"CUPTI_ACTIVITY_KIND_MEMSET", kMemsetOp},
                     OpTable{"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", kGraphOp}}) {
    const TableInfo* t = schema.table(ot.table);
    if (t == nullptr || !t->has("correlationId") || !t->has("globalPid") || !t->has("start") || !t->has("end"))
      continue;
    op_selects.push_back("SELECT correlationId, globalPid >> 24, start, \"end\", " +
                         std::string(t->has("deviceId") ? "deviceId" : "0") + ", " + std::to_string(ot.kind) +
                         " FROM " + schema.qualified(ot.table) + " WHERE ");
  }
  if (op_selects.empty()) return result;
  // `narrowing` (within(...) terms) first: SQLite tests the terms in the order written, and a window's narrowing
  // turns most rows away before the other columns are decoded (0.21 -> 0.12 s for x200's CUDA API calls).
  auto op_sql = [&](const std::string& narrowing = "") {
    std::string sql;
    for (const std::string& select : op_selects)
      sql += (sql.empty() ? "" : " UNION ALL ") + select + narrowing +
             "correlationId IS NOT NULL AND globalPid IS NOT NULL AND start IS NOT NULL AND \"end\" IS NOT NULL";
    return sql;
  };
  auto calls_sql = [&](const std::string& narrowing = "") {
    return "SELECT correlationId, globalTid >> 24, globalTid, start, \"end\" FROM " +
           schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME") + " WHERE " + narrowing +
           "correlationId IS NOT NULL AND globalTid IS NOT NULL AND start IS NOT NULL AND \"end\" IS NOT NULL";
  };
  auto read_call = [](const Statement& s) {
    return Call{Key{s.int64(0), s.int64(1)}, s.int64(2), s.int64(3), s.int64(4), 0};
  };
  // SQL that only narrows a window's scans to the rows whose `column`, read as the C++ reads it
  // (sqlite3_column_int64: reals truncated, text parsed), may lie in [lo, hi]; the C++ then decides exactly. `+`
  // drops the column's affinity, so that reals compare as numbers (hence the margin of 1 for the truncation) and
  // text and blobs compare above every number (so they pass); plain comparisons, cheaper than typeof() on millions
  // of rows.
  auto within = [](const std::string& column, int64_t lo, int64_t hi) {  // terms, each followed by " AND "
    std::string sql;
    if (lo != INT64_MIN) sql += "+" + column + " > " + std::to_string(lo - 1) + " AND ";
    if (hi != INT64_MAX)
      sql += "(+" + column + " < " + std::to_string(hi + 1) + " OR +" + column + " > 9223372036854775807) AND ";
    return sql;
  };

  // For a window: the keys of the operations starting in it, and their calls. Only the ranges holding one of those
  // calls can have a row there (a row's time is the first start of its work on a GPU), and the ones enclosing
  // such a range hold the call too, so depth and parent come out the same among them alone.
  std::vector<Key> window_keys;
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int64_t>>> window_calls;  // by thread: (start, end)
  int64_t latest_window_call = INT64_MIN, earliest_window_end = INT64_MAX;
  if (window) {
    Statement s(db, op_sql(within("start", window->first_gpu_start, window->last_gpu_start)));
    while (s.step()) {
      int64_t start = s.int64(2);
      if (start >= window->first_gpu_start && start <= window->last_gpu_start)
        window_keys.push_back(Key{s.int64(0), s.int64(1)});
    }
    std::sort(window_keys.begin(), window_keys.end());
    window_keys.erase(std::unique(window_keys.begin(), window_keys.end()), window_keys.end());
    if (window_keys.empty()) return result;
    // Their calls: correlation ids grow with time, so the window's few bound the scan.
    auto [lowest, highest] = std::minmax_element(window_keys.begin(), window_keys.end(),
                                                 [](const Key& x, const Key& y) { return x.corr < y.corr; });
    Statement c(db, calls_sql(within("correlationId", lowest->corr, highest->corr)));
    while (c.step()) {
      Call call = read_call(c);
      if (!std::binary_search(window_keys.begin(), window_keys.end(), call.key)) continue;
      window_calls[call.global_tid].emplace_back(call.start, call.end);
      latest_window_call = std::max(latest_window_call, call.start);
      earliest_window_end = std::min(earliest_window_end, call.end);
    }
    if (window_calls.empty()) return result;
  }

  // 1. The ranges that can own work (closed on the thread they were opened on), and 2. the CUDA API calls and the
  // GPU operations. Each is a pass over its tables, and SQLite's reading is most of their cost: for the whole
  // report with a thread to spare, the ranges are read on a connection of their own, on a thread, while this one
  // reads the calls and the operations (all of them then: which lie in a range is known once the ranges are).
  MappedArray<ProjectedRange> all;  // the big one: no doubling, and shrunk in place once only the kept remain
  // Counting the rows costs a pass: worth it to size the ranges of the whole report once, or to show progress.
  uint64_t nvtx_rows = !window || progress ? catalog.row_count(db, schema.qualified("NVTX_EVENTS")) : 0;
  if (!window) all.reserve(static_cast<size_t>(nvtx_rows));
  // A window's calls bound the ranges worth keeping, per thread: they start by its last call's start, end at or
  // after its first call's end.
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> bounds;  // thread -> (latest start, earliest end)
  for (const auto& [tid, list] : window_calls) {
    auto& b = bounds.emplace(tid, std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX}).first->second;
    for (auto [s, e] : list) b.first = std::max(b.first, s), b.second = std::min(b.second, e);
  }
  Progress reading(progress, "NVTX projection: reading NVTX ranges", "rows", nvtx_rows);
  // The ranges are read a chunk of rowids at a time: with a thread to spare, that thread reads chunks from the front
  // while this one reads the calls and the operations, then this one reads chunks from the back until they meet.
  // Either way `all` ends up in rowid order, as one read of the table would give it.
  RowidChunks chunks = [&] {
    Statement s(db, "SELECT (SELECT min(rowid) FROM " + schema.qualified("NVTX_EVENTS") + "), (SELECT max(rowid) FROM " +
                        schema.qualified("NVTX_EVENTS") + ")");
    s.step();
    return s.is_null(0) ? RowidChunks(0, -1) : RowidChunks(s.int64(0), s.int64(1));
  }();
  SelectBuilder range_columns(*nvtx);
  const int rowid = range_columns.expression("rowid"), start = range_columns.column("start"),
            end = range_columns.column("end"), tid = range_columns.column("globalTid"),
            end_tid = range_columns.column("endGlobalTid"), type = range_columns.column("eventType"),
            domain = range_columns.column("domainId");
  auto range_statement = [&](sqlite3* connection) {
    // A window's: only ranges that start by its latest call and end at or after its earliest call's end.
    std::string narrowed;
    if (window) {
      narrowed = within("start", INT64_MIN, latest_window_call);
      if (earliest_window_end != INT64_MIN) {
        const std::string bound = std::to_string(earliest_window_end - 1);
        narrowed += "(\"end\" IS NULL OR +\"end\" > " + bound + " OR +start > " + bound + ") AND ";
      }
    }
    return Statement(connection, "SELECT " + range_columns.select_list() + " FROM " + schema.qualified("NVTX_EVENTS") +
                                     " WHERE rowid BETWEEN ? AND ? AND " + narrowed + "start IS NOT NULL AND " +
                                     nvtx_types_condition(kNvtxRanges) + " AND globalTid IS NOT NULL");
  };
  // The ranges of one chunk, appended to `out`; `read` counts the rows read (shown: the progress shown as they go).
  auto read_chunk = [&](sqlite3* connection, Statement& s, int64_t chunk, MappedArray<ProjectedRange>& out,
                        uint64_t& read, bool shown) {
    s.reset();
    s.bind(1, chunks.first(chunk));
    s.bind(2, chunks.last(chunk));
    while (s.step()) {
      ++read;
      if (shown) reading.update(read);
      ProjectedRange r;
      r.global_tid = s.int64(tid);
      std::optional<int64_t> ended_on = s.optional_int64(end_tid);
      if (ended_on && *ended_on != r.global_tid) continue;  // ended on another thread
      r.start = s.int64(start);
      std::optional<int64_t> stored_end = s.optional_int64(end);
      r.unclosed = !stored_end;
      r.end = r.unclosed ? catalog.profile_end(connection) : std::max(r.start, *stored_end);
      if (window) {
        auto it = bounds.find(r.global_tid);
        if (it == bounds.end() || r.start > it->second.first || r.end < it->second.second) continue;
      }
      r.nvtx_rowid = s.int64(rowid);
      r.start_end = nvtx_type_is(s.int64(type), NvtxRole::start_end_range);
      r.domain_id = static_cast<int32_t>(s.int64(domain));  // NULL: the default domain, 0
      out.push_back(r);
    }
  };
  uint64_t read_from_front = 0, read_from_back = 0;
  auto read_ranges_from_front = [&](sqlite3* connection) {
    Statement s = range_statement(connection);
    while (std::optional<int64_t> chunk = chunks.from_front())
      read_chunk(connection, s, *chunk, all, read_from_front, true);
  };
  auto read_op = [](const Statement& s) {
    int64_t op_start = s.int64(2), op_end = std::max(op_start, s.int64(3));  // end before start: an instant
    return KeyedOp{Key{s.int64(0), s.int64(1)}, Op{0, static_cast<int32_t>(s.int64(5)), s.int64(4), op_start, op_end}};
  };
  MappedArray<Call> calls;          // read alongside the ranges: every call; else only those in a range
  MappedArray<KeyedOp> every_op;    // read alongside the ranges: every operation; else none (joined as read)
  std::unique_ptr<ReaderConnection> reader;
  if (!window && threads > 1) reader = ReaderConnection::open(db, schema.schema());
  // Read into its page cache rather than mapped: the mapped pages of NVTX_EVENTS would count in the process's
  // memory once more (the scan's own readers map them too), 300 MB more at the peak on the 200x profile.
  if (reader) Statement(reader->get(), "PRAGMA mmap_size = 0").step();
  std::optional<BackgroundJob> ranges_job;  // declared after reader: joined before its connection closes
  // This thread's first chunk from the back is taken before the other thread starts: the two always share the
  // table, whatever their speeds (and the tests always take both paths).
  std::optional<int64_t> reserved_from_back = reader ? chunks.from_back() : std::nullopt;
  if (reader) {
    try {
      ranges_job.emplace(reader->get(), [&, connection = reader->get()] { read_ranges_from_front(connection); });
    } catch (const std::system_error&) {
      reader.reset();  // no thread to be had: all on this one
    }
  }
  const bool alongside = ranges_job.has_value();
  if (alongside) {
    {
      Statement c(db, calls_sql());
      while (c.step()) calls.push_back(read_call(c));
    }
    Statement s(db, op_sql());
    while (s.step()) every_op.push_back(read_op(s));
    // Sorted while the ranges are still being read (they take longer): the calls by key (the filter below keeps
    // their order), the operations by key, device and start (then joined in the order the groups need).
    std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return x.key < y.key; });
    std::sort(every_op.begin(), every_op.end(), [](const KeyedOp& x, const KeyedOp& y) {
      if (x.key != y.key) return x.key < y.key;
      return x.op.device != y.op.device ? x.op.device < y.op.device : x.op.start < y.op.start;
    });
    // Then the chunks the thread has not reached, from the back, each apart; appended in order once it is done.
    std::vector<MappedArray<ProjectedRange>> from_back;  // the last chunk first
    {
      Statement s = range_statement(db);
      for (std::optional<int64_t> chunk = reserved_from_back; chunk; chunk = chunks.from_back()) {
        from_back.emplace_back();
        read_chunk(db, s, *chunk, from_back.back(), read_from_back, false);
      }
    }
    ranges_job->wait();
    for (auto chunk = from_back.rbegin(); chunk != from_back.rend(); ++chunk)
      for (const ProjectedRange& r : *chunk) all.push_back(r);
  } else {
    read_ranges_from_front(db);
    if (reserved_from_back) {  // the last chunk, when no thread could be started after all
      Statement s = range_statement(db);
      read_chunk(db, s, *reserved_from_back, all, read_from_front, true);
    }
  }
  reading.finish(read_from_front + read_from_back);
  if (all.empty()) return result;

  std::unordered_map<int64_t, ThreadRanges> by_thread;
  auto group_by_thread = [&] {
    by_thread.clear();
    ThreadRanges* last = nullptr;  // a thread's ranges mostly follow each other
    int64_t last_tid = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (last == nullptr || all[i].global_tid != last_tid) last = &by_thread[last_tid = all[i].global_tid];
      last->order.push_back(static_cast<uint32_t>(i));
    }
    std::vector<ThreadRanges*> list;
    for (auto& [tid, t] : by_thread) list.push_back(&t);
    run_jobs(list.size(), threads, [&](size_t i) { list[i]->build(all); });
  };
  group_by_thread();
  if (window) {
    // Exactly the ranges holding a call of the window: by start, latest first, against the earliest end among the
    // calls starting at or after it.
    std::vector<char> keep(all.size(), 0);
    for (auto& [tid, t] : by_thread) {
      auto& list = window_calls[tid];
      std::sort(list.begin(), list.end(), std::greater<>());
      size_t next = 0;
      int64_t earliest_end = INT64_MAX;
      bool any = false;
      for (size_t p = t.order.size(); p-- > 0;) {
        const ProjectedRange& r = all[t.order[p]];
        for (; next < list.size() && list[next].first >= r.start; ++next)
          earliest_end = std::min(earliest_end, list[next].second), any = true;
        keep[t.order[p]] = any && earliest_end <= r.end;
      }
    }
    size_t kept = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (keep[i]) all[kept++] = all[i];
    all.truncate(kept);
    if (all.empty()) return result;
    group_by_thread();
  }

  // The calls that lie in a range of their thread, joined in memory to the GPU operations of their keys.
  auto in_a_range = [&](const Call& call) {
    auto t = by_thread.find(call.global_tid);
    return t != by_thread.end() && t->second.holds(call.start, call.end);
  };
  if (alongside) {
    size_t kept = 0;
    for (const Call& call : calls)
      if (in_a_range(call)) calls[kept++] = call;
    calls.truncate(kept);
  } else {
    Progress joining(progress, "NVTX projection: CUDA calls joined to their GPU work", "calls",
                     progress ? catalog.row_count(db, schema.qualified("CUPTI_ACTIVITY_KIND_RUNTIME")) : 0);
    uint64_t calls_read = 0;
    // A window's: only calls inside the span of its ranges.
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const ProjectedRange& r : all) first = std::min(first, r.start), last = std::max(last, r.end);
    Statement c(db, calls_sql(window ? within("start", first, INT64_MAX) + within("\"end\"", INT64_MIN, last) : ""));
    while (c.step()) {
      Call call = read_call(c);
      if (in_a_range(call)) calls.push_back(call);
      joining.update(++calls_read);
    }
    joining.finish(calls_read);
  }
  if (!alongside) std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return x.key < y.key; });
  // The calls are sorted by key: each call's group is the index of its key among them, counted as they go.
  std::vector<Key> keys;
  for (Call& c : calls) {
    if (keys.empty() || keys.back() != c.key) keys.push_back(c.key);
    c.group = static_cast<uint32_t>(keys.size() - 1);
  }
  JoinedWork work;
  auto add_to_group = [&](Op op, size_t group) {  // an operation of the key keys[group]
    op.group = static_cast<uint32_t>(group);
    work.ops.push_back(op);
  };
  auto join_op = [&](const KeyedOp& o) {
    auto it = std::lower_bound(keys.begin(), keys.end(), o.key);
    if (it != keys.end() && *it == o.key) add_to_group(o.op, static_cast<size_t>(it - keys.begin()));
  };
  if (alongside) {
    size_t k = 0;  // both sorted by key: a merge
    for (const KeyedOp& o : every_op) {
      while (k < keys.size() && keys[k] < o.key) ++k;
      if (k == keys.size()) break;
      if (keys[k] == o.key) add_to_group(o.op, k);
    }
    MappedArray<KeyedOp>().swap(every_op);
  } else if (!keys.empty()) {
    auto [lowest, highest] =
        std::minmax_element(keys.begin(), keys.end(), [](const Key& x, const Key& y) { return x.corr < y.corr; });
    Statement s(db, op_sql(window ? within("correlationId", lowest->corr, highest->corr) : ""));
    while (s.step()) join_op(read_op(s));
  }
  auto by_group = [](const Op& x, const Op& y) {
    if (x.group != y.group) return x.group < y.group;
    return x.device != y.device ? x.device < y.device : x.start < y.start;
  };
  if (!std::is_sorted(work.ops.begin(), work.ops.end(), by_group))
    std::sort(work.ops.begin(), work.ops.end(), by_group);
  work.groups.resize(keys.size());
  for (size_t i = 0; i < work.ops.size();) {
    Group& g = work.groups[work.ops[i].group];
    g.first_op = static_cast<uint32_t>(i);
    g.first_device = static_cast<uint32_t>(work.group_devices.size());
    for (; i < work.ops.size() && &work.groups[work.ops[i].group] == &g; ++i) {
      const Op& op = work.ops[i];
      g.gpu_start = std::min(g.gpu_start, op.start);
      g.gpu_end = std::max(g.gpu_end, op.end);
      g.op_time += static_cast<uint64_t>(op.end) - static_cast<uint64_t>(op.start);
      g.kernels += op.kind == kKernelOp;
      g.memcpys += op.kind == kMemcpyOp;
      g.memsets += op.kind == kMemsetOp;
      g.graphs += op.kind == kGraphOp;
      if (work.group_devices.size() == g.first_device || work.group_devices.back().device != op.device)
        work.group_devices.push_back(GroupDevice{op.device, op.start, op.end});
      GroupDevice& d = work.group_devices.back();
      d.gpu_start = std::min(d.gpu_start, op.start);
      d.gpu_end = std::max(d.gpu_end, op.end);
    }
    g.op_count = static_cast<uint32_t>(i - g.first_op);
    g.device_count = static_cast<uint32_t>(work.group_devices.size() - g.first_device);
  }

  // 3. Each thread's ranges (their nesting, then their totals) against the calls they hold; the threads are
  // independent (one job each).
  std::vector<ThreadJob> jobs;
  std::unordered_map<int64_t, size_t> job_of;  // thread -> its job
  {
    for (auto& [tid, t] : by_thread) {
      job_of[tid] = jobs.size();
      jobs.emplace_back();
      jobs.back().ranges = &t;
    }
    // The calls with work, grouped by thread in place: each job gets its slice.
    size_t with_work = 0;
    for (const Call& c : calls)
      if (work.groups[c.group].op_count > 0) calls[with_work++] = c;
    calls.truncate(with_work);
    std::vector<Key>().swap(keys);
    std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return x.global_tid < y.global_tid; });
    for (size_t i = 0; i < calls.size();) {
      size_t j = i;
      while (j < calls.size() && calls[j].global_tid == calls[i].global_tid) ++j;
      ThreadJob& job = jobs[job_of.at(calls[i].global_tid)];
      job.calls = calls.begin() + i;
      job.call_count = j - i;
      i = j;
    }
  }
  std::vector<size_t> job_order(jobs.size());  // the biggest first, for an even load
  for (size_t i = 0; i < jobs.size(); ++i) job_order[i] = i;
  std::sort(job_order.begin(), job_order.end(),
            [&](size_t x, size_t y) { return jobs[x].call_count > jobs[y].call_count; });
  run_jobs(jobs.size(), threads, [&](size_t i) { project_thread(jobs[job_order[i]], all, work); });

  // Time beyond int64: an Error naming the first such range (operation time, then busy time, then span below).
  for (auto list : {&ThreadJob::op_time_overflows, &ThreadJob::busy_overflows}) {
    std::optional<uint32_t> first;
    for (const ThreadJob& job : jobs)
      for (uint32_t index : job.*list) first = first ? std::min(*first, index) : index;
    if (first) {
      const ProjectedRange& r = all[*first];
      beyond_int64(r, list == &ThreadJob::op_time_overflows ? "GPU operation time" : "GPU busy time", r.gpu_start,
                   r.gpu_end);
    }
  }
  std::unordered_map<int64_t, int64_t> single_device;  // thread -> its one device
  for (const auto& [tid, index] : job_of)
    if (jobs[index].single_device) single_device.emplace(tid, *jobs[index].single_device);
  std::vector<std::pair<uint32_t, DeviceExtent>> extents;
  for (ThreadJob& job : jobs) {
    extents.insert(extents.end(), job.devices.begin(), job.devices.end());
    std::vector<std::pair<uint32_t, DeviceExtent>>().swap(job.devices);
  }
  std::sort(extents.begin(), extents.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second.device < y.second.device;
  });
  work = JoinedWork{};
  by_thread.clear();

  // 4. The ranges that own work, in time order.
  // A thread's one device, looked up once for each run of its ranges (a thread's ranges mostly follow each other).
  std::optional<int64_t> looked_up_tid, its_device;
  auto single_device_of = [&](int64_t tid) {
    if (looked_up_tid != tid) {
      looked_up_tid = tid;
      auto it = single_device.find(tid);
      its_device = it != single_device.end() ? std::optional<int64_t>(it->second) : std::nullopt;
    }
    return its_device;
  };
  size_t pool_size = extents.size();
  for (const ProjectedRange& r : all) pool_size += r.gpu_ops > 0 && single_device_of(r.global_tid);
  result->device_pool_.reserve(pool_size);
  size_t kept = 0;  // compacted in place: no second copy of the ranges at the peak
  size_t next_extent = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    size_t first_extent = next_extent;
    while (next_extent < extents.size() && extents[next_extent].first == i) ++next_extent;
    if (all[i].gpu_ops == 0) continue;
    ProjectedRange r = all[i];
    checked_span(r, "GPU span", r.gpu_start, r.gpu_end);  // so that gpu_span() never overflows
    r.first_device = static_cast<uint32_t>(result->device_pool_.size());
    if (std::optional<int64_t> single = single_device_of(r.global_tid))
      result->device_pool_.push_back(DeviceExtent{*single, r.gpu_start, r.gpu_end, r.gpu_ops});
    for (size_t e = first_extent; e < next_extent; ++e) {
      const DeviceExtent& d = extents[e].second;
      checked_span(r, "GPU span on one device", d.gpu_start, d.gpu_end);
      result->device_pool_.push_back(d);
    }
    r.device_count = static_cast<uint32_t>(result->device_pool_.size() - r.first_device);
    all[kept++] = r;
  }
  all.truncate(kept);
  result->ranges_ = std::move(all);
  if (!std::is_sorted(result->ranges_.begin(), result->ranges_.end(), starts_before))
    std::sort(result->ranges_.begin(), result->ranges_.end(), starts_before);
  return result;
}

NvtxRangeNames::NvtxRangeNames(sqlite3* db, const ProfileCatalog& catalog) : catalog_(catalog) {
  const TableInfo* t = catalog.schema().table("NVTX_EVENTS");
  if (t == nullptr) return;
  SelectBuilder b(*t);
  b.column("text");
  b.column("textId");
  b.expression("rowid");
  stmt_ = Statement(db, "SELECT " + b.select_list() + " FROM " + catalog.schema().qualified("NVTX_EVENTS") +
                            " WHERE rowid >= ? ORDER BY rowid");
}

std::string_view NvtxRangeNames::name(int64_t nvtx_rowid) {
  // Ranges are asked for in start order, which is nearly always rowid order a few rows apart.
  if (!stmt_ || !move_forward(stmt_, 2, at_, nvtx_rowid, kForwardSteps)) return kUnnamedNvtxRange;
  // The text's bytes belong to the statement until it steps or is reset.
  return catalog_.nvtx_range_name(stmt_.optional_text(0), stmt_.optional_int64(1), scratch_);
}

}  // namespace nsystrace
