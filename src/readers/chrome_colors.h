// Chrome's reserved color names (catapult's color scheme, honored by chrome://tracing through "cname"): the
// nearest one to an NVTX ARGB color, so annotated ranges keep their colors in the viewer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nsystrace {

// The reserved name closest (RGB distance) to argb's color; alpha is ignored.
const char* nearest_chrome_color(uint32_t argb);
// Whether `name` is one of the reserved names (the explicit form checks user-chosen names with it).
bool is_chrome_color(const char* name, size_t size);

}  // namespace nsystrace
