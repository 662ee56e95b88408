#include "analysis/tensor/value.hpp"

namespace cg::analysis::tensor {

Val join(const std::vector<Val>& vs) {
  std::vector<const Val*> live;
  for (const auto& v : vs)
    if (v.tensor || v.type_item >= 0 || !v.ext_type.empty() || v.num) live.push_back(&v);
  if (live.empty()) return {};
  Val out = *live.front();
  for (std::size_t i = 1; i < live.size(); ++i) {
    const Val& o = *live[i];
    if (o.dtype != out.dtype) out.dtype = "Unknown";
    out.grad = join_grad(out.grad, o.grad);
    if (o.dom != out.dom) out.dom = NumericDomain::unknown;
    out.undischarged_log = out.undischarged_log || o.undischarged_log;
    out.tensor = out.tensor || o.tensor;
    out.modules.insert(o.modules.begin(), o.modules.end());
    if (out.tid.empty()) out.tid = o.tid;
  }
  return out;
}

Val loop_merge(const Val& before, const Val& after) {
  if (after.tensor) return after;  // one symbolic iteration
  return join({before, after});
}

}  // namespace cg::analysis::tensor
