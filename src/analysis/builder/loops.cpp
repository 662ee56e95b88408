// The builder/prefix domain's loops and patterns: a `for` (or an iterator's closure) over a
// concrete range is expanded, its loop variable bound to each index, when the whole expansion
// fits the instance and leaf bounds (the first iteration is measured and undone when it would
// not), else run once with a symbolic loop variable; instances created inside carry the repeat
// text. Patterns bind as the inventory always read them: a plain name takes the value, every
// other name a pattern introduces is shadowed (nothing known).
#include "analysis/builder/domain.hpp"
#include "analysis/interp/option_pattern.hpp"

namespace cg::analysis::builder {

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

// The range `iter` runs over and the repeat text of a loop whose pattern is `pat`.
BuilderDomain::Loop BuilderDomain::loop_of(NodeId iter, NodeId pat) {
  Loop lp;
  lp.iter = iter;
  lp.var = first_identifier(pat);
  NodeId range = body().peel(iter, {Kind::Paren});
  lp.bound_text = iter == kNone ? "?" : text(iter);
  if (range != kNone && node(range).kind == Kind::Range && node(range).a != kNone &&
      node(range).b != kNone) {
    bool inclusive = text(range).find("..=") != std::string::npos;
    SymValue a = eval_sym(node(range).a), b = eval_sym(node(range).b);
    if (a.kind == SymValue::Kind::integer && b.kind == SymValue::Kind::integer) {
      lp.lo = a.integer;
      lp.hi = b.integer + (inclusive ? 1 : 0);
    }
    lp.bound_text = (a.concrete() ? a.display() : a.text) + (inclusive ? "..=" : "..") +
                    (b.concrete() ? b.display() : b.text);
    return lp;
  }
  // `convs.iter()`, `convs.into_iter()`, `&convs`, `convs` over a literal array.
  NodeId base = range;
  while (base != kNone && (node(base).kind == Kind::Ref || node(base).kind == Kind::Paren ||
                           (node(base).kind == Kind::MethodCall && node(base).kids_count == 0 &&
                            (node(base).str == "iter" || node(base).str == "into_iter"))))
    base = node(base).a;
  if (base != kNone && is_ident(base) && node(base).kind == Kind::Path)
    if (const Value* v = local(text(base));
        v && v->rows && row_pattern(pat, v->rows->front().size())) {
      lp.rows = v->rows;
      lp.lo = 0;
      lp.hi = static_cast<std::int64_t>(v->rows->size());
      lp.bound_text = "0.." + std::to_string(*lp.hi);  // concrete: its instances are expanded
      return lp;
    }
  if (auto rows = array_rows(range);
      rows && !rows->empty() && row_pattern(pat, rows->front().size())) {
    lp.rows = std::make_shared<const std::vector<std::vector<SymValue>>>(std::move(*rows));
    lp.lo = 0;
    lp.hi = static_cast<std::int64_t>(lp.rows->size());
    lp.bound_text = "0.." + std::to_string(*lp.hi);
  }
  return lp;
}

// `cfg.ratios.iter()`, `.iter().rev().enumerate()`, `&cfg.ratios`: a config.json array of
// scalars iterated, one row per element (`enumerate` puts the index first; `rev`, `copied`,
// `cloned` as std does). nullopt when the array's elements are not known.
std::optional<std::vector<std::vector<SymValue>>> BuilderDomain::array_rows(NodeId iter) {
  std::vector<std::string_view> chain;  // outermost first
  NodeId base = iter;
  while (base != kNone) {
    const rust::Node& b = node(base);
    if (b.kind == Kind::Ref || b.kind == Kind::Paren) {
      base = b.a;
    } else if (b.kind == Kind::MethodCall && b.kids_count == 0 &&
               (b.str == "iter" || b.str == "into_iter" || b.str == "enumerate" || b.str == "rev" ||
                b.str == "copied" || b.str == "cloned")) {
      chain.push_back(b.str);
      base = b.a;
    } else {
      break;
    }
  }
  if (base == kNone || chain.empty() || node(base).kind != Kind::Field) return std::nullopt;
  SymValue arr = eval_sym(base);
  if (!arr.elements) return std::nullopt;
  std::vector<std::vector<SymValue>> rows;
  for (const SymValue& e : *arr.elements)
    rows.push_back({e});
  for (auto m = chain.rbegin(); m != chain.rend(); ++m) {
    if (*m == "rev") std::reverse(rows.begin(), rows.end());
    if (*m == "enumerate") {
      if (rows.front().size() != 1) return std::nullopt;  // enumerate twice
      for (std::size_t i = 0; i < rows.size(); ++i)
        rows[i].insert(rows[i].begin(), SymValue::of_int(static_cast<std::int64_t>(i)));
    }
  }
  return rows;
}

// A loop pattern that binds a literal array's rows: a name (rows of one), or a tuple of names of
// the rows' arity (`&(in_c, out_c, name)`).
bool BuilderDomain::row_pattern(NodeId pat, std::size_t arity) const {
  pat = body().peel(pat, {Kind::PRef});
  if (pat == kNone) return false;
  if (is_ident(pat) || node(pat).kind == Kind::PIdent) return arity == 1;
  if (node(pat).kind != Kind::PTuple) return false;
  const auto kids = body().kids_view(pat);
  return kids.size() == arity && std::all_of(kids.begin(), kids.end(), [&](NodeId k) {
           k = body().peel(k, {Kind::PRef});  // `(i, &ratio)`
           return k != kNone && (node(k).kind == Kind::PIdent || is_ident(k));
         });
}

// The value iteration `i` of loop `lp` binds: the index, or the literal array's row.
Value BuilderDomain::iteration(const Loop& lp, std::int64_t i) const {
  Value v;
  v.kind = Value::Kind::sym;
  if (lp.rows) {
    const auto& row = (*lp.rows)[static_cast<std::size_t>(i)];
    v.sym = row.front();
    v.rows = std::make_shared<std::vector<std::vector<SymValue>>>(
        std::vector<std::vector<SymValue>>{row});
  } else {
    v.sym = SymValue::of_int(i);
  }
  return v;
}

// Whether loop `lp` is expanded; when it is not although its count is concrete, its repeat text
// says why (every reader then multiplies the family by its count).
bool BuilderDomain::expandable(Loop& lp, NodeId pat) {
  const bool simple = pat != kNone && (is_ident(pat) || lp.rows);
  if (lp.lo && lp.hi && simple && *lp.hi - *lp.lo <= inventory::kMaxExpansion) return true;
  if (lp.lo && lp.hi && *lp.hi > *lp.lo) {
    std::string why = "pattern is not a plain variable";
    if (*lp.hi - *lp.lo > inventory::kMaxExpansion) {
      diag(lp.iter, "loop of " + std::to_string(*lp.hi - *lp.lo) +
                        " iterations kept as a template (over " +
                        std::to_string(inventory::kMaxExpansion) + ")");
      why = "over the expansion bound";
    }
    ctx().repeat.back() = lp.var + " in " + lp.bound_text + " (not expanded: " + why + ")";
  }
  return false;
}

// After the first expanded iteration: when `hi - lo` iterations of its cost would not fit the
// bounds (or it ran past the step bound), it is undone — instances, leaves, messages — and the
// family is kept whole as a counted template. True when undone.
bool BuilderDomain::undo_if_too_big(Eng& eng, Loop& lp) {
  const auto count = static_cast<std::size_t>(*lp.hi - *lp.lo);
  const std::size_t per_inst = out.insts.size() - lp.n_inst;
  const std::size_t per_leaf = out.leaves.size() - lp.n_leaf;
  auto fits = [count](std::size_t per, std::size_t used, std::size_t bound) {
    return per == 0 || (used < bound && count <= (bound - used) / per);
  };
  const bool inst_ok = fits(per_inst, lp.n_inst, inventory::kMaxInstances);
  const bool leaf_ok = fits(per_leaf, lp.n_leaf, inventory::kMaxLeaves);
  const bool stopped = eng.stopped() && !lp.was_stopped;
  if (!stopped && inst_ok && leaf_ok) return false;
  out.insts.resize(lp.n_inst);
  out.leaves.resize(lp.n_leaf);
  out.diags.resize(lp.n_diag);
  ctx().created.resize(lp.n_created);
  const bool steps = stopped && inst_ok && leaf_ok;
  if (steps) {
    eng.resume();
    out.truncated = false;
  }
  std::string why = steps      ? "its first iteration ran past the analysis step bound"
                    : !inst_ok ? "expanding it would create " + std::to_string(per_inst) +
                                     " module instances per iteration, over the bound of " +
                                     std::to_string(inventory::kMaxInstances)
                               : "expanding it would register " + std::to_string(per_leaf) +
                                     " parameters per iteration, over the bound of " +
                                     std::to_string(inventory::kMaxLeaves);
  diag(lp.iter,
       "loop of " + std::to_string(count) + " iterations kept as a template (" + why + ")");
  ctx().repeat.back() = lp.var + " in " + lp.bound_text + " (not expanded: " +
                        (steps      ? "over the step bound"
                         : !inst_ok ? "over the instance bound"
                                    : "over the leaf bound") +
                        ")";
  return true;
}

void BuilderDomain::loop_begin(Eng&, NodeId n, const Value& iter) {
  const rust::Node& nd = node(n);
  if (nd.kind == Kind::For) {
    Loop lp = loop_of(nd.b, nd.a);
    // `for name in ["a", "b"]`: the iterated value is the literal array itself.
    if (!lp.lo && iter.rows && row_pattern(nd.a, iter.rows->front().size())) {
      lp.rows = iter.rows;
      lp.lo = 0;
      lp.hi = static_cast<std::int64_t>(iter.rows->size());
      lp.bound_text = "0.." + std::to_string(*lp.hi);
    }
    ctx().repeat.push_back(lp.var + " in " + lp.bound_text);
    loops_.push_back(std::move(lp));
    return;
  }
  ctx().repeat.push_back(nd.kind == Kind::Loop ? std::string("_ in loop")
                                               : "_ in while " + text(nd.a));
  loops_.emplace_back();
}

void BuilderDomain::loop_end(Eng&, NodeId) {
  ctx().repeat.pop_back();
  loops_.pop_back();
}

std::optional<std::vector<Value>> BuilderDomain::expand(Eng& eng, NodeId n, const Value&) {
  Loop& lp = loops_.back();
  if (!expandable(lp, node(n).a)) return std::nullopt;
  lp.n_inst = out.insts.size();
  lp.n_leaf = out.leaves.size();
  lp.n_diag = out.diags.size();
  lp.n_created = ctx().created.size();
  lp.was_stopped = eng.stopped();
  std::vector<Value> vals;
  for (std::int64_t i = *lp.lo; i < *lp.hi; ++i)
    vals.push_back(iteration(lp, i));
  return vals;
}

bool BuilderDomain::iterated(Eng& eng, NodeId, std::size_t i) {
  if (i != 0) return true;
  return !undo_if_too_big(eng, loops_.back());
}

Value BuilderDomain::loop_variable(Eng&, NodeId, const Value&) {
  Value v;
  v.kind = Value::Kind::loop_var;
  return v;
}

// `(0..n).map(|i| ..)`: the closure's body is the loop's.
void BuilderDomain::repeat_closure(Eng& eng, NodeId recv, NodeId closure) {
  std::vector<NodeId> ps = pattern_elems(closure);
  NodeId pat = ps.empty() ? kNone : ps[0];
  Loop lp = loop_of(recv, pat);
  ctx().repeat.push_back(lp.var + " in " + lp.bound_text);
  bool expanded = false;
  if (expandable(lp, pat)) {
    lp.n_inst = out.insts.size();
    lp.n_leaf = out.leaves.size();
    lp.n_diag = out.diags.size();
    lp.n_created = ctx().created.size();
    lp.was_stopped = eng.stopped();
    const auto env = eng.frame().env;
    expanded = true;
    for (std::int64_t i = *lp.lo; i < *lp.hi && !eng.stopped(); ++i) {
      eng.run_closure(body(), closure, {iteration(lp, i)});
      if (i == *lp.lo && undo_if_too_big(eng, lp)) {
        eng.frame().env = env;
        expanded = false;
        break;
      }
    }
  }
  if (!expanded) eng.run_closure(body(), closure, {loop_variable(eng, kNone, Value{})});
  ctx().repeat.pop_back();
}

// Patterns ---------------------------------------------------------------------------------------

// The names pattern `pat` of `owner` binds to `v`, as the walker bound them.
BuilderDomain::Names BuilderDomain::bindings(Eng&, NodeId owner, NodeId pat, const Value& v) {
  Names out_names;
  if (pat == kNone) return out_names;
  const rust::Node& o = node(owner);
  switch (o.kind) {
    case Kind::Let:
      if (is_ident(pat) || (node(pat).kind == Kind::PIdent && node(pat).is_mut_pattern()))
        out_names.emplace_back(std::string(node(pat).str), o.b == kNone ? Value{} : v);
      else if (o.b != kNone)
        destructure(pat, v, out_names, 0);
      else
        shadow_pattern(pat, out_names);
      return out_names;
    case Kind::LetCond: {
      // `if let (Ok(e), Ok(t)) = (A::load(..), B::load(..))`: each name the part it matches.
      if (node(pat).kind == Kind::PTuple && v.elems) {
        destructure(pat, v, out_names, 0);
        return out_names;
      }
      // `if let Some(h) = x`: h is x's value in the then-branch; other patterns bind nothing.
      if (node(pat).kind != Kind::PTupleStruct || text(pat).rfind("Some", 0) != 0) return out_names;
      auto elems = pattern_elems(pat);
      if (elems.size() == 1 && is_ident(elems[0])) out_names.emplace_back(text(elems[0]), v);
      return out_names;
    }
    case Kind::Arm: {
      shadow_pattern(pat, out_names);
      shadow_expr(o.b, out_names);
      // `(Ok(e), Ok(t)) => (e, t)` on a tuple scrutinee: each name the part it matches (the
      // modules that part built), so `Self { embeddings: e, .. }` names them.
      if (NodeId tuple = body().peel(pat, {Kind::PRef});
          node(tuple).kind == Kind::PTuple && v.elems) {
        destructure(tuple, v, out_names, 0);
        return out_names;
      }
      // `Some(n) => ..` on an `Option` known to be `Some`: n is its payload.
      NodeId some = body().peel(pat, {Kind::PRef});
      if (node(some).kind != Kind::PTupleStruct || !interp::names_variant(node(some).str, "Some"))
        return out_names;
      auto elems = pattern_elems(some);
      if (elems.size() != 1 || !is_ident(elems[0])) return out_names;
      Value inner = v;
      if (v.kind == Value::Kind::sym) {
        if (!option_variant(v.sym).value_or(false)) return out_names;
        if (!v.sym.concrete())  // `Some(expr)`: the payload is expr
          inner.sym = SymValue::symbolic(v.sym.text.substr(5, v.sym.text.size() - 6), v.sym.reason);
      } else if (v.kind != Value::Kind::builder) {
        return out_names;
      }
      out_names.emplace_back(text(elems[0]), std::move(inner));
      return out_names;
    }
    case Kind::For:
    case Kind::Closure: {
      if (node(pat).is_underscore()) return out_names;
      // A literal array's row bound to a tuple pattern: each name its literal.
      NodeId tuple = body().peel(pat, {Kind::PRef});
      if (v.rows && v.rows->size() == 1 && tuple != kNone && node(tuple).kind == Kind::PTuple &&
          row_pattern(pat, v.rows->front().size())) {
        const auto kids = body().kids_view(tuple);
        for (std::size_t k = 0; k < kids.size(); ++k) {
          Value e;
          e.kind = Value::Kind::sym;
          e.sym = v.rows->front()[k];
          out_names.emplace_back(std::string(node(body().peel(kids[k], {Kind::PRef})).str),
                                 std::move(e));
        }
        return out_names;
      }
      if (v.kind == Value::Kind::none || v.kind == Value::Kind::loop_var)
        shadow_pattern(pat, out_names);
      if (v.kind != Value::Kind::none) out_names.emplace_back(first_identifier(pat), v);
      return out_names;
    }
    default:
      shadow_pattern(pat, out_names);
      return out_names;
  }
}

// A tuple or struct pattern bound to a value whose parts are known: a tuple expression's
// elements (`let (h, i) = (cfg.hidden_size, cfg.intermediate_size)`, nested tuples too), a tuple
// of literals' row, a config's or record's fields (`let Config { hidden_size, .. } = cfg`). A
// part that is not known (a tuple returned by an unknown call) shadows the names below it:
// nothing known, never a guess.
void BuilderDomain::destructure(NodeId pat, const Value& v, Names& out_names, int depth) {
  if (pat == kNone) return;
  const rust::Node& p = node(pat);
  if (depth > 16) {
    shadow_pattern(pat, out_names);
    return;
  }
  switch (p.kind) {
    case Kind::PIdent:
      out_names.emplace_back(std::string(p.str), v);
      if (p.a != kNone) destructure(p.a, v, out_names, depth + 1);  // `x @ (a, b)`
      return;
    case Kind::PWild:
      return;
    case Kind::PRef:
      destructure(p.a, v, out_names, depth + 1);
      return;
    case Kind::PTuple: {
      // `(a, .., z)`: the names before the rest take the first parts, those after it the last.
      const auto kids = body().kids_view(pat);
      const auto rest = std::find_if(kids.begin(), kids.end(),
                                     [&](NodeId k) { return node(k).kind == Kind::PRest; });
      std::vector<Value> parts;
      if (v.elems) {
        parts = *v.elems;
      } else if (v.rows && v.rows->size() == 1) {
        for (const SymValue& s : v.rows->front()) {
          Value e;
          e.kind = Value::Kind::sym;
          e.sym = s;
          parts.push_back(std::move(e));
        }
      }
      const auto before = static_cast<std::size_t>(rest - kids.begin());
      const std::size_t after = rest == kids.end() ? 0 : kids.size() - before - 1;
      if (rest == kids.end() ? parts.size() != kids.size() : parts.size() < before + after) break;
      for (std::size_t i = 0; i < before; ++i)
        destructure(kids[i], parts[i], out_names, depth + 1);
      for (std::size_t i = 0; i < after; ++i)
        destructure(kids[before + 1 + i], parts[parts.size() - after + i], out_names, depth + 1);
      return;
    }
    case Kind::PTupleStruct: {
      // `Ok(x)` / `Some(x)` where the pattern matches: x is the value (a constructor's Result or
      // Option is its module when it succeeded). `Err(e)`, `None` and others bind nothing known.
      auto elems = pattern_elems(pat);
      if (elems.size() == 1 &&
          (interp::names_variant(p.str, "Ok") || interp::names_variant(p.str, "Some"))) {
        destructure(elems[0], v, out_names, depth + 1);
        return;
      }
      break;
    }
    case Kind::PStruct:
      if (v.kind != Value::Kind::config && v.kind != Value::Kind::layer_config) break;
      for (NodeId k : body().kids_view(pat))
        destructure(node(k).a, member(v, node(k).str), out_names, depth + 1);
      return;
    default:
      break;
  }
  shadow_pattern(pat, out_names);
}

// Every name a pattern introduces (and, as the syntax walk did, the identifiers of the paths it
// names) shadowed: bound to nothing, so stale bindings do not leak into its scope.
void BuilderDomain::shadow_pattern(NodeId pat, Names& out_names) const {
  if (pat == kNone) return;
  const rust::Node& p = node(pat);
  switch (p.kind) {
    case Kind::PIdent:
      if (!p.is_field_pattern()) out_names.emplace_back(std::string(p.str), Value{});
      shadow_pattern(p.a, out_names);
      return;
    case Kind::PPath:
      if (p.is_identifier())
        out_names.emplace_back(std::string(p.str), Value{});
      else
        shadow_path(p.str, true, out_names);
      return;
    case Kind::PTupleStruct:
      shadow_path(p.str, true, out_names);
      break;
    case Kind::PStruct:
      shadow_path(p.str, false, out_names);
      break;
    case Kind::PField:
    case Kind::PRef:
      shadow_pattern(p.a, out_names);
      return;
    default:
      break;
  }
  for (NodeId k : body().kids_view(pat))
    shadow_pattern(k, out_names);
}

namespace {

bool plain_identifier(const std::string& s) {
  bool ident = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s)
    ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return ident && s != "self" && s != "super" && s != "crate";
}

}  // namespace

// The identifiers of a path written in a pattern (`a::B` binds `a` and `B`; a struct pattern's
// type name is a type identifier and binds nothing: `last` = false).
void BuilderDomain::shadow_path(std::string_view path, bool last, Names& out_names) const {
  std::vector<std::string> segs;
  std::size_t pos = 0;
  while (true) {
    auto next = path.find("::", pos);
    segs.emplace_back(path.substr(pos, next == std::string_view::npos ? next : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + 2;
  }
  if (!last) segs.pop_back();
  for (const auto& s : segs)
    if (plain_identifier(s)) out_names.emplace_back(s, Value{});
}

// A match guard's identifiers are shadowed in its arm, as the syntax walk did.
void BuilderDomain::shadow_expr(NodeId n, Names& out_names) const {
  if (n == kNone) return;
  const rust::Node& e = node(n);
  if (e.kind == Kind::Path) {
    if (e.is_identifier())
      out_names.emplace_back(std::string(e.str), Value{});
    else if (e.is_scoped_identifier())
      shadow_path(e.str, true, out_names);
    return;
  }
  if (e.kind == Kind::LetCond) {
    shadow_pattern(e.a, out_names);
    shadow_expr(e.b, out_names);
    return;
  }
  if (e.kind == Kind::Closure || e.kind == Kind::Macro) return;
  for (NodeId c : {e.a, e.b, e.c})
    shadow_expr(c, out_names);
  for (NodeId k : body().kids_view(n))
    shadow_expr(k, out_names);
}

// A pattern's elements, without the `_` tokens the syntax walk did not see.
std::vector<NodeId> BuilderDomain::pattern_elems(NodeId pat) const {
  std::vector<NodeId> elems;
  for (NodeId k : body().kids_view(pat))
    if (!node(k).is_underscore()) elems.push_back(k);
  return elems;
}

std::string BuilderDomain::first_identifier(NodeId pat) const {
  if (pat == kNone) return "_";
  const rust::Node& p = node(pat);
  auto first_of_path = [](std::string_view path, bool last) -> std::string {
    auto sep = path.find("::");
    if (sep == std::string_view::npos && !last) return "_";
    std::string s(path.substr(0, sep));
    return plain_identifier(s) ? s : "_";
  };
  switch (p.kind) {
    case Kind::PIdent:
      return p.is_field_pattern() ? "_" : std::string(p.str);
    case Kind::PPath:
      return p.is_identifier() ? std::string(p.str) : first_of_path(p.str, true);
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
  for (NodeId k : body().kids_view(pat)) {
    std::string s = first_identifier(k);
    if (s != "_") return s;
  }
  return "_";
}

}  // namespace cg::analysis::builder
