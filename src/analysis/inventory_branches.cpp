// The inventory walker's branches over a lowered body: `if`/`match` as alternatives (each
// leaf marked with the undecided branches around it) whose common leaves keep the outer
// certainty, a concrete condition or scrutinee taking one branch, and the fork of a `let` bound
// by an undecided `if` of literals (the rest of the block walked once per arm).
#include <set>

#include "analysis/inventory_walker.hpp"

namespace cg::analysis::inventory {

using rust::Kind;
using rust::kNone;

// The literal values each arm of `if c { ("a", "b") } else { ("c", "d") }` gives the `names`
// names of a pattern; nullopt unless every arm is such literals.
std::optional<std::vector<std::vector<SymValue>>> Walker::fork_arms(NodeId value,
                                                                    std::size_t names) {
  std::vector<std::vector<SymValue>> arms;
  for (NodeId block : {node(value).b, node(value).c}) {
    if (block == kNone || node(block).kids_count != 1) return std::nullopt;
    NodeId only = body().tail(block);
    if (only == kNone) return std::nullopt;
    std::vector<NodeId> parts;
    if (names == 1)
      parts.push_back(only);
    else if (node(only).kind == Kind::Tuple)
      parts = body().kids(only);
    if (parts.size() != names) return std::nullopt;
    std::vector<SymValue> vals;
    for (NodeId part : parts) {
      SymValue v = eval(part);
      if (!v.concrete()) return std::nullopt;
      vals.push_back(v);
    }
    arms.push_back(std::move(vals));
  }
  return arms;
}

// `let (q, k) = if c { ("to_q", "to_k") } else { ("query", "key") };` with `c` unknown: the
// rest of the block is walked once per arm, each arm's literals bound, under its condition.
// Leaves every arm registers keep the outer certainty (unify).
bool Walker::fork_let(const Stmts& stmts, std::size_t i, int depth) {
  const rust::Node& let = node(stmts[i].first);
  NodeId pat = let.a, value = let.b;
  if (pat == kNone || value == kNone || node(value).kind != Kind::If || forks_ >= 4) return false;
  NodeId cond = node(value).a, alt = node(value).c;
  if (node(cond).kind == Kind::LetCond || alt == kNone) return false;
  SymValue c = eval(cond);
  if (c.concrete()) return false;
  if (node(alt).kind != Kind::Block || node(alt).syntax != "block") return false;
  std::vector<NodeId> names;
  if (is_ident(pat)) names.push_back(pat);
  if (node(pat).kind == Kind::PTuple)
    for (NodeId p : body().kids(pat))
      if (is_ident(p)) names.push_back(p);
  if (names.empty()) return false;
  auto arms = fork_arms(value, names.size());
  if (!arms) return false;
  ++forks_;
  Cert outer = frame().cert;
  std::string ctext = one_line(c.text);
  auto m0 = marks();
  Marks m1;
  const std::string group = new_group(value);
  for (std::size_t a = 0; a < 2; ++a) {
    const std::string label = (a == 0 ? "if " : "unless ") + ctext;
    in_alt(group, value, static_cast<int>(a), 2, label, [&] {
      under(conditional(outer, label), [&] {
        frame().scopes.emplace_back();
        for (std::size_t k = 0; k < names.size(); ++k) {
          Value v;
          v.kind = Value::Kind::sym;
          v.sym = (*arms)[a][k];
          bind(text(names[k]), std::move(v));
        }
        walk_stmts(stmts, i + 1, depth);
        frame().scopes.pop_back();
      });
    });
    if (a == 0) m1 = marks();
  }
  unify(m0, m1, marks(), outer, group);
  --forks_;
  return true;
}

void Walker::under(const Cert& c, const std::function<void()>& fn) {
  Cert saved = frame().cert;
  frame().cert = c;
  fn();
  frame().cert = saved;
}

void Walker::in_alt(const std::string& group, NodeId at, int index, int count,
                    const std::string& label, const std::function<void()>& fn) {
  alt_ctx_.push_back({group, where(at), one_line(label), index, count});
  fn();
  alt_ctx_.pop_back();
}

// Leaves registered in [from, leaves.size()) that every alternative of `group` registers are
// no alternative of it.
void Walker::drop_group(std::size_t from, std::size_t to, const std::string& group) {
  for (std::size_t i = from; i < to && i < leaves.size(); ++i)
    std::erase_if(leaves[i].alts, [&](const AlternativeMark& m) { return m.group == group; });
}

void Walker::walk_if(NodeId n, int depth) {
  const rust::Node& nd = node(n);
  NodeId cond = nd.a, cons = nd.b, alt_body = nd.c;
  std::optional<bool> taken;
  std::string reason;
  std::string bind_name;
  Value bind_value;
  if (node(cond).kind == Kind::LetCond) {
    NodeId v = node(cond).b, pat = node(cond).a;
    walk(v, depth);
    Value val = value_of(v, 0);
    if (val.kind == Value::Kind::sym && val.sym.kind == SymValue::Kind::none) taken = false;
    if (pat != kNone && node(pat).kind == Kind::PTupleStruct) {
      auto elems = pattern_elems(pat);
      if (text(pat).rfind("Some", 0) == 0 && elems.size() == 1 && is_ident(elems[0])) {
        bind_name = text(elems[0]);
        bind_value = val;
        if (val.kind == Value::Kind::builder) taken = true;
        if (val.kind == Value::Kind::sym && val.sym.concrete() &&
            val.sym.kind != SymValue::Kind::none)
          taken = true;
      }
    }
    reason = "if " + text(cond);
  } else {
    walk(cond, depth);
    SymValue c = eval(cond);
    if (c.kind == SymValue::Kind::boolean) taken = c.boolean;
    reason = "if " + (c.concrete() ? text(cond) : c.text);
  }
  Cert outer = frame().cert;
  auto run_then = [&] {
    frame().scopes.emplace_back();
    if (!bind_name.empty()) bind(bind_name, bind_value);
    walk(cons, depth);
    frame().scopes.pop_back();
  };
  if (taken) {
    if (*taken)
      run_then();
    else if (alt_body != kNone)
      walk(alt_body, depth);
    return;
  }
  auto m0 = marks();
  const std::string group = new_group(n);
  in_alt(group, n, 0, 2, reason, [&] { under(conditional(outer, reason), run_then); });
  auto m1 = marks();
  if (alt_body != kNone) {
    in_alt(group, n, 1, 2, "unless " + reason.substr(3), [&] {
      under(conditional(outer, "unless " + reason.substr(3)), [&] { walk(alt_body, depth); });
    });
    auto m2 = marks();
    unify(m0, m1, m2, outer, group);
  }
}

// Arms [m0,m1) and [m1,m2) of one branch: what both register keeps the outer certainty.
void Walker::unify(Marks m0, Marks m1, Marks m2, const Cert& outer, const std::string& group) {
  std::set<std::string> a, b;
  auto sig = [&](std::size_t i) { return leaves[i].root + "\n" + leaves[i].key; };
  for (std::size_t i = m0.first; i < m1.first; ++i)
    a.insert(sig(i));
  for (std::size_t i = m1.first; i < m2.first; ++i)
    b.insert(sig(i));
  for (std::size_t i = m0.first; i < m2.first; ++i)
    if (a.count(sig(i)) && b.count(sig(i))) {
      leaves[i].cert = join(outer, inner_of(i, outer));
      drop_group(i, i + 1, group);
    }
  std::set<std::string> ia, ib;
  auto isig = [&](std::size_t i) {
    return insts[i].root + "\n" + insts[i].prefix + "\n" + insts[i].type_name;
  };
  for (std::size_t i = m0.second; i < m1.second; ++i)
    ia.insert(isig(i));
  for (std::size_t i = m1.second; i < m2.second; ++i)
    ib.insert(isig(i));
  for (std::size_t i = m0.second; i < m2.second; ++i)
    if (ia.count(isig(i)) && ib.count(isig(i))) insts[i].cert = outer;
}

// The certainty a leaf would have had outside the branch: catalog conditions stay.
Cert Walker::inner_of(std::size_t i, const Cert& outer) {
  const Leaf& l = leaves[i];
  if (l.cert.reason.rfind("if ", 0) == 0 || l.cert.reason.rfind("unless ", 0) == 0 ||
      l.cert.reason.rfind("match ", 0) == 0)
    return outer;
  return l.cert;
}

void Walker::walk_match(NodeId n, int depth) {
  NodeId scrut = node(n).a;
  std::vector<NodeId> arms = body().kids(n);
  // `match (A::load(vb.pp("a")), B::load(..)) { (Ok(a), Ok(b)) => .., (Err(e), _) => fallback }`:
  // the fallback arms load only when the primary failed — two alternatives, never both.
  bool fallback = false;
  for (NodeId arm : arms)
    fallback = fallback || node(arm).text.find("Err(") != std::string_view::npos;
  const std::string fb_group = fallback ? new_group(n) : std::string();
  if (fallback)
    in_alt(fb_group, n, 0, 2, "primary " + brief(text(scrut)), [&] { walk(scrut, depth); });
  else
    walk(scrut, depth);
  SymValue s = eval(scrut);
  std::string stext = s.concrete() ? text(scrut) : s.text;
  // A concrete scrutinee picks the arm whose literal pattern equals it (or `_`).
  if (s.concrete())
    for (NodeId arm : arms)
      if (node(arm).text == "_" || node(arm).text == s.display()) {
        walk(node(arm).c, depth);
        return;
      }
  Cert outer = frame().cert;
  std::vector<Marks> ms{marks()};
  const std::string group = fallback ? fb_group : new_group(n);
  for (std::size_t a = 0; a < arms.size(); ++a) {
    const rust::Node& arm = node(arms[a]);
    std::string pat(arm.text);
    std::string reason = "match " + stext + " => " + pat;
    auto run = [&] {
      under(conditional(outer, reason), [&] {
        frame().scopes.emplace_back();
        shadow_pattern(arm.a);
        shadow_expr(arm.b);
        walk(arm.c, depth);
        frame().scopes.pop_back();
      });
    };
    if (fallback) {
      const bool err = pat.find("Err(") != std::string::npos;
      in_alt(
          group, n, err ? 1 : 0, 2,
          err ? "fallback when " + brief(text(scrut)) + " fails" : "primary " + brief(text(scrut)),
          run);
    } else {
      in_alt(group, n, static_cast<int>(a), static_cast<int>(arms.size()), reason, run);
    }
    ms.push_back(marks());
  }
  if (arms.size() >= 2 && !fallback) unify_arms(ms, arms.size(), outer, group);
}

// Leaves every arm registers are as certain as the match (Rust matches are exhaustive).
void Walker::unify_arms(const std::vector<Marks>& ms, std::size_t arms, const Cert& outer,
                        const std::string& group) {
  std::map<std::string, std::size_t> counts;
  auto sig = [&](std::size_t i) { return leaves[i].root + "\n" + leaves[i].key; };
  for (std::size_t a = 0; a + 1 < ms.size(); ++a) {
    std::set<std::string> seen;
    for (std::size_t i = ms[a].first; i < ms[a + 1].first; ++i)
      seen.insert(sig(i));
    for (const auto& x : seen)
      ++counts[x];
  }
  for (std::size_t i = ms.front().first; i < leaves.size(); ++i)
    if (counts[sig(i)] == arms) {
      leaves[i].cert = join(outer, inner_of(i, outer));
      drop_group(i, i + 1, group);
    }
}

}  // namespace cg::analysis::inventory
