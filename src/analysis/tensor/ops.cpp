// Applying an operation: recording it in the IR once per syntax node, the catalog rule's effect on
// the output value (dtype, gradient, numeric domain), the output tensor's facts, and the
// operation fact every check sees.
#include "analysis/tensor/domain.hpp"
#include "analysis/tensor/dtype.hpp"

namespace cg::analysis::tensor {

using rust::Kind;

namespace {
// The Call operation standing for an inlined crate-local function: its shape is the callee's
// return, set by inline_call.
bool inlined_call(const OpRule& rule) {
  return rule.note.rfind("inlined", 0) == 0;
}
}  // namespace

// Records (or re-finds) the operation at `node`; its index into ir.operations.
std::size_t TensorDomain::record_op(Eng& eng, NodeId node, const std::string& name,
                                    const OpRule& rule, const std::vector<const Val*>& ins,
                                    const Val* recv) {
  const rust::Node& nd = eng.node(node);
  // Start and end: the calls of one method chain (`x.reshape(a)?.t()?.reshape(b)?`) all start
  // at the chain's first byte.
  std::string key = std::to_string(crate_.items()[eng.item()].file) + ":" +
                    std::to_string(nd.start) + "-" + std::to_string(nd.end) + ":" + name;
  auto found = op_by_node_.find(key);
  refound_ = found != op_by_node_.end();
  if (found != op_by_node_.end()) {
    std::size_t oi = found->second;
    // Each context's own shape (the value carries it); an op first reached where its operand
    // shapes were unknown (its function analyzed as an entrypoint of its own) takes the shape and
    // multiply-adds of a later context that knows them.
    ir::TensorShape cs = shape_of(eng, node, rule, ins);
    if (last_cat_) cat_of_[ir_.operations[oi].output] = *last_cat_;
    auto ma = mult_adds(rule, ins, recv, cs);
    ir::Tensor& t = *out_.tensor(ir_.operations[oi].output);
    if (!t.shape.rank) t.shape = cs;
    if (root_run_ && fid_of(eng.item()) != run_.entry_fid && !inlined_call(rule)) {
      note_context_shape(ir_.operations[oi].output, cs);
      note_context_mult_adds(oi, ma);
    }
    if (!ir_.operations[oi].mult_adds) ir_.operations[oi].mult_adds = ma;
    context_shape_ = std::move(cs);
    context_mult_adds_ = std::move(ma);
    return oi;
  }
  const std::string fid = fid_of(eng.item());
  std::uint64_t occ = occ_.next(fid + std::string(1, '\0') + name);
  ir::Operation op;
  op.id = ir::operation_id(fid, name, occ);
  op.function = fid;
  op.name = name;
  // The callee label when it names a type's method ("Embedding::forward"): a call the method
  // name alone leaves anonymous (four `forward`s in one function) becomes readable.
  if (rule.known() && rule.name.find("::") != std::string::npos) op.qualified_name = rule.name;
  op.source = src(eng, node);
  op.output = ir::dataflow_tensor_id(fid, name, occ);
  op.dtype_rule = std::string(to_string(rule.dtype));
  op.gradient_rule = std::string(to_string(rule.grad));
  op.shape_rule = std::string(to_string(rule.shape));
  op.domain_rule = std::string(to_string(rule.requirement));
  op.device_rule = "same_as_inputs";
  for (const Val* v : ins)
    if (!v->tid.empty()) op.inputs.push_back(v->tid);
  ir::Evidence e;
  e.kind = ir::EvidenceKind::source;
  bool inlined = inlined_call(rule);
  e.confidence = rule.known() || inlined ? ir::Confidence::proven : ir::Confidence::unknown;
  e.source = op.source;
  e.detail = rule.known() ? "audited rule `" + rule.name + "`" : rule.note;
  op.evidence.push_back(std::move(e));
  ir_.operations.push_back(std::move(op));
  std::size_t oi = ir_.operations.size() - 1;
  op_by_node_[key] = oi;
  std::size_t ti =
      out_.add_tensor(ir_.operations[oi].output, name, ir::TensorRole::activation, fid);
  ir_.tensors[ti].shape = shape_of(eng, node, rule, ins);
  if (last_cat_) cat_of_[ir_.operations[oi].output] = *last_cat_;
  op_of_output_[ir_.operations[oi].output] = oi;
  ir_.operations[oi].mult_adds = mult_adds(rule, ins, recv, ir_.tensors[ti].shape);
  if (root_run_ && fid != run_.entry_fid && !inlined_call(rule)) {
    note_context_shape(ir_.operations[oi].output, ir_.tensors[ti].shape);
    note_context_mult_adds(oi, ir_.operations[oi].mult_adds);
  }
  context_shape_ = ir_.tensors[ti].shape;
  context_mult_adds_ = ir_.operations[oi].mult_adds;
  ir_.tensors[ti].device = device_of(eng, node, name, ins);
  if (ir_.tensors[ti].device.kind == ir::DeviceKind::cpu)
    ir_.operations[oi].device_rule = "explicit";
  return oi;
}

// The rule's effect on the output value.
void TensorDomain::transfer(const std::string& name, const OpRule& rule,
                            const std::vector<const Val*>& ins,
                            const std::optional<std::string>& explicit_dtype, Val& out) const {
  switch (rule.dtype) {
    case DtypeRule::preserve:
      out.dtype = ins.empty() ? "Unknown" : ins.front()->dtype;
      if (!ins.empty()) out.dtype_param = ins.front()->dtype_param;
      break;
    case DtypeRule::same_as_inputs: {
      OperandDtypes d = operand_dtypes(name, ins);
      out.dtype = (!d.conflict && !d.known.empty() && !d.any_unknown) ? d.known.front() : "Unknown";
      // Every operand of the one run-time dtype: the output has it too.
      if (d.known.empty() && !d.params.empty() && d.params.size() == d.checked &&
          std::all_of(d.params.begin(), d.params.end(),
                      [&](const std::string& p) { return p == d.params.front(); }))
        out.dtype_param = d.params.front();
      break;
    }
    case DtypeRule::explicit_arg:
      out.dtype = explicit_dtype.value_or("Unknown");
      break;
    case DtypeRule::fixed:
      out.dtype = rule.fixed_dtype.empty() ? "Unknown" : rule.fixed_dtype;
      break;
    case DtypeRule::unknown:
      break;
  }
  switch (rule.grad) {
    case GradRule::severs:
      out.grad = Grad::severed;
      break;
    case GradRule::layout_dependent:
      out.grad = Grad::layout_dependent;
      break;
    case GradRule::propagates: {
      if (ins.empty()) {  // a constructor: a constant
        out.grad = Grad::frozen;
        break;
      }
      bool any_sev = false, any_ld = false, any_tr = false, all_frozen = true;
      for (const Val* v : ins) {
        any_sev = any_sev || v->grad == Grad::severed;
        any_ld = any_ld || v->grad == Grad::layout_dependent;
        any_tr = any_tr || v->grad == Grad::trainable || v->grad == Grad::differentiable;
        all_frozen = all_frozen && v->grad == Grad::frozen;
      }
      out.grad = any_sev      ? Grad::severed
                 : any_ld     ? Grad::layout_dependent
                 : any_tr     ? Grad::differentiable
                 : all_frozen ? Grad::frozen
                              : Grad::unknown;
      break;
    }
    case GradRule::unknown:
      break;
  }
  const std::string& n = rule.name.empty() ? name : rule.name;
  const OpTraits& traits = op_traits(n);
  if (traits.combine == DomainCombine::product) {
    out.dom = ins.size() >= 2 ? mul_domain(ins[0]->dom, ins[1]->dom) : NumericDomain::unknown;
  } else if (traits.combine == DomainCombine::sum) {
    out.dom = ins.size() >= 2 ? add_domain(ins[0]->dom, ins[1]->dom) : NumericDomain::unknown;
  } else if (traits.combine == DomainCombine::reduction && !ins.empty() &&
             ins[0]->dom != NumericDomain::unknown) {
    out.dom = join_domain(ins[0]->dom, ins[0]->dom == NumericDomain::saturating_unit
                                           ? NumericDomain::non_negative
                                           : ins[0]->dom);
  } else {
    out.dom = ins.size() == 1 ? unary_domain(n, ins[0]->dom, rule.domain) : rule.domain;
  }
  auto k = static_cast<std::size_t>(rule.checked_operand);
  if (traits.log && rule.requirement != Requirement::none && k < ins.size()) {
    DomainRequirement req = rule.requirement == Requirement::non_zero ? DomainRequirement::non_zero
                            : rule.requirement == Requirement::non_negative
                                ? DomainRequirement::non_negative
                                : DomainRequirement::strictly_positive;
    if (auto v = domain_violation(req, ins[k]->dom)) {
      out.undischarged_log = true;
      out.log_of_zero = *v == Violation::proven;
    }
  }
}

// The output tensor's dtype evidence, gradient requirement and layout.
void TensorDomain::update_tensor(Eng& eng, NodeId node, const std::string& name, const Val& out) {
  ir::Tensor& t = *out_.tensor(out.tid);
  if (t.dtype == "Unknown" && out.dtype != "Unknown") {
    t.dtype = out.dtype;
    ir::Evidence e;
    e.kind = ir::EvidenceKind::inferred;
    e.confidence = ir::Confidence::proven;
    e.source = src(eng, node);
    e.detail = "static dtype via operation `" + name + "`";
    t.evidence.push_back(std::move(e));
  }
  if (out.grad == Grad::severed || out.grad == Grad::frozen) t.requires_grad = false;
  if (out.grad == Grad::differentiable && run_.train) t.requires_grad = true;
}

void TensorDomain::operation_fact(const std::string& name, const OpRule& rule,
                                  const std::vector<const Val*>& ins, const Val& out,
                                  std::size_t oi, const std::string& source) {
  const std::string& catalog = rule.name.empty() ? name : rule.name;
  const ir::Operation& op = ir_.operations[oi];
  std::string op_id = op.id, out_id = op.output;
  checks::OperationFact fact{name, catalog, rule, ins, out, op_id, out_id, source};
  for (auto& c : checks_)
    c->operation(fact, out_);
}

// Records (or re-finds) the operation at `node` and returns its output value.
Val TensorDomain::make_op(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                          const std::vector<const Val*>& ins, const Val* recv,
                          const std::optional<std::string>& explicit_dtype) {
  std::size_t oi = record_op(eng, node, name, rule, ins, recv);
  last_op_ = oi;
  const std::string op_id = ir_.operations[oi].id;
  const std::string out_id = ir_.operations[oi].output;
  run_.ops.insert(oi);
  note_op(op_id);
  link_params(op_id, recv);
  Val out;
  out.tensor = true;
  out.tid = out_id;
  if (context_shape_.rank)
    out.shape = std::make_shared<const ir::TensorShape>(context_shape_);
  else if (refound_ && recv)
    // A layer operation shared by several instances (a wrapper's `self.inner.forward(xs)`) whose
    // shape this call does not know: not known, rather than another instance's (llama's lm_head
    // read q_proj's [?, seq_len, 4096]).
    out.shape = std::make_shared<const ir::TensorShape>();
  bool sev = rule.grad == GradRule::severs;
  for (const Val* v : ins)
    if (!v->tid.empty()) run_.succ[v->tid].push_back({out_id, sev});
  transfer(name, rule, ins, explicit_dtype, out);
  operation_fact(name, rule, ins, out, oi, src(eng, node));
  if (rule.is_loss) mark_loss(eng, out_id);
  update_tensor(eng, node, name, out);
  const std::string& n = rule.name.empty() ? name : rule.name;
  LayoutEffect layout = op_traits(n).layout;
  ir::Tensor& t = *out_.tensor(out_id);
  if (layout == LayoutEffect::strided) t.layout.kind = ir::LayoutKind::strided;
  if (layout == LayoutEffect::contiguous) t.layout.kind = ir::LayoutKind::contiguous;
  return out;
}

void TensorDomain::mark_loss(Eng& eng, const std::string& tid, bool loss_fn) {
  run_.train = true;
  run_.loss_tensors.insert(tid);
  if (ir::Tensor* t = out_.tensor(tid)) t->role = ir::TensorRole::loss;
  if (!loss_fn) return;
  auto fi = fn_index_.find(fid_of(eng.item()));
  if (fi != fn_index_.end()) ir_.functions[fi->second].is_loss = true;
}

void TensorDomain::link_params(const std::string& op_id, const Val* recv) {
  if (!recv) return;
  for (const auto& m : recv->modules) {
    auto it = params_by_module_.find(m);
    if (it == params_by_module_.end()) continue;
    for (std::size_t pi : it->second)
      // A set beside the ordered list: a parameter used by thousands of operations must not
      // cost a scan of its uses per use.
      if (uses_seen_[pi].insert(op_id).second) ir_.parameters[pi].uses.push_back(op_id);
  }
}

// The dtype argument of a constructor or `to_dtype` that names no DType, when it reads as one
// chosen at run time: a field, local or call named `dtype` (`self.dtype`, `dtype`, `vb.dtype()`,
// `cfg.torch_dtype`). `xs.dtype()` of a tensor in scope is that tensor's own dtype instead.
std::string TensorDomain::runtime_dtype(Eng& eng, NodeId call) {
  const rust::Body& b = eng.body();
  for (NodeId a : b.kids_view(call)) {
    a = b.peel(a, {Kind::Ref, Kind::Paren});
    const std::string text(b.source(a));
    if (b[a].kind == Kind::MethodCall && b[a].str == "dtype" && b.kids_view(a).empty()) {
      NodeId r = b.peel(b[a].a, {Kind::Ref, Kind::Paren});
      if (r != rust::kNone && b[r].kind == Kind::Path)
        if (const Val* v = eng.lookup(std::string(b[r].str)); v && v->tensor)
          return v->dtype == "Unknown" ? v->dtype_param : std::string();
      return text;
    }
    std::string_view name(text);
    if (name.ends_with("()")) name.remove_suffix(2);
    if (const std::size_t cut = name.find_last_of(".:"); cut != std::string_view::npos)
      name.remove_prefix(cut + 1);
    if (name == "dtype" || name.ends_with("_dtype")) return text;
  }
  return {};
}

Val TensorDomain::apply_catalog(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                                const std::vector<Val>& operands, const Val* recv) {
  std::vector<const Val*> ins;
  for (const auto& v : operands)
    if (v.tensor) ins.push_back(&v);
  std::optional<std::string> dtype;
  for (const auto& a : operands)
    if (!a.tensor && a.dtype != "Unknown") {
      dtype = a.dtype;
      break;
    }
  Val out = make_op(eng, node, name, rule, ins, recv, dtype);
  if (rule.dtype == DtypeRule::explicit_arg && !dtype) out.dtype_param = runtime_dtype(eng, node);
  if (op_traits(name).combine == DomainCombine::affine && operands.size() >= 3 && operands[1].num &&
      operands[2].num)
    out.dom = affine_domain(operands[0].dom, *operands[1].num, *operands[2].num);
  return out;
}

// An inlined crate-local call becomes one Call operation in the caller named after the method
// (`forward`), fed by the callee's returned tensor; parameters of the receiver link to it.
Val TensorDomain::inline_call(Eng& eng, NodeId node, std::size_t callee, const Val* self,
                              const std::vector<Val>& args, const std::string& name) {
  std::size_t ic = self ? open_instance(self->modules, name, fid_of(callee)) : kNoInstance;
  Val r = eng.invoke(callee, self, args, false);
  bool single = crate_.items()[callee].return_type.find('(') == std::string::npos;
  if (!r.tensor) {
    close_instance(ic, r, nullptr, "");
    return r;
  }
  // Closed before the Call operation is recorded: that operation is the caller's.
  close_instance(ic, r, single ? shape_of_tensor(&r) : nullptr, "");
  std::vector<const Val*> ins;
  for (const auto& a : args)
    if (a.tensor) ins.push_back(&a);
  // A returned tuple feeds the call with each of its tensors; its names are bound to them.
  if (r.elems) {
    for (const auto& e : *r.elems)
      if (e.tensor && !e.tid.empty()) ins.push_back(&e);
  } else {
    ins.push_back(&r);
  }
  OpRule rule;
  rule.name = name;
  rule.note = "inlined crate-local call `" + crate_.items()[callee].qualified + "`";
  rule.shape = ShapeRule::inlined_call;
  Val out = make_op(eng, node, name, rule, ins, self, {});
  if (ic != kNoInstance) ir_.instance_calls[ic].call_site = ir_.operations[last_op_].id;
  // A single returned tensor's shape is the call's (a tuple return binds every name to one
  // value, so its shape would be wrong for all but the first element).
  if (single) {
    const ir::TensorShape* rs = shape_of_tensor(&r);
    ir::Tensor& ot = *out_.tensor(out.tid);
    if (rs && !ot.shape.rank) ot.shape = *rs;
    if (root_run_ && fid_of(eng.item()) != run_.entry_fid)
      note_context_shape(out.tid, rs ? *rs : ir::TensorShape{});
    if (!open_instances_.empty())
      ir_.instance_calls[open_instances_.back()].operation_shapes[ir_.operations[last_op_].id] =
          rs ? *rs : ir::TensorShape{};
    out.shape = rs ? std::make_shared<const ir::TensorShape>(*rs) : nullptr;
  } else {
    out.shape.reset();
  }
  out.dtype = r.dtype;
  out.grad = r.grad;
  out.dom = r.dom;
  out.undischarged_log = r.undischarged_log;
  out.elems = r.elems;
  return out;
}

}  // namespace cg::analysis::tensor
