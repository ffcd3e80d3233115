// How many threads a conversion may use.
#pragma once

namespace nsystrace {

constexpr int kMaxThreads = 256;

// The cores this process may run on (its CPU affinity, so a container's or taskset's limit counts), at least 1.
int available_cores();

}  // namespace nsystrace
