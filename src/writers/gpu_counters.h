// What the writers need to know of nsys GPU metrics (GPU_METRICS + TARGET_INFO_GPU_METRICS) to draw them as counters
// of their GPU: which CUDA device a metrics source samples, and the unit of a metric. docs/gpu-model.md says where
// each rule comes from.
#pragma once
#include <cstdint>
#include <string_view>

#include "src/model/event.h"

namespace nsystrace {

// The device a metrics source samples: gpu_metrics_device(), src/model/event.h.

// A metric's unit, from its name: nsys names metrics "<what> [<unit>]" ("SM Active [Throughput %]", "GPC Clock
// Frequency [MHz]"); older names carry none ("SMs Active"). `perfetto` is Perfetto's GpuCounterDescriptor.MeasureUnit
// (0: NONE, where Perfetto has no such unit); `text` is the bracketed text ("Throughput %"), empty without one.
struct MetricUnit {
  uint64_t perfetto = 0;
  std::string_view text;
};
constexpr MetricUnit metric_unit(std::string_view name) {
  MetricUnit u;
  if (name.empty() || name.back() != ']') return u;
  size_t open = name.rfind('[');
  if (open == std::string_view::npos) return u;
  u.text = name.substr(open + 1, name.size() - open - 2);
  std::string_view t = u.text;
  auto ends_with = [&](std::string_view s) { return t.size() >= s.size() && t.substr(t.size() - s.size()) == s; };
  constexpr uint64_t kPercent = 37, kHertz = 13, kKilohertz = 14, kMegahertz = 15, kGigahertz = 16, kWatt = 29,
                     kMilliwatt = 28, kCelsius = 34, kByte = 7;
  if (ends_with("%")) u.perfetto = kPercent;
  else if (t == "GHz") u.perfetto = kGigahertz;
  else if (t == "MHz") u.perfetto = kMegahertz;
  else if (t == "kHz" || t == "KHz") u.perfetto = kKilohertz;
  else if (t == "Hz") u.perfetto = kHertz;
  else if (t == "W") u.perfetto = kWatt;
  else if (t == "mW") u.perfetto = kMilliwatt;
  else if (t == "C") u.perfetto = kCelsius;
  else if (t == "B" || t == "bytes") u.perfetto = kByte;
  return u;
}

}  // namespace nsystrace
