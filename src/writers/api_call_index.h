// Where each CUDA API call was drawn, by (process, correlation id): the start of a flow arrow to the GPU work
// the call launched (see FlowLinker).
//
// CUPTI numbers a process's calls in the order they are made, and the rows come in time order, so each
// process's calls arrive sorted by correlation id. They are appended to that process's array (24 bytes a call,
// grown in place: no rehash, no second copy at the peak) and found by a search from the end, where the launch of
// the GPU work being drawn usually is. A call that arrives out of order (two threads calling at the same
// nanosecond) is inserted a few places from the end; one further away goes to a side map.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "src/util/mapped_array.h"

namespace nsystrace {

struct ApiCall {
  uint64_t endpoint;  // where the call was drawn, as its writer identifies it (see FlowLinker)
  int64_t ts;
};

class ApiCallIndex {
 public:
  // Keeps the first call seen for a (process, correlation id): true when this one was kept.
  bool insert(int64_t process, int64_t correlation, const ApiCall& call);
  const ApiCall* find(int64_t process, int64_t correlation) const;

 private:
  struct Entry {
    int64_t correlation;
    ApiCall call;
  };
  struct Process {
    int64_t key;
    MappedArray<Entry> in_order;
    std::unordered_map<int64_t, ApiCall> out_of_order;
  };
  Process* process(int64_t key) const;
  // First index in `calls` whose correlation id is >= correlation, searched from the end.
  static size_t lower_bound_from_end(const MappedArray<Entry>& calls, int64_t correlation);

  std::vector<std::unique_ptr<Process>> processes_;  // a handful: searched linearly, last one cached
  mutable Process* last_ = nullptr;
};

}  // namespace nsystrace
