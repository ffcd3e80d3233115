// Checks a Chrome trace the way a viewer would read it: valid JSON, exact timestamps, slices that nest on every
// track (Perfetto drops a slice that partially overlaps another), metadata for every track, paired flows.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/mini_json.h"

namespace testtrace {

struct Slice {
  std::string name, cat;
  int64_t ts_ns = 0, dur_ns = 0;
  bool instant = false;
  int64_t pid = 0, tid = 0;
  const testjson::Value* args = nullptr;
};

struct TraceSummary {
  testjson::Value root;
  std::vector<Slice> slices;                    // X and i events, in file order
  std::map<std::string, int64_t> per_cat;       // slices per cat
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  int64_t flow_starts = 0, flow_ends = 0;
  std::vector<std::string> problems;            // empty when the trace is sound
};

// Parses and checks; problems are collected, not thrown (a parse failure is one problem).
TraceSummary check_trace(const std::string& json);

}  // namespace testtrace
