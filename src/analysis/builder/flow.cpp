// The builder/prefix domain's control-flow hooks: which branch a concrete condition or scrutinee
// takes, undecided branches as alternatives (each leaf marked with the branches around it) whose
// common leaves keep the outer certainty, the fork of a `let` bound by an undecided `if` of
// literals, `#[cfg]`s not understood, `let`s naming the instances their value created, struct
// literals naming their fields' instances, statement macros, and the engine's limits.
#include <set>

#include "analysis/builder/domain.hpp"
#include "analysis/interp/option_pattern.hpp"

namespace cg::analysis::builder {

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

void BuilderDomain::push_alt(const std::string& group, NodeId at, int index, int count,
                             const std::string& label) {
  alt_ctx_.push_back({group, where(at), inventory::one_line(label), index, count});
}

void BuilderDomain::under(const Cert& c, const std::function<void()>& fn) {
  Cert saved = ctx().cert;
  ctx().cert = c;
  fn();
  ctx().cert = saved;
}

// Whether `s` is an `Option` known to be `Some` (true) or `None` (false): `Some(x)` evaluates to
// x, so a concrete value is a `Some` of it; one of unknown value is written `Some(..)`.
std::optional<bool> BuilderDomain::option_variant(const SymValue& s) {
  if (s.kind == SymValue::Kind::none) return false;
  if (s.concrete()) return true;
  if (s.text.starts_with("Some(") && s.text.ends_with(")")) return true;
  return std::nullopt;
}

std::optional<std::size_t> BuilderDomain::choose(Eng&, NodeId n, const Value& cond) {
  const rust::Node& nd = node(n);
  if (nd.kind == Kind::If) {
    NodeId c = nd.a;
    if (node(c).kind == Kind::LetCond) {
      NodeId pat = node(c).a;
      std::optional<std::size_t> taken;
      if (cond.kind == Value::Kind::sym && cond.sym.kind == SymValue::Kind::none) taken = 1;
      if (pat != kNone && node(pat).kind == Kind::PTupleStruct) {
        auto elems = pattern_elems(pat);
        if (text(pat).rfind("Some", 0) == 0 && elems.size() == 1 && is_ident(elems[0])) {
          if (cond.kind == Value::Kind::builder) taken = 0;
          if (cond.kind == Value::Kind::sym && cond.sym.concrete() &&
              cond.sym.kind != SymValue::Kind::none)
            taken = 0;
        }
      }
      if (!taken) branches_.push_back(open_branch(n, Branch::Kind::if_));
      return taken;
    }
    SymValue s = eval_sym(c);
    if (s.kind == SymValue::Kind::boolean) return s.boolean ? 0 : 1;
    branches_.push_back(open_branch(n, Branch::Kind::if_));
    return std::nullopt;
  }
  // An `Option` of known variant takes the arm that variant selects (`match nclasses { None =>
  // .., Some(n) => .. }` on a `Some(num_classes)` passed in).
  SymValue s = eval_sym(nd.a);
  if (auto some = option_variant(s))
    if (auto arm = interp::option_arm(body(), n, *some)) return arm;
  // A concrete scrutinee picks the arm whose literal pattern equals it (or `_`). A string names
  // an enum variant (`--arg model=Vgg16` or `=Models::Vgg16` for `match model { Models::Vgg13 =>
  // .., Models::Vgg16 => .. }`): the arm of a path pattern ending in that variant.
  const auto arms = body().kids_view(n);
  if (s.kind == SymValue::Kind::string)
    if (auto arm = interp::variant_arm(body(), n, inventory::last_segment(s.text))) return arm;
  if (s.concrete())
    for (std::size_t i = 0; i < arms.size(); ++i) {
      const rust::Node& arm = node(arms[i]);
      if (arm.text == "_" || arm.text == s.display()) return i;
    }
  bool fallback = std::any_of(arms.begin(), arms.end(), [&](NodeId a) {
    return node(a).text.find("Err(") != std::string_view::npos;
  });
  if (!fallback) {
    branches_.push_back(open_branch(n, Branch::Kind::match));
    branches_.back().count = arms.size();
  }
  return std::nullopt;
}

// A branch about to run its alternatives: its group, the certainty outside it, and the text of
// its condition or scrutinee for the labels.
BuilderDomain::Branch BuilderDomain::open_branch(NodeId n, Branch::Kind kind) {
  Branch b;
  b.node = n;
  b.kind = kind;
  b.outer = ctx().cert;
  b.count = 2;
  if (kind == Branch::Kind::if_ && node(n).kind == Kind::If) {
    NodeId c = node(n).a;
    if (node(c).kind == Kind::LetCond) {
      b.reason = "if " + text(c);
    } else {
      SymValue s = eval_sym(c);
      b.reason = "if " + (s.concrete() ? text(c) : s.text);
    }
    b.cond_text = b.reason.substr(3);
  } else if (kind == Branch::Kind::match) {
    SymValue s = eval_sym(node(n).a);
    b.scrut_text = s.concrete() ? text(node(n).a) : s.text;
  }
  b.group = new_group(n);
  return b;
}

// The label of alternative `i` of branch `b`.
std::string BuilderDomain::label_of(const Branch& b, std::size_t i) {
  if (i < b.labels.size()) return b.labels[i];
  switch (b.kind) {
    case Branch::Kind::if_:
    case Branch::Kind::split:
      return i == 0 ? "if " + b.cond_text : "unless " + b.cond_text;
    case Branch::Kind::match: {
      const auto arms = body().kids_view(b.node);
      std::string pat = i < arms.size() ? std::string(node(arms[i]).text) : "_";
      return "match " + b.scrut_text + " => " + pat;
    }
    case Branch::Kind::fallback:
      return i == 0 ? "primary " + inventory::brief(text(node(b.node).a))
                    : "fallback when " + inventory::brief(text(node(b.node).a)) + " fails";
  }
  return "";
}

void BuilderDomain::scrutinee(Eng&, NodeId n, bool begin) {
  const auto arms = body().kids_view(n);
  bool fallback = std::any_of(arms.begin(), arms.end(), [&](NodeId a) {
    return node(a).text.find("Err(") != std::string_view::npos;
  });
  if (!fallback) return;
  if (begin) {
    Branch b;
    b.node = n;
    b.kind = Branch::Kind::fallback;
    b.outer = ctx().cert;
    b.count = 2;
    SymValue sv = eval_sym(node(n).a);
    b.scrut_text = sv.concrete() ? text(node(n).a) : sv.text;
    b.group = new_group(n);
    push_alt(b.group, n, 0, 2, label_of(b, 0));
    branches_.push_back(std::move(b));
  } else {
    alt_ctx_.pop_back();
  }
}

void BuilderDomain::branch_begin(Eng&, NodeId, std::size_t i, std::size_t) {
  Branch& b = branches_.back();
  if (i == 0) b.marks.push_back(marks());
  std::size_t index = i;
  Cert cert;
  if (b.kind == Branch::Kind::fallback) {
    // The fallback arms load only when the primary failed: two alternatives, whatever the arms.
    std::string pat(node(body().kid(b.node, static_cast<std::uint32_t>(i))).text);
    index = pat.find("Err(") != std::string::npos ? 1 : 0;
    cert = inventory::conditional(b.outer, "match " + b.scrut_text + " => " + pat);
  }
  const std::string label = label_of(b, index);
  if (b.kind != Branch::Kind::fallback) cert = inventory::conditional(b.outer, label);
  push_alt(b.group, b.node, static_cast<int>(index), static_cast<int>(b.count), label);
  saved_certs_.push_back(ctx().cert);
  ctx().cert = cert;
}

void BuilderDomain::branch_end(Eng&, NodeId, std::size_t i) {
  Branch& b = branches_.back();
  ctx().cert = saved_certs_.back();
  saved_certs_.pop_back();
  alt_ctx_.pop_back();
  b.marks.push_back(marks());
  if (i + 1 == b.count) b.closing = true;
}

// A statement naming a split `let`'s names runs once per alternative: one branch of the split's
// group (the same group for every such statement, so their alternatives stay one choice).
void BuilderDomain::fork_begin(Eng&, NodeId let) {
  for (auto it = splits_.rbegin(); it != splits_.rend(); ++it)
    if (it->first == let) {
      branches_.push_back(it->second);
      return;
    }
}

void BuilderDomain::split_end(Eng&, NodeId let) {
  for (auto it = splits_.rbegin(); it != splits_.rend(); ++it)
    if (it->first == let) {
      splits_.erase(std::next(it).base());
      --forks_;
      return;
    }
}

void BuilderDomain::branches_joined(Eng&, NodeId) {
  Branch b = std::move(branches_.back());
  branches_.pop_back();
  if (b.kind == Branch::Kind::fallback || b.marks.size() < 3) return;
  if (b.kind == Branch::Kind::if_ && node(b.node).kind == Kind::If && node(b.node).c == kNone)
    return;
  unify(b, b.kind != Branch::Kind::match);
}

// Leaves every alternative registers are as certain as the branch (Rust matches are
// exhaustive): they keep the outer certainty and are no alternative of its group. Only with the
// same shape in every arm: `if wide { vb.get((16, 32), "w")? } else { vb.get((16, 8), "w")? }`
// registers `w` whichever arm runs, but its shape is the arm's (the parameter is then per arm).
void BuilderDomain::unify(const Branch& b, bool instances) {
  auto sig = [&](std::size_t i) {
    const auto& l = out.leaves[i];
    std::string s = l.root + "\n" + l.key + "\n";
    if (!l.shape) return s + "?";
    for (const auto& d : *l.shape)
      s += (d.concrete() ? d.display() : d.text) + ",";
    return s;
  };
  std::map<std::string, std::size_t> counts;
  const std::size_t arms = b.marks.size() - 1;
  for (std::size_t a = 0; a < arms; ++a) {
    std::set<std::string> seen;
    for (std::size_t i = b.marks[a].first; i < b.marks[a + 1].first; ++i)
      seen.insert(sig(i));
    for (const auto& x : seen)
      ++counts[x];
  }
  for (std::size_t i = b.marks.front().first; i < b.marks.back().first; ++i)
    if (counts[sig(i)] == arms) {
      out.leaves[i].cert = inventory::join(b.outer, inner_of(i, b.outer, b.group));
      std::erase_if(out.leaves[i].alts,
                    [&](const AlternativeMark& m) { return m.group == b.group; });
    }
  if (!instances || arms != 2) return;
  auto isig = [&](std::size_t i) {
    const auto& in = out.insts[i];
    return in.root + "\n" + in.prefix + "\n" + in.type_name;
  };
  std::set<std::string> ia, ib;
  for (std::size_t i = b.marks[0].second; i < b.marks[1].second; ++i)
    ia.insert(isig(i));
  for (std::size_t i = b.marks[1].second; i < b.marks[2].second; ++i)
    ib.insert(isig(i));
  for (std::size_t i = b.marks[0].second; i < b.marks[2].second; ++i)
    if (ia.count(isig(i)) && ib.count(isig(i))) out.insts[i].cert = b.outer;
}

// The certainty a leaf would have had outside the branch: catalog conditions stay.
// The certainty leaf `i` keeps when every arm of branch `group` registers it: the outer one, or
// conditional on the first undecided branch inside that arm, which still holds.
Cert BuilderDomain::inner_of(std::size_t i, const Cert& outer, const std::string& group) const {
  const auto& l = out.leaves[i];
  auto mine = std::find_if(l.alts.begin(), l.alts.end(),
                           [&](const AlternativeMark& m) { return m.group == group; });
  if (mine != l.alts.end() && std::next(mine) != l.alts.end())
    return inventory::conditional(outer, std::next(mine)->label);
  if (l.cert.reason.rfind("if ", 0) == 0 || l.cert.reason.rfind("unless ", 0) == 0 ||
      l.cert.reason.rfind("match ", 0) == 0)
    return outer;
  return l.cert;
}

void BuilderDomain::uncertain(Eng&, NodeId, bool begin) {
  if (begin) {
    saved_certs_.push_back(ctx().cert);
    ctx().cert = inventory::conditional(ctx().cert, "a #[cfg] that is not understood");
  } else {
    ctx().cert = saved_certs_.back();
    saved_certs_.pop_back();
  }
}

// Whether `let name = f(.., vb, ..);` (no `?`) leaves its loads optional: the value is a call
// given a VarBuilder, and every later use of `name` in the body only inspects the Result (`if let
// Ok(..) = &name`, `match name`, `name.ok()`, `.is_ok()`, `.is_err()`) — a `name?`, `.unwrap()`,
// a return or any other use may propagate the error, and then the loads are required.
void BuilderDomain::around_let(Eng& eng, NodeId s, bool begin) {
  if (!begin) {
    if (optional_lets_.empty()) return;
    const OptionalLet open = optional_lets_.back();
    optional_lets_.pop_back();
    if (open.pushed) {
      // Back to the sizes before the `let`: what it pushed, and nothing its value left open.
      if (alt_ctx_.size() > open.alts) alt_ctx_.resize(open.alts);
      if (saved_certs_.size() > open.certs) {
        ctx().cert = saved_certs_[open.certs];
        saved_certs_.resize(open.certs);
      }
    }
    return;
  }
  optional_lets_.push_back({false, alt_ctx_.size(), saved_certs_.size()});
  const rust::Node& st = node(s);
  if (st.a == kNone || st.b == kNone || node(st.a).kind != Kind::PIdent || node(st.a).a != kNone)
    return;
  const NodeId call = body().peel(st.b, {Kind::Paren});
  if (node(call).kind != Kind::Call && node(call).kind != Kind::MethodCall) return;
  if (node(call).kind == Kind::MethodCall) {
    const std::string_view m = node(call).str;
    if (m == "unwrap" || m == "expect" || m == "pp" || m == "push_prefix" || m == "clone") return;
  }
  // A VarBuilder among the arguments: a local holding one, possibly through `.pp(..)` calls.
  bool builder = false;
  for (NodeId a : body().kids_view(call)) {
    NodeId r = body().peel(a, {Kind::Ref, Kind::Paren});
    while (r != kNone && node(r).kind == Kind::MethodCall)
      r = body().peel(node(r).a, {Kind::Ref, Kind::Paren});
    if (r == kNone || node(r).kind != Kind::Path) continue;
    const Value* v = eng.lookup(std::string(node(r).str));
    builder = builder || (v != nullptr && v->kind == Value::Kind::builder);
  }
  if (!builder) return;
  const std::string name(node(st.a).str);
  const std::uint32_t after = node(s).end;
  std::size_t uses = 0, inspections = 0;
  for (NodeId n = 0; n < body().size(); ++n) {
    const rust::Node& x = node(n);
    if (x.start < after) continue;
    if (x.kind == Kind::Path && x.str == name) ++uses;
    NodeId scrutinee = kNone;
    if (x.kind == Kind::LetCond || x.kind == Kind::Match)
      scrutinee = x.kind == Kind::Match ? x.a : x.b;
    else if (x.kind == Kind::MethodCall &&
             (x.str == "ok" || x.str == "is_ok" || x.str == "is_err") &&
             body().kids_view(n).empty())
      scrutinee = x.a;
    if (scrutinee == kNone) continue;
    scrutinee = body().peel(scrutinee, {Kind::Ref, Kind::Paren});
    if (scrutinee != kNone && node(scrutinee).kind == Kind::Path && node(scrutinee).str == name)
      ++inspections;
  }
  if (uses == 0 || uses != inspections) return;
  const std::string label =
      "only when " + inventory::brief(text(call)) + " succeeds (its Result is matched, not `?`)";
  push_alt(new_group(s), s, 0, 2, label);
  saved_certs_.push_back(ctx().cert);
  ctx().cert = inventory::conditional(ctx().cert, label);
  optional_lets_.back().pushed = true;
}

// The literal values each arm of `if c { ("a", "b") } else { ("c", "d") }` (in body `b`) gives
// the `names` names of a pattern; nullopt unless every arm is such literals.
std::optional<std::vector<std::vector<SymValue>>> BuilderDomain::fork_arms(const rust::Body& b,
                                                                           NodeId value,
                                                                           std::size_t names) {
  std::vector<std::vector<SymValue>> arms;
  for (NodeId block : {b[value].b, b[value].c}) {
    if (block == kNone || b[block].kids_count != 1) return std::nullopt;
    NodeId only = b.tail(block);
    if (only == kNone) return std::nullopt;
    std::vector<NodeId> parts;
    if (names == 1)
      parts.push_back(only);
    else if (b[only].kind == Kind::Tuple)
      parts = b.kids(only);
    if (parts.size() != names) return std::nullopt;
    std::vector<SymValue> vals;
    for (NodeId part : parts) {
      SymValue v = evaluate(b, part, *this);
      if (!v.concrete()) return std::nullopt;
      vals.push_back(v);
    }
    arms.push_back(std::move(vals));
  }
  return arms;
}

// `let (g, u, d) = resolve_names(&vb);` where the crate function's whole body is `if c { ("a",
// "b", "c") } else { ("x", "y", "z") }` with `c` undecided (it asks the checkpoint): the callee
// and its `if`, for the split to fork over the arms' literals as it does an inline `if`.
std::optional<std::pair<const rust::Body*, NodeId>> BuilderDomain::literal_helper(NodeId value) {
  value = body().peel(value, {Kind::Paren});
  if (value == kNone || node(value).kind != Kind::Call) return std::nullopt;
  const std::string path = inventory::strip_generics(text(node(value).a));
  std::optional<std::size_t> callee;
  for (const auto& c : resolve_in(eng_->item(), path))
    if (c.kind == rust::Candidate::Kind::Item &&
        (crate_.items()[c.item].kind == rust::ItemKind::Function ||
         crate_.items()[c.item].kind == rust::ItemKind::Method)) {
      if (callee) return std::nullopt;  // two candidates: not one body
      callee = c.item;
    }
  if (!callee) return std::nullopt;
  const rust::Body& b = crate_.lowered(*callee);
  if (b.root == kNone || b[b.root].kids_count != 1) return std::nullopt;
  NodeId tail = b.peel(b.value_tail(b.root), {Kind::Paren});
  if (tail == kNone || b[tail].kind != Kind::If || b[tail].c == kNone ||
      b[b[tail].a].kind == Kind::LetCond || b[b[tail].c].kind != Kind::Block)
    return std::nullopt;
  return std::make_pair(&b, tail);
}

// `let (q, k) = if c { ("to_q", "to_k") } else { ("query", "key") };` with `c` unknown: the
// rest of the block runs once per arm, each arm's literals bound, under its condition.
// `let merged = has_a && !(has_b && has_c);` of unknown value, later the condition of an `if`
// choosing between two string literals (`vb.pp(if merged { "gate_up_proj" } else { "gate_proj"
// })`): the rest of the block runs once with `merged` true and once false, so each key is read as
// written under its condition rather than left as an `{if ..}` segment.
std::vector<BuilderDomain::Names> BuilderDomain::split_flag(NodeId let) {
  NodeId pat = node(let).a, value = node(let).b;
  if (!is_ident(pat) || forks_ >= 4) return {};
  SymValue c = eval_sym(value);
  if (c.concrete()) return {};
  const std::string name(node(pat).str);
  bool chooses_key = false;
  for (NodeId n = 0; n < body().size() && !chooses_key; ++n) {
    const rust::Node& x = node(n);
    if (x.kind != Kind::If || x.start < node(let).end || x.c == kNone) continue;
    NodeId cond = body().peel(x.a, {Kind::Paren});
    if (cond == kNone || node(cond).kind != Kind::Path || node(cond).str != name) continue;
    bool literals = true;
    for (NodeId block : {x.b, x.c}) {
      NodeId only = node(block).kind == Kind::Block && node(block).kids_count == 1
                        ? body().tail(block)
                        : kNone;
      literals = literals && only != kNone && node(only).kind == Kind::Lit &&
                 node(only).lit == rust::LitKind::Str;
    }
    chooses_key = literals;
  }
  if (!chooses_key) return {};
  ++forks_;
  Branch b;
  b.node = value;
  b.kind = Branch::Kind::split;
  b.outer = ctx().cert;
  b.cond_text = name;
  b.group = new_group(value);
  b.count = 2;
  splits_.emplace_back(let, std::move(b));
  std::vector<Names> out_alts;
  for (bool v : {true, false}) {
    Value val;
    val.kind = Value::Kind::sym;
    val.sym = SymValue::of_bool(v);
    out_alts.push_back(Names{{name, std::move(val)}});
  }
  return out_alts;
}

std::vector<BuilderDomain::Names> BuilderDomain::split(Eng& eng, NodeId let) {
  NodeId pat = node(let).a, value = node(let).b;
  if (pat == kNone || value == kNone || forks_ >= 4) return {};
  if (NodeId call = body().peel(value, {Kind::Try, Kind::Paren});
      call != kNone && node(call).kind == Kind::MethodCall)
    if (auto alts = split_impls(eng, let); !alts.empty()) return alts;
  std::vector<NodeId> names;
  if (is_ident(pat)) names.push_back(pat);
  if (node(pat).kind == Kind::PTuple)
    for (NodeId p : body().kids_view(pat))
      if (is_ident(p)) names.push_back(p);
  std::optional<std::vector<std::vector<SymValue>>> arms;
  std::string cond_text;
  if (node(value).kind != Kind::If) {
    // A crate function whose body is such an `if`: its condition is the callee's (its
    // parameters are not bound here, so it stays undecided: a checkpoint probe).
    auto helper = names.empty() ? std::nullopt : literal_helper(value);
    if (!helper) return split_flag(let);
    const rust::Body& hb = *helper->first;
    if (evaluate(hb, hb[helper->second].a, *this).concrete()) return {};
    arms = fork_arms(hb, helper->second, names.size());
    cond_text = inventory::one_line(std::string(hb.source(hb[helper->second].a)));
  } else {
    NodeId cond = node(value).a, alt = node(value).c;
    if (node(cond).kind == Kind::LetCond || alt == kNone) return {};
    SymValue c = eval_sym(cond);
    if (c.concrete()) return {};
    if (node(alt).kind != Kind::Block || !node(alt).is_block_expression()) return {};
    if (names.empty()) return {};
    arms = fork_arms(body(), value, names.size());
    cond_text = inventory::one_line(c.text);
  }
  if (!arms) return {};
  ++forks_;
  Branch b;
  b.node = value;
  b.kind = Branch::Kind::split;
  b.outer = ctx().cert;
  b.cond_text = cond_text;
  b.group = new_group(value);
  b.count = 2;
  splits_.emplace_back(let, std::move(b));
  std::vector<Names> out_alts;
  for (const auto& arm : *arms) {
    Names alt_names;
    for (std::size_t k = 0; k < names.size(); ++k) {
      Value v;
      v.kind = Value::Kind::sym;
      v.sym = arm[k];
      alt_names.emplace_back(text(names[k]), std::move(v));
    }
    out_alts.push_back(std::move(alt_names));
  }
  return out_alts;
}

// The instances a `let`'s value created are held by (and named after) its name.
BuilderDomain::Value BuilderDomain::let_value(Eng&, NodeId let, Value v) {
  const std::size_t before = let_marks_.back();
  let_marks_.pop_back();
  NodeId pat = node(let).a;
  std::string name;
  if (pat != kNone &&
      (is_ident(pat) || (node(pat).kind == Kind::PIdent && node(pat).is_mut_pattern())))
    name = std::string(node(pat).str);
  if (name.empty()) return v;
  for (std::size_t i = before; i < ctx().created.size(); ++i) {
    if (std::find(v.modules.begin(), v.modules.end(), ctx().created[i]) == v.modules.end())
      v.modules.push_back(ctx().created[i]);
    out.insts[ctx().created[i]].field = name;
  }
  return v;
}

// Assignments rebind nothing (the inventory reads each `let`), but for a field of a local config
// (`encoder_cfg.is_decoder = false` after `let mut encoder_cfg = cfg.clone()`): that local's copy
// reads the assigned value from then on (`op=`: a value not known).
std::optional<BuilderDomain::Value> BuilderDomain::assign(Eng&, NodeId n, Value v) {
  const rust::Node& nd = node(n);
  NodeId lhs = nd.a;
  if (lhs == kNone || node(lhs).kind != Kind::Field || !is_ident(node(lhs).a) ||
      node(node(lhs).a).kind != Kind::Path)
    return std::nullopt;
  Value* cfg = local_mut(text(node(lhs).a));
  if (cfg == nullptr || cfg->kind != Value::Kind::config) return std::nullopt;
  std::string name(node(lhs).str);
  auto assigned = std::make_shared<std::map<std::string, SymValue, std::less<>>>();
  if (cfg->config.assigned) *assigned = *cfg->config.assigned;
  SymValue s = v.kind == Value::Kind::sym && nd.kind == Kind::Assign
                   ? v.sym
                   : SymValue::symbolic(text(lhs), "`" + text(n) + "` is not evaluated");
  (*assigned)[name] = std::move(s);
  cfg->config.assigned = std::move(assigned);
  return std::nullopt;
}

BuilderDomain::Value BuilderDomain::structure(Eng& eng, NodeId n) {
  std::map<std::string, Value> evaluated;
  for (NodeId fi : body().kids_view(n)) {
    const rust::Node& f = node(fi);
    std::string fname(f.str);
    if (f.flags & rust::kShorthand) {
      if (f.a != kNone) name_held_modules(f.a, fname);
      if (const Value* v = local(fname)) evaluated[fname] = *v;
      continue;
    }
    std::size_t before = ctx().created.size();
    Value v = eng.eval(f.a);
    bool built = ctx().created.size() > before;
    for (std::size_t i = before; i < ctx().created.size(); ++i)
      out.insts[ctx().created[i]].field = fname;
    name_held_modules(f.a, fname);
    if (built &&
        std::find(v.modules.begin(), v.modules.end(), ctx().created.back()) == v.modules.end())
      v.modules.push_back(ctx().created.back());
    evaluated[fname] = std::move(v);
  }
  if (auto c = constructed_config(eng, n, evaluated)) return *c;
  Value base = eng.eval(node(n).a);  // `..base`
  // `Config { num_layers: 2, ..cfg.clone() }`: the base config with those fields replaced.
  if (base.kind == Value::Kind::config) {
    std::string type = inventory::strip_generics(std::string(node(n).str));
    auto own = config_type(type, crate_.items()[eng.item()].module);
    if (own && own->item == base.config.item) {
      auto assigned = std::make_shared<std::map<std::string, SymValue, std::less<>>>();
      if (base.config.assigned) *assigned = *base.config.assigned;
      for (NodeId fi : body().kids_view(n)) {
        const auto it = evaluated.find(std::string(node(fi).str));
        (*assigned)[std::string(node(fi).str)] =
            it != evaluated.end() && it->second.kind == Value::Kind::sym
                ? it->second.sym
                : SymValue::symbolic(text(fi), "`" + text(fi) + "` is not a number");
      }
      base.config.assigned = std::move(assigned);
      base.modules.clear();
      base.elems.reset();
      return base;
    }
  }
  if (auto s = struct_value(n, &evaluated)) return *s;
  return {};
}

// `Self { attn: a }` where `let a = Attention::new(..)`: the instance's field is `attn`.
// Also through `Some((a, l))`, `Box::new(a)` and tuples: every local they hold.
void BuilderDomain::name_held_modules(NodeId value, const std::string& field, int depth) {
  value = body().peel(value, {Kind::Try, Kind::Ref, Kind::Paren});
  if (value == kNone || depth > 8) return;
  if (node(value).kind == Kind::Tuple || node(value).kind == Kind::Array) {
    for (NodeId k : body().kids_view(value))
      name_held_modules(k, field, depth + 1);
    return;
  }
  if (node(value).kind == Kind::Call && node(value).kids_count == 1) {
    std::string path = inventory::strip_generics(text(node(value).a));
    if (path == "Some" || path == "Ok" || path == "Box::new" || path == "Arc::new" ||
        path == "Rc::new")
      name_held_modules(body().kid(value, 0), field, depth + 1);
    return;
  }
  if (!is_ident(value) || node(value).kind != Kind::Path) return;
  if (const Value* v = local(text(value)))
    for (std::size_t m : v->modules)
      out.insts[m].field = field;
}

BuilderDomain::Value BuilderDomain::macro(Eng& eng, NodeId n) {
  const rust::Node& nd = node(n);
  if (nd.kind == Kind::MacroStmt && (nd.flags & rust::kSemicolon)) {
    std::string name = inventory::last_segment(std::string(nd.str));
    if (!inventory::ignored_macro(name))
      diag(n, "macro `" + name + "!` not expanded; any parameters it registers are invisible");
    return {};
  }
  // `let prefix = format!("blk.{i}")`: a key template as the inline `vb.pp(format!(..))` gives,
  // when every placeholder is a known string or number, or a loop variable (a family index).
  if (nd.kind == Kind::Macro && inventory::last_segment(std::string(nd.str)) == "format") {
    rust::FormatArgs f = rust::parse_format_args(nd.text);
    bool known = f.ok;
    std::string key = !known ? "" : inventory::format_key(f, [&](const std::string& expr) {
      if (const Value* v = local(expr)) {
        if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::integer)
          return std::to_string(v->sym.integer);
        if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::string)
          return v->sym.text;
        if (v->kind == Value::Kind::loop_var) return "{" + expr + "}";
      }
      known = false;
      return std::string();
    });
    if (known) {
      Value v;
      v.kind = Value::Kind::sym;
      v.sym = SymValue::of_string(key);
      return v;
    }
  }
  return sym_of(eng, n);
}

void BuilderDomain::bound(Eng& eng, const interp::Bound& b) {
  NodeId at = b.node == kNone ? body().root : b.node;
  if (b.what == interp::Bound::What::budget) {
    out.truncated = true;
    diag(at, "analysis truncated after " + std::to_string(inventory::kMaxSteps) +
                 " steps (loops expanded by the bound config multiply the work)");
  } else if (b.what == interp::Bound::What::nesting) {
    diag(at, "expression nested deeper than " + std::to_string(inventory::kMaxNesting) +
                 " levels; the rest of it is not analyzed");
  } else {
    diag(at,
         "recursive constructor call `" + crate_.items()[b.item].name + "`; subtree not expanded");
  }
  (void)eng;
}

}  // namespace cg::analysis::builder
