#pragma once
// Engine<Domain>'s loops (included by engine_impl.hpp): one symbolic iteration, or the domain's
// expansion of a `for` over known values; the locals a loop carries widened before and merged
// after.
#include <algorithm>
#include <string>
#include <vector>

namespace cg::analysis::interp {

template <class D>
typename Engine<D>::Value Engine<D>::eval_loop(NodeId n) {
  const rust::Node& nd = body()[n];
  if (nd.kind == Kind::For) {
    Value it = eval(nd.b);
    if constexpr (requires { dom_.loop_begin(*this, n, it); }) dom_.loop_begin(*this, n, it);
    Env saved = env();
    if (!expand_loop(n, it, saved)) {
      if constexpr (requires { dom_.loop_variable(*this, n, it); })
        bind_at(n, nd.a, dom_.loop_variable(*this, n, it));
      else
        bind_at(n, nd.a, it);
      widen_carried(nd.c);
      eval(nd.c);
      merge_loop(saved);
    }
  } else {
    NodeId cond = nd.kind == Kind::While ? nd.a : rust::kNone;
    NodeId loop_body = nd.kind == Kind::While ? nd.b : nd.a;
    Value c = eval(cond);
    if constexpr (requires { dom_.loop_begin(*this, n, c); }) dom_.loop_begin(*this, n, c);
    Env saved = env();
    widen_carried(loop_body);
    eval(loop_body);
    merge_loop(saved);
  }
  if constexpr (requires { dom_.loop_end(*this, n); }) dom_.loop_end(*this, n);
  return {};
}

// A `for` the domain expands: its body once per value, the pattern bound in a scope of its own,
// locals carried from one iteration to the next. False when not expanded, or when the domain
// undid the expansion (the locals are then as `before`).
template <class D>
bool Engine<D>::expand_loop(NodeId n, const Value& iter, const Env& before) {
  if constexpr (requires { dom_.expand(*this, n, iter); }) {
    std::optional<std::vector<Value>> vals = dom_.expand(*this, n, iter);
    if (!vals) return false;
    const rust::Node& nd = body()[n];
    for (std::size_t i = 0; i < vals->size(); ++i) {
      open_scope();
      bind_at(n, nd.a, (*vals)[i]);
      eval(nd.c);
      close_scope();
      if constexpr (requires { dom_.iterated(*this, n, i); }) {
        if (!dom_.iterated(*this, n, i)) {
          env() = before;
          return false;
        }
      }
    }
    return true;
  } else {
    return false;
  }
}

template <class D>
void Engine<D>::widen_carried(NodeId body_node) {
  if constexpr (requires(Value & v) { dom_.widen(v); }) {
    if (body_node == rust::kNone) return;
    auto key = std::make_pair(&body(), body_node);
    auto it = carried_.find(key);
    if (it == carried_.end()) {
      std::vector<std::string> names;
      assigned_names(body_node, names, 0);
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      it = carried_.emplace(key, std::move(names)).first;
    }
    for (const auto& name : it->second)
      if (Value* v = env().find_mut(name)) dom_.widen(*v);
  }
}

template <class D>
void Engine<D>::assigned_names(NodeId n, std::vector<std::string>& out, int depth) const {
  if (n == rust::kNone || depth > 256) return;
  const rust::Body& b = body();
  const rust::Node& nd = b[n];
  if (nd.kind == Kind::Assign || nd.kind == Kind::CompoundAssign) {
    const rust::Node& l = b[nd.a];
    if (l.kind == Kind::Path && l.syntax == "identifier") out.emplace_back(l.str);
  }
  if (nd.kind == Kind::MethodCall && option_mutator(nd.str)) {  // `opt.take()`, `opt.insert(v)`
    const rust::Node& r = b[b.peel(nd.a, {Kind::Paren})];
    if (r.kind == Kind::Path && r.syntax == "identifier") out.emplace_back(r.str);
  }
  for (NodeId k : {nd.a, nd.b, nd.c})
    assigned_names(k, out, depth + 1);
  for (NodeId k : b.kids_view(n))
    assigned_names(k, out, depth + 1);
}

// One symbolic iteration, then every name the loop could have changed is the domain's merge of
// its value before and after; names bound inside the loop are gone.
template <class D>
void Engine<D>::merge_loop(const Env& before) {
  env().merge_from(before, [&](const Value& b, const Value& a) { return dom_.loop_merge(b, a); });
}

}  // namespace cg::analysis::interp
