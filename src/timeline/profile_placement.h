// The lanes and tracks the whole profile gives its rows: what trace_events' lane, thread_name and process_name show
// for a row, whatever a query's constraints leave out. A row's lane (and the name of a stream or a pid that two
// processes share, which the first row placed names) depends on the rows of its track placed before it, so a scan
// that drops some of them (a kind, a name, a lower time bound, a correlation id) places its rows differently; it
// takes them from here instead. Made by placing every row of the connection's reports once, in time order; kept by
// the connection until a report changes.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "src/timeline/timeline_scan.h"

namespace nsystrace {

class ProfilePlacement {
 public:
  ProfilePlacement(TrackLayout layout, std::unordered_map<int64_t, uint32_t> lanes)
      : layout_(std::move(layout)), lanes_(std::move(lanes)) {}
  // The track of `ev` (nullptr for a row the whole profile does not have) and the lane of the row `rowid`.
  const Track* track(const SourceEvent& ev) const { return layout_.find(ev); }
  uint32_t lane(int64_t rowid) const {
    auto it = lanes_.find(rowid);
    return it == lanes_.end() ? 0 : it->second;
  }

 private:
  TrackLayout layout_;
  std::unordered_map<int64_t, uint32_t> lanes_;  // the rows on a lane other than 0: slices that overlap unnested
};

// Reads `every_row` (a scan of every row of the reports, in time order) to its end and keeps its placement.
std::shared_ptr<const ProfilePlacement> place_every_row(TimelineScan& every_row);

}  // namespace nsystrace
