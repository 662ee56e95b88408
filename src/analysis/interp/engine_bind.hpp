#pragma once
// Engine<Domain>'s pattern binding (included by engine.hpp).

namespace cg::analysis::interp {

template <class D>
void Engine<D>::bind_name(const std::string& name, const Value& v) {
  Env& e = env();
  if (!undo_.empty()) {
    auto& log = undo_.back();
    bool seen = std::any_of(log.begin(), log.end(), [&](const auto& x) { return x.first == name; });
    if (!seen) {
      log.emplace_back(name, e.held(name));
    }
  }
  e.set(name, v);
}

// Pattern `pat` of `owner` (a `let`, a match arm, a `for`, a closure, an `if let` condition)
// bound to `v`: the names the domain's `bindings` gives, else the engine's own rules (`bind`).
template <class D>
void Engine<D>::bind_at(NodeId owner, NodeId pat, const Value& v) {
  if constexpr (requires { dom_.bindings(*this, owner, pat, v); }) {
    for (const auto& [name, x] : dom_.bindings(*this, owner, pat, v))
      bind_name(name, x);
  } else {
    bind(pat, v);
  }
}

// A match arm's pattern bound to the scrutinee. With the domain's `bindings` the domain also
// decides what the guard binds (the arm is the owner); otherwise the guard's identifiers name
// the scrutinee, as the syntax walker did.
template <class D>
void Engine<D>::bind_arm(NodeId arm, const Value& scrut) {
  const rust::Node& an = body()[arm];
  if constexpr (requires { dom_.bindings(*this, arm, an.a, scrut); }) {
    bind_at(arm, an.a, scrut);
  } else {
    bind(an.a, scrut);
    bind_guard_names(an.b, scrut, 0);
  }
}

// Every name a pattern introduces is bound to the whole value (a tuple pattern binds each name
// to the tuple's value, unless the domain gives the tuple's elements: see `element`). As the
// syntax walker did: a variant or constant written as one
// identifier (`None`, `Some(..)`'s `Some`) is bound too, a shorthand struct field (`Foo { a }`)
// is not.
template <class D>
void Engine<D>::bind(NodeId pat, const Value& v) {
  if (pat == rust::kNone) return;
  const rust::Body& b = body();
  const rust::Node& p = b[pat];
  auto single = [](std::string_view s) {
    return !s.empty() && s.find("::") == std::string_view::npos &&
           s.find('<') == std::string_view::npos;
  };
  switch (p.kind) {
    case Kind::PIdent:
      bind_name(std::string(p.str), v);
      bind(p.a, v);
      return;
    case Kind::PPath:
      if (single(p.str)) bind_name(std::string(p.str), v);
      return;
    case Kind::PTupleStruct:
      // A variant pattern of an enum whose variant the domain knows binds its payload
      // (optional member `payload`).
      if constexpr (requires { dom_.payload(*this, pat, v, std::string_view{}); }) {
        const auto kids = b.kids_view(pat);
        if (kids.size() == 1)
          if (auto part = dom_.payload(*this, pat, v, std::string_view{})) {
            bind(kids[0], *part);
            return;
          }
      }
      if (single(p.str)) bind_name(std::string(p.str), v);
      for (NodeId k : b.kids_view(pat))
        bind(k, v);
      return;
    case Kind::PField:
      if (p.a != rust::kNone && b[p.a].start != p.start) bind(p.a, v);  // not shorthand
      return;
    case Kind::PTuple:
      // A domain that knows a tuple's elements binds each sub-pattern to its own (optional
      // member `element`); a `..` rest pattern keeps the whole value for every name.
      if constexpr (requires(const Value& x) { dom_.element(x, std::size_t{}, std::size_t{}); }) {
        const auto kids = b.kids_view(pat);
        bool rest = std::any_of(kids.begin(), kids.end(),
                                [&](NodeId k) { return b[k].kind == Kind::PRest; });
        std::vector<Value> elems;
        for (std::size_t i = 0; !rest && i < kids.size(); ++i) {
          std::optional<Value> e = dom_.element(v, i, kids.size());
          if (!e) break;
          elems.push_back(std::move(*e));
        }
        if (!rest && !kids.empty() && elems.size() == kids.size()) {
          for (std::size_t i = 0; i < kids.size(); ++i)
            bind(kids[i], elems[i]);
          return;
        }
      }
      for (NodeId k : b.kids_view(pat))
        bind(k, v);
      return;
    case Kind::PStruct:
      // `Self::Lora { a, norm, b }`: each field's part of the payload where the domain knows it.
      if constexpr (requires { dom_.payload(*this, pat, v, std::string_view{}); }) {
        for (NodeId k : b.kids_view(pat)) {
          const rust::Node& f = b[k];
          std::optional<Value> part;
          if (f.kind == Kind::PField) part = dom_.payload(*this, pat, v, f.str);
          if (!part) {
            bind(k, v);
          } else if (f.a != rust::kNone && b[f.a].start != f.start) {
            bind(f.a, *part);
          } else {
            bind_name(std::string(f.str), *part);
          }
        }
        return;
      }
      for (NodeId k : b.kids_view(pat))
        bind(k, v);
      return;
    case Kind::PSlice:
    case Kind::POr:
      for (NodeId k : b.kids_view(pat))
        bind(k, v);
      return;
    case Kind::PRef:
      bind(p.a, v);
      return;
    default:
      return;
  }
}

// The syntax walker bound a match arm's pattern node whole, guard included: every plain
// identifier the guard mentions names the scrutinee inside that arm. Kept so outputs stay the
// same; a later domain may want the guard evaluated instead.
template <class D>
void Engine<D>::bind_guard_names(NodeId n, const Value& v, int depth) {
  if (n == rust::kNone || depth > 64) return;
  const rust::Body& b = body();
  const rust::Node& g = b[n];
  if (g.kind == Kind::Path) {
    if (g.is_identifier()) bind_name(std::string(g.str), v);
    return;
  }
  if (g.kind == Kind::PIdent) {
    bind_name(std::string(g.str), v);
    return;
  }
  bind_guard_names(g.a, v, depth + 1);
  bind_guard_names(g.b, v, depth + 1);
  bind_guard_names(g.c, v, depth + 1);
  for (NodeId k : b.kids_view(n))
    bind_guard_names(k, v, depth + 1);
}

}  // namespace cg::analysis::interp
