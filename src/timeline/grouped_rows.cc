#include "src/timeline/grouped_rows.h"

#include <algorithm>
#include <cstring>

namespace nsystrace {

namespace {
enum Flag : uint8_t {
  kHasDur = 1,
  kHasTid = 2,
  kOnGpu = 4,
  kHasStream = 8,
  kHasCorrelation = 16,
  kHasGlobalTid = 32,
  kHasDemangledId = 64,
};

uint8_t flags_of(const TraceRow& r) {
  return (r.has_dur ? kHasDur : 0) | (r.has_tid ? kHasTid : 0) | (r.on_gpu ? kOnGpu : 0) |
         (r.has_stream ? kHasStream : 0) | (r.has_correlation ? kHasCorrelation : 0) |
         (r.has_global_tid ? kHasGlobalTid : 0) | (r.has_demangled_id ? kHasDemangledId : 0);
}

void set_flags(TraceRow& r, uint8_t f) {
  r.has_dur = f & kHasDur;
  r.has_tid = f & kHasTid;
  r.on_gpu = f & kOnGpu;
  r.has_stream = f & kHasStream;
  r.has_correlation = f & kHasCorrelation;
  r.has_global_tid = f & kHasGlobalTid;
  r.has_demangled_id = f & kHasDemangledId;
}

uint64_t bit(Column c) { return uint64_t{1} << static_cast<int>(c); }

// A column's value in a group key: a tag (NULL or not), then the value's bytes (a text's length first).
void put_null(std::string& key) { key.push_back('\0'); }
void put_integer(std::string& key, int64_t v) {
  key.push_back('\1');
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_text(std::string& key, std::string_view v) {
  key.push_back('\2');
  uint64_t n = v.size();
  key.append(reinterpret_cast<const char*>(&n), sizeof n);
  key.append(v.data(), v.size());
}
void put_optional_integer(std::string& key, bool has, int64_t v) {
  if (has) put_integer(key, v);
  else put_null(key);
}
void put_optional_text(std::string& key, const std::string* v) {
  if (v) put_text(key, *v);
  else put_null(key);
}
}  // namespace

bool GroupedRows::uses(Column c) const { return (used_ & bit(c)) != 0 && !key_[static_cast<int>(c)]; }

uint32_t GroupedRows::intern(std::string_view text) {
  auto it = text_ids_.find(text);
  if (it != text_ids_.end()) return it->second;
  texts_.emplace_back(text);
  return text_ids_.emplace(texts_.back(), static_cast<uint32_t>(texts_.size() - 1)).first->second;
}

GroupedRows::GroupedRows(sqlite3* db, TimelineScan& scan, const std::vector<Column>& keys,
                         const std::vector<bool>& descending, uint64_t used)
    : used_(used), keys_(keys) {
  for (Column c : keys_) key_[static_cast<int>(c)] = true;
  std::string scratch;
  // SQLite 3.40 has no sqlite3_is_interrupted(): a statement stepped on the connection fails when it is.
  Statement poll(db, "SELECT 1");
  for (uint64_t n = 1; !scan.eof(); scan.next(), ++n) {
    if (n % 16384 == 0) {
      poll.reset();
      try {
        poll.step();
      } catch (const Error&) {  // interrupted (or the connection failed): the statement stops here
        throw Error("nsystrace: trace_events was interrupted while grouping its rows (" + std::to_string(n) +
                    " read): " + sqlite3_errmsg(db));
      }
    }
    const TraceRow& r = scan.row();
    // The group: its keys' values as SQLite compares them (BINARY text, integers, NULL equal to NULL).
    key_scratch_.clear();
    uint32_t name = 0;
    for (Column c : keys_) {
      switch (c) {
        case Column::kind: put_integer(key_scratch_, static_cast<int64_t>(r.kind)); break;
        case Column::derived: put_integer(key_scratch_, is_derived(r.kind)); break;
        case Column::name:
          name = intern(r.name);
          put_integer(key_scratch_, name);  // one id per text
          break;
        case Column::ts: put_integer(key_scratch_, r.ts); break;
        case Column::dur: put_optional_integer(key_scratch_, r.has_dur, r.dur); break;
        case Column::pid: put_integer(key_scratch_, r.pid); break;
        case Column::tid: put_optional_integer(key_scratch_, r.has_tid, r.tid); break;
        case Column::process_name: put_optional_text(key_scratch_, r.process_name); break;
        case Column::thread_name: put_text(key_scratch_, r.track->name); break;
        case Column::device_id: put_optional_integer(key_scratch_, r.on_gpu, r.device_id); break;
        case Column::stream_id: put_optional_integer(key_scratch_, r.has_stream, r.stream_id); break;
        case Column::correlation_id: put_optional_integer(key_scratch_, r.has_correlation, r.correlation_id); break;
        case Column::global_tid: put_optional_integer(key_scratch_, r.has_global_tid, r.global_tid); break;
        case Column::global_pid:
          put_optional_integer(key_scratch_, r.has_global_tid, r.has_global_tid ? global_pid_of(r.global_tid) : 0);
          break;
        case Column::lane: put_integer(key_scratch_, r.lane); break;
        case Column::schema: put_optional_text(key_scratch_, r.schema); break;
        case Column::cname:
          if (r.cname) put_text(key_scratch_, r.cname);
          else put_null(key_scratch_);
          break;
        case Column::domain: put_optional_text(key_scratch_, r.domain); break;
        case Column::demangled_name:
          if (auto d = scan.demangled_name(r, scratch)) put_text(key_scratch_, *d);
          else put_null(key_scratch_);
          break;
        case Column::args:
        case Column::event: throw Error("nsystrace: internal: trace_events grouped by args or event");
      }
    }
    auto [it, fresh] = group_of_key_.try_emplace(key_scratch_, static_cast<uint32_t>(prototypes_.size()));
    if (fresh) {
      TraceRow& p = prototypes_.emplace_back(r);
      // Its own copy of the name: the scan's text is gone at the next row (when name is no key, each row has its own).
      p.name = key_[static_cast<int>(Column::name)] ? std::string_view(texts_[name]) : std::string_view();
    }
    group_.push_back(it->second);
    add(r);
  }
  // Counting sort by the groups' ranks: each group's rows in scan order.
  std::vector<uint32_t> rank(prototypes_.size());
  std::vector<uint32_t> by_key = sorted_groups(scan, descending);
  for (size_t i = 0; i < by_key.size(); ++i) rank[by_key[i]] = static_cast<uint32_t>(i);
  std::vector<uint32_t> start(prototypes_.size() + 1, 0);
  for (uint32_t g : group_) ++start[rank[g] + 1];
  for (size_t g = 1; g < start.size(); ++g) start[g] += start[g - 1];
  order_.resize(group_.size());
  for (size_t i = 0; i < group_.size(); ++i) order_[start[rank[group_[i]]]++] = static_cast<uint32_t>(i);
}

namespace {
// A column's value as SQLite compares it in an ORDER BY: NULL first, then integers, then text (BINARY: by bytes).
struct SortValue {
  int type = 0;  // 0 NULL, 1 integer, 2 text
  int64_t integer = 0;
  std::string text;
  bool operator<(const SortValue& o) const {
    if (type != o.type) return type < o.type;
    return type == 1 ? integer < o.integer : type == 2 && text < o.text;  // std::string compares bytes unsigned
  }
};
SortValue null_value() { return {}; }
SortValue integer_value(int64_t v) { return {1, v, {}}; }
SortValue text_value(std::string_view v) { return {2, 0, std::string(v)}; }
SortValue optional_integer(bool has, int64_t v) { return has ? integer_value(v) : null_value(); }
SortValue optional_text(const std::string* v) { return v ? text_value(*v) : null_value(); }
}  // namespace

std::vector<uint32_t> GroupedRows::sorted_groups(TimelineScan& scan, const std::vector<bool>& descending) const {
  const size_t n = prototypes_.size(), k = keys_.size();
  std::vector<SortValue> values(n * k);  // group g's key i at g * k + i
  std::string scratch;
  for (size_t g = 0; g < n; ++g) {
    const TraceRow& r = prototypes_[g];
    for (size_t i = 0; i < k; ++i) {
      SortValue& v = values[g * k + i];
      switch (keys_[i]) {
        case Column::kind: v = text_value(kind_name(r.kind)); break;
        case Column::derived: v = integer_value(is_derived(r.kind)); break;
        case Column::name: v = text_value(r.name); break;
        case Column::ts: v = integer_value(r.ts); break;
        case Column::dur: v = optional_integer(r.has_dur, r.dur); break;
        case Column::pid: v = integer_value(r.pid); break;
        case Column::tid: v = optional_integer(r.has_tid, r.tid); break;
        case Column::process_name: v = optional_text(r.process_name); break;
        case Column::thread_name: v = text_value(r.track->name); break;
        case Column::device_id: v = optional_integer(r.on_gpu, r.device_id); break;
        case Column::stream_id: v = optional_integer(r.has_stream, r.stream_id); break;
        case Column::correlation_id: v = optional_integer(r.has_correlation, r.correlation_id); break;
        case Column::global_tid: v = optional_integer(r.has_global_tid, r.global_tid); break;
        case Column::global_pid:
          v = optional_integer(r.has_global_tid, r.has_global_tid ? global_pid_of(r.global_tid) : 0);
          break;
        case Column::lane: v = integer_value(r.lane); break;
        case Column::schema: v = optional_text(r.schema); break;
        case Column::cname: v = r.cname ? text_value(r.cname) : null_value(); break;
        case Column::domain: v = optional_text(r.domain); break;
        case Column::demangled_name: {
          auto d = scan.demangled_name(r, scratch);
          v = d ? text_value(*d) : null_value();
          break;
        }
        case Column::args:
        case Column::event: break;  // never a key (the constructor refused them)
      }
    }
  }
  std::vector<uint32_t> order(n);
  for (size_t g = 0; g < n; ++g) order[g] = static_cast<uint32_t>(g);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    for (size_t i = 0; i < k; ++i) {
      const SortValue &x = values[a * k + i], &y = values[b * k + i];
      if (x < y) return !descending[i];
      if (y < x) return static_cast<bool>(descending[i]);
    }
    return false;
  });
  return order;
}

void GroupedRows::add(const TraceRow& r) {
  rowid_.push_back(r.rowid);
  if (uses(Column::kind) || uses(Column::derived)) kind_.push_back(static_cast<uint8_t>(r.kind));
  if (uses(Column::dur) || uses(Column::tid) || uses(Column::device_id) || uses(Column::stream_id) ||
      uses(Column::correlation_id) || uses(Column::global_tid) || uses(Column::global_pid) ||
      uses(Column::demangled_name))
    flags_.push_back(flags_of(r));
  if (uses(Column::name)) name_.push_back(intern(r.name));
  if (uses(Column::ts)) ts_.push_back(r.ts);
  if (uses(Column::dur)) dur_.push_back(r.dur);
  if (uses(Column::pid)) pid_.push_back(r.pid);
  if (uses(Column::tid)) tid_.push_back(r.tid);
  if (uses(Column::process_name)) process_name_.push_back(r.process_name);
  if (uses(Column::thread_name)) track_.push_back(r.track);
  if (uses(Column::device_id)) device_id_.push_back(r.device_id);
  if (uses(Column::stream_id)) stream_id_.push_back(r.stream_id);
  if (uses(Column::correlation_id)) correlation_id_.push_back(r.correlation_id);
  if (uses(Column::global_tid) || uses(Column::global_pid)) global_tid_.push_back(r.global_tid);
  if (uses(Column::lane)) lane_.push_back(r.lane);
  if (uses(Column::schema)) schema_.push_back(r.schema);
  if (uses(Column::cname)) cname_.push_back(r.cname);
  if (uses(Column::domain)) domain_.push_back(r.domain);
  if (uses(Column::demangled_name)) {
    demangled_id_.push_back(r.demangled_id);
    report_.push_back(r.report);
  }
}

const TraceRow& GroupedRows::row(size_t i) {
  if (i == built_) return row_;  // SQLite reads a row's columns one call each
  built_ = i;
  const uint32_t n = order_[i];
  row_ = prototypes_[group_[n]];
  row_.rowid = rowid_[n];
  if (!kind_.empty()) row_.kind = static_cast<Kind>(kind_[n]);
  if (!flags_.empty()) set_flags(row_, flags_[n]);
  if (!name_.empty()) row_.name = texts_[name_[n]];
  if (!ts_.empty()) row_.ts = ts_[n];
  if (!dur_.empty()) row_.dur = dur_[n];
  if (!pid_.empty()) row_.pid = pid_[n];
  if (!tid_.empty()) row_.tid = tid_[n];
  if (!process_name_.empty()) row_.process_name = process_name_[n];
  if (!track_.empty()) row_.track = track_[n];
  if (!device_id_.empty()) row_.device_id = device_id_[n];
  if (!stream_id_.empty()) row_.stream_id = stream_id_[n];
  if (!correlation_id_.empty()) row_.correlation_id = correlation_id_[n];
  if (!global_tid_.empty()) row_.global_tid = global_tid_[n];
  if (!lane_.empty()) row_.lane = lane_[n];
  if (!schema_.empty()) row_.schema = schema_[n];
  if (!cname_.empty()) row_.cname = cname_[n];
  if (!domain_.empty()) row_.domain = domain_[n];
  if (!demangled_id_.empty()) {
    row_.demangled_id = demangled_id_[n];
    row_.report = report_[n];
  }
  return row_;
}

}  // namespace nsystrace
