#include "src/readers/gpu_metrics_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "src/writers/gpu_counters.h"

namespace nsystrace {

double MetricScale::apply(int64_t stored) const {
  int64_t product;
  if (!__builtin_mul_overflow(stored, num, &product) && std::llabs(product) <= (int64_t{1} << 53))
    return static_cast<double>(product) / static_cast<double>(den);  // the product exact: one rounding
  return apply(static_cast<double>(stored));
}

std::optional<MetricScale> parse_decimal_scale(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t digits = 0;
  int exponent = 0, seen = 0;
  size_t i = 0;
  bool point = false;
  constexpr int64_t kLimit = int64_t{1} << 59;  // room for the powers of ten below
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      if (digits > kLimit / 10) return std::nullopt;
      digits = digits * 10 + (c - '0');
      exponent -= point;
      ++seen;
    } else {
      break;
    }
  }
  if (seen == 0) return std::nullopt;
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') return std::nullopt;
    std::string_view e = text.substr(i + 1);
    int sign = 1;
    if (!e.empty() && (e.front() == '-' || e.front() == '+')) sign = e.front() == '-' ? -1 : 1, e.remove_prefix(1);
    if (e.empty() || e.size() > 3) return std::nullopt;
    int value = 0;
    for (char c : e) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    exponent += sign * value;
  }
  if (digits == 0) return std::nullopt;  // a zero factor would erase the values: not a unit conversion
  MetricScale s{digits, 1};
  for (; exponent > 0; --exponent)
    if (__builtin_mul_overflow(s.num, 10, &s.num)) return std::nullopt;
  for (; exponent < 0; ++exponent)
    if (__builtin_mul_overflow(s.den, 10, &s.den)) return std::nullopt;
  int64_t g = std::gcd(s.num, s.den);
  s.num /= g, s.den /= g;
  return s;
}

// A line-by-line reading of the metric set YAML, enough for nsys's configs: under a metric's "- name: <metric>"
// item, its "subMetrics:" list of "- name: <sub>" items with an optional "multiplier: <number>". The displayRows'
// items also start with "- name:"; they have no subMetrics and so name no metric here.
std::map<std::string, MetricScale, std::less<>> metric_scales_from_config(std::string_view config) {
  std::map<std::string, MetricScale, std::less<>> out;
  std::map<std::string, bool, std::less<>> conflicting;
  std::string metric, current;  // the metric item we are in; the "<metric> [<sub>]" item being read ("": none)
  MetricScale pending;          // the current sub-metric's multiplier so far
  bool in_sub_metrics = false;
  size_t sub_indent = 0;
  auto value_after = [](std::string_view line, std::string_view key) -> std::optional<std::string_view> {
    if (line.substr(0, key.size()) != key) return std::nullopt;
    std::string_view v = line.substr(key.size());
    if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
      v = v.substr(1, v.size() - 2);
    return v;
  };
  auto finish_item = [&] {  // the sub-metric item read so far, with its multiplier (1 without one)
    if (current.empty()) return;
    auto [it, fresh] = out.try_emplace(current, pending);
    if (!fresh && (it->second.num != pending.num || it->second.den != pending.den)) conflicting[current] = true;
    current.clear();
  };
  for (size_t at = 0; at <= config.size();) {
    size_t end = config.find('\n', at);
    if (end == std::string_view::npos) end = config.size();
    std::string_view line = config.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos || line[indent] == '#') continue;
    std::string_view content = line.substr(indent);
    if (auto name = value_after(content, "- name: ")) {
      finish_item();
      if (in_sub_metrics && indent >= sub_indent) {
        current = metric + " [" + std::string(*name) + "]";
        pending = MetricScale{};
      } else {
        metric = std::string(*name);
        in_sub_metrics = false;
      }
    } else if (content == "subMetrics:") {
      finish_item();
      in_sub_metrics = true;
      sub_indent = indent;
    } else if (in_sub_metrics && indent <= sub_indent) {  // the metric's next key: its sub-metrics have ended
      finish_item();
      in_sub_metrics = false;
    } else if (auto m = value_after(content, "multiplier: "); m && !current.empty()) {
      std::optional<MetricScale> s = parse_decimal_scale(*m);
      if (s) pending = *s;
      else conflicting[current] = true;  // a multiplier we cannot read exactly: the metric keeps its stored values
    }
  }
  finish_item();
  for (const auto& [name, _] : conflicting) out.erase(name);
  return out;
}

MetricScale metric_scale(std::string_view metric_name,
                         const std::map<std::string, MetricScale, std::less<>>& from_config) {
  if (auto it = from_config.find(metric_name); it != from_config.end()) return it->second;
  if (metric_unit(metric_name).text == "MHz") return MetricScale{1, 1000000};
  return MetricScale{};
}

namespace {
// Every text of StringIds that is a GPU metric set definition (nsys records the config file it sampled with).
std::map<std::string, MetricScale, std::less<>> scales_in_export(sqlite3* db, const ProfileCatalog& catalog) {
  const TableInfo* strings = catalog.schema().table("StringIds");
  if (strings == nullptr || !strings->has("value")) return {};
  Statement s(db, "SELECT value FROM " + catalog.schema().qualified("StringIds") +
                      " WHERE instr(value, 'metricSets:') > 0 AND instr(value, 'subMetrics:') > 0");
  std::map<std::string, MetricScale, std::less<>> out;
  bool first = true;
  while (s.step()) {
    auto one = metric_scales_from_config(s.text(0));
    if (first) {
      out = std::move(one);
      first = false;
      continue;
    }
    for (auto& [name, scale] : one) {  // several definitions: a name they scale differently is left out
      auto [it, fresh] = out.try_emplace(name, scale);
      if (!fresh && (it->second.num != scale.num || it->second.den != scale.den)) out.erase(it);
    }
  }
  return out;
}
}  // namespace

GpuMetricSource::GpuMetricSource(sqlite3* db, const ProfileCatalog& catalog, const TableInfo& t, const ScanFilter& f,
                                 const ReportContext& r)
    : EventSource(db, catalog, r), b_(t) {
  // The kind's declared time column, no end (a point), the rowid: where read_interval() expects them.
  const KindSpec& k = kind_spec(Kind::gpu_metric);
  b_.column(k.time);
  b_.expression("NULL");
  b_.expression("rowid");
  type_ = b_.column("typeId");
  metric_ = b_.column("metricId");
  value_ = b_.column("value");
  if (const TableInfo* names = catalog.schema().table("TARGET_INFO_GPU_METRICS");
      names && names->has("typeId") && names->has("metricId") && names->has("metricName")) {
    const auto from_config = scales_in_export(db, catalog);
    Statement s(db,
                "SELECT typeId, metricId, metricName FROM " + catalog.schema().qualified("TARGET_INFO_GPU_METRICS"));
    while (s.step())
      if (!s.is_null(0) && !s.is_null(1)) {
        std::string name(s.text(2));
        MetricScale scale = metric_scale(name, from_config);
        metrics_[{s.int64(0), s.int64(1)}] = Metric{std::move(name), scale};
      }
  }
  event_.kind = Kind::gpu_metric;
  event_.placement = Placement::gpu_metrics;
  event_.instant = true;
  event_.has_global_id = false;
  prepare(t, b_.select_list(), f, shape_of(Kind::gpu_metric));  // counters of a GPU: no process
}

const GpuMetricSource::Metric* GpuMetricSource::find_metric(int64_t type, int64_t metric) {
  constexpr int64_t kIndexed = 4096;  // metricIds below this are indexed (nsys numbers a source's metrics from 0)
  for (auto& [t, by_id] : by_type_)
    if (t == type) {
      if (metric >= 0 && metric < static_cast<int64_t>(by_id.size()) && by_id[metric] != nullptr) return by_id[metric];
      break;
    }
  auto it = metrics_.find({type, metric});
  if (it == metrics_.end()) return nullptr;
  if (metric >= 0 && metric < kIndexed) {
    auto t = std::find_if(by_type_.begin(), by_type_.end(), [&](const auto& e) { return e.first == type; });
    if (t == by_type_.end()) t = by_type_.insert(by_type_.end(), {type, {}});
    if (t->second.size() <= static_cast<size_t>(metric)) t->second.resize(metric + 1, nullptr);
    t->second[metric] = &it->second;
  }
  return &it->second;
}

bool GpuMetricSource::read_row() {
  read_interval(true);
  event_.dur = 0;
  int64_t type = stmt_.int64(type_);
  int64_t metric = stmt_.int64(metric_);
  event_.device_id = type;  // the metrics source: placed on its own process (see TrackLayout)
  if (const Metric* m = find_metric(type, metric)) {
    event_.name = m->name;
    scale_ = m->scale;
  } else {
    name_scratch_ = fmt::format("metric {}", metric);
    event_.name = name_scratch_;
    scale_ = MetricScale{};
  }
  return true;
}

void GpuMetricSource::write_args(ArgsSink& o) const {
  if (stmt_.type(value_) == SQLITE_INTEGER) {
    int64_t v = stmt_.int64(value_);
    if (scale_.identity()) o.integer("value", v);  // in its unit as stored: kept an integer
    else o.real("value", scale_.apply(v));
  } else if (!stmt_.is_null(value_)) {
    o.real("value", scale_.apply(stmt_.real(value_)));
  }
}

}  // namespace nsystrace
