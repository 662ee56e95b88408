// The builder/prefix domain's values: the root run, what a name, field or expression is
// (builders with their key segments, configs, layer configs, constructor references, symbolic
// numbers), the builder algebra of method chains (`vb.pp("a").pp(i)`), the key segments a prefix
// pushes, and the symbolic evaluator's context (names read from the engine's environment).
#include <cctype>

#include "analysis/builder/domain.hpp"
#include "util/text.hpp"

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
  // The parameters after the engine exists: an `--arg cfg=Config::tiny()` runs on it.
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

std::string BuilderDomain::quoted(NodeId n) const {
  return shown_text(inventory::one_line(text(n)), 120);
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
    if (args_ != nullptr)
      if (auto a = args_->find(p.name); a != args_->end()) {
        out.used_args.insert(p.name);
        if (a->second.kind == SymValue::Kind::symbolic && a->second.reason == kArgCallReason) {
          if (auto built = arg_call(p, a->second.text, items_.back())) {
            out.arg_configs[c->item] = built->config;
            return *built;
          }
        } else {
          out.arg_problems[p.name] = "not a call of a constructor of `" +
                                     crate_.items()[c->item].name +
                                     "` (a crate function with literal arguments, e.g. `--arg " +
                                     p.name + "=" + crate_.items()[c->item].name + "::new()`)";
        }
        return v;
      }
    if (bind_config_) {
      if (auto b = binding_.bind_root(*c)) {
        v.config = *b;
        out.config_bound = true;
      } else {
        out.unbound_config = crate_.items()[c->item].qualified;
      }
    }
    return v;
  }
  v.kind = Value::Kind::sym;
  if (args_ != nullptr)
    if (auto a = args_->find(p.name); a != args_->end()) {
      v.sym = a->second;
      out.used_args.insert(p.name);
      if (a->second.kind == SymValue::Kind::symbolic && a->second.reason == kArgCallReason)
        out.arg_problems[p.name] =
            "a call, which is evaluated only for a parameter whose type is a crate-local struct";
      return v;
    }
  v.sym = SymValue::symbolic(p.name, "parameter `" + p.name +
                                         "` of the root constructor (bind it with --arg " + p.name +
                                         "=VALUE)");
  return v;
}

namespace {
// `Config::tiny()`, `MBConvConfig::new(3, 1.5, true, "x")`: the path and its literal arguments;
// nullopt when the text is not such a call (or an argument is not a literal).
std::optional<std::pair<std::string, std::vector<SymValue>>> parse_arg_call(std::string_view t) {
  const auto open = t.find('(');
  if (open == std::string_view::npos || t.empty() || t.back() != ')') return std::nullopt;
  std::string path(t.substr(0, open));
  while (!path.empty() && path.back() == ' ')
    path.pop_back();
  if (path.empty()) return std::nullopt;
  std::vector<SymValue> args;
  std::string_view inner = t.substr(open + 1, t.size() - open - 2);
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= inner.size(); ++i) {
    if (i < inner.size() && inner[i] == '"' && (i == 0 || inner[i - 1] != '\\')) quoted = !quoted;
    if (i < inner.size() && (quoted || inner[i] != ',')) continue;
    std::string_view a = inner.substr(start, i - start);
    start = i + 1;
    while (!a.empty() && a.front() == ' ')
      a.remove_prefix(1);
    while (!a.empty() && a.back() == ' ')
      a.remove_suffix(1);
    if (a.empty()) {
      if (i == inner.size() && args.empty()) break;  // `f()`, `f(1,)`
      return std::nullopt;
    }
    std::optional<SymValue> v;
    for (const char* kind : {"integer_literal", "float_literal", "boolean_literal"})
      if (!v && !(std::string_view(kind) == "boolean_literal" && a != "true" && a != "false"))
        v = parse_literal(kind, a);
    if (!v && a.size() >= 2 && a.front() == '"') v = parse_literal("string_literal", a);
    if (!v) return std::nullopt;
    args.push_back(*v);
  }
  return std::make_pair(std::move(path), std::move(args));
}

// The first field of a built config (nested ones too) that is not known, as `field: why`.
std::string unknown_field(const ConfigRef& c, const std::string& prefix) {
  if (c.assigned)
    for (const auto& [name, v] : *c.assigned)
      if (!v.concrete() && !v.elements) return prefix + name + " (" + v.reason + ")";
  if (c.assigned_configs)
    for (const auto& [name, nested] : *c.assigned_configs)
      if (auto u = unknown_field(nested, prefix + name + "."); !u.empty()) return u;
  return {};
}
}  // namespace

std::optional<BuilderDomain::Value> BuilderDomain::arg_call(const rust::Param& p,
                                                            const std::string& call,
                                                            std::size_t ctor) {
  const std::string type =
      crate_.items()[config_type(p.type_text, crate_.items()[ctor].module)->item].name;
  auto parsed = parse_arg_call(call);
  if (!parsed) {
    out.arg_problems[p.name] = "not a call with literal arguments (`" + type + "::new()`)";
    return std::nullopt;
  }
  std::vector<std::size_t> fns;
  for (const auto& c : resolve_in(ctor, parsed->first))
    if (c.kind == rust::Candidate::Kind::Item &&
        (crate_.items()[c.item].kind == rust::ItemKind::Function ||
         crate_.items()[c.item].kind == rust::ItemKind::Method) &&
        crate_.items()[c.item].cfg.state != rust::Tri::False)
      fns.push_back(c.item);
  if (fns.size() != 1) {
    out.arg_problems[p.name] =
        fns.empty() ? "a call of `" + parsed->first + "`, which names no function of the crate"
                    : "a call of `" + parsed->first + "`, which names " +
                          std::to_string(fns.size()) + " functions";
    return std::nullopt;
  }
  std::vector<Value> args;
  for (auto& a : parsed->second) {
    Value v;
    v.kind = Value::Kind::sym;
    v.sym = std::move(a);
    args.push_back(std::move(v));
  }
  Value r = run_arg_fn(*eng_, fns[0], args);
  const std::size_t want = config_type(p.type_text, crate_.items()[ctor].module)->item;
  if (r.kind != Value::Kind::config || r.config.item != want || !r.config.assigned) {
    out.arg_problems[p.name] = "a call of `" + parsed->first +
                               "`, whose body did not evaluate to a `" + type + "` struct literal";
    return std::nullopt;
  }
  if (std::string u = unknown_field(r.config, ""); !u.empty()) {
    out.arg_problems[p.name] =
        "a call of `" + parsed->first + "`, whose field " + u + " could not be evaluated";
    return std::nullopt;
  }
  r.modules.clear();
  return r;
}

// A crate function run for an --arg call (and the calls its body makes): inlined in place, its
// struct literals of crate structs becoming configs.
BuilderDomain::Value BuilderDomain::run_arg_fn(Eng& eng, std::size_t fn,
                                               const std::vector<Value>& args) {
  if (std::find(items_.begin(), items_.end(), fn) != items_.end() || arg_calls_ > 16) return {};
  Ctx c;
  c.inst = ctx().inst;
  c.type_qualified = ctx().type_qualified;
  ctxs_.push_back(std::move(c));
  items_.push_back(fn);
  ++arg_calls_;
  Value r = eng.invoke(fn, nullptr, args, false);
  --arg_calls_;
  items_.pop_back();
  ctxs_.pop_back();
  return r;
}

std::optional<BuilderDomain::Value> BuilderDomain::constructed_config(
    Eng& eng, NodeId n, const std::map<std::string, Value>& evaluated) {
  if (arg_calls_ == 0 || node(n).a != kNone) return std::nullopt;
  std::string type = inventory::strip_generics(std::string(node(n).str));
  const rust::Item& here = crate_.items()[eng.item()];
  if (type == "Self" && here.impl >= 0)
    type = crate_.impls()[static_cast<std::size_t>(here.impl)].self_base;
  auto own = config_type(type, here.module);
  if (!own) return std::nullopt;
  auto assigned = std::make_shared<std::map<std::string, SymValue, std::less<>>>();
  auto nested = std::make_shared<std::vector<std::pair<std::string, ConfigRef>>>();
  for (NodeId fi : body().kids_view(n)) {
    const std::string name(node(fi).str);
    const auto it = evaluated.find(name);
    if (it != evaluated.end() && it->second.kind == Value::Kind::config) {
      nested->emplace_back(name, it->second.config);
      continue;
    }
    SymValue s = SymValue::symbolic(text(fi), "`" + text(fi) + "` is not evaluated");
    if (it != evaluated.end() && it->second.kind == Value::Kind::sym) {
      s = it->second.sym;
      // An enum variant (`Activation::QuickGelu`): its name, as `--arg model=Vgg16` gives one.
      const NodeId e = node(fi).a;
      if (!s.concrete() && e != kNone && node(e).kind == Kind::Path &&
          text(e).find("::") != std::string::npos) {
        const std::string last = inventory::last_segment(text(e));
        if (!last.empty() && std::isupper(static_cast<unsigned char>(last[0])))
          s = SymValue::of_string(text(e));
      }
      // An array of literals (`[3, 3, 9, 3]`): its length and elements, as config.json's.
      if (const auto& rows = it->second.rows;
          rows && std::all_of(rows->begin(), rows->end(),
                              [](const std::vector<SymValue>& r) { return r.size() == 1; })) {
        auto elems = std::make_shared<std::vector<SymValue>>();
        for (const auto& r : *rows)
          elems->push_back(r[0]);
        s = SymValue::symbolic(text(fi), "an array");
        s.array_len = static_cast<std::int64_t>(elems->size());
        s.elements = std::move(elems);
      }
    }
    (*assigned)[name] = std::move(s);
  }
  Value v;
  v.kind = Value::Kind::config;
  v.config = *own;
  v.config.assigned = std::move(assigned);
  if (!nested->empty()) v.config.assigned_configs = std::move(nested);
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

// `widen(3) + 2` while an --arg call runs: the operands' values as the engine gave them (a crate
// call's result among them), combined as the symbolic evaluator combines known values.
BuilderDomain::Value BuilderDomain::binary(Eng& eng, NodeId n, Value l, Value r) {
  if (arg_calls_ > 0 && l.kind == Value::Kind::sym && r.kind == Value::Kind::sym &&
      l.sym.concrete() && r.sym.concrete()) {
    Value v;
    v.kind = Value::Kind::sym;
    v.sym = binary_value(std::string(node(n).str), l.sym, r.sym, text(n));
    return v;
  }
  return sym_of(eng, n);
}

// The value of an expression without evaluating it (no effects): what the symbolic evaluator's
// context needs of a field's base or a method's receiver.
BuilderDomain::Value BuilderDomain::peek(NodeId n, int depth) {
  if (n == kNone || depth > 64) return {};
  const rust::Node& nd = node(n);
  switch (nd.kind) {
    case Kind::Path:
      if (nd.is_identifier() || nd.is_self() || nd.is_scoped_identifier())
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
  Value v = sym_of(eng, n);
  // `base.embed_tokens` of a module this constructor built (`let base = Model::new(..)?`): the
  // child built for that field, as the module value (qwen3's tied head reads
  // `base.embed_tokens.embeddings()`).
  if (!base.modules.empty() && v.modules.empty()) {
    const std::set<std::size_t> held(base.modules.begin(), base.modules.end());
    const std::string_view name = node(n).str;
    for (std::size_t m : base.modules) {
      const auto& parent = out.insts[m].parent;
      if (parent && held.count(*parent)) continue;  // only the value's outermost modules
      for (std::size_t c = 0; c < out.insts.size(); ++c)
        if (out.insts[c].parent == m && out.insts[c].field == name) v.modules.push_back(c);
    }
  }
  return v;
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
  diag(arg, "non-literal prefix `" + quoted(arg) + "`; its key segment is symbolic");
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
         a.config.assigned_configs == b.config.assigned_configs && a.fns.size() == b.fns.size() &&
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
  // Tuples of one size join part by part: `match .. { (Ok(e), Ok(t)) => (e, t), .. }` keeps
  // which modules each part may hold.
  // An arm with no value at all (`return Err(e)`: Rust's types let only a diverging arm beside
  // a tuple) adds no part.
  std::shared_ptr<const std::vector<Value>> parts;
  const Value* shape = nullptr;
  bool tuples = true;
  for (const Value& v : vs) {
    if (v.elems) {
      if (shape && shape->elems->size() != v.elems->size()) tuples = false;
      shape = shape ? shape : &v;
    } else if (v.kind != Value::Kind::none || !v.modules.empty()) {
      tuples = false;
    }
  }
  if (tuples && shape) {
    auto joined = std::make_shared<std::vector<Value>>();
    for (std::size_t i = 0; i < shape->elems->size(); ++i) {
      std::vector<Value> column;
      for (const Value& v : vs)
        if (v.elems) column.push_back((*v.elems)[i]);
      joined->push_back(join(column));
    }
    parts = std::move(joined);
    first.elems = parts;
  }
  if (std::all_of(vs.begin(), vs.end(), [&](const Value& v) { return same(v, vs[0]); }))
    return first;
  const Branch* br = !branches_.empty() && branches_.back().closing ? &branches_.back() : nullptr;
  if (br == nullptr || br->kind == Branch::Kind::split) return first;
  Value out_v;
  out_v.modules = modules;
  out_v.elems = parts;
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
