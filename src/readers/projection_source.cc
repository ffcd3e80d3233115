// 'nvtx_kernel' rows of trace_events: each NVTX range of the projection, on every GPU it ran work on, with that
// GPU's extent (a range whose work spans devices appears once per device).
#include <algorithm>

#include "src/readers/event_sources.h"
#include "src/writers/json_writer.h"
#include "src/model/nvtx_projection.h"

namespace nsystrace {
namespace {

class ProjectionSource final : public EventSource {
 public:
  ProjectionSource(sqlite3* db, const ProfileCatalog& catalog, std::shared_ptr<const NvtxProjection> projection,
                   const ScanFilter& filter, const ReportContext& report)
      : EventSource(db, catalog, report), projection_(std::move(projection)), names_(db, catalog) {
    std::optional<int64_t> pid = filter.pid ? pid_in_report(*filter.pid, report.index) : std::nullopt;
    if (filter.pid && !pid) return;  // another report's process
    if (filter.correlations) return;  // a projected range has no correlation id
    auto in = [](const std::optional<std::vector<int64_t>>& set, int64_t v) {
      return !set || std::binary_search(set->begin(), set->end(), v);
    };
    const auto& ranges = projection_->ranges();
    for (size_t r = 0; r < ranges.size(); ++r) {
      if (!in(filter.global_tids, ranges[r].global_tid) || !in(filter.global_pids, global_pid_of(ranges[r].global_tid)))
        continue;
      for (size_t d = 0; d < ranges[r].device_count; ++d) {
        const DeviceExtent& dev = projection_->devices(ranges[r])[d];
        int64_t ts = saturating_add(dev.gpu_start, report.clock_offset);
        if (filter.ts_min && ts < *filter.ts_min) continue;
        if (filter.ts_max && ts > *filter.ts_max) continue;
        if (pid && *pid != gpu_pid(dev.device)) continue;
        rows_.push_back({r, d});
      }
    }
    // Time order, longest first at equal start, as the track layout needs.
    std::sort(rows_.begin(), rows_.end(), [&](const Row& a, const Row& b) {
      const DeviceExtent& x = projection_->devices(ranges[a.range])[a.device];
      const DeviceExtent& y = projection_->devices(ranges[b.range])[b.device];
      if (x.gpu_start != y.gpu_start) return x.gpu_start < y.gpu_start;
      if (x.gpu_end != y.gpu_end) return x.gpu_end > y.gpu_end;
      return a.range < b.range;
    });
    event_.kind = Kind::nvtx_kernel;
    set_tag(derived_rowid_tag(Kind::nvtx_kernel));  // ROW_SOURCE in export_model.def
    event_.placement = Placement::gpu_nvtx;
    event_.has_global_id = true;
  }
  Kind kind() const override { return Kind::nvtx_kernel; }
  uint64_t estimated_rows() const override { return rows_.size(); }
  bool next() override {
    if (next_ >= rows_.size()) return false;
    current_ = rows_[next_++];
    const ProjectedRange& r = projection_->ranges()[current_.range];
    const DeviceExtent& d = projection_->devices(r)[current_.device];
    event_.name = names_.name(r.nvtx_rowid);
    event_.ts = saturating_add(d.gpu_start, report_.clock_offset);
    event_.report = report_.index;
    event_.dur = d.gpu_span();  // never negative, never overflowing: see NvtxProjection::compute
    event_.global_id = r.global_tid;
    event_.domain = r.domain_id != 0 ? catalog_.nvtx_domain(r.global_tid, r.domain_id) : nullptr;
    event_.device_id = d.device;
    event_.stream_id = 0;
    event_.source_rowid = (r.nvtx_rowid << 8) | (d.device & 0xFF);  // one row per (range, device)
    return true;
  }
  bool read_row() override { return false; }
  void write_args(ArgsSink& o) const override {
    const ProjectedRange& r = projection_->ranges()[current_.range];
    const DeviceExtent& d = projection_->devices(r)[current_.device];
    if (r.domain_id != 0) {
      if (event_.domain) o.string("domain", *event_.domain);  // next()'s, the column's value
      o.integer("domain_id", r.domain_id);
    }
    o.integer("cpu_start", r.start).integer("cpu_end", r.end);
    o.integer("gpu_ops", r.gpu_ops).integer("device_ops", d.ops).integer("kernels", r.kernels);
    if (r.memcpys) o.integer("memcpys", r.memcpys);
    if (r.memsets) o.integer("memsets", r.memsets);
    if (r.graphs) o.integer("graphs", r.graphs);
    o.integer("depth", r.depth).integer("nvtx_rowid", r.nvtx_rowid);
    if (r.device_count > 1) o.integer("gpu_start_all_devices", r.gpu_start).integer("gpu_end_all_devices", r.gpu_end);
    if (r.unclosed) o.boolean("unclosed", true);
  }

 private:
  struct Row {
    size_t range, device;
  };
  std::shared_ptr<const NvtxProjection> projection_;
  NvtxRangeNames names_;
  std::vector<Row> rows_;
  size_t next_ = 0;
  Row current_{0, 0};
};

}  // namespace

std::unique_ptr<EventSource> make_projection_source(sqlite3* db, const ProfileCatalog& catalog,
                                                    std::shared_ptr<const NvtxProjection> projection,
                                                    const ScanFilter& filter, const ReportContext& report) {
  return std::make_unique<ProjectionSource>(db, catalog, std::move(projection), filter, report);
}

}  // namespace nsystrace
