#include "src/timeline/profile_placement.h"

namespace nsystrace {

std::shared_ptr<const ProfilePlacement> place_every_row(TimelineScan& every_row) {
  std::unordered_map<int64_t, uint32_t> lanes;
  for (; !every_row.eof(); every_row.next())
    if (every_row.row().lane != 0) lanes.emplace(every_row.row().rowid, every_row.row().lane);
  return std::make_shared<const ProfilePlacement>(std::move(every_row).take_layout(), std::move(lanes));
}

}  // namespace nsystrace
