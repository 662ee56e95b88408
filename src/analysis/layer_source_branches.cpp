#include <algorithm>

#include "analysis/layer_source_eval.hpp"

// Branches of the interpretation (layer_source_eval.hpp): each arm of an `if`/`match` runs under
// its condition, and leaves all arms request alike lose it.
namespace cg::analysis::layer_source_detail {

// Leaves every arm requests alike lose that arm's condition (a leaf requested on both sides
// of `if bias { linear(..) } else { linear_no_bias(..) }` is unconditional).
void Deriver::merge_arms(std::vector<Arm>& arms, std::size_t first) {
  if (arms.size() < 2) return;
  const std::size_t depth = conds_.size();
  auto rest_of = [&](const DLeaf& l) {
    return std::vector<std::string>(l.conds.begin() + static_cast<std::ptrdiff_t>(depth) + 1,
                                    l.conds.end());
  };
  auto same = [&](const DLeaf& x, const DLeaf& y) {
    return x.name == y.name && x.shape == y.shape && x.running_state == y.running_state &&
           rest_of(x) == rest_of(y);
  };
  std::vector<bool> used(leaves_.size(), false);
  std::vector<DLeaf> out(leaves_.begin(), leaves_.begin() + static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = arms[0].begin; i < arms[0].end; ++i) {
    std::vector<std::size_t> matched;
    for (std::size_t b = 1; b < arms.size(); ++b)
      for (std::size_t j = arms[b].begin; j < arms[b].end; ++j)
        if (!used[j] && same(leaves_[i], leaves_[j])) {
          matched.push_back(j);
          break;
        }
    DLeaf l = leaves_[i];
    if (matched.size() + 1 == arms.size()) {
      l.conds.erase(l.conds.begin() + static_cast<std::ptrdiff_t>(depth));
      for (std::size_t j : matched)
        used[j] = true;
    }
    out.push_back(std::move(l));
  }
  for (std::size_t b = 1; b < arms.size(); ++b)
    for (std::size_t j = arms[b].begin; j < arms[b].end; ++j)
      if (!used[j]) out.push_back(leaves_[j]);
  leaves_ = std::move(out);
  for (Arm& arm : arms)
    if (arm.value.k == Val::K::tensor) arm.value = Val{};  // indices moved
}

Val Deriver::join_values(const std::vector<Arm>& arms, const std::string& on) {
  Val v;
  for (const Arm& a : arms)
    if (a.value.k != Val::K::str) return {};
  v.k = Val::K::strs;
  v.strs_on = on;
  for (const Arm& a : arms)
    v.strs.push_back(a.value.text);
  return v;
}

// Runs `branch` under condition `cond`, recording its leaves.
template <typename F>
Deriver::Arm Deriver::run_arm(const std::string& cond, F&& branch) {
  Arm a;
  a.cond = cond;
  a.begin = leaves_.size();
  conds_.push_back(cond);
  a.value = branch();
  conds_.pop_back();
  a.end = leaves_.size();
  return a;
}

Val Deriver::if_expr(NodeId n) {
  const rust::Node& nd = node(n);
  std::string cond;
  NodeId c = nd.a;
  if (node(c).kind == Kind::LetCond) {
    Val v = eval(node(c).b);
    std::string pat = src(node(c).a);
    cond = v.k == Val::K::expr && pat.rfind("Some(", 0) == 0 ? v.text + ".is_some()"
                                                             : kUnknownCond + src(c);
    std::size_t env_size = frames_.back().env.size();
    Arm then = run_arm(cond, [&] {
      bind_pattern(node(c).a, Val{});
      return eval(nd.b);
    });
    frames_.back().env.resize(env_size);
    std::vector<Arm> arms{then};
    if (nd.c != kNone) arms.push_back(run_arm(negate(cond), [&] { return eval(nd.c); }));
    merge_arms(arms, then.begin);
    return arms.size() == 2 ? join_values(arms, cond) : Val{};
  }
  Val v = eval(c);
  if (v.is_bool(true)) return eval(nd.b);
  if (v.is_bool(false)) return nd.c == kNone ? Val{} : eval(nd.c);
  cond = v.k == Val::K::expr ? v.text : kUnknownCond + src(c);
  std::vector<Arm> arms{run_arm(cond, [&] { return eval(nd.b); })};
  if (nd.c != kNone) arms.push_back(run_arm(negate(cond), [&] { return eval(nd.c); }));
  merge_arms(arms, arms[0].begin);
  return arms.size() == 2 ? join_values(arms, cond) : Val{};
}

Val Deriver::match_expr(NodeId n) {
  const rust::Node& nd = node(n);
  Val s = eval(nd.a);
  std::string on = s.k == Val::K::expr ? s.text : src(nd.a);
  std::vector<Arm> arms;
  std::size_t first = leaves_.size();
  for (NodeId armn : body().kids(n)) {
    const rust::Node& an = node(armn);
    if (an.cfg == rust::Tri::False) continue;
    std::string pat = src(an.a);
    std::string cond;
    if (s.k == Val::K::expr && an.b == kNone) {
      if (pat.rfind("Some(", 0) == 0)
        cond = s.text + ".is_some()";
      else if (pat == "None")
        cond = negate(s.text + ".is_some()");
      else if (pat == "true")
        cond = s.text;
      else if (pat == "false")
        cond = negate(s.text);
    }
    if (cond.empty()) cond = kUnknownCond + on + " matches " + pat;
    std::size_t env_size = frames_.back().env.size();
    arms.push_back(run_arm(cond, [&] {
      bind_pattern(an.a, Val{});
      return eval(an.c);
    }));
    frames_.back().env.resize(env_size);
  }
  merge_arms(arms, first);
  return join_values(arms, on);
}

}  // namespace cg::analysis::layer_source_detail
