// The CUDA API call each row with a correlation id came from: the call that launched a kernel, memcpy, memset or
// graph, that recorded a CUDA event, that synchronized, that allocated. trace_events' hidden columns call_id,
// call_ts, call_dur, call_name, call_pid, call_tid and call_global_tid read it, so "the launch of this kernel" is a
// column, not a join every query and recipe writes again.
//
// The call is the cuda_api row with the row's correlation id in the row's process (correlation ids are numbered per
// process). When an export records two calls for one launch (cudaLaunchKernel and cudaLaunchKernel_v7000, about
// 2022), the call is the earliest: by start, then the longest, then the name, then the first stored. The calls are
// the cuda_api reader's rows, so their times, names and rowids are trace_events' own.
//
// Built on first use, per report, by one pass over its calls: 48 bytes a call, sorted by (process, correlation id).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/profile_catalog.h"

namespace nsystrace {

class LaunchCalls {
 public:
  struct Call {
    int64_t global_tid = 0;
    int64_t correlation = 0;
    int64_t ts = 0;   // as trace_events has it: on the scan's clock (the report's times + clock_offset)
    int64_t dur = 0;
    int64_t name = 0;  // a StringIds id (>= 0), or -(index into names_ + 1) for a name not from StringIds
    int64_t source_rowid = 0;
  };

  // Reads the cuda_api rows of `catalog`'s report on db, its times shifted by clock_offset as a scan of the
  // connection's reports shifts them (TimelineScan::align_reports), so that the earliest call is the earliest as
  // trace_events orders them, saturated times included.
  static std::shared_ptr<const LaunchCalls> build(sqlite3* db, std::shared_ptr<const ProfileCatalog> catalog,
                                                  int64_t clock_offset);
  int64_t clock_offset() const { return clock_offset_; }

  // The call of `correlation` in the process of `global_id` (a globalTid or globalPid), or nullptr.
  const Call* find(int64_t global_id, int64_t correlation) const;
  std::string_view name(const Call& call, std::string& scratch) const;
  // The call's rowid in its table (CUPTI_ACTIVITY_KIND_RUNTIME) tagged as trace_events tags it, without its report.
  int64_t rowid(const Call& call) const { return (call.source_rowid << 5) | tag_; }

 private:
  std::shared_ptr<const ProfileCatalog> catalog_;  // the names' strings
  std::vector<Call> calls_;                        // by (process, correlation), one per key
  std::vector<std::string> names_;                 // names not from StringIds (an unnamed call's)
  int tag_ = 0;
  int64_t clock_offset_ = 0;
};

}  // namespace nsystrace
