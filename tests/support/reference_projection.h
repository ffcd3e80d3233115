// The NVTX projection computed the way it was before the sweep (every (range, operation) pair enumerated), as the
// reference the differential tests compare NvtxProjection::compute with.
#pragma once
#include <vector>

#include "src/model/nvtx_projection.h"

namespace nsystrace {

struct ReferenceRange {
  ProjectedRange range;  // first_device is meaningless here: the extents are in devices
  std::vector<DeviceExtent> devices;
};

// Ranges with GPU work in (start, end descending, rowid) order, like NvtxProjection::ranges().
std::vector<ReferenceRange> reference_projection(sqlite3* db, const ProfileCatalog& catalog);

}  // namespace nsystrace
