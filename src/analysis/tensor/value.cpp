#include "analysis/tensor/value.hpp"

#include <algorithm>

#include "ir/model.hpp"

namespace cg::analysis::tensor {

Val join(const std::vector<Val>& vs, bool led) {
  std::vector<const Val*> live;
  for (const auto& v : vs)
    if (v.tensor || v.type_item >= 0 || !v.ext_type.empty() || v.num || v.elems || v.fn || v.vb ||
        v.items || v.fields || v.config || v.variant != Val::Variant::unknown || !v.word.empty())
      live.push_back(&v);
  if (live.empty()) return {};
  Val out = *live.front();
  // A variant survives a join only when every joined value has it (a value that carries nothing,
  // from an arm that diverges or is not modelled, makes it unknown).
  for (const auto& v : vs) {
    out.real = out.real || v.real;
    if (v.variant != out.variant) out.variant = Val::Variant::unknown;
    out.fresh_none = out.fresh_none && v.fresh_none;
    if (v.word != out.word) out.word.clear();
  }
  // Closures and collections survive a join only when every value is the same one: arms that
  // build different blocks (`match depth { Shallow => shallow()?, Deep => deep()? }`) leave it
  // unknown which run, rather than the first arm's taken for all.
  for (const Val* v : live) {
    if (v->fn != out.fn) out.fn.reset();
    if (v->items != out.items) out.items.reset();
    if (v->config != out.config) out.config.reset();
  }
  // Struct values join field by field when every joined value has the same fields.
  bool records = std::all_of(live.begin(), live.end(), [&](const Val* v) {
    if (!v->fields || v->fields->size() != live.front()->fields->size()) return false;
    return std::equal(v->fields->begin(), v->fields->end(), live.front()->fields->begin(),
                      [](const auto& a, const auto& b) { return a.first == b.first; });
  });
  if (!records) {
    out.fields.reset();
  } else if (live.size() > 1) {
    auto fs = std::make_shared<std::map<std::string, Val>>();
    for (const auto& [name, first] : *live.front()->fields) {
      std::vector<Val> column;
      for (const Val* v : live)
        column.push_back(v->fields->at(name));
      (*fs)[name] = join(column, led);
    }
    out.fields = std::move(fs);
  }
  // Tuples of one arity join element by element; anything else is no tuple.
  bool tuples = std::all_of(live.begin(), live.end(), [&](const Val* v) {
    return v->elems && v->elems->size() == live.front()->elems->size();
  });
  if (!tuples) {
    out.elems.reset();
  } else if (live.size() > 1) {
    auto es = std::make_shared<std::vector<Val>>();
    for (std::size_t i = 0; i < live.front()->elems->size(); ++i) {
      std::vector<Val> column;
      for (const Val* v : live)
        column.push_back((*v->elems)[i]);
      es->push_back(join(column, led));
    }
    out.elems = std::move(es);
  }
  for (std::size_t i = 1; i < live.size(); ++i) {
    const Val& o = *live[i];
    // Numbers that differ between branches are no number (`if c { 3 } else { 5 }`).
    if (o.num && out.num && *o.num != *out.num) out.num.reset();
    if (o.dtype != out.dtype) out.dtype = "Unknown";
    if (o.dtype_param != out.dtype_param) out.dtype_param.clear();
    out.grad = join_grad(out.grad, o.grad);
    if (o.dom != out.dom) out.dom = NumericDomain::unknown;
    out.undischarged_log = out.undischarged_log || o.undischarged_log;
    out.tensor = out.tensor || o.tensor;
    out.modules.insert(o.modules.begin(), o.modules.end());
    if (out.tid.empty()) out.tid = o.tid;
    // Branches that agree on the shape in this context keep it (`match mask { None => att,
    // Some(m) => att.broadcast_add(m)? }`), rather than fall back to the first tensor's shape in
    // the IR, which may be another context's (an attention's own `b*t*t` in the model's forward).
    bool same =
        o.shape == out.shape || (o.shape && out.shape && o.shape->rank && *o.shape == *out.shape);
    if (!led && (!same || (o.tid != out.tid && !o.shape))) out.shape.reset();
  }
  // Every tensor the join may be, when the branches made different ones.
  std::vector<std::string> alts;
  for (const Val* v : live) {
    if (!v->tensor || v->tid.empty()) continue;
    if (v->tid != out.tid && std::find(alts.begin(), alts.end(), v->tid) == alts.end())
      alts.push_back(v->tid);
    if (v->alt_tids)
      for (const auto& t : *v->alt_tids)
        if (t != out.tid && std::find(alts.begin(), alts.end(), t) == alts.end() && alts.size() < 8)
          alts.push_back(t);
  }
  if (!alts.empty())
    out.alt_tids = std::make_shared<const std::vector<std::string>>(std::move(alts));
  else if (live.size() > 1)
    out.alt_tids.reset();
  return out;
}

std::optional<Val> element(const Val& v, std::size_t i, std::size_t count) {
  if (!v.elems || v.elems->size() != count || i >= count) return std::nullopt;
  return (*v.elems)[i];
}

Val loop_merge(const Val& before, const Val& after) {
  if (after.tensor) {  // one symbolic iteration
    Val out = after;
    if (before.variant != after.variant) out.variant = Val::Variant::unknown;
    return out;
  }
  return join({before, after});
}

}  // namespace cg::analysis::tensor
