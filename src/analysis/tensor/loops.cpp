// The tensor domain's loops that run at least once (engine.hpp, `runs_at_least_once`): a `for`
// over a range a root's forward is known to enter, after which a local the body assigns on every
// iteration holds the body's value, not its join with the value before the loop (rwkv's
// `state_ = (&at + time_decay.broadcast_mul(&state_))?` over `0..t`).
#include <optional>
#include <string>

#include "analysis/tensor/domain.hpp"
#include "ir/model.hpp"

namespace cg::analysis::tensor {

using rust::Kind;

bool TensorDomain::runs_at_least_once(Eng& eng, NodeId n, const Val&) {
  // Only a root's forward run has the convention below; a constructor run expands its loops.
  if (!root_run_ || ctor_) return false;
  const rust::Body& b = eng.body();
  NodeId r = b.peel(b[n].b, {Kind::Paren});
  if (r == rust::kNone || b[r].kind != Kind::Range || b[r].b == rust::kNone) return false;
  const bool inclusive = b[r].str == "..=";
  std::optional<double> lo =
      b[r].a == rust::kNone ? std::optional<double>(0.0) : static_num(eng, b[r].a, 0);
  if (!lo) return false;
  if (std::optional<double> hi = static_num(eng, b[r].b, 0))
    return inclusive ? *hi >= *lo : *hi > *lo;
  // `0..t` with `t` a dimension of the root's input (`let (b, t, _) = xs.dims3()?` on it, or
  // on a tensor of the same dimensions): the figures describe one forward on a non-empty input,
  // batch and context at least 1, so such a dimension is at least 1.
  if (*lo != 0 && !(inclusive && *lo <= 1)) return false;
  NodeId e = b.peel(b[r].b, {Kind::Paren});
  if (b[e].kind != Kind::Path || !b[e].is_identifier()) return false;
  const Val* v = eng.lookup(std::string(b[e].str));
  if (!v || v->tensor || v->dim.empty() || v->dim == "?" || v->dim == "()" || v->dim == "_")
    return false;
  if (run_.fn_index >= ir_.functions.size()) return false;
  for (const auto& tid : ir_.functions[run_.fn_index].tensor_inputs) {
    const ir::Tensor* t = out_.tensor(tid);
    if (!t) continue;
    for (const auto& d : t->shape.dimensions)
      if (d.expr == v->dim) return true;
  }
  return false;
}

Val TensorDomain::loop_exit(const Val& before, const Val& body) const {
  Val out = body;
  // `n = n * 2` over the loop: the one symbolic iteration's number is the first iteration's.
  if (out.num && !out.tensor && before.num != out.num) {
    out.num.reset();
    out.dim.clear();
  }
  return out;
}

}  // namespace cg::analysis::tensor
