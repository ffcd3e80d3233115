// Interning for the Perfetto writer: each distinct string gets an iid (1, 2, ... in order of first sight), looked up
// once per event for its name, its category and every arg's name and string value. This is the writer's hottest
// lookup, so it is an open-addressing table over string_views into an arena of its own (no node per string, no
// std::string built per lookup, one cheap hash), with a table in front of it by the export's string ids
// (StringIds numbers every registered string: most names need no hashing at all).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace nsystrace {

class StringInterner {
 public:
  StringInterner() { slots_.resize(kInitialSlots); }

  // The iid of s, and whether this call gave it (the caller then writes the string into the trace).
  std::pair<uint64_t, bool> intern(std::string_view s) {
    const char* stored;
    return intern(s, &stored);
  }

  // The same for strings that mostly come from the same few addresses (arg names: literals of the readers), with a
  // cache by address in front: an entry is used only when its stored text still equals s, so a reused buffer with
  // other text simply misses.
  std::pair<uint64_t, bool> intern_by_address(std::string_view s) {
    Recent& r = recent_[(reinterpret_cast<uintptr_t>(s.data()) >> 3) % kRecent];
    if (r.data == s.data() && r.size == s.size() && std::memcmp(r.stored, s.data(), s.size()) == 0)
      return {r.iid, false};
    const char* stored;
    auto result = intern(s, &stored);
    r = Recent{s.data(), stored, static_cast<uint32_t>(s.size()), static_cast<uint32_t>(result.first)};
    return result;
  }

 private:
  std::pair<uint64_t, bool> intern(std::string_view s, const char** stored) {
    uint64_t h = hash(s);
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.iid == 0) {
        slot = Slot{h, ++count_, static_cast<uint32_t>(s.size()), store(s)};
        *stored = slot.data;
        by_iid_.push_back(slot.data);
        if (count_ * 4 > slots_.size() * 3) grow();  // at most 3/4 full
        return {count_, true};
      }
      if (slot.hash == h && slot.size == s.size() && std::memcmp(slot.data, s.data(), s.size()) == 0) {
        *stored = slot.data;
        return {slot.iid, false};
      }
    }
  }

 public:

  // The same for a string the export registered as id `string_id` of report `report` (its text is s): a direct
  // index, falling back to the content for ids too large to index (never in practice: StringIds ids are dense).
  std::pair<uint64_t, bool> intern_registered(int report, int64_t string_id, std::string_view s) {
    if (string_id < 0 || string_id >= kMaxIndexedId || report < 0) return intern(s);
    if (static_cast<size_t>(report) >= by_id_.size()) by_id_.resize(report + 1);
    std::vector<uint32_t>& ids = by_id_[report];
    if (static_cast<size_t>(string_id) >= ids.size()) ids.resize(std::max<size_t>(string_id + 1, ids.size() * 2));
    uint32_t& cached = ids[string_id];
    if (cached != 0) return {cached, false};
    auto result = intern(s);
    cached = static_cast<uint32_t>(result.first);
    return result;
  }

  size_t size() const { return count_; }
  // The interner's copy of the text of iid (valid for the interner's life).
  const char* stored(uint64_t iid) const { return by_iid_[iid - 1]; }

 private:
  static constexpr size_t kInitialSlots = 1024;
  static constexpr size_t kRecent = 64;
  struct Recent {
    const char* data = nullptr;    // where the text was looked up from
    const char* stored = nullptr;  // its copy in the arena
    uint32_t size = 0, iid = 0;
  };
  Recent recent_[kRecent];
  std::vector<const char*> by_iid_;  // the stored text of iid i + 1
  static constexpr int64_t kMaxIndexedId = int64_t{1} << 24;
  static constexpr size_t kArenaChunk = 1 << 16;
  struct Slot {
    uint64_t hash = 0;
    uint32_t iid = 0;  // 0: empty
    uint32_t size = 0;
    const char* data = nullptr;
  };

  // Eight bytes at a time, multiply and fold (the words of the string, then its length): strings here are short
  // names, and the table only needs the low bits spread.
  static uint64_t hash(std::string_view s) {
    const char* p = s.data();
    size_t n = s.size();
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      h = (h ^ w) * 0x94d049bb133111ebull;
    }
    return h ^ (h >> 29);
  }

  const char* store(std::string_view s) {
    if (s.size() > kArenaChunk / 4) {  // a long string gets a block of its own
      large_.push_back(std::make_unique<char[]>(s.size()));
      std::memcpy(large_.back().get(), s.data(), s.size());
      return large_.back().get();
    }
    if (chunks_.empty() || used_ + s.size() > kArenaChunk) {
      chunks_.push_back(std::make_unique<char[]>(kArenaChunk));
      used_ = 0;
    }
    char* at = chunks_.back().get() + used_;
    std::memcpy(at, s.data(), s.size());
    used_ += s.size();
    return at;
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.iid == 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].iid != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  uint32_t count_ = 0;
  std::vector<std::unique_ptr<char[]>> chunks_, large_;
  size_t used_ = 0;  // in chunks_.back()
  std::vector<std::vector<uint32_t>> by_id_;  // by report, by string id: the iid, 0 until seen
};

}  // namespace nsystrace
