// The declaration of what an export holds (src/model/export_model.def) made into C++: the Kind enum, a spec per kind, the
// tables rows come from, the NVTX event types, and the facts derived from them. Everything here is generated from
// the .def; nothing here restates it.
#pragma once
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nsystrace {

// Row kinds of trace_events (their numbers: see KIND in export_model.def).
enum class Kind : uint8_t {
#define KIND(name, ...) name,
#include "src/model/export_model.def"
};

enum class Origin : uint8_t { stored, derived };
enum class Extent : uint8_t { interval, instant, counter };
// What a row's pid is made from (see KIND's `pid`).
enum class PidColumn : uint8_t { thread, process, device, metric_type };

struct KindSpec {
  Kind kind;
  const char* name;
  Origin origin;
  Extent extent;
  PidColumn pid;
  const char* time;         // nullptr: derived
  const char* end;          // nullptr: a point, or an end the reader computes
  const char* global_id;    // read as global_tid (nullptr: none)
  const char* correlation;  // read as correlation_id (nullptr: none)
  bool time_may_be_absent;  // older exports lack `time`: rows counted as skipped (TIME_MAY_BE_ABSENT)
};

namespace export_model_detail {
constexpr bool time_may_be_absent(Kind k) {
#define TIME_MAY_BE_ABSENT(kind) \
  if (k == Kind::kind) return true;
#include "src/model/export_model.def"
  return false;
}
}  // namespace export_model_detail

// Indexed by Kind: made from the same list in the same order.
constexpr KindSpec kKindSpecs[] = {
#define KIND(name, origin, extent, pid, time, end, global_id, correlation)                             \
  {Kind::name, #name, Origin::origin, Extent::extent, PidColumn::pid, time, end, global_id, correlation, \
   export_model_detail::time_may_be_absent(Kind::name)},
#include "src/model/export_model.def"
};
constexpr int kKindCount = static_cast<int>(std::size(kKindSpecs));
constexpr const KindSpec& kind_spec(Kind k) { return kKindSpecs[static_cast<int>(k)]; }

constexpr const char* kind_name(Kind kind) { return kind_spec(kind).name; }
constexpr std::optional<Kind> kind_from_name(std::string_view name) {
  for (const KindSpec& s : kKindSpecs)
    if (name == s.name) return s.kind;
  return std::nullopt;
}
// Drawn under a GPU's process (a CPU pid never matches its rows, nor a GPU pid a CPU kind's).
constexpr bool is_gpu(Kind k) {
  return kind_spec(k).pid == PidColumn::device || kind_spec(k).pid == PidColumn::metric_type;
}

// Columns, beyond its time and end, without which a kind's table cannot be read (KIND_REQUIRES).
struct RequiredColumn {
  Kind kind;
  const char* column;
};
constexpr RequiredColumn kRequiredColumns[] = {
#define KIND_REQUIRES(kind, column) {Kind::kind, column},
#include "src/model/export_model.def"
};
// Every column a stored kind's table must have for its rows to be placed: time, the stored end, the others.
inline std::vector<const char*> required_columns(Kind k) {
  const KindSpec& s = kind_spec(k);
  std::vector<const char*> out;
  if (s.time != nullptr) out.push_back(s.time);
  if (s.end != nullptr) out.push_back(s.end);
  for (const RequiredColumn& r : kRequiredColumns)
    if (r.kind == k) out.push_back(r.column);
  return out;
}

// A table (or the projection) rows of a kind come from, in merge order (ROW_SOURCE).
struct RowSource {
  Kind kind;
  const char* table;  // nullptr: a derived kind's rows
  int tag;            // rowid = (source rowid << 5) | tag
};
constexpr RowSource kRowSources[] = {
#define ROW_SOURCE(kind, table, tag) {Kind::kind, table, tag},
#include "src/model/export_model.def"
};
constexpr int kRowidTagBits = 5;
// The rowid tag of a kind's rows when they come from nowhere but nsystrace (a derived kind has one source).
constexpr int derived_rowid_tag(Kind k) {
  for (const RowSource& s : kRowSources)
    if (s.kind == k && s.table == nullptr) return s.tag;
  return -1;
}

// NVTX_EVENTS.eventType values (NVTX_EVENT_TYPE), by nsys's name: NvtxEventType::NvtxMark is 34.
enum class NvtxEventType : int {
#define NVTX_EVENT_TYPE(name, number, role) name = number,
#include "src/model/export_model.def"
};
enum class NvtxRole : uint8_t { mark, push_pop_range, start_end_range, domain_name, category_name };
struct NvtxEventTypeSpec {
  NvtxEventType type;
  const char* nsys_name;
  int number;
  NvtxRole role;
};
constexpr NvtxEventTypeSpec kNvtxEventTypes[] = {
#define NVTX_EVENT_TYPE(name, number, role) {NvtxEventType::name, #name, number, NvtxRole::role},
#include "src/model/export_model.def"
};

// Sets of roles, as bit masks.
using NvtxRoles = uint32_t;
constexpr NvtxRoles nvtx_role_bit(NvtxRole r) { return 1u << static_cast<int>(r); }
// The ranges: what the NVTX GPU projection projects.
constexpr NvtxRoles kNvtxRanges = nvtx_role_bit(NvtxRole::push_pop_range) | nvtx_role_bit(NvtxRole::start_end_range);
// The events: each is one nvtx row of trace_events.
constexpr NvtxRoles kNvtxEvents = kNvtxRanges | nvtx_role_bit(NvtxRole::mark);
// The definitions: names of domains and categories, read once by the catalog.
constexpr NvtxRoles kNvtxDefinitions =
    nvtx_role_bit(NvtxRole::domain_name) | nvtx_role_bit(NvtxRole::category_name);

// The role of an eventType value, or nothing for a type nsystrace does not read. (A switch: a number declared twice
// is a duplicate case label, a compile error.)
constexpr std::optional<NvtxRole> nvtx_role(int64_t event_type) {
  switch (event_type) {
#define NVTX_EVENT_TYPE(name, number, role) \
  case number: return NvtxRole::role;
#include "src/model/export_model.def"
    default: return std::nullopt;
  }
}
constexpr bool nvtx_type_is(int64_t event_type, NvtxRole role) { return nvtx_role(event_type) == role; }
constexpr bool nvtx_type_in(int64_t event_type, NvtxRoles roles) {
  std::optional<NvtxRole> r = nvtx_role(event_type);
  return r && (nvtx_role_bit(*r) & roles) != 0;
}
// "eventType is one of these roles' values" in SQL, in declaration order: "(eventType = 34 OR eventType = 59 OR
// ...)" for kNvtxEvents. A chain of =, not IN: SQLite looks each row's value up in a temporary index for an IN list of
// more than two constants, which costs a scan of NVTX_EVENTS 13% more.
inline std::string nvtx_types_condition(NvtxRoles roles) {
  std::string out;
  for (const NvtxEventTypeSpec& t : kNvtxEventTypes)
    if (roles & nvtx_role_bit(t.role)) out += (out.empty() ? "(" : " OR ") + std::string("eventType = ") + std::to_string(t.number);
  return out.empty() ? "0" : out + ")";
}

// What the declaration promises, checked where it is compiled.
namespace export_model_detail {
constexpr bool same(const char* a, const char* b) {  // by content: two literals' addresses do not compare in a
  return a == nullptr || b == nullptr ? a == b : std::string_view(a) == std::string_view(b);  // constant expression
}
constexpr bool specs_are_consistent() {
  for (const KindSpec& s : kKindSpecs) {
    bool derived = s.origin == Origin::derived;
    if ((s.time == nullptr) != derived) return false;            // stored rows have a time column, derived none
    if (s.extent != Extent::interval && s.end != nullptr) return false;  // points have no end
    if (s.time_may_be_absent && derived) return false;
  }
  return true;
}
constexpr bool row_sources_are_consistent() {
  for (const RowSource& a : kRowSources) {
    if (a.tag < 0 || a.tag >= (1 << kRowidTagBits)) return false;
    if ((a.table == nullptr) != (kind_spec(a.kind).origin == Origin::derived)) return false;
    for (const RowSource& b : kRowSources)
      if (&a != &b && (a.tag == b.tag || (a.table != nullptr && same(a.table, b.table)))) return false;
  }
  bool derived_seen = false;  // derived sources come last (the scan merges the projection last; kEventTables)
  for (const RowSource& r : kRowSources) {
    if (r.table != nullptr && derived_seen) return false;
    derived_seen |= r.table == nullptr;
  }
  for (const KindSpec& s : kKindSpecs) {  // every kind has rows from somewhere; a derived kind from one place
    int n = 0;
    for (const RowSource& r : kRowSources) n += r.kind == s.kind;
    if (n == 0 || (s.origin == Origin::derived && n != 1)) return false;
  }
  return true;
}
}  // namespace export_model_detail
static_assert(kKindCount < 32, "kind masks (kind_bit, kAllKinds) are 32 bits");
static_assert(export_model_detail::specs_are_consistent(),
              "export_model.def: a stored kind needs a time column, a derived one none; points have no end");
static_assert(export_model_detail::row_sources_are_consistent(),
              "export_model.def: rowid tags and tables must be unique, tags below 32, every kind needs a source (a "
              "table, or nullptr for a derived kind) and derived sources come last");

}  // namespace nsystrace
