#pragma once
// Uniqueness of event ids across a whole trace (spec §1.5) in memory that does not grow with the
// trace for the ids profilers write.
//
// Design (exact, two-level):
// - Ids shaped `<prefix>-<step>-<counter>` (the seed's and runtime/4's `{phase}-op-{step}-{n}`,
//   `{phase}-edge-{step}-{n}`) are checked by one bit per (prefix, counter) in a paged bitmap.
//   Both producers draw every counter once per session, so a first sight of (prefix, counter)
//   proves the id new; memory is one bit per counter value (≈1.2 MiB for 10 M events), capped
//   at 16 MiB of pages (sparse counters then fall back to fingerprints).
// - Every other id is remembered as a 64-bit fingerprint in an open-addressing set (8–16 bytes
//   per id; such ids come from hand-written or legacy traces, which are small).
// - A repeated (prefix, counter) or fingerprint is only a *suspect* (`train-op-1-5` and
//   `train-op-2-5` share a counter; two ids may share a fingerprint). The reader then re-reads
//   the file once and compares the full text of suspect ids only, so the verdict is exact and no
//   collision rate has to be accepted. Suspects are rare, so the second pass almost never runs.
// - Memory is bounded, never by dropping ids: past `Limits::remembered` fingerprints or
//   `Limits::suspects` suspect keys, `insert` throws std::length_error saying which limit and the
//   count (the reader turns it into an error naming the file and line, in lenient mode too).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cg::runtime {

class EventIdSet {
 public:
  struct Limits {
    // Ids not shaped `<prefix>-<step>-<counter>` (or past the page budget), 8 bytes each in a
    // table at most half full: 4 Mi ids ≈ 64 MiB.
    std::size_t remembered = std::size_t{1} << 22;
    // Distinct keys that repeated (true duplicates or shared counters), each compared in full by
    // the reader's second pass.
    std::size_t suspects = std::size_t{1} << 20;
  };
  EventIdSet() : EventIdSet(Limits{}) {}
  explicit EventIdSet(Limits limits);
  ~EventIdSet();
  EventIdSet(const EventIdSet&) = delete;
  EventIdSet& operator=(const EventIdSet&) = delete;

  void insert(std::string_view id);
  bool has_suspects() const { return !suspects_.empty(); }
  // True when `id` may repeat an earlier one and must be compared in full (second pass).
  bool is_suspect(std::string_view id) const;
  std::size_t memory_bytes() const;
  std::size_t remembered() const { return table_used_; }

 private:
  struct Prefix;
  // The key under which `id` is tracked: (prefix index, counter) or a fingerprint.
  std::uint64_t key_of(std::string_view id, bool* shaped) const;

  std::vector<std::unique_ptr<Prefix>> prefixes_;
  // Bitmap pages are 4 KiB for 32 Ki counters; sparse counters (ids that merely look shaped)
  // would cost a page each, so after 4,096 pages (16 MiB) new pages are refused and such ids are
  // fingerprinted instead. Pages are never freed, so an id's route stays the same for the
  // second pass.
  std::size_t page_budget_ = 4096;
  std::vector<std::uint64_t> table_;  // fingerprints of unshaped ids; 0 = empty slot
  std::size_t table_used_ = 0;
  std::unordered_set<std::uint64_t> suspects_;
  Limits limits_;

  void add_suspect(std::uint64_t key);
};

}  // namespace cg::runtime
