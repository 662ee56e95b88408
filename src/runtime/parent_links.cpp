#include "runtime/parent_links.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/trace_validator.hpp"

namespace cg::runtime {

std::size_t ParentLinks::find(std::size_t x) {
  while (tracked_[x].up != x) {
    tracked_[x].up = tracked_[tracked_[x].up].up;
    x = tracked_[x].up;
  }
  return x;
}

void ParentLinks::join(std::size_t a, std::size_t b) {
  tracked_[find(a)].up = find(b);
}

void ParentLinks::add(std::string_view id, std::optional<std::string_view> parent,
                      std::uint64_t start, std::uint64_t end, std::uint64_t line) {
  // The records below this one that the file listed before it.
  std::size_t below = kNone;
  if (auto it = pending_.find(id); it != pending_.end()) {
    const Pending& p = it->second;
    if (!second_ && (p.first_start < start || p.last_end > end)) ++not_nested_;
    below = p.below;
    pending_.erase(it);
  }
  if (second_) {
    if (auto t = tracked_index_.find(id); t != tracked_index_.end()) {
      Tracked& n = tracked_[t->second];
      n.listed = true;
      n.line = line;
      n.start = start;
      n.end = end;
      if (below != kNone) join(below, t->second);
      below = t->second;
    }
  }
  if (!parent) return;
  if (second_) {
    auto t = tracked_index_.find(*parent);
    if (t != tracked_index_.end() && tracked_[t->second].listed) {
      // A child listed after its parent.
      Tracked& p = tracked_[t->second];
      const std::uint64_t duration = end - start;
      p.later_ns = p.later_ns > kNone - duration ? kNone : p.later_ns + duration;
      if ((start < p.start || end > p.end) && !p.outside) {
        p.outside = true;
        ++not_nested_;
      }
      if (below != kNone && find(below) == find(t->second)) {
        throw RecordError("parent cycle: " + std::string(what_) + " `" + std::string(id) +
                          "` names parent `" + p.id + "` (line " + std::to_string(p.line) +
                          "), which is itself below `" + std::string(id) +
                          "` through its own parents; a parent encloses its child, so the links "
                          "cannot loop");
      }
      if (below != kNone) join(below, t->second);
      return;
    }
  }
  if (second_ && below == kNone) return;  // the second pass carries tracked records only
  auto [it, fresh] = pending_.try_emplace(std::string(*parent));
  Pending& p = it->second;
  if (second_) {
    if (p.below == kNone) {
      p.below = below;
    } else {
      join(below, p.below);
    }
    return;
  }
  if (p.children++ == 0) {
    p.first_child = std::string(id);
    p.first_child_line = line;
  }
  p.first_start = std::min(p.first_start, start);
  p.last_end = std::max(p.last_end, end);
}

void ParentLinks::begin_second_pass(std::size_t max_tracked) {
  if (pending_.size() > max_tracked) {
    throw std::length_error("trace has more than " + std::to_string(max_tracked) + " " + what_ +
                            " parents listed before their children or never listed (the "
                            "reader's limit for resolving them)");
  }
  for (auto& [parent, p] : pending_) {
    const std::size_t i = tracked_.size();
    tracked_index_.emplace(parent, i);
    Tracked t;
    t.id = parent;
    t.up = i;
    t.missing = {parent, std::move(p.first_child), p.first_child_line, p.children};
    tracked_.push_back(std::move(t));
  }
  pending_.clear();
  second_ = true;
}

std::unordered_map<std::string, std::uint64_t> ParentLinks::later_children_ns() const {
  std::unordered_map<std::string, std::uint64_t> out;
  for (const auto& t : tracked_)
    if (t.listed && t.later_ns > 0) out.emplace(t.id, t.later_ns);
  return out;
}

std::vector<ParentLinks::Missing> ParentLinks::never_listed() const {
  std::vector<Missing> out;
  for (const auto& t : tracked_)
    if (!t.listed) out.push_back(t.missing);
  std::sort(out.begin(), out.end(),
            [](const Missing& a, const Missing& b) { return a.parent < b.parent; });
  return out;
}

}  // namespace cg::runtime
