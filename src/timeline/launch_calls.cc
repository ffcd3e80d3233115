#include "src/timeline/launch_calls.h"

#include <algorithm>
#include <tuple>

#include "src/readers/event_sources.h"

namespace nsystrace {

std::shared_ptr<const LaunchCalls> LaunchCalls::build(sqlite3* db, std::shared_ptr<const ProfileCatalog> catalog,
                                                      int64_t clock_offset) {
  auto out = std::make_shared<LaunchCalls>();
  out->catalog_ = catalog;
  out->clock_offset_ = clock_offset;
  ScanFilter filter;
  filter.kinds = kind_bit(Kind::cuda_api);
  filter.args = false;
  filter.order = RowOrder::any;  // as stored: the calls are sorted here
  ReportContext report;  // the times as a scan of the connection's reports reads them
  report.schema = catalog->schema().schema();
  report.clock_offset = clock_offset;
  std::vector<std::unique_ptr<EventSource>> sources = open_sources(db, *catalog, filter, report);
  for (const std::unique_ptr<EventSource>& source : sources) {
    out->tag_ = source->tag();
    out->calls_.reserve(out->calls_.size() + source->table_rows());  // no copy at the peak as it grows
    while (source->next()) {
      const SourceEvent& e = source->event();
      if (!e.has_correlation || !e.has_global_id) continue;
      Call c{e.global_id, e.correlation_id, e.ts, e.dur, e.name_id, e.source_rowid};
      if (e.name_id < 0) {  // a name the reader made up (an unnamed call): kept once
        auto it = std::find(out->names_.begin(), out->names_.end(), e.name);
        if (it == out->names_.end()) it = out->names_.insert(it, std::string(e.name));
        c.name = -(it - out->names_.begin()) - 1;
      }
      out->calls_.push_back(c);
    }
  }
  // By key, then the earliest first (the order trace_events' rows of one key are compared in: ts, dur descending,
  // name, rowid), so the first of each key is its call.
  std::string scratch_a, scratch_b;
  const LaunchCalls& self = *out;
  std::sort(out->calls_.begin(), out->calls_.end(), [&](const Call& a, const Call& b) {
    // -dur: a duration is never negative (an invalid end reads as 0), so the negation cannot overflow.
    auto key = [](const Call& c) { return std::make_tuple(process_key_of(c.global_tid), c.correlation, c.ts, -c.dur); };
    if (auto ka = key(a), kb = key(b); ka != kb) return ka < kb;
    std::string_view na = self.name(a, scratch_a), nb = self.name(b, scratch_b);
    if (na != nb) return na < nb;
    return a.source_rowid < b.source_rowid;
  });
  out->calls_.erase(std::unique(out->calls_.begin(), out->calls_.end(),
                                [](const Call& a, const Call& b) {
                                  return process_key_of(a.global_tid) == process_key_of(b.global_tid) &&
                                         a.correlation == b.correlation;
                                }),
                    out->calls_.end());
  // (Twins are rare, and so are calls without a correlation id: a copy to give back a few bytes would double the
  // peak.)
  if (out->calls_.size() < out->calls_.capacity() / 2) out->calls_.shrink_to_fit();
  return out;
}

const LaunchCalls::Call* LaunchCalls::find(int64_t global_id, int64_t correlation) const {
  const int64_t process = process_key_of(global_id);
  auto it = std::lower_bound(calls_.begin(), calls_.end(), std::make_pair(process, correlation),
                             [](const Call& c, const std::pair<int64_t, int64_t>& key) {
                               return std::make_pair(process_key_of(c.global_tid), c.correlation) < key;
                             });
  if (it == calls_.end() || process_key_of(it->global_tid) != process || it->correlation != correlation) return nullptr;
  return &*it;
}

std::string_view LaunchCalls::name(const Call& call, std::string& scratch) const {
  if (call.name >= 0) return catalog_->string_or_placeholder(call.name, scratch);
  return names_[static_cast<size_t>(-call.name - 1)];
}

}  // namespace nsystrace
