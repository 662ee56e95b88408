// One entrypoint's run in the tensor domain, and what is written once every entrypoint ran.
#include <algorithm>
#include <map>

#include "analysis/tensor/domain.hpp"

namespace cg::analysis::tensor {

TensorDomain::TensorDomain(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir,
                           checks::Reporter& out, Checks& checks)
    : crate_(crate),
      cat_(OpCatalog::for_version(opts.candle_version)),
      ir_(ir),
      out_(out),
      checks_(checks) {
  if (opts.config || (opts.built_configs && !opts.built_configs->empty()))
    binding_.emplace(crate, opts.config, opts.built_configs);
  args_ = opts.args;
  input_tensors_ = opts.input_tensors;
  inputs_used_ = opts.inputs_used;
  inputs_offered_ = opts.inputs_offered;
  for (std::size_t i = 0; i < ir_.functions.size(); ++i)
    fn_index_[ir_.functions[i].id] = i;
  for (const auto& m : ir_.modules) {
    modules_by_type_[m.qualified_type.value_or("")].push_back(m.id);
    if (m.parent) children_[*m.parent].push_back(&m);
    module_by_id_[m.id] = &m;
  }
  for (std::size_t i = 0; i < ir_.parameters.size(); ++i)
    if (ir_.parameters[i].module) params_by_module_[*ir_.parameters[i].module].push_back(i);
  // Tied weights (`Linear::new(embed.embeddings().clone(), None)`): a layer module with no
  // parameters or children of its own, at the key of a module that has parameters, applies
  // that module's weights.
  std::map<std::string, std::string> owner_at;  // component, root, key -> module with weights
  for (const auto& m : ir_.modules)
    if (params_by_module_.count(m.id))
      owner_at.emplace(m.component + "\n" + m.builder_root + "\n" + m.prefix, m.id);
  for (const auto& m : ir_.modules) {
    if (params_by_module_.count(m.id) || children_.count(m.id) || m.prefix.empty()) continue;
    auto o = owner_at.find(m.component + "\n" + m.builder_root + "\n" + m.prefix);
    if (o != owner_at.end()) params_by_module_[m.id] = params_by_module_[o->second];
  }
}

void TensorDomain::limit(const checks::LimitFact& l) {
  for (auto& c : checks_)
    c->limit(l, out_);
}

void TensorDomain::bound(Eng& eng, const interp::Bound& b) {
  checks::LimitFact l;
  l.entry_fid = run_.entry_fid;
  switch (b.what) {
    case interp::Bound::What::budget:
      l.kind = checks::LimitFact::Kind::run_budget;
      l.limit = eng.limits().node_budget;
      break;
    case interp::Bound::What::nesting:
      l.kind = checks::LimitFact::Kind::nesting;
      l.limit = static_cast<std::size_t>(eng.limits().max_nesting);
      l.source = src(eng, b.node);
      break;
    case interp::Bound::What::recursion:
      l.kind = checks::LimitFact::Kind::recursion;
      l.function = crate_.items()[b.item].qualified;
      l.fid = fid_of(b.item);
      l.depth = b.depth;
      l.source = crate_.source(b.item);
      break;
  }
  limit(l);
}

// A fresh run of one entrypoint: its facts reset, every check told.
void TensorDomain::begin_run(std::size_t fn_index) {
  run_ = checks::RunFacts{};
  run_.fn_index = fn_index;
  run_.entry_fid = ir_.functions[fn_index].id;
  for (auto& c : checks_)
    c->run_begin();
}

// A root with no forward of its own (whisper's `Whisper`) runs its children's: the key path of
// `owner`'s one instance when that is a child of the root module of a component without
// entrypoints ("model.encoder"), so `--input-shape model.encoder.x=1x80x3000` names that
// forward's input. nullopt otherwise.
std::optional<std::string> TensorDomain::child_of_root(std::ptrdiff_t owner) const {
  if (owner < 0) return std::nullopt;
  auto mit = modules_by_type_.find(crate_.items()[static_cast<std::size_t>(owner)].qualified);
  if (mit == modules_by_type_.end() || mit->second.size() != 1) return std::nullopt;
  const ir::Module* m = module_by_id_.at(*mit->second.begin());
  if (!m->parent || m->repeat || m->prefix.empty()) return std::nullopt;
  auto pit = module_by_id_.find(*m->parent);
  if (pit == module_by_id_.end() || pit->second->parent) return std::nullopt;
  for (const auto& c : ir_.components)
    if (c.id == m->component && c.entrypoints.empty()) return m->prefix;
  return std::nullopt;
}

std::size_t TensorDomain::run_entry(Eng& eng, std::size_t fn_index, std::size_t item) {
  begin_run(fn_index);
  const auto& it = crate_.items()[item];
  Val self;
  std::ptrdiff_t owner = owner_item(item);
  if (owner >= 0) {
    self.type_item = owner;
    const auto& o = crate_.items()[static_cast<std::size_t>(owner)];
    auto mit = modules_by_type_.find(o.qualified);
    if (mit != modules_by_type_.end()) self.modules.insert(mit->second.begin(), mit->second.end());
  }
  auto add_unique = [](std::vector<std::string>& v, const std::string& id) {
    if (std::find(v.begin(), v.end(), id) == v.end()) v.push_back(id);
  };
  std::vector<Val> args;
  for (const auto& p : it.params) {
    Val v = typed_val(it.module, p.type_text, "");
    if (v.type_item >= 0) {
      auto mit =
          modules_by_type_.find(crate_.items()[static_cast<std::size_t>(v.type_item)].qualified);
      if (mit != modules_by_type_.end())
        for (const auto& id : mit->second)
          if (!module_by_id_.at(id)->parent) v.modules.insert(id);
    }
    if (v.tensor) {
      v.tid = ir::contract_tensor_id(run_.entry_fid, p.name);
      auto ti = out_.add_tensor(v.tid, p.name, ir::TensorRole::input, run_.entry_fid);
      if (root_types_.count(owner))
        given_shape(p.name, ti);
      else if (auto at = child_of_root(owner))
        given_shape(*at + "." + p.name, ti);
      if (v.grad == Grad::trainable) {
        ir_.tensors[ti].requires_grad = true;
        run_.trainable.insert(v.tid);
      }
      add_unique(ir_.functions[fn_index].tensor_inputs, v.tid);
    }
    args.push_back(v);
  }
  eng.begin_run();
  reset_instances();
  root_run_ = false;
  // A struct root holding closures: its constructor runs first, and `self.blocks` is what it
  // built (the closures with their captured layers).
  auto rc = owner >= 0 ? root_ctors_.find(owner) : root_ctors_.end();
  if (rc != root_ctors_.end()) {
    Val built = run_constructor(eng, rc->second.first, rc->second.second);
    if (built.fields) {
      auto fields = std::make_shared<std::map<std::string, Val>>();
      for (const auto& [name, v] : *built.fields)
        if (v.fn || v.items) (*fields)[name] = v;
      if (!fields->empty()) self.fields = std::move(fields);
    }
    reset_instances();  // the constructor's calls are no part of the forward's
  }
  // The one instance of a child of a root without a forward (whisper's `model.encoder`) runs as
  // the root would: what its type's constructor does is what that instance holds.
  root_run_ = root_types_.count(owner) > 0 || child_of_root(owner).has_value();
  std::size_t root = open_instance(self.modules, it.name, run_.entry_fid);
  Val ret = eng.invoke(item, &self, args, true);
  fn_root_run_ = false;
  bool single = it.return_type.find('(') == std::string::npos;
  close_instance(root, ret, single ? shape_of_tensor(&ret) : nullptr, "");
  settle_branches();
  if (ret.tensor && !ret.tid.empty()) {
    run_.returned.insert(ret.tid);
    add_unique(ir_.functions[fn_index].tensor_outputs, ret.tid);
  }
  auto& f = ir_.functions[fn_index];
  ir::ExecutionPhase ph = run_.train ? ir::ExecutionPhase::train : ir::ExecutionPhase::infer;
  if (std::find(f.execution_phases.begin(), f.execution_phases.end(), ph) ==
      f.execution_phases.end())
    f.execution_phases.push_back(ph);
  for (std::size_t oi : run_.ops) {
    if (op_phases_.size() <= oi) op_phases_.resize(oi + 1, 0);
    op_phases_[oi] |= run_.train ? 1 : 2;
  }
  for (auto& c : checks_)
    c->run_end(run_, out_);
  return eng.used();
}

void TensorDomain::note_context_shape(const std::string& tid, const ir::TensorShape& s) {
  auto [it, fresh] = context_shapes_.try_emplace(tid);
  ContextShape& c = it->second;
  if (fresh) {
    c.shape = s;
    c.differs.assign(s.dimensions.size(), false);
    c.rank_differs = !s.rank;
    return;
  }
  if (c.rank_differs) return;
  if (!s.rank || s.rank != c.shape.rank || s.dimensions.size() != c.shape.dimensions.size()) {
    c.rank_differs = true;
    return;
  }
  for (std::size_t k = 0; k < s.dimensions.size(); ++k)
    if (s.dimensions[k].expr != c.shape.dimensions[k].expr) c.differs[k] = true;
}

void TensorDomain::note_context_mult_adds(std::size_t op, const std::optional<std::string>& ma) {
  auto [it, fresh] = context_mult_adds_by_op_.try_emplace(op, ma, false);
  if (!fresh && it->second.first != ma) it->second.second = true;
}

void TensorDomain::finish() {
  for (const auto& [oi, c] : context_mult_adds_by_op_)
    if (!c.second && c.first && !c.first->empty()) ir_.operations[oi].mult_adds = c.first;
  // Each callee tensor in the root's dimensions where every call from a root agreed; a
  // dimension the calls gave differently (or left unknown) keeps the function's own name.
  for (const auto& [tid, c] : context_shapes_) {
    ir::Tensor* t = out_.tensor(tid);
    if (!t || c.rank_differs || !c.shape.rank) continue;
    if (!t->shape.rank) {
      ir::TensorShape s = c.shape;
      for (std::size_t k = 0; k < s.dimensions.size(); ++k)
        if (c.differs[k]) s.dimensions[k] = {std::nullopt, "?"};
      s.source_expr.reset();
      t->shape = std::move(s);
      continue;
    }
    if (t->shape.rank != c.shape.rank || t->shape.dimensions.size() != c.shape.dimensions.size())
      continue;
    for (std::size_t k = 0; k < c.shape.dimensions.size(); ++k) {
      const ir::Dimension& d = c.shape.dimensions[k];
      if (!c.differs[k] && d.expr != "?" && d.expr != "()" && !d.expr.empty())
        t->shape.dimensions[k] = d;
    }
  }
  // An operation reached by both a train and an infer graph has no single phase.
  for (std::size_t oi = 0; oi < op_phases_.size(); ++oi) {
    if (op_phases_[oi] == 1) ir_.operations[oi].execution_phase = ir::ExecutionPhase::train;
    if (op_phases_[oi] == 2) ir_.operations[oi].execution_phase = ir::ExecutionPhase::infer;
  }
  for (auto& f : ir_.functions)
    std::sort(f.calls.begin(), f.calls.end());
  // A call's figure of an operation is kept where it is not the operation's own, and for an
  // operation run by calls of several module paths whenever there is a figure (the summary trusts
  // no shared figure that a call does not state as its own).
  std::unordered_map<std::string, const ir::Operation*> ops;
  for (const auto& o : ir_.operations)
    ops[o.id] = &o;
  std::unordered_map<std::string, std::string> path_of;
  std::unordered_set<std::string> shared;
  for (const auto& c : ir_.instance_calls)
    for (const auto& id : c.operations)
      if (auto [it, fresh] = path_of.emplace(id, c.path); !fresh && it->second != c.path)
        shared.insert(id);
  // A call's shape of an operation is kept where the operation's output tensor (after the
  // agreement above) says otherwise.
  for (auto& c : ir_.instance_calls)
    std::erase_if(c.operation_shapes, [&](const auto& kv) {
      auto it = ops.find(kv.first);
      const ir::Tensor* t = it != ops.end() ? out_.tensor(it->second->output) : nullptr;
      return !t || !kv.second.rank || kv.second.dimensions == t->shape.dimensions;
    });
  for (auto& c : ir_.instance_calls)
    std::erase_if(c.operation_mult_adds, [&](const auto& kv) {
      auto it = ops.find(kv.first);
      bool same = it != ops.end() && it->second->mult_adds.value_or("") == kv.second;
      return same && (!shared.count(kv.first) || kv.second.empty());
    });
}

}  // namespace cg::analysis::tensor
