#pragma once
// A frame's locals for the interpreter (engine.hpp): name -> value, the values shared between
// copies of the environment and copied on the first write through one of them.
//
// The engine copies the environment at every undecided `if`/`match`/split `let` (each arm starts
// from the state before it) and joins the arms' environments after. With shared values a copy
// costs one pointer per name instead of a copy of every value, and a join skips the names no arm
// rebound: both sides still hold the same value, and the join of a value with itself is that
// value.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cg::analysis::interp {

template <class Value>
class Locals {
 public:
  // A value as held: shared between environments, never changed while shared. Null: unbound.
  using Ptr = std::shared_ptr<Value>;

  const Value* find(const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second.get();
  }
  // `name`'s value, this environment's own copy, to change in place; nullptr when unbound.
  Value* find_mut(const std::string& name) {
    auto it = map_.find(name);
    if (it == map_.end()) return nullptr;
    if (it->second.use_count() > 1) it->second = std::make_shared<Value>(*it->second);
    return it->second.get();
  }
  void set(const std::string& name, Value v) { map_[name] = std::make_shared<Value>(std::move(v)); }
  // The held value (shared), and setting one back (null erases): what a scope's undo log keeps.
  Ptr held(const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second;
  }
  void restore(const std::string& name, Ptr p) {
    if (p)
      map_[name] = std::move(p);
    else
      map_.erase(name);
  }
  std::size_t size() const { return map_.size(); }

  // Every name of this environment also bound in `other` to another value gets
  // `join(other's, this one's)`.
  template <class F>
  void join_from(const Locals& other, F&& join) {
    for (auto& [name, p] : map_) {
      auto it = other.map_.find(name);
      if (it != other.map_.end() && it->second != p)
        p = std::make_shared<Value>(join(*it->second, *p));
    }
  }
  // Calls `fn(name, values)` for every name of this environment whose value differs in one of
  // `envs` (values: the ones bound in each of `envs`, in order); its result becomes the value.
  template <class F>
  void join_all(const std::vector<Locals>& envs, F&& fn) {
    for (auto& [name, p] : map_) {
      std::vector<const Value*> all;
      bool differs = false;
      for (const Locals& e : envs) {
        auto it = e.map_.find(name);
        if (it == e.map_.end()) continue;
        all.push_back(it->second.get());
        differs = differs || it->second != p;
      }
      if (differs) p = std::make_shared<Value>(fn(name, all));
    }
  }
  // After one symbolic loop iteration: the names of `before`, each `merge(before's, now's)` where
  // the loop rebound it; names bound inside the loop are gone.
  template <class F>
  void merge_from(const Locals& before, F&& merge) {
    std::map<std::string, Ptr> out;
    for (const auto& [name, p] : before.map_) {
      auto it = map_.find(name);
      if (it == map_.end() || it->second == p)
        out.emplace(name, p);
      else
        out.emplace(name, std::make_shared<Value>(merge(*p, *it->second)));
    }
    map_ = std::move(out);
  }

 private:
  std::map<std::string, Ptr> map_;
};

}  // namespace cg::analysis::interp
