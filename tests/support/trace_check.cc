#include "tests/support/trace_check.h"

#include <algorithm>
#include <climits>
#include <set>

namespace testtrace {

TraceSummary check_trace(const std::string& json) {
  TraceSummary t;
  try {
    t.root = testjson::parse(json);
  } catch (const std::exception& e) {
    t.problems.push_back(e.what());
    return t;
  }
  const testjson::Value* events = t.root.get("traceEvents");
  if (events == nullptr || events->type != testjson::Value::Array) {
    t.problems.push_back("no traceEvents array");
    return t;
  }
  if (t.root.str("displayTimeUnit") != "ns") t.problems.push_back("displayTimeUnit is not ns");
  std::map<int64_t, std::pair<int, int>> flows;  // id -> (starts, ends)
  std::set<std::pair<int64_t, int64_t>> sorted_tracks;
  for (const auto& e : events->items) {
    const std::string& ph = e.str("ph");
    if (ph == "M") {
      const testjson::Value* args = e.get("args");
      std::string name = e.str("name");
      if (name == "process_name" && args) t.process_names[e.integer("pid")] = args->str("name");
      if (name == "thread_name" && args) t.thread_names[{e.integer("pid"), e.integer("tid")}] = args->str("name");
      if (name == "thread_sort_index") sorted_tracks.insert({e.integer("pid"), e.integer("tid")});
      continue;
    }
    if (ph == "s" || ph == "f") {
      auto& f = flows[e.integer("id")];
      (ph == "s" ? f.first : f.second)++;
      (ph == "s" ? t.flow_starts : t.flow_ends)++;
      continue;
    }
    if (ph == "C") {  // counter samples: no track nesting, no thread metadata needed
      t.per_cat[e.str("cat")]++;
      const testjson::Value* args = e.get("args");
      if (args == nullptr || args->get("value") == nullptr) t.problems.push_back("counter sample without a value");
      continue;
    }
    if (ph != "X" && ph != "i") {
      t.problems.push_back("unexpected phase " + ph);
      continue;
    }
    Slice s;
    s.name = e.str("name");
    s.cat = e.str("cat");
    s.instant = ph == "i";
    try {
      s.ts_ns = testjson::us_text_to_ns(e.str("ts"));
      s.dur_ns = s.instant ? 0 : testjson::us_text_to_ns(e.str("dur"));
    } catch (const std::exception& ex) {
      t.problems.push_back(ex.what());
    }
    s.pid = e.integer("pid");
    s.tid = e.integer("tid");
    if (s.pid < 0 || s.pid >= (int64_t{1} << 31) || s.tid < 0 || s.tid >= (int64_t{1} << 31))
      t.problems.push_back("pid/tid out of range: " + std::to_string(s.pid) + "/" + std::to_string(s.tid));
    s.args = e.get("args");
    t.per_cat[s.cat]++;
    t.slices.push_back(s);
  }
  for (const auto& [id, f] : flows)
    if (f.first != 1 || f.second != 1) t.problems.push_back("flow " + std::to_string(id) + " is not one s + one f");

  // Nesting per track: sort by (ts, longest first) and walk with a stack of open ends.
  std::map<std::pair<int64_t, int64_t>, std::vector<const Slice*>> tracks;
  for (const auto& s : t.slices)
    if (!s.instant) tracks[{s.pid, s.tid}].push_back(&s);
  for (auto& [track, list] : tracks) {
    std::stable_sort(list.begin(), list.end(), [](const Slice* a, const Slice* b) {
      return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
    });
    std::vector<int64_t> open;
    int reported = 0;
    for (const Slice* s : list) {
      while (!open.empty() && open.back() <= s->ts_ns) open.pop_back();
      int64_t end;
      if (__builtin_add_overflow(s->ts_ns, s->dur_ns, &end)) end = INT64_MAX;
      if (!open.empty() && end > open.back() && reported++ < 3)
        t.problems.push_back("partial overlap on track " + std::to_string(track.first) + "/" +
                             std::to_string(track.second) + " at " + s->name);
      open.push_back(end);
    }
  }
  for (const auto& s : t.slices) {
    if (!t.process_names.count(s.pid)) {
      t.problems.push_back("no process_name for pid " + std::to_string(s.pid));
      t.process_names[s.pid] = "";  // report once
    }
    if (!t.thread_names.count({s.pid, s.tid}) || !sorted_tracks.count({s.pid, s.tid})) {
      t.problems.push_back("no thread metadata for " + std::to_string(s.pid) + "/" + std::to_string(s.tid));
      t.thread_names[{s.pid, s.tid}] = "";
      sorted_tracks.insert({s.pid, s.tid});
    }
  }
  return t;
}

}  // namespace testtrace
