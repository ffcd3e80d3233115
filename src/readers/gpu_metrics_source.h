// The reader of nsys GPU metrics (GPU_METRICS, named by TARGET_INFO_GPU_METRICS), and what a stored value means:
// the scale that turns it into the unit its name states. docs/gpu-model.md says where each rule comes from.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "src/readers/event_sources.h"

namespace nsystrace {

// An exact decimal factor num / den (both positive): what a stored value is multiplied by to be in its unit.
struct MetricScale {
  int64_t num = 1, den = 1;
  bool identity() const { return num == den; }
  // stored * num / den as the nearest double (one rounding, as SQL's `value * num / den` over a real den rounds it).
  double apply(int64_t stored) const;
  double apply(double stored) const { return stored * static_cast<double>(num) / static_cast<double>(den); }
};

// A YAML number as nsys's metric configs write it ("0.5", "1.0e-06", "2") as an exact fraction; nothing for text
// that is no such number or whose fraction does not fit in 64 bits.
std::optional<MetricScale> parse_decimal_scale(std::string_view text);

// The multipliers of NVIDIA's GPU metric set definitions (the GpuMetrics/<chip>.config file nsys records into the
// export's StringIds), by the metric's export name "<metric name> [<sub-metric name>]": each sub-metric's
// `multiplier` (1 where it has none). A name two metric sets scale differently is left out (which set the export
// sampled is not said there).
std::map<std::string, MetricScale, std::less<>> metric_scales_from_config(std::string_view config);

// The scale of one metric: its multiplier in the export's metric set definition where the export has one; else, for
// a name in [MHz], 1/10^6 (NVIDIA documents the clock metrics, gpc__cycles_elapsed.avg.per_second and
// sys__cycles_elapsed.avg.per_second, as frequencies in hertz); else 1 (the value is in its unit as stored).
MetricScale metric_scale(std::string_view metric_name,
                         const std::map<std::string, MetricScale, std::less<>>& from_config);

// Sampled GPU counters (GPU_METRICS: timestamp, typeId, metricId, value), named by TARGET_INFO_GPU_METRICS
// (typeId, metricId -> metricName; typeId -> typeName): one counter sample per row, its args' "value" the stored
// value in the unit its name states (metric_scale): what trace_events and both trace formats show.
class GpuMetricSource final : public EventSource {
 public:
  GpuMetricSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                  const ReportContext& r);
  Kind kind() const override { return Kind::gpu_metric; }
  bool read_row() override;
  void write_args(ArgsSink& o) const override;

 private:
  struct Metric {
    std::string name;
    MetricScale scale;
  };
  SelectBuilder b_;
  int type_, metric_, value_;
  std::map<std::pair<int64_t, int64_t>, Metric> metrics_;  // by (typeId, metricId)
  // The same metrics by typeId, then indexed by metricId (small numbers from 0): a row's metric without a map lookup,
  // once per sample (nsys cycles through a source's metrics at every timestamp).
  std::vector<std::pair<int64_t, std::vector<const Metric*>>> by_type_;
  const Metric* find_metric(int64_t type, int64_t metric);
  MetricScale scale_;                                      // the current row's
  std::string name_scratch_;
};

}  // namespace nsystrace
