#include "src/writers/api_call_index.h"

#include <algorithm>

namespace nsystrace {

namespace {
// How far from the end an out-of-order call is still put in place; further away it goes to the side map, so a
// profile in no order at all costs a hash map, never quadratic time.
constexpr size_t kInsertWindow = 64;
}  // namespace

ApiCallIndex::Process* ApiCallIndex::process(int64_t key) const {
  if (last_ != nullptr && last_->key == key) return last_;
  for (const auto& p : processes_)
    if (p->key == key) return last_ = p.get();
  return nullptr;
}

size_t ApiCallIndex::lower_bound_from_end(const MappedArray<Entry>& calls, int64_t correlation) {
  // Gallop back from the end until an entry below `correlation`, then binary-search the last step.
  size_t hi = calls.size(), step = 1, lo = 0;
  while (hi >= step) {
    size_t probe = hi - step;
    if (calls[probe].correlation < correlation) {
      lo = probe + 1;
      break;
    }
    hi = probe;
    step *= 2;
  }
  return static_cast<size_t>(
      std::lower_bound(calls.begin() + lo, calls.begin() + hi, correlation,
                       [](const Entry& e, int64_t c) { return e.correlation < c; }) -
      calls.begin());
}

bool ApiCallIndex::insert(int64_t key, int64_t correlation, const ApiCall& call) {
  Process* p = process(key);
  if (p == nullptr) {
    processes_.push_back(std::make_unique<Process>());
    p = last_ = processes_.back().get();
    p->key = key;
  }
  MappedArray<Entry>& calls = p->in_order;
  if (calls.empty() || calls.back().correlation < correlation) {  // the usual case
    calls.push_back(Entry{correlation, call});
    return true;
  }
  size_t i = lower_bound_from_end(calls, correlation);
  if (i < calls.size() && calls[i].correlation == correlation) return false;  // first call wins
  if (p->out_of_order.count(correlation) != 0) return false;
  if (calls.size() - i <= kInsertWindow) calls.insert(i, Entry{correlation, call});
  else p->out_of_order.emplace(correlation, call);
  return true;
}

const ApiCall* ApiCallIndex::find(int64_t key, int64_t correlation) const {
  const Process* p = process(key);
  if (p == nullptr) return nullptr;
  size_t i = lower_bound_from_end(p->in_order, correlation);
  if (i < p->in_order.size() && p->in_order[i].correlation == correlation) return &p->in_order[i].call;
  if (p->out_of_order.empty()) return nullptr;
  auto it = p->out_of_order.find(correlation);
  return it == p->out_of_order.end() ? nullptr : &it->second;
}

}  // namespace nsystrace
