// The inventory walker's control flow over a lowered body: blocks and their scopes (statements
// gated by `#[cfg]`), `let`, patterns that shadow names, struct literals, loops (expanded when
// the bound is concrete, else one symbolic iteration), and the walk's budgets. Branches (`if`,
// `match`, the fork of a `let`) are in inventory_branches.cpp.
#include "analysis/inventory_walker.hpp"

namespace cg::analysis::inventory {

using rust::Kind;
using rust::kNone;

void Walker::walk(NodeId n, int depth) {
  if (n == kNone || truncated) return;
  if (++steps_ > kMaxSteps) {
    truncated = true;
    diag(n, "analysis truncated after " + std::to_string(kMaxSteps) +
                " steps (loops expanded by the bound config multiply the work)");
    return;
  }
  if (nesting_ >= kMaxNesting) {
    diag(n, "expression nested deeper than " + std::to_string(kMaxNesting) +
                " levels; the rest of it is not analyzed");
    return;
  }
  ++nesting_;
  struct Nest {
    int& d;
    ~Nest() { --d; }
  } nest{nesting_};
  const rust::Node& nd = node(n);
  switch (nd.kind) {
    case Kind::Item:
    case Kind::Closure:
    case Kind::Macro:  // expression macros (`vec![..]`) hold no builders
      return;
    case Kind::Block:
      return walk_block(n, depth);
    case Kind::MacroStmt:
      // A macro in statement position may register parameters we cannot see.
      if (nd.flags & rust::kSemicolon) statement_macro(n);
      return;
    case Kind::Let:
      return walk_let(n, depth);
    case Kind::Call:
    case Kind::MethodCall:
      return walk_call(n, depth);
    case Kind::For:
      return walk_for(n, depth);
    case Kind::While:
    case Kind::Loop: {
      std::string bound = nd.kind == Kind::Loop ? std::string("loop") : "while " + text(nd.a);
      frame().repeat.push_back("_ in " + bound);
      walk(nd.kind == Kind::Loop ? nd.a : nd.b, depth);
      frame().repeat.pop_back();
      return;
    }
    case Kind::If:
      return walk_if(n, depth);
    case Kind::Match:
      return walk_match(n, depth);
    case Kind::Struct:
      return walk_struct(n, depth);
    default:
      return walk_children(n, depth);
  }
}

// Any other node: its sub-expressions in source order.
void Walker::walk_children(NodeId n, int depth) {
  const rust::Node& nd = node(n);
  for (NodeId c : {nd.a, nd.b, nd.c})
    walk(c, depth);
  for (NodeId k : body().kids(n))
    walk(k, depth);
}

void Walker::walk_block(NodeId n, int depth) {
  frame().scopes.emplace_back();
  // `#[cfg(..)]` attributes gate the statement that follows them.
  Stmts stmts;
  for (NodeId s : body().kids(n))
    if (node(s).cfg != rust::Tri::False) stmts.emplace_back(s, node(s).cfg);
  walk_stmts(stmts, 0, depth);
  frame().scopes.pop_back();
}

void Walker::walk_stmts(const Stmts& stmts, std::size_t from, int depth) {
  for (std::size_t i = from; i < stmts.size() && !truncated; ++i) {
    NodeId ch = stmts[i].first;
    rust::Tri active = stmts[i].second;
    if (node(ch).kind == Kind::Let && fork_let(stmts, i, depth)) return;
    if (active == rust::Tri::Unknown)
      under(conditional(frame().cert, "a #[cfg] that is not understood"), [&] { walk(ch, depth); });
    else
      walk(ch, depth);
  }
}

void Walker::walk_let(NodeId n, int depth) {
  const rust::Node& let = node(n);
  NodeId pat = let.a, value = let.b;
  std::string name;
  if (pat != kNone) {
    if (is_ident(pat)) name = std::string(node(pat).str);
    if (node(pat).kind == Kind::PIdent && node(pat).syntax == "mut_pattern")
      name = std::string(node(pat).str);
  }
  if (value == kNone) {
    if (!name.empty()) bind(name, Value{});
    return;
  }
  if (node(value).kind == Kind::Closure) {
    Value v;
    v.kind = Value::Kind::closure;
    v.closure = value;
    v.closure_body = &body();
    if (!name.empty()) bind(name, std::move(v));
    return;
  }
  std::size_t before = frame().created.size();
  walk(value, depth);
  if (let.c != kNone) walk(let.c, depth);
  if (name.empty()) {
    // Tuple patterns: shadow their names so stale bindings do not leak.
    shadow_pattern(pat);
    return;
  }
  Value v = value_of(value, 0);
  for (std::size_t i = before; i < frame().created.size(); ++i) {
    v.modules.push_back(frame().created[i]);
    insts[frame().created[i]].field = name;
  }
  bind(name, std::move(v));
}

// Binds every name a pattern introduces (and, as the syntax walk did, the identifiers of the
// paths it names) to nothing, so stale bindings do not leak into its scope.
void Walker::shadow_pattern(NodeId pat) {
  if (pat == kNone) return;
  const rust::Node& p = node(pat);
  switch (p.kind) {
    case Kind::PIdent:
      if (p.syntax != "field_pattern") bind(std::string(p.str), Value{});
      shadow_pattern(p.a);
      return;
    case Kind::PPath:
      if (p.syntax == "identifier")
        bind(std::string(p.str), Value{});
      else
        shadow_path(p.str, true);
      return;
    case Kind::PTupleStruct:
      shadow_path(p.str, true);
      break;
    case Kind::PStruct:
      shadow_path(p.str, false);
      break;
    case Kind::PField:
    case Kind::PRef:
      shadow_pattern(p.a);
      return;
    default:
      break;
  }
  for (NodeId k : body().kids(pat))
    shadow_pattern(k);
}

// The identifiers of a path written in a pattern (`a::B` binds `a` and `B`; a struct pattern's
// type name is a type identifier and binds nothing: `last` = false).
void Walker::shadow_path(std::string_view path, bool last) {
  std::vector<std::string> segs;
  std::size_t pos = 0;
  while (true) {
    auto next = path.find("::", pos);
    segs.emplace_back(path.substr(pos, next == std::string_view::npos ? next : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + 2;
  }
  if (!last) segs.pop_back();
  for (const auto& s : segs) {
    bool ident = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s)
      ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (ident && s != "self" && s != "super" && s != "crate") bind(s, Value{});
  }
}

// A match guard's identifiers are shadowed in its arm, as the syntax walk did.
void Walker::shadow_expr(NodeId n) {
  if (n == kNone) return;
  const rust::Node& e = node(n);
  if (e.kind == Kind::Path) {
    if (e.syntax == "identifier")
      bind(std::string(e.str), Value{});
    else if (e.syntax == "scoped_identifier")
      shadow_path(e.str, true);
    return;
  }
  if (e.kind == Kind::LetCond) {
    shadow_pattern(e.a);
    shadow_expr(e.b);
    return;
  }
  if (e.kind == Kind::Closure || e.kind == Kind::Macro) return;
  for (NodeId c : {e.a, e.b, e.c})
    shadow_expr(c);
  for (NodeId k : body().kids(n))
    shadow_expr(k);
}

// A pattern's elements, without the `_` tokens the syntax walk did not see.
std::vector<NodeId> Walker::pattern_elems(NodeId pat) {
  std::vector<NodeId> out;
  for (NodeId k : body().kids(pat))
    if (node(k).syntax != "_") out.push_back(k);
  return out;
}

std::string Walker::first_identifier(NodeId pat) {
  if (pat == kNone) return "_";
  const rust::Node& p = node(pat);
  auto first_of_path = [](std::string_view path, bool last) -> std::string {
    auto sep = path.find("::");
    if (sep == std::string_view::npos && !last) return "_";
    std::string s(path.substr(0, sep));
    bool ident = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s)
      ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    return ident && s != "self" && s != "super" && s != "crate" ? s : "_";
  };
  switch (p.kind) {
    case Kind::PIdent:
      return p.syntax == "field_pattern" ? "_" : std::string(p.str);
    case Kind::PPath:
      return p.syntax == "identifier" ? std::string(p.str) : first_of_path(p.str, true);
    case Kind::PTupleStruct:
    case Kind::PStruct:
      if (std::string s = first_of_path(p.str, p.kind == Kind::PTupleStruct); s != "_") return s;
      break;
    case Kind::PField:
    case Kind::PRef:
      return first_identifier(p.a);
    case Kind::PTuple:
    case Kind::PSlice:
    case Kind::POr:
      break;
    default:
      return "_";
  }
  for (NodeId k : body().kids(pat)) {
    std::string s = first_identifier(k);
    if (s != "_") return s;
  }
  return "_";
}

void Walker::statement_macro(NodeId n) {
  std::string name = last_segment(std::string(node(n).str));
  if (ignored_macro(name)) return;
  diag(n, "macro `" + name + "!` not expanded; any parameters it registers are invisible");
}

void Walker::walk_struct(NodeId n, int depth) {
  for (NodeId fi : body().kids(n)) {
    const rust::Node& f = node(fi);
    std::string fname(f.str);
    if (f.flags & rust::kShorthand) {
      if (f.a != kNone) name_held_modules(f.a, fname);
      continue;
    }
    std::size_t before = frame().created.size();
    walk(f.a, depth);
    for (std::size_t i = before; i < frame().created.size(); ++i)
      insts[frame().created[i]].field = fname;
    name_held_modules(f.a, fname);
  }
  walk(node(n).a, depth);  // `..base`
}

// `Self { attn: a }` where `let a = Attention::new(..)`: the instance's field is `attn`.
void Walker::name_held_modules(NodeId value, const std::string& field) {
  value = body().peel(value, {Kind::Try, Kind::Ref, Kind::Paren});
  if (value == kNone || !is_ident(value) || node(value).kind != Kind::Path) return;
  if (Value* v = find_var(text(value)))
    for (std::size_t m : v->modules)
      insts[m].field = field;
}

void Walker::walk_for(NodeId n, int depth) {
  const rust::Node& f = node(n);
  NodeId pat = f.a, iter = f.b, loop_body = f.c;
  walk(iter, depth);
  std::string var = first_identifier(pat);
  repeat_body(var, iter, pat, [&] { walk(loop_body, depth); });
}

// Runs `body` for each iteration of `iter` when its range is concrete (the loop variable bound
// to the index), else once with the loop variable symbolic; instances created inside carry
// the repeat text.
void Walker::repeat_body(const std::string& var, NodeId iter, NodeId pat,
                         const std::function<void()>& body_fn) {
  NodeId range = body().peel(iter, {Kind::Paren});
  std::optional<std::int64_t> lo, hi;
  std::string bound_text = iter == kNone ? "?" : text(iter);
  if (range != kNone && node(range).kind == Kind::Range && node(range).a != kNone &&
      node(range).b != kNone) {
    bool inclusive = text(range).find("..=") != std::string::npos;
    SymValue a = eval(node(range).a), b = eval(node(range).b);
    if (a.kind == SymValue::Kind::integer && b.kind == SymValue::Kind::integer) {
      lo = a.integer;
      hi = b.integer + (inclusive ? 1 : 0);
    }
    bound_text = (a.concrete() ? a.display() : a.text) + (inclusive ? "..=" : "..") +
                 (b.concrete() ? b.display() : b.text);
  }
  // A family of concrete count that is not expanded says so in its repeat text, so that every
  // reader (summary totals, listings) multiplies it by its count instead of counting it once.
  auto kept_as_template = [&](const std::string& why) {
    frame().repeat.back() = var + " in " + bound_text + " (not expanded: " + why + ")";
  };
  frame().repeat.push_back(var + " in " + bound_text);
  frame().scopes.emplace_back();
  bool simple = pat != kNone && is_ident(pat);
  bool expanded = false;
  if (lo && hi && simple && *hi - *lo <= kMaxExpansion) {
    std::string why = expand_or_undo(var, *lo, *hi, body_fn, iter);
    expanded = why.empty();
    if (!expanded) kept_as_template(why);
  } else if (lo && hi && *hi > *lo) {
    if (*hi - *lo > kMaxExpansion) {
      diag(iter, "loop of " + std::to_string(*hi - *lo) + " iterations kept as a template (over " +
                     std::to_string(kMaxExpansion) + ")");
      kept_as_template("over the expansion bound");
    } else {
      kept_as_template("pattern is not a plain variable");
    }
  }
  if (!expanded) {
    if (pat != kNone) shadow_pattern(pat);
    Value v;
    v.kind = Value::Kind::loop_var;
    bind(var, std::move(v));
    body_fn();
  }
  frame().scopes.pop_back();
  frame().repeat.pop_back();
}

// Expands `for var in lo..hi` when the whole expansion fits the instance and leaf bounds. The
// first iteration is walked, its cost measured, and when `hi - lo` iterations would not fit it
// is undone (instances, leaves, messages and the scopes it changed), so a family is either
// expanded in full or kept whole as a counted template, never cut part-way.
// Returns "" when expanded, else the short reason the family's repeat text records.
std::string Walker::expand_or_undo(const std::string& var, std::int64_t lo, std::int64_t hi,
                                   const std::function<void()>& body_fn, NodeId iter) {
  const std::size_t n_inst = insts.size(), n_leaf = leaves.size(), n_diag = diags.size();
  const std::size_t n_created = frame().created.size();
  const bool was_truncated = truncated;
  const auto scopes = frame().scopes;
  for (std::int64_t i = lo; i < hi && !truncated; ++i) {
    Value v;
    v.kind = Value::Kind::sym;
    v.sym = SymValue::of_int(i);
    bind(var, std::move(v));
    body_fn();
    if (i != lo) continue;
    const auto count = static_cast<std::size_t>(hi - lo);
    const std::size_t per_inst = insts.size() - n_inst, per_leaf = leaves.size() - n_leaf;
    // Would `count` iterations of this cost fit what is left under `bound`?
    auto fits = [count](std::size_t per, std::size_t used, std::size_t bound) {
      return per == 0 || (used < bound && count <= (bound - used) / per);
    };
    const bool inst_ok = fits(per_inst, n_inst, kMaxInstances);
    const bool leaf_ok = fits(per_leaf, n_leaf, kMaxLeaves);
    if (!truncated && inst_ok && leaf_ok) continue;
    insts.resize(n_inst);
    leaves.resize(n_leaf);
    diags.resize(n_diag);
    frame().created.resize(n_created);
    frame().scopes = scopes;
    const bool steps = truncated && inst_ok && leaf_ok;
    truncated = was_truncated;
    std::string why = steps      ? "its first iteration ran past the analysis step bound"
                      : !inst_ok ? "expanding it would create " + std::to_string(per_inst) +
                                       " module instances per iteration, over the bound of " +
                                       std::to_string(kMaxInstances)
                                 : "expanding it would register " + std::to_string(per_leaf) +
                                       " parameters per iteration, over the bound of " +
                                       std::to_string(kMaxLeaves);
    diag(iter, "loop of " + std::to_string(count) + " iterations kept as a template (" + why + ")");
    return steps      ? "over the step bound"
           : !inst_ok ? "over the instance bound"
                      : "over the leaf bound";
  }
  return "";
}

}  // namespace cg::analysis::inventory
