// The builder/prefix domain's leaf registration: a candle-nn catalog constructor creates a layer
// instance and the leaves its catalog entry lists (shapes and conditions evaluated over the
// call's arguments), and a raw `vb.get(shape, "name")` registers one leaf.
#include <algorithm>

#include "analysis/builder/domain.hpp"

namespace cg::analysis::builder {

using inventory::Inst;
using inventory::kMaxInstances;
using inventory::kMaxLeaves;
using inventory::Leaf;

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

// A candle-nn constructor: a layer instance plus its catalog leaves.
void BuilderDomain::register_layer(NodeId n, const ConstructorSpec& spec, const std::string& path,
                                   const std::vector<Value>& values) {
  const auto args = body().kids_view(n);
  std::size_t vb_arg = spec.params.size();
  if (args.size() != vb_arg + 1 || values.size() != args.size()) {
    diag(n, "`" + path + "` called with " + std::to_string(args.size()) + " arguments; expected " +
                std::to_string(vb_arg + 1) + "; no parameters recorded");
    return;
  }
  const Value& b = values[vb_arg];
  if (b.kind != Value::Kind::builder) {
    diag(args[vb_arg], "the VarBuilder argument `" + quoted(args[vb_arg]) + "` of `" + path +
                           "` is not understood; no parameters recorded");
    return;
  }
  if (out.insts.size() >= kMaxInstances || out.leaves.size() >= kMaxLeaves) {
    out.truncated = true;
    diag(n, "analysis truncated at " + std::to_string(out.insts.size()) + " module instances");
    eng_->stop();
    return;
  }
  std::vector<Value> argv(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(vb_arg));
  Cert base = inventory::join(ctx().cert, b.cert);
  if (!audited_)
    base =
        inventory::join(base, Cert{ir::Confidence::unknown, "candle-nn is not an audited release"});
  Inst layer;
  layer.type_name = spec.layer_type;
  layer.qualified_type = "candle_nn::" + spec.layer_type;
  layer.parent = ctx().inst;
  layer.root = b.root;
  layer.prefix = inventory::join_key(b.segs);
  layer.repeat = ctx().repeat.empty() ? "" : ctx().repeat.back();
  layer.source = site(n);
  layer.cert = base;
  layer.layer = true;
  // A conv layer's config fields (candle-nn's defaults for `..Default::default()`), for the
  // dataflow's output shapes and multiply-adds.
  layer.attributes = inventory::conv_attributes(
      spec, [&](const std::string& term) { return term_value(term, spec, argv, args); });
  out.insts.push_back(layer);
  std::size_t li = out.insts.size() - 1;
  ctx().created.push_back(li);
  for (const LeafSpec& ls : spec.leaves) {
    Cert c = base;
    std::vector<AlternativeMark> alts = alt_ctx_;
    if (!ls.condition.empty()) {
      SymValue cond = template_value(ls.condition, spec, argv, args);
      if (cond.kind == SymValue::Kind::boolean && !cond.boolean) continue;
      if (cond.kind != SymValue::Kind::boolean) {
        c = inventory::conditional(c, "`" + spec.name + "` registers `" + ls.name + "` only when " +
                                          (cond.concrete() ? cond.display() : cond.text));
        alts.push_back({new_group(n), where(n), c.reason, 0, 2});
      }
    }
    Leaf leaf;
    leaf.alts = std::move(alts);
    leaf.inst = li;
    leaf.root = b.root;
    std::string name = layer_leaf_name(ls.name, spec, argv, args);
    std::vector<std::string> segs = b.segs;
    segs.push_back(name);
    leaf.key = inventory::join_key(segs);
    leaf.name = name;
    leaf.kind = path;
    std::vector<SymValue> dims;
    for (const auto& d : ls.shape)
      dims.push_back(template_value(d, spec, argv, args));
    leaf.shape = std::move(dims);
    leaf.cert = c;
    leaf.source = site(n);
    leaf.running_state = ls.running_state;
    out.leaves.push_back(std::move(leaf));
  }
}

// LSTM names: `weight_ih_l{{config}.layer_idx}` -> weight_ih_l0.
std::string BuilderDomain::layer_leaf_name(const std::string& name, const ConstructorSpec& spec,
                                           const std::vector<Value>& argv,
                                           std::span<const NodeId> args) {
  if (name.find("{{") == std::string::npos) return name;
  auto open = name.find("{{");
  auto close = name.find("}", name.find("}", open) + 1);
  SymValue idx = template_value(name.substr(open + 1, close - open - 1), spec, argv, args);
  return name.substr(0, open) +
         (idx.kind == SymValue::Kind::integer ? std::to_string(idx.integer)
                                              : "{" + idx.text + "}") +
         name.substr(close + 1);
}

// Evaluates a catalog template (`{out_dim}`, `{in_channels} / {cfg}.groups`, `4 * {h}`,
// `{num_channels}.unwrap_or(1)`, `{config}.affine`) over the call's argument values.
SymValue BuilderDomain::template_value(const std::string& templ, const ConstructorSpec& spec,
                                       const std::vector<Value>& argv,
                                       std::span<const NodeId> args) {
  return inventory::template_arithmetic(
      templ, [&](const std::string& term) { return term_value(term, spec, argv, args); });
}

SymValue BuilderDomain::term_value(const std::string& term, const ConstructorSpec& spec,
                                   const std::vector<Value>& argv, std::span<const NodeId> args) {
  if (term.empty() || term[0] != '{') {
    if (auto v = parse_literal("integer_literal", term)) return *v;
    return SymValue::symbolic(term, "catalog term");
  }
  auto close = term.find('}');
  std::string pname = term.substr(1, close - 1);
  std::string access = term.substr(close + 1);
  auto it = std::find(spec.params.begin(), spec.params.end(), pname);
  if (it == spec.params.end()) return SymValue::symbolic(term, "catalog placeholder");
  std::size_t idx = static_cast<std::size_t>(it - spec.params.begin());
  const Value& v = argv[idx];
  std::string arg_text = text(args[idx]);
  SymValue base = v.kind == Value::Kind::sym ? v.sym : SymValue::symbolic(arg_text, "not a value");
  if (access.empty()) return base;
  if (access == ".unwrap_or(1)") {
    if (base.kind == SymValue::Kind::none) return SymValue::of_int(1);
    if (base.concrete()) return base;
    return SymValue::symbolic(base.text + ".unwrap_or(1)", base.reason);
  }
  std::string field = access.substr(1);
  bool is_some = false;
  if (field.size() > 10 && field.compare(field.size() - 10, 10, ".is_some()") == 0) {
    field.resize(field.size() - 10);
    is_some = true;
  }
  std::optional<SymValue> fv;
  if (v.kind == Value::Kind::layer_config) {
    fv = layer_field(v, field);
  } else if (v.kind == Value::Kind::sym && v.sym.kind == SymValue::Kind::real) {
    // An f64 eps converts through `From<f64>` with candle-nn's defaults (affine = true).
    fv = inventory::layer_config_default(field, "default");
  } else if (v.kind == Value::Kind::sym && !v.sym.concrete() && is_float(args[idx])) {
    // `cfg.layer_norm_eps` declared f64: it converts like a literal eps.
    fv = inventory::layer_config_default(field, "default");
  }
  if (!fv)
    return SymValue::symbolic(arg_text + "." + field + (is_some ? ".is_some()" : ""),
                              "`" + arg_text + "` is not a config literal");
  if (is_some) {
    if (fv->kind == SymValue::Kind::none) return SymValue::of_bool(false);
    if (fv->concrete()) return SymValue::of_bool(true);
    return SymValue::symbolic(fv->text + ".is_some()", fv->reason);
  }
  return *fv;
}

// A local bound to a parameter declared as an integer (`fn rms_norm(size: usize, ..)`).
bool BuilderDomain::scalar_param(const std::string& name) {
  const Value* v = local(name);
  if (v == nullptr) return false;
  for (const char* t : {"usize", "u32", "u64", "i32", "i64", "isize"})
    if (v->declared_type == t) return true;
  return false;
}

// A float-typed expression: a float literal, or a config field declared f32/f64.
bool BuilderDomain::is_float(NodeId arg) {
  const rust::Node& a = node(arg);
  if (a.kind == Kind::Lit && a.lit == rust::LitKind::Float) return true;
  if (a.kind != Kind::Field) return false;
  Value base = peek(a.a, 0);
  if (base.kind != Value::Kind::config) return false;
  std::string t = binding_.field_type(base.config, a.str);
  return t == "f64" || t == "f32";
}

void BuilderDomain::register_raw(NodeId n, const Value& b, const std::string& method) {
  const auto args = body().kids_view(n);
  // candle-nn's getters, else the roles a prefix builder of the code's own gives its getters
  // (builder_types.hpp): where the tensor name and the shape are among the arguments.
  bool name_first =
      method == "get_unchecked" || method == "get_unchecked_dtype" || method == "get_no_shape";
  std::size_t name_idx = name_first ? 0 : 1;
  std::ptrdiff_t shape_idx = name_first ? -1 : 0;
  if (!raw_get(method)) {
    if (const BuilderTypes::Getter* g = builder_types_.getter(method)) {
      name_idx = g->name_arg;
      shape_idx = g->shape_arg;
    }
  }
  if (args.size() <= name_idx) {
    diag(n, "`." + method + "(..)` without a tensor name; key is unknown");
    return;
  }
  if (out.leaves.size() >= kMaxLeaves) {
    out.truncated = true;
    eng_->stop();
    return;
  }
  Leaf leaf;
  leaf.inst = ctx().inst;
  leaf.root = b.root;
  leaf.kind = method;
  std::string name;
  NodeId name_node = body().peel(args[name_idx], {Kind::Ref});
  SymValue nv = eval_sym(name_node);
  if (nv.kind == SymValue::Kind::string) {
    name = nv.text;
  } else if (node(name_node).kind == Kind::Macro) {
    name = format_template(name_node);
  } else {
    diag(args[name_idx],
         "non-literal tensor name `" + quoted(args[name_idx]) + "`; key is unknown");
    name = "{" + text(args[name_idx]) + "}";
  }
  std::vector<std::string> segs = b.segs;
  for (auto& s : inventory::split_key(name))
    segs.push_back(s);
  leaf.key = inventory::join_key(segs);
  leaf.name = name;
  if (shape_idx >= 0 && static_cast<std::size_t>(shape_idx) < args.size())
    raw_shape(leaf, args[static_cast<std::size_t>(shape_idx)]);
  else
    leaf.shape_reason = "`" + method + "` takes no shape";
  leaf.cert = inventory::join(ctx().cert, b.cert);
  leaf.source = site(n);
  leaf.alts = alt_ctx_;
  out.leaves.push_back(std::move(leaf));
}

// The shape argument of a raw get: a tuple/array of dimensions, one integer, or a value of
// unknown rank.
void BuilderDomain::raw_shape(Leaf& leaf, NodeId arg) {
  NodeId shape = body().peel(arg, {Kind::Ref, Kind::Paren});
  const rust::Node& s = node(shape);
  if (s.kind == Kind::Tuple || s.kind == Kind::Array || s.kind == Kind::Unit ||
      s.kind == Kind::ArrayRepeat) {
    std::vector<SymValue> dims;
    if (s.kind == Kind::ArrayRepeat) {
      dims.push_back(eval_sym(s.a));  // `[x; n]` read as its two parts, as the syntax walk did
      dims.push_back(eval_sym(s.b));
    }
    for (NodeId d : body().kids_view(shape))
      dims.push_back(eval_sym(d));
    leaf.shape = std::move(dims);
    return;
  }
  if (Value held = peek(shape, 0); held.rows && held.rows->size() == 1) {
    leaf.shape = held.rows->front();  // a tuple held by a local or a record's field
    return;
  }
  SymValue v = eval_sym(shape);
  bool ident = is_ident(shape) && s.kind == Kind::Path;
  if (v.kind == SymValue::Kind::integer) {
    leaf.shape = std::vector<SymValue>{v};
  } else if (ident && scalar_param(text(shape))) {
    leaf.shape = std::vector<SymValue>{v};  // `size: usize` is one dimension
  } else if (ident || s.kind == Kind::Call || s.kind == Kind::MethodCall || s.kind == Kind::Macro) {
    leaf.shape_reason = "shape `" + text(shape) + "` has an unknown rank";
  } else {
    leaf.shape = std::vector<SymValue>{v};
  }
}

}  // namespace cg::analysis::builder
