// A trace_events scan's rows handed over grouped, for a GROUP BY over trace_events columns: SQLite then needs no
// sort (on a big profile, sorting millions of rows by name costs more than reading them). The scan runs in time
// order as always, so every row has exactly the values it has in any other query (lanes and tracks included);
// what is kept of a row is the columns the query reads: the grouping keys once per group, the others per row.
#pragma once
#include <cstdint>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/timeline/scan_plan.h"
#include "src/timeline/timeline_scan.h"

namespace nsystrace {

class GroupedRows {
 public:
  // Reads `scan` to its end. keys: the GROUP BY columns, each ascending or descending; used: the columns the query
  // reads (colUsed bits; never args or event). The groups come sorted by their keys' values as SQLite orders them
  // (NULL first, then integers, then text by bytes), a group's rows in the scan's order.
  // db: the scan's connection, polled for sqlite3_interrupt() as the rows are read (SQLite's own loop, which
  // checks it between rows, waits for the whole scan here): then an Error, "interrupted".
  GroupedRows(sqlite3* db, TimelineScan& scan, const std::vector<Column>& keys, const std::vector<bool>& descending,
              uint64_t used);
  size_t size() const { return order_.size(); }
  // Row i of the grouped order, with the fields of the used columns (and the rowid) set.
  const TraceRow& row(size_t i);

 private:
  bool uses(Column c) const;
  void add(const TraceRow& r);
  // The groups' numbers in the order of their keys' values.
  std::vector<uint32_t> sorted_groups(TimelineScan& scan, const std::vector<bool>& descending) const;
  uint32_t intern(std::string_view text);  // the text's number in texts_

  uint64_t used_;
  std::vector<Column> keys_;
  bool key_[64] = {};  // by Column
  // Texts the rows refer to (names), each once; a deque keeps them in place as it grows.
  std::deque<std::string> texts_;
  std::unordered_map<std::string_view, uint32_t> text_ids_;
  // Groups: by the encoded values of their keys; each keeps its first row (keys and all) as its prototype.
  std::unordered_map<std::string, uint32_t> group_of_key_;
  std::vector<TraceRow> prototypes_;
  std::string key_scratch_;
  // Per row, in scan order: its group, its rowid, and the non-key columns the query reads.
  std::vector<uint32_t> group_;
  std::vector<int64_t> rowid_;
  std::vector<uint8_t> kind_;
  std::vector<uint8_t> flags_;  // the has_* bits of TraceRow
  std::vector<uint32_t> name_;  // into texts_
  std::vector<int64_t> ts_, dur_, tid_, device_id_, stream_id_, correlation_id_, global_tid_, demangled_id_;
  std::vector<int32_t> pid_;
  std::vector<uint32_t> lane_;
  std::vector<int32_t> report_;
  std::vector<const Track*> track_;
  std::vector<const std::string*> process_name_, schema_, domain_;
  std::vector<const char*> cname_;
  std::vector<uint32_t> order_;  // row numbers, grouped
  TraceRow row_;
  size_t built_ = SIZE_MAX;  // the row row_ holds
};

}  // namespace nsystrace
