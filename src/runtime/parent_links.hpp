#pragma once
// The `parent` links of one record kind of a runtime/4 trace (operations name operations, module
// scopes name module scopes), resolved whatever order the file lists them in, in memory bounded by
// what is open at once rather than by events.
//
// First pass (every record, in file order): the writer lists a record when it ends, so a child
// normally precedes its parent, and a parent is resolved when its own line comes. What is still
// pending at the end is a parent listed before some of its children (overlapping scopes, a
// reordered or hand-written file) or never listed at all (still open at the end, or a wrong id).
//
// Second pass (only then, over the whole file again): those parents are tracked. It sums the time
// of the children listed after their parent (TraceAggregate subtracts it on a re-read, so self
// times are the same in any order), finds which were never listed, and finds parent cycles (`a`
// names `b`, `b` names `a`, or longer): every cycle has a record listed after its parent, and the
// records below one — its subtree so far — are connected through the tracked ones, so a union-find
// over the tracked records sees the cycle close on the line that closes it.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/aggregate.hpp"

namespace cg::runtime {

class ParentLinks {
 public:
  // `what` names the record kind in messages: "operation", "module scope".
  explicit ParentLinks(const char* what) : what_(what) {}

  // One record [start, end) naming `parent` (or none, never itself), on `line`. Throws
  // RecordError, in the second pass, for a record that closes a parent cycle.
  void add(std::string_view id, std::optional<std::string_view> parent, std::uint64_t start,
           std::uint64_t end, std::uint64_t line);

  // After the first pass: some parent is still pending, so a second pass must run.
  bool needs_second_pass() const { return !pending_.empty(); }
  // Starts the second pass: the pending parents become the tracked records. Past `max_tracked`
  // of them the read fails with std::length_error (a limit, like the id set's).
  void begin_second_pass(std::size_t max_tracked);

  // Parents with a child whose interval does not lie inside theirs: such a parent's self time
  // (its duration minus its children's) is understated by the part outside.
  std::uint64_t not_nested() const { return not_nested_; }
  // Second pass: time of the children listed after their parent, by the parent's event id.
  std::unordered_map<std::string, std::uint64_t> later_children_ns() const;
  // Second pass: parents never listed, with how many children name them (sorted by id).
  struct Missing {
    std::string parent;
    std::string first_child;
    std::uint64_t first_child_line = 0;
    std::uint64_t children = 0;
  };
  std::vector<Missing> never_listed() const;

 private:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  struct Pending {
    std::uint64_t children = 0;
    std::uint64_t first_start = kNone, last_end = 0;  // over the children listed before it
    std::string first_child;
    std::uint64_t first_child_line = 0;
    std::size_t below = kNone;  // second pass: a tracked record among those children's subtrees
  };
  struct Tracked {
    std::string id;
    std::size_t up = 0;  // union-find
    bool listed = false;
    std::uint64_t line = 0, start = 0, end = 0;
    std::uint64_t later_ns = 0;  // children listed after it
    bool outside = false;        // one of those lies partly outside it
    Missing missing;             // first pass: the children still waiting for it at the end
  };
  std::size_t find(std::size_t x);
  void join(std::size_t a, std::size_t b);

  const char* what_;
  bool second_ = false;
  StringMap<Pending> pending_;
  StringMap<std::size_t> tracked_index_;
  std::vector<Tracked> tracked_;
  std::uint64_t not_nested_ = 0;
};

}  // namespace cg::runtime
