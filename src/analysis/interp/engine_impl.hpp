#pragma once
// Engine<Domain>'s evaluation of lowered nodes (included by engine.hpp).
#include <string_view>

namespace cg::analysis::interp {

template <class D>
typename Engine<D>::Value Engine<D>::eval(NodeId n) {
  if (n == rust::kNone || !tick()) return {};
  if (nesting_ >= limits_.max_nesting) {
    Bound b;
    b.what = Bound::What::nesting;
    b.node = n;
    dom_.bound(*this, b);
    return {};
  }
  ++nesting_;
  struct Nest {
    int& d;
    ~Nest() { --d; }
  } nest{nesting_};
  return dispatch(n);
}

// The lowering cuts a tree deeper than its own bound into a childless Unsupported node of the
// kind it would have lowered: for the interpreter that is the nesting bound.
template <class D>
bool Engine<D>::truncated(const rust::Node& n) {
  return n.cut_at_depth();
}

template <class D>
typename Engine<D>::Value Engine<D>::dispatch(NodeId n) {
  const rust::Body& b = body();
  const rust::Node& nd = b[n];
  switch (nd.kind) {
    case Kind::Block:
      // `unsafe { .. }` / `async { .. }` run for their effects; their value is not followed.
      if (nd.flags & (rust::kUnsafe | rust::kAsync)) {
        eval_block(n);
        return {};
      }
      return eval_block(n);
    case Kind::Paren:
    case Kind::Ref:
    case Kind::Try:
    case Kind::Await:
      return eval(nd.a);
    case Kind::Cast:
      return eval_cast(n);
    case Kind::Unary:
      return dom_.unary(*this, n, eval(nd.a));
    case Kind::Lit:
      return dom_.literal(*this, n);
    case Kind::Path:
      return eval_path(n);
    case Kind::Field:
      return dom_.field(*this, n, eval(nd.a));
    case Kind::Call:
    case Kind::MethodCall:
      return eval_any_call(n);
    case Kind::Binary:
      if (!nd.is_binary_expression()) {  // a chain of `let` conditions
        eval(nd.a);
        eval(nd.b);
        return {};
      }
      {
        Value l = eval(nd.a);
        Value r = eval(nd.b);
        return dom_.binary(*this, n, std::move(l), std::move(r));
      }
    case Kind::If:
      return eval_if(n);
    case Kind::Match:
      return eval_match(n);
    case Kind::For:
    case Kind::While:
    case Kind::Loop:
      return eval_loop(n);
    case Kind::Closure:  // analyzed in a forked environment; the closure value is opaque
      return eval_closure(n);
    case Kind::Struct:
      return eval_struct(n);
    case Kind::Return:
      if constexpr (requires { dom_.returning(*this, n); }) dom_.returning(*this, n);
      if (nd.a != rust::kNone) {
        Value v = eval(nd.a);
        frame().returns.push_back(std::move(v));
      }
      return {};
    case Kind::Assign:
    case Kind::CompoundAssign:
      eval_assign(n);
      return {};
    case Kind::Index:
      return eval_index(n);
    case Kind::Tuple:
    case Kind::Array:
    case Kind::ArrayRepeat:
      return eval_aggregate(n);
    case Kind::Macro:
    case Kind::MacroStmt:
      return dom_.macro(*this, n);
    case Kind::LetCond:  // the condition's value is evaluated; its pattern binds nothing
      return eval(nd.b);
    case Kind::Break:
      eval(nd.a);
      return {};
    case Kind::ExprStmt:
      return eval(nd.a);
    case Kind::Unsupported:
      if (truncated(nd)) {
        Bound bd;
        bd.what = Bound::What::nesting;
        bd.node = n;
        dom_.bound(*this, bd);
        return {};
      }
      eval_kids(n);
      return {};
    default:  // struct literals, ranges, `()`, `continue`, items, patterns: nothing followed
      return {};
  }
}

// `x as T`: the domain's `cast` when it declares one, else `x`'s value.
template <class D>
typename Engine<D>::Value Engine<D>::eval_cast(NodeId n) {
  Value v = eval(body()[n].a);
  if constexpr (requires { dom_.cast(*this, n, std::move(v)); })
    return dom_.cast(*this, n, std::move(v));
  else
    return v;
}

// `a[i]`: the domain's `index` when it declares one, else the indexed value.
template <class D>
typename Engine<D>::Value Engine<D>::eval_index(NodeId n) {
  const rust::Node& nd = body()[n];
  Value v = eval(nd.a);
  Value i = eval(nd.b);
  if constexpr (requires { dom_.index(*this, n, std::move(v), std::move(i)); })
    return dom_.index(*this, n, std::move(v), std::move(i));
  else
    return v;
}

// A path: a local's value, else the domain's (`unbound` for a single name that is no local, when
// the domain declares it; nothing otherwise).
template <class D>
typename Engine<D>::Value Engine<D>::eval_path(NodeId n) {
  const rust::Node& nd = body()[n];
  if (!nd.is_identifier() && !nd.is_self()) return dom_.path(*this, n);
  if (const Value* v = lookup(std::string(nd.str))) return *v;
  if constexpr (requires { dom_.unbound(*this, n); }) return dom_.unbound(*this, n);
  return Value{};
}

// `x = v` rebinds a local (no undo entry: it outlives the block); `x += v` and assignments to
// fields or indexes only evaluate the right side.
template <class D>
void Engine<D>::eval_assign(NodeId n) {
  const rust::Body& b = body();
  const rust::Node& nd = b[n];
  Value r = eval(nd.b);
  const rust::Node& l = b[nd.a];
  const bool local = nd.kind == Kind::Assign && l.kind == Kind::Path && l.is_identifier();
  if constexpr (requires { dom_.assign(*this, n, std::move(r)); }) {
    std::optional<Value> v = dom_.assign(*this, n, std::move(r));
    if (local && v) env().set(std::string(l.str), std::move(*v));
  } else if (local) {
    env().set(std::string(l.str), std::move(r));
  }
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_aggregate(NodeId n) {
  const rust::Body& b = body();
  const rust::Node& nd = b[n];
  std::vector<Value> elems;
  if (nd.kind == Kind::ArrayRepeat) {
    elems.push_back(eval(nd.a));
    elems.push_back(eval(nd.b));
  } else {
    for (NodeId k : b.kids_view(n))
      elems.push_back(eval(k));
  }
  return dom_.aggregate(*this, n, std::move(elems));
}

// A closure: a value when the domain takes it as one, else its body analyzed in a forked
// environment (the value is nothing known).
template <class D>
typename Engine<D>::Value Engine<D>::eval_closure(NodeId n) {
  if constexpr (requires { dom_.closure(*this, n); }) {
    if (auto v = dom_.closure(*this, n)) return std::move(*v);
  }
  eval_forked(body()[n].a);
  return {};
}

// A struct literal: the domain's, when it has a `structure` member; else not evaluated.
template <class D>
typename Engine<D>::Value Engine<D>::eval_struct(NodeId n) {
  if constexpr (requires { dom_.structure(*this, n); })
    return dom_.structure(*this, n);
  else
    return {};
}

template <class D>
void Engine<D>::eval_forked(NodeId n) {
  Env saved = env();
  if constexpr (requires { dom_.body_begin(*this); }) dom_.body_begin(*this);
  eval(n);
  if constexpr (requires { dom_.body_end(*this, false); }) dom_.body_end(*this, false);
  env() = std::move(saved);
}

template <class D>
void Engine<D>::eval_kids(NodeId n) {
  for (NodeId k : body().kids_view(n))
    eval(k);
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_block(NodeId n) {
  // Names bound in the block go out of scope at its end; assignments to outer names persist.
  open_scope();
  const rust::Body& b = body();
  Value last = eval_stmts(b.kids_view(n), 0, b.tail(n), {});
  close_scope();
  return last;
}

// Statements [from, end) of a block whose tail is `tail`; the value of the last one. A `let` the
// domain splits binds nothing at once: its alternatives wait (`pending`, the block's own after
// `inherited`, those of an enclosing run of this block) until a statement names one of them.
template <class D>
typename Engine<D>::Value Engine<D>::eval_stmts(std::span<const NodeId> stmts, std::size_t from,
                                                NodeId tail,
                                                const std::vector<Pending>& inherited) {
  const rust::Body& b = body();
  Value last;
  std::vector<Pending> pending = inherited;
  const std::size_t own = pending.size();  // pending[own..]: split here, ended here
  auto end_own = [&] {
    if constexpr (requires { dom_.split_end(*this, tail); })
      for (std::size_t i = pending.size(); i-- > own;)
        dom_.split_end(*this, pending[i].let);
  };
  for (std::size_t k = from; k < stmts.size(); ++k) {
    const NodeId s = stmts[k];
    const rust::Node& st = b[s];
    if (st.cfg == rust::Tri::False || st.kind == Kind::Item) continue;
    if constexpr (requires { dom_.split(*this, s); }) {
      // A `let` binding again every name of a split of this block, its value not naming them
      // (`let packed = name_of(&a); .. let packed = name_of(&b);`): the old alternatives are
      // shadowed, no statement can reach them, so the split ends here instead of forking the rest.
      if (st.kind == Kind::Let && st.a != rust::kNone && st.b != rust::kNone)
        for (std::size_t i = pending.size(); i-- > own;) {
          const Pending& p = pending[i];
          if (!referring(st.b, {p}).empty()) continue;
          const bool covered = std::all_of(p.names.begin(), p.names.end(), [&](const auto& n) {
            return !referring(st.a, {Pending{p.let, {n}, {}}}).empty();
          });
          if (!covered) continue;
          if constexpr (requires { dom_.split_end(*this, p.let); }) dom_.split_end(*this, p.let);
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        }
      std::vector<std::size_t> refs = referring(s, pending);
      // A statement naming the alternatives of two splits, or one that may split again or
      // rebind a name of one: the rest of the block runs once per alternative of the first.
      if (refs.size() > 1 ||
          (refs.size() == 1 && (splittable(s) || rebinds(s, pending[refs[0]])))) {
        Value v = run_rest(stmts, k, tail, pending, refs[0]);
        end_own();
        return v;
      }
      if (refs.size() == 1) {
        last = fork_statement(pending[refs[0]], [&] { return eval_statement(stmts, k, tail); });
        continue;
      }
      if (st.kind == Kind::Let) {
        auto alts = dom_.split(*this, s);
        if (!alts.empty()) {
          Pending p{s, {}, std::move(alts)};
          for (const auto& [name, v] : p.alts.front())
            p.names.push_back(name);
          pending.push_back(std::move(p));
          last = Value{};
          continue;
        }
      }
    }
    last = eval_statement(stmts, k, tail);
  }
  end_own();
  return last;
}

// Statement stmts[k] (the tail when it is `tail`): its value, as the block's last statement.
template <class D>
typename Engine<D>::Value Engine<D>::eval_statement(std::span<const NodeId> stmts, std::size_t k,
                                                    NodeId tail) {
  const NodeId s = stmts[k];
  const rust::Node& st = body()[s];
  Value last;
  const bool unsure = st.cfg == rust::Tri::Unknown;
  if constexpr (requires { dom_.uncertain(*this, s, true); })
    if (unsure) dom_.uncertain(*this, s, true);
  if (st.kind == Kind::Let) {
    if constexpr (requires { dom_.around_let(*this, s, true); }) dom_.around_let(*this, s, true);
    eval_let(s);
    if constexpr (requires { dom_.around_let(*this, s, false); }) dom_.around_let(*this, s, false);
  } else if (st.kind == Kind::ExprStmt || st.kind == Kind::MacroStmt || s != tail) {
    Value v = eval(s);
    // Rust's rule, where the domain asks for it: a block's last statement, an `if`/`match`
    // without `;`, gives the block's value.
    if constexpr (requires { dom_.statement_value(*this, s); })
      if (k + 1 == stmts.size() && st.kind == Kind::ExprStmt && !(st.flags & rust::kSemicolon) &&
          dom_.statement_value(*this, s))
        last = std::move(v);
  } else {
    last = eval(s);
  }
  if constexpr (requires { dom_.uncertain(*this, s, false); })
    if (unsure) dom_.uncertain(*this, s, false);
  return last;
}

// The pending splits statement `s` names (by its source text: a name inside a macro counts).
template <class D>
std::vector<std::size_t> Engine<D>::referring(NodeId s, const std::vector<Pending>& pending) const {
  std::vector<std::size_t> out;
  if (pending.empty()) return out;
  const std::string_view text = body().source(s);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t i = 0; i < pending.size(); ++i)
    for (const std::string& name : pending[i].names) {
      bool found = false;
      for (std::size_t at = text.find(name); at != std::string_view::npos && !found;
           at = text.find(name, at + 1))
        found = (at == 0 || !word(text[at - 1])) &&
                (at + name.size() == text.size() || !word(text[at + name.size()]));
      if (found) {
        out.push_back(i);
        break;
      }
    }
  return out;
}

// A `let` whose value is an `if`, or a call of a function whose body may be one (the domain may
// split it).
template <class D>
bool Engine<D>::splittable(NodeId s) {
  const rust::Node& st = body()[s];
  if (st.kind != Kind::Let || st.b == rust::kNone) return false;
  if (body()[st.b].kind == Kind::If) return true;
  if constexpr (requires { dom_.splits_call(*this, st.b); })
    return body()[st.b].kind == Kind::Call && dom_.splits_call(*this, st.b);
  return false;
}

// A `let` or `=` of `s` binding a name of `p` again.
template <class D>
bool Engine<D>::rebinds(NodeId s, const Pending& p) const {
  const rust::Node& st = body()[s];
  NodeId target = st.kind == Kind::Let ? st.a : rust::kNone;
  if (st.kind == Kind::ExprStmt && st.a != rust::kNone && body()[st.a].kind == Kind::Assign)
    target = body()[st.a].a;
  if (target == rust::kNone) return false;
  Pending only = p;
  return !referring(target, {only}).empty();
}

// Runs `what()` once per alternative of `p` (its names bound, between the domain's branch
// hooks), each from the locals as before it. Names every alternative left with one value keep it;
// names they left with values the domain does not call one join the alternatives of `p`.
template <class D>
template <class F>
typename Engine<D>::Value Engine<D>::fork_statement(Pending& p, F&& what) {
  const NodeId let = p.let;
  const Env before = env();
  if constexpr (requires { dom_.fork_begin(*this, let); }) dom_.fork_begin(*this, let);
  std::vector<Value> vals;
  std::vector<Env> envs;
  const std::size_t count = p.alts.size();
  for (std::size_t i = 0; i < count; ++i) {
    env() = before;
    for (const auto& [name, v] : p.alts[i])
      env().set(name, v);
    dom_.branch_begin(*this, let, i, count);
    vals.push_back(what());
    dom_.branch_end(*this, let, i);
    for (const auto& [name, v] : p.alts[i])
      env().restore(name, before.held(name));
    envs.push_back(env());
  }
  env() = envs.front();
  std::vector<std::string> differ;
  env().join_all(envs, [&](const std::string& name, const std::vector<const Value*>& vs) {
    std::vector<Value> all;
    for (const Value* v : vs)
      all.push_back(*v);
    bool agree = false;  // a domain without `agree`: values that differ stay apart
    if constexpr (requires { dom_.agree(all); }) agree = dom_.agree(all);
    if (!agree) differ.push_back(name);
    return dom_.join(all);
  });
  for (const std::string& name : differ) {
    for (std::size_t i = 0; i < count; ++i) {
      const Value* v = envs[i].find(name);
      auto& alt = p.alts[i];
      auto it =
          std::find_if(alt.begin(), alt.end(), [&](const auto& x) { return x.first == name; });
      if (it != alt.end())
        it->second = v ? *v : Value{};
      else
        alt.emplace_back(name, v ? *v : Value{});
    }
    if (std::find(p.names.begin(), p.names.end(), name) == p.names.end()) p.names.push_back(name);
  }
  Value out = dom_.join(vals);
  dom_.branches_joined(*this, let);
  return out;
}

// Statements [k, end) run once per alternative of pending[which] (the other pending splits
// still waiting in each run); values and locals join.
template <class D>
typename Engine<D>::Value Engine<D>::run_rest(std::span<const NodeId> stmts, std::size_t k,
                                              NodeId tail, std::vector<Pending>& pending,
                                              std::size_t which) {
  std::vector<Pending> others;
  for (std::size_t i = 0; i < pending.size(); ++i)
    if (i != which) others.push_back(pending[i]);
  Value v = fork_statement(pending[which], [&] {
    open_scope();
    Value r = eval_stmts(stmts, k, tail, others);
    close_scope();
    return r;
  });
  return v;
}

template <class D>
void Engine<D>::close_scope() {
  Env& e = env();
  auto& log = undo_.back();
  for (auto it = log.rbegin(); it != log.rend(); ++it)
    e.restore(it->first, std::move(it->second));
  undo_.pop_back();
}

template <class D>
void Engine<D>::eval_let(NodeId n) {
  const rust::Node& nd = body()[n];
  dom_.let_begin(*this, n);
  Value v = eval(nd.b);
  v = dom_.let_value(*this, n, std::move(v));
  eval(nd.c);
  bind_at(n, nd.a, v);
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_if(NodeId n) {
  const rust::Node& nd = body()[n];
  Value cond = eval(nd.a);
  if constexpr (requires { dom_.choose(*this, n, cond); }) {
    if (auto pick = dom_.choose(*this, n, cond))
      return *pick == 0 ? eval_then(n, cond) : eval(nd.c);
  }
  std::optional<std::size_t> lead;
  if constexpr (requires { dom_.lead(*this, n, cond); }) lead = dom_.lead(*this, n, cond);
  auto join2 = [&](const Value& then_v, const Value& else_v) {
    if constexpr (requires { dom_.join_led(std::vector<Value>{}, std::size_t{0}); })
      if (lead) return dom_.join_led({then_v, else_v}, *lead);
    return dom_.join({then_v, else_v});
  };
  Env before = env();
  Value a = run_branch(n, 0, 2, [&] { return eval_then(n, cond); });
  Env after_a = env();
  env() = std::move(before);
  Value b = run_branch(n, 1, 2, [&] { return eval(nd.c); });
  env().join_from(after_a, [&](const Value& x, const Value& y) { return join2(x, y); });
  Value out = join2(a, b);
  if constexpr (requires { dom_.branches_joined(*this, n); }) dom_.branches_joined(*this, n);
  return out;
}

// The then-branch of `if` `n` whose condition evaluated to `cond`. For `if let P = e`, P binds
// in a scope of the branch only (the names the domain's `bindings` gives, where it declares them).
template <class D>
typename Engine<D>::Value Engine<D>::eval_then(NodeId n, const Value& cond) {
  const rust::Node& nd = body()[n];
  if (nd.a != rust::kNone && body()[nd.a].kind == Kind::LetCond) {
    open_scope();
    bind_at(nd.a, body()[nd.a].a, cond);
    Value v = eval(nd.b);
    close_scope();
    return v;
  }
  return eval(nd.b);
}

// Branch `i` of `count` of the undecided `if`/`match` `n`: `what()` evaluated between the
// domain's branch hooks.
template <class D>
template <class F>
typename Engine<D>::Value Engine<D>::run_branch(NodeId n, std::size_t i, std::size_t count,
                                                F&& what) {
  if constexpr (requires { dom_.branch_begin(*this, n, i, count); })
    dom_.branch_begin(*this, n, i, count);
  Value v = what();
  if constexpr (requires { dom_.arm_value(*this, v); }) dom_.arm_value(*this, v);
  if constexpr (requires { dom_.branch_end(*this, n, i); }) dom_.branch_end(*this, n, i);
  return v;
}

// The one arm a domain chose: its pattern binds as in an undecided match, for the arm only.
template <class D>
typename Engine<D>::Value Engine<D>::decided_arm(NodeId arm, const Value& scrut) {
  const rust::Node& an = body()[arm];
  Env before = env();
  bind_arm(arm, scrut);
  Value v = eval(an.c);
  env() = std::move(before);
  return v;
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_match(NodeId n) {
  const rust::Body& b = body();
  if constexpr (requires { dom_.scrutinee(*this, n, true); }) dom_.scrutinee(*this, n, true);
  Value scrut = eval(b[n].a);
  if constexpr (requires { dom_.scrutinee(*this, n, false); }) dom_.scrutinee(*this, n, false);
  const auto kids = b.kids_view(n);
  if constexpr (requires { dom_.choose(*this, n, scrut); }) {
    if (auto pick = dom_.choose(*this, n, scrut))
      return *pick < kids.size() ? decided_arm(kids[*pick], scrut) : Value{};
  }
  std::vector<Value> arms;
  Env before = env();
  for (std::size_t i = 0; i < kids.size(); ++i) {
    const rust::Node& an = b[kids[i]];
    env() = before;
    bind_arm(kids[i], scrut);
    arms.push_back(run_branch(n, i, kids.size(), [&] { return eval(an.c); }));
  }
  env() = std::move(before);
  Value out;
  if constexpr (requires { dom_.lead(*this, n, scrut); }) {
    auto lead = dom_.lead(*this, n, scrut);
    out = lead && *lead < arms.size() ? dom_.join_led(std::move(arms), *lead) : dom_.join(arms);
  } else {
    out = dom_.join(arms);
  }
  if constexpr (requires { dom_.branches_joined(*this, n); }) dom_.branches_joined(*this, n);
  return out;
}

template <class D>
typename Engine<D>::Value Engine<D>::run_closure(const rust::Body& where, NodeId closure,
                                                 const std::vector<Value>& args,
                                                 const Bindings& also) {
  if (!running() || closure == rust::kNone) return {};
  Frame& fr = frame();
  const rust::Body* saved_body = fr.body;
  std::vector<Value> saved_returns = std::move(fr.returns);
  fr.returns.clear();
  fr.body = &where;
  open_scope();
  for (const auto& [name, v] : also)
    bind_name(name, v);
  const auto params = where.kids_view(closure);
  for (std::size_t i = 0; i < params.size(); ++i)
    bind_at(closure, params[i], i < args.size() ? args[i] : Value{});
  if constexpr (requires { dom_.body_begin(*this); }) dom_.body_begin(*this);
  Value v = eval(where[closure].a);
  if constexpr (requires { dom_.body_end(*this, true); }) dom_.body_end(*this, true);
  close_scope();
  fr.returns.push_back(std::move(v));
  Value out = dom_.join(fr.returns);
  fr.returns = std::move(saved_returns);
  fr.body = saved_body;
  return out;
}

template <class D>
std::vector<typename Engine<D>::Value> Engine<D>::eval_args(NodeId n) {
  const rust::Body& b = body();
  std::vector<Value> out;
  for (NodeId a : b.kids_view(n)) {
    NodeId inner = b.peel(a, {Kind::Ref});
    if (inner != rust::kNone && b[inner].is_array_expression()) {
      std::vector<Value> elems;
      if (b[inner].kind == Kind::ArrayRepeat) {
        elems.push_back(eval(b[inner].a));
        elems.push_back(eval(b[inner].b));
      } else {
        for (NodeId k : b.kids_view(inner))
          elems.push_back(eval(k));
      }
      dom_.array_argument(std::move(elems), out);
      continue;
    }
    out.push_back(eval(a));
  }
  return out;
}

// A call or method call: the domain's own evaluation when it takes it over, else the engine's.
template <class D>
typename Engine<D>::Value Engine<D>::eval_any_call(NodeId n) {
  if constexpr (requires { dom_.takes_over(*this, n); }) {
    if (auto v = dom_.takes_over(*this, n)) return std::move(*v);
  }
  return body()[n].kind == Kind::Call ? eval_call(n) : eval_method_call(n);
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_call(NodeId n) {
  std::vector<Value> args = eval_args(n);
  return dom_.call(*this, n, std::move(args));
}

template <class D>
typename Engine<D>::Value Engine<D>::eval_method_call(NodeId n) {
  Value recv = eval(body()[n].a);
  std::vector<Value> args = eval_args(n);
  return dom_.method_call(*this, n, std::move(recv), std::move(args));
}

}  // namespace cg::analysis::interp

#include "analysis/interp/engine_loops.hpp"
