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
    // Decided at the loop's head, with the locals the range reads as they are there.
    bool once = false;
    if constexpr (requires { dom_.runs_at_least_once(*this, n, it); })
      once = dom_.runs_at_least_once(*this, n, it);
    if constexpr (requires { dom_.loop_begin(*this, n, it); }) dom_.loop_begin(*this, n, it);
    Env saved = env();
    if (!expand_loop(n, it, saved)) {
      if constexpr (requires { dom_.loop_variable(*this, n, it); })
        bind_at(n, nd.a, dom_.loop_variable(*this, n, it));
      else
        bind_at(n, nd.a, it);
      widen_carried(nd.c);
      eval(nd.c);
      // A loop that runs at least once leaves, in each local its body assigns on every
      // iteration, the body's value: the value before the loop is not one it can end with.
      std::vector<std::pair<std::string, Value>> last;
      if (once && !stopped())
        for (const auto& name : assigned_every_iteration(nd.c))
          if (const Value* v = env().find(name)) last.emplace_back(name, *v);
      merge_loop(saved);
      for (auto& entry : last)  // no structured binding: clang refuses one in `requires`
        if (const Value* before = saved.find(entry.first)) {
          Value& v = entry.second;
          if constexpr (requires { dom_.loop_exit(*before, v); })
            env().set(entry.first, dom_.loop_exit(*before, v));
          else
            env().set(entry.first, std::move(v));
        }
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
    if (l.kind == Kind::Path && l.is_identifier()) out.emplace_back(l.str);
  }
  if (nd.kind == Kind::MethodCall && option_mutator(nd.str)) {  // `opt.take()`, `opt.insert(v)`
    const rust::Node& r = b[b.peel(nd.a, {Kind::Paren})];
    if (r.kind == Kind::Path && r.is_identifier()) out.emplace_back(r.str);
  }
  for (NodeId k : {nd.a, nd.b, nd.c})
    assigned_names(k, out, depth + 1);
  for (NodeId k : b.kids_view(n))
    assigned_names(k, out, depth + 1);
}

// The locals loop body `body_node` assigns on every iteration that reaches its end: `x = e`
// statements of the body block itself (not inside an `if`, `match`, closure or nested loop) to a
// name no earlier `let` of the block binds. None when a `break` or `continue` may end an
// iteration (or the loop) before them.
template <class D>
std::vector<std::string> Engine<D>::assigned_every_iteration(NodeId body_node) const {
  std::vector<std::string> out;
  const rust::Body& b = body();
  if (body_node == rust::kNone || b[body_node].kind != Kind::Block ||
      may_end_early(body_node, false, 0))
    return out;
  std::vector<std::string> bound;  // names the block's own `let`s bound so far
  for (NodeId s : b.kids_view(body_node)) {
    const rust::Node& sn = b[s];
    if (sn.kind == Kind::Let) {
      pattern_names(sn.a, bound, 0);
      continue;
    }
    NodeId e = sn.kind == Kind::ExprStmt ? sn.a : s;
    if (e == rust::kNone || b[e].kind != Kind::Assign || b[e].a == rust::kNone) continue;
    const rust::Node& l = b[b[e].a];
    if (l.kind != Kind::Path || !l.is_identifier()) continue;
    std::string name(l.str);
    if (std::find(bound.begin(), bound.end(), name) == bound.end() &&
        std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(std::move(name));
  }
  return out;
}

// Whether a `break` or `continue` under `n` may leave the loop whose body holds it: an unlabeled
// one outside a nested loop (`nested`: inside one), or any labeled one. Closures are their own.
template <class D>
bool Engine<D>::may_end_early(NodeId n, bool nested, int depth) const {
  if (n == rust::kNone) return false;
  if (depth > 256) return true;
  const rust::Body& b = body();
  const rust::Node& nd = b[n];
  if (nd.kind == Kind::Closure) return false;
  if (nd.kind == Kind::Break || nd.kind == Kind::Continue) {
    if (!nd.str.empty() || !nested) return true;
  }
  bool inner = nested || nd.kind == Kind::For || nd.kind == Kind::While || nd.kind == Kind::Loop;
  for (NodeId k : {nd.a, nd.b, nd.c})
    if (may_end_early(k, inner, depth + 1)) return true;
  for (NodeId k : b.kids_view(n))
    if (may_end_early(k, inner, depth + 1)) return true;
  return false;
}

template <class D>
void Engine<D>::pattern_names(NodeId pat, std::vector<std::string>& out, int depth) const {
  if (pat == rust::kNone || depth > 64) return;
  const rust::Body& b = body();
  const rust::Node& p = b[pat];
  if (p.kind == Kind::PIdent) out.emplace_back(p.str);
  pattern_names(p.a, out, depth + 1);
  for (NodeId k : b.kids_view(pat))
    pattern_names(k, out, depth + 1);
}

// One symbolic iteration, then every name the loop could have changed is the domain's merge of
// its value before and after; names bound inside the loop are gone.
template <class D>
void Engine<D>::merge_loop(const Env& before) {
  env().merge_from(before, [&](const Value& b, const Value& a) { return dom_.loop_merge(b, a); });
}

}  // namespace cg::analysis::interp
