// The builder/prefix domain's values: the root run, what a name, field or expression is
// (builders with their key segments, configs, layer configs, constructor references, symbolic
// numbers), the builder algebra of method chains (`vb.pp("a").pp(i)`), the key segments a prefix
// pushes, and the symbolic evaluator's context (names read from the engine's environment).
#include "analysis/builder/domain.hpp"

namespace cg::analysis::builder {

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

void BuilderDomain::run_root(std::size_t type_item, std::size_t ctor) {
  const rust::Item& t = crate_.items()[type_item];
  inventory::Inst root;
  root.type_name = t.name;
  root.qualified_type = t.qualified;
  root.source = crate_.source(type_item);
  root.cfg = crate_.items()[ctor].cfg.predicates;
  out.insts.push_back(root);
  std::vector<Value> args;
  bool first_builder = true;
  for (const auto& p : crate_.items()[ctor].params) {
    Value v = param_value(p, crate_.items()[ctor].module);
    if (v.kind == Value::Kind::builder && first_builder) {
      out.insts[0].root = p.name;
      first_builder = false;
    }
    args.push_back(std::move(v));
  }
  interp::Limits limits;
  limits.max_call_depth = 4 * inventory::kMaxDepth;  // the domain's own guard decides first
  limits.node_budget = inventory::kMaxSteps;
  limits.max_nesting = inventory::kMaxNesting;
  Eng eng(crate_, *this, limits);
  eng_ = &eng;
  Ctx c;
  c.type_qualified = t.qualified;
  ctxs_.push_back(std::move(c));
  items_.push_back(ctor);
  eng.begin_run();
  eng.invoke(ctor, nullptr, args, true);
  items_.pop_back();
  ctxs_.pop_back();
  eng_ = nullptr;
}

BuilderDomain::Value BuilderDomain::parameter(std::size_t item, std::size_t i, Value arg) {
  // The root constructor's parameters are bound by `param_value`, without declared types.
  if (items_.size() > 1) arg.declared_type = crate_.items()[item].params[i].type_text;
  return arg;
}

std::string BuilderDomain::where(NodeId n) const {
  const auto& f = crate_.files()[crate_.items()[eng_->item()].file];
  return f->path() + ":" + std::to_string(n == kNone ? 0 : node(n).line);
}

// Evaluator context ------------------------------------------------------------------------------

std::size_t BuilderDomain::resolution_item() const {
  return const_items_.empty() ? eng_->item() : const_items_.back();
}

const BuilderDomain::Value* BuilderDomain::local(const std::string& name) {
  if (eng_ == nullptr || !eng_->running() || !const_items_.empty()) return nullptr;
  return eng_->frame().env.find(name);
}

BuilderDomain::Value* BuilderDomain::local_mut(const std::string& name) {
  if (eng_ == nullptr || !eng_->running() || !const_items_.empty()) return nullptr;
  return eng_->frame().env.find_mut(name);
}

std::optional<SymValue> BuilderDomain::lookup(std::string_view name) {
  const Value* v = local(std::string(name));
  if (!v) return const_value(std::string(name));
  if (v->kind == Value::Kind::sym) return v->sym;
  if (v->kind == Value::Kind::loop_var)
    return SymValue::symbolic(std::string(name), "loop variable `" + std::string(name) + "`");
  return std::nullopt;
}

std::optional<SymValue> BuilderDomain::field(const rust::Body&, NodeId base,
                                             std::string_view name) {
  Value b = peek(base, 0);
  if (b.kind == Value::Kind::config) {
    auto r = binding_.field(b.config, name);
    if (r.config) return std::nullopt;
    return r.value;
  }
  if (b.kind == Value::Kind::layer_config) return layer_field(b, name);
  return module_field(b, name);
}

std::optional<SymValue> BuilderDomain::method(const rust::Body&, NodeId recv, std::string_view name,
                                              const std::vector<SymValue>& args) {
  Value b = peek(recv, 0);
  if (b.kind == Value::Kind::config) return binding_.method(b.config, name, args);
  return std::nullopt;
}

// `patch_embeddings.num_patches` of a module this constructor built: the value its own
// constructor stores in the field, evaluated with the bound config.
std::optional<SymValue> BuilderDomain::module_field(const Value& b, std::string_view name) {
  if (b.modules.empty() || !bind_config_) return std::nullopt;
  const std::string& q = out.insts[b.modules.back()].qualified_type;
  auto [it, fresh] = module_fields_.try_emplace(q);
  if (fresh)
    for (std::size_t i = 0; i < crate_.items().size(); ++i)
      if (crate_.items()[i].kind == rust::ItemKind::Struct && crate_.items()[i].qualified == q) {
        it->second = binding_.constructor_fields(i);
        break;
      }
  if (auto f = it->second.find(std::string(name)); f != it->second.end()) return f->second;
  return std::nullopt;
}

const std::vector<rust::Candidate>& BuilderDomain::resolve_in(std::size_t item,
                                                              const std::string& path) {
  std::string key = std::to_string(item);
  key += '\0';
  key += path;
  auto it = memo_->resolved.find(key);
  if (it == memo_->resolved.end())
    it = memo_->resolved.emplace(std::move(key), crate_.resolve_in(item, path)).first;
  return it->second;
}

bool BuilderDomain::builder_type(const std::string& module, const std::string& type_text) {
  std::string key = module + '\0' + type_text;
  auto it = memo_->builder_type.find(key);
  if (it == memo_->builder_type.end())
    it = memo_->builder_type
             .emplace(std::move(key),
                      inventory::is_builder_type(builder_types_, crate_, module, type_text))
             .first;
  return it->second;
}

std::optional<ConfigRef> BuilderDomain::config_type(const std::string& type_text,
                                                    const std::string& module) {
  std::string key = module + '\0' + type_text;
  auto it = memo_->config_type.find(key);
  if (it == memo_->config_type.end())
    it = memo_->config_type.emplace(std::move(key), binding_.config_of_type(type_text, module))
             .first;
  return it->second;
}

// A crate-local `const N: usize = 4 * 64;`, evaluated in its own item (bounded nesting, so a
// const naming itself stays symbolic).
std::optional<SymValue> BuilderDomain::const_value(const std::string& path) {
  if (eng_ == nullptr || !eng_->running() || const_depth_ > 8) return std::nullopt;
  const auto& cands = resolve_in(resolution_item(), path);
  if (cands.size() != 1 || cands[0].kind != rust::Candidate::Kind::Item) return std::nullopt;
  const rust::Item& it = crate_.items()[cands[0].item];
  if (it.kind != rust::ItemKind::Const) return std::nullopt;
  const rust::Body& value = crate_.lowered(cands[0].item);
  if (value.root == kNone) return std::nullopt;
  ++const_depth_;
  const_items_.push_back(cands[0].item);
  SymValue v = evaluate(value, value.root, *this);
  const_items_.pop_back();
  --const_depth_;
  return v;
}

BuilderDomain::Value BuilderDomain::param_value(const rust::Param& p, const std::string& module) {
  Value v;
  if (builder_type(module, p.type_text)) {
    v.kind = Value::Kind::builder;
    v.root = p.name;
    return v;
  }
  if (auto c = config_type(p.type_text, module)) {
    v.kind = Value::Kind::config;
    v.config = *c;
    if (bind_config_) {
      if (auto b = binding_.bind_root(*c))
        v.config = *b;
      else
        out.unbound_config = crate_.items()[c->item].qualified;
    }
    return v;
  }
  v.kind = Value::Kind::sym;
  if (args_ != nullptr)
    if (auto a = args_->find(p.name); a != args_->end()) {
      v.sym = a->second;
      out.used_args.insert(p.name);
      return v;
    }
  v.sym = SymValue::symbolic(p.name, "parameter `" + p.name +
                                         "` of the root constructor (bind it with --arg " + p.name +
                                         "=VALUE)");
  return v;
}

std::optional<SymValue> BuilderDomain::layer_field(const Value& b, std::string_view name) {
  auto it = b.fields.find(std::string(name));
  if (it != b.fields.end()) return it->second;
  if (b.defaulted) return inventory::layer_config_default(name, b.ctor, &catalog_);
  return SymValue::symbolic(b.text + "." + std::string(name),
                            "`" + b.text + "` is not a config literal");
}

// Values -----------------------------------------------------------------------------------------

BuilderDomain::Value BuilderDomain::sym_of(Eng&, NodeId n) {
  Value v;
  v.kind = Value::Kind::sym;
  v.sym = eval_sym(n);
  return v;
}

// The value of an expression without evaluating it (no effects): what the symbolic evaluator's
// context needs of a field's base or a method's receiver.
BuilderDomain::Value BuilderDomain::peek(NodeId n, int depth) {
  if (n == kNone || depth > 64) return {};
  const rust::Node& nd = node(n);
  switch (nd.kind) {
    case Kind::Path:
      if (nd.syntax == "identifier" || nd.syntax == "self" || nd.syntax == "scoped_identifier")
        if (const Value* b = local(text(n))) return *b;
      return {};
    case Kind::Ref:
    case Kind::Paren:
    case Kind::Try:
      return peek(nd.a, depth + 1);
    case Kind::Field: {
      Value base = peek(nd.a, depth + 1);
      if (base.kind == Value::Kind::layer_config) return record_field(base, nd.str);
      if (base.kind != Value::Kind::config) return {};
      auto r = binding_.field(base.config, nd.str);
      if (!r.config) return {};
      base.config = *r.config;
      return base;
    }
    case Kind::Struct:
      if (auto s = struct_value(n, nullptr)) return *s;
      return {};
    default:
      return {};
  }
}

BuilderDomain::Value BuilderDomain::path(Eng& eng, NodeId n) {
  if (auto p = function_path(text(n))) {
    Value v;
    v.kind = Value::Kind::fn_ref;
    v.fns.push_back({*p, Cert{}});
    return v;
  }
  return sym_of(eng, n);
}

BuilderDomain::Value BuilderDomain::field(Eng& eng, NodeId n, Value base) {
  if (base.kind == Value::Kind::config || base.kind == Value::Kind::layer_config)
    return member(std::move(base), node(n).str);
  return sym_of(eng, n);
}

// Field `name` of a config (a nested config stays one) or of a record literal.
BuilderDomain::Value BuilderDomain::member(Value base, std::string_view name) {
  if (base.kind == Value::Kind::config) {
    auto r = binding_.field(base.config, name);
    if (r.config) {
      base.config = *r.config;
      base.modules.clear();
      base.elems.reset();
      return base;
    }
    Value v;
    v.kind = Value::Kind::sym;
    v.sym = r.value;
    return v;
  }
  if (base.kind == Value::Kind::layer_config) return record_field(base, name);
  return {};
}

// A field of a config or record literal: its value, and its row when it holds a tuple.
BuilderDomain::Value BuilderDomain::record_field(const Value& record, std::string_view name) {
  Value v;
  v.kind = Value::Kind::sym;
  v.sym = layer_field(record, name).value_or(SymValue{});
  if (auto it = record.field_rows.find(std::string(name)); it != record.field_rows.end())
    v.rows = it->second;
  return v;
}

// A function named as a value: a catalog constructor's external path (`linear`,
// `nn::linear_b`), or `item:<index>` for a unique crate-local free function.
std::optional<std::string> BuilderDomain::function_path(const std::string& path) {
  const auto& cands = resolve_in(resolution_item(), path);
  for (const auto& c : cands) {
    if (c.kind == rust::Candidate::Kind::External) {
      std::string first = c.path.substr(0, c.path.find("::"));
      if ((first == "candle_nn" || first == "nn") && catalog_.find(c.path)) return c.path;
    }
  }
  if (cands.size() == 1 && cands[0].kind == rust::Candidate::Kind::Item &&
      crate_.items()[cands[0].item].kind == rust::ItemKind::Function)
    return "item:" + std::to_string(cands[0].item);
  return std::nullopt;
}

// One link of a builder chain (`vb.pp("a")`, `.set_prefix(..)`, `.root()`, `.clone()`); nullopt
// when the method is no builder method.
std::optional<BuilderDomain::Value> BuilderDomain::builder_method(NodeId n, const Value& recv) {
  std::string_view name = node(n).str;
  const auto argv = body().kids_view(n);
  Value b = recv;
  b.modules.clear();
  b.declared_type.clear();
  if ((name == "pp" || name == "push_prefix" || builder_types_.pushes_prefix(name)) &&
      argv.size() == 1) {
    for (auto& s : prefix_segments(argv[0]))
      b.segs.push_back(std::move(s));
  } else if (name == "set_prefix" && argv.size() == 1) {
    b.segs = prefix_segments(argv[0]);
  } else if (name == "root") {
    b.segs.clear();
  } else if (!(name == "clone" || name == "as_ref" || name == "as_mut" || name == "to_owned" ||
               name == "to_dtype" || name == "to_device" || name == "set_dtype" ||
               name == "set_device" || name == "unwrap" || name == "expect")) {
    return std::nullopt;
  }
  return b;
}

// `Conv2dConfig { groups: 4, ..Default::default() }`: a layer config literal.
// A struct literal read as a record of values: candle-nn's layer configs (`Conv2dConfig {
// padding: 1, ..Default::default() }`) and a crate's own plain records (`PreLogitConfig { in_dim:
// (4096, 512, 7, 7), .. }`) whose fields a helper reads back. Not the literal that finishes a
// constructor (`Self { .. }`, the type being built): that is the module, not a record.
// `evaluated`: the fields' values where the interpreter has evaluated them (a tuple keeps its row).
std::optional<BuilderDomain::Value> BuilderDomain::struct_value(
    NodeId n, const std::map<std::string, Value>* evaluated) {
  Value v;
  std::string name = inventory::last_segment(inventory::strip_generics(std::string(node(n).str)));
  const bool config = name.size() > 6 && name.compare(name.size() - 6, 6, "Config") == 0;
  if (!config) {
    if (name == "Self" || ctxs_.empty() || name == inventory::last_segment(ctx().type_qualified))
      return std::nullopt;
    if (evaluated)  // a record of numbers: none of its fields holds a builder, module or closure
      for (const auto& [f, fv] : *evaluated)
        if (fv.kind != Value::Kind::sym || !fv.modules.empty()) return std::nullopt;
  }
  v.kind = Value::Kind::layer_config;
  v.text = text(n);
  for (NodeId fi : body().kids_view(n)) {
    std::string field(node(fi).str);
    v.fields[field] = eval_sym(node(fi).a);
    if (evaluated)
      if (auto it = evaluated->find(field);
          it != evaluated->end() && it->second.rows && it->second.rows->size() == 1)
        v.field_rows[field] = it->second.rows;
  }
  if (node(n).a != kNone) v.defaulted = true;
  return v;
}

// Key segments a prefix argument pushes: `"a.b"` -> {a, b}; `i` -> {"{i}"} (or the index when
// the loop is expanded); `format!("block_{i}")` -> {"block_{i}"}.
std::vector<std::string> BuilderDomain::prefix_segments(NodeId arg) {
  arg = body().peel(arg, {Kind::Ref, Kind::Paren});
  const rust::Node& nd = node(arg);
  if (nd.kind == Kind::MethodCall && nd.text.empty()) {
    // `format!(..).as_str()`, `name.to_string()`: the receiver carries the text.
    std::string_view m = nd.str;
    if (m == "as_str" || m == "to_string" || m == "to_owned" || m == "clone")
      return prefix_segments(nd.a);
  }
  if (nd.kind == Kind::Macro && inventory::last_segment(std::string(nd.str)) == "format")
    return inventory::split_key(format_template(arg));
  if (is_ident(arg) && nd.kind == Kind::Path) {
    if (const Value* v = local(text(arg)); v && v->kind == Value::Kind::loop_var)
      return {"{" + text(arg) + "}"};
  }
  SymValue s = eval_sym(arg);
  if (s.kind == SymValue::Kind::string) return inventory::split_key(s.text);
  if (s.kind == SymValue::Kind::integer) return {std::to_string(s.integer)};
  // Arithmetic on a loop variable (`index + 1`) is a repeated family, not a gap.
  if (s.reason.rfind("loop variable", 0) == 0) return {"{" + s.text + "}"};
  diag(arg, "non-literal prefix `" + text(arg) + "`; its key segment is symbolic");
  return {"{" + text(arg) + "}"};
}

// `format!("layers.{}", i)` / `format!("{name}")` as a key template; bound variables are
// substituted, loop variables stay `{i}`.
std::string BuilderDomain::format_template(NodeId macro) {
  rust::FormatArgs f = rust::parse_format_args(node(macro).text);
  if (!f.ok) return "{" + text(macro) + "}";
  return inventory::format_key(f, [&](const std::string& expr) {
    if (const Value* v = local(expr)) {
      if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::integer)
        return std::to_string(v->sym.integer);
      if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::string) return v->sym.text;
    }
    return "{" + expr + "}";
  });
}

// Values of branches and returns. Values equal but for the instances they hold are one value
// holding all of them. The value of an undecided `if` (the branch being joined) is what the
// inventory always read it as: constructors held as values are all alternatives, each under its
// branch's condition; else the first builder, conditional; else the `if`'s symbolic value. A
// `match`'s value is its symbolic value; other joins (a call's returns) keep the first value.
namespace {
// Two values a join keeps as one (the modules they hold aside).
bool same(const Value& a, const Value& b) {
  return a.kind == b.kind && a.root == b.root && a.segs == b.segs && a.cert.level == b.cert.level &&
         a.cert.reason == b.cert.reason && a.sym.kind == b.sym.kind && a.sym.text == b.sym.text &&
         a.sym.integer == b.sym.integer && a.sym.boolean == b.sym.boolean &&
         a.closure == b.closure && a.config.item == b.config.item &&
         a.config.path == b.config.path && a.config.assigned == b.config.assigned &&
         a.fns.size() == b.fns.size() &&
         std::equal(a.fns.begin(), a.fns.end(), b.fns.begin(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}
}  // namespace

bool BuilderDomain::agree(const std::vector<Value>& vs) const {
  return std::all_of(vs.begin(), vs.end(), [&](const Value& v) { return same(v, vs.front()); });
}

BuilderDomain::Value BuilderDomain::join(const std::vector<Value>& vs) {
  if (vs.empty()) return {};
  std::vector<std::size_t> modules;
  for (const Value& v : vs)
    for (std::size_t m : v.modules)
      if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.push_back(m);
  Value first = vs[0];
  first.modules = modules;
  if (std::all_of(vs.begin(), vs.end(), [&](const Value& v) { return same(v, vs[0]); }))
    return first;
  const Branch* br = !branches_.empty() && branches_.back().closing ? &branches_.back() : nullptr;
  if (br == nullptr || br->kind == Branch::Kind::split) return first;
  Value out_v;
  out_v.modules = modules;
  if (br->kind == Branch::Kind::if_ && node(br->node).kind == Kind::If) {
    if (std::all_of(vs.begin(), vs.end(),
                    [](const Value& v) { return v.kind == Value::Kind::fn_ref; })) {
      out_v.kind = Value::Kind::fn_ref;
      for (std::size_t i = 0; i < vs.size(); ++i)
        for (const auto& f : vs[i].fns)
          out_v.fns.push_back({f.first, inventory::conditional(f.second, label_of(*br, i))});
      return out_v;
    }
    for (const Value& v : vs)
      if (v.kind == Value::Kind::builder) {
        Value b = v;
        b.cert = inventory::conditional(b.cert, label_of(*br, 0));
        return b;
      }
  }
  out_v.kind = Value::Kind::sym;
  out_v.sym = eval_sym(br->node);
  return out_v;
}

BuilderDomain::Value BuilderDomain::loop_merge(const Value& before, const Value& after) const {
  // Only instances pushed into a vector outlive an iteration; names the loop binds are its own.
  Value v = before;
  if (after.modules.size() > before.modules.size()) v.modules = after.modules;
  // A config whose fields the loop assigns: the value after it is not known.
  if (before.kind == Value::Kind::config && after.config.assigned != before.config.assigned) {
    v = Value{};
    v.kind = Value::Kind::sym;
    v.modules = after.modules;
  }
  return v;
}

}  // namespace cg::analysis::builder
