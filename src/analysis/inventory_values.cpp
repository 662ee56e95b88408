// The inventory walker's values: what an expression is (a builder with its key segments, a config,
// a candle-nn layer config, a constructor held as a value, a symbolic number), without side
// effects; the key segments a prefix pushes; and the symbolic evaluator's context.
#include "analysis/inventory_walker.hpp"

namespace cg::analysis::inventory {

bool is_builder_type(const BuilderTypes& types, const rust::Crate& crate, const std::string& module,
                     const std::string& t) {
  return types.names(crate, module, t, /*wrappers=*/false);
}

void Walker::run_root(std::size_t type_item, std::size_t ctor) {
  const rust::Item& t = crate_.items()[type_item];
  Inst root;
  root.type_name = t.name;
  root.qualified_type = t.qualified;
  root.source = crate_.source(type_item);
  root.cfg = crate_.items()[ctor].cfg.predicates;
  insts.push_back(root);
  Frame f;
  f.fn_item = ctor;
  f.file = crate_.items()[ctor].file;
  f.body = &crate_.lowered(ctor);
  f.inst = 0;
  f.type_qualified = t.qualified;
  f.scopes.emplace_back();
  bool first_builder = true;
  for (const auto& p : crate_.items()[ctor].params) {
    Value v = param_value(p, crate_.items()[ctor].module);
    if (v.kind == Value::Kind::builder && first_builder) {
      insts[0].root = p.name;
      first_builder = false;
    }
    f.scopes.back()[p.name] = std::move(v);
  }
  stack_.push_back(&f);
  walk(f.body->root, 0);
  stack_.pop_back();
}

std::string Walker::where(NodeId n) {
  const auto& f = crate_.files()[frame().file];
  return f->path() + ":" + std::to_string(node(n).line);
}

bool Walker::is_ident(NodeId n) {
  return n != rust::kNone && node(n).syntax == "identifier";
}

// Evaluator context -----------------------------------------------------------------------------

std::optional<SymValue> Walker::lookup(std::string_view name) {
  const Value* v = find_var(std::string(name));
  if (!v) return const_value(std::string(name));
  if (v->kind == Value::Kind::sym) return v->sym;
  if (v->kind == Value::Kind::loop_var)
    return SymValue::symbolic(std::string(name), "loop variable `" + std::string(name) + "`");
  return std::nullopt;
}

std::optional<SymValue> Walker::field(const rust::Body&, NodeId base, std::string_view name) {
  Value b = value_of(base, 0);
  if (b.kind == Value::Kind::config) {
    auto r = binding_.field(b.config, name);
    if (r.config) return std::nullopt;
    return r.value;
  }
  if (b.kind == Value::Kind::layer_config) return layer_field(b, name);
  return module_field(b, name);
}

// `patch_embeddings.num_patches` of a module this constructor built: the value its own
// constructor stores in the field, evaluated with the bound config.
std::optional<SymValue> Walker::module_field(const Value& b, std::string_view name) {
  if (b.modules.empty() || !bind_config_) return std::nullopt;
  const std::string& q = insts[b.modules.back()].qualified_type;
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

// A crate-local `const N: usize = 4 * 64;`, evaluated in its own file (bounded nesting, so a
// const naming itself stays symbolic).
std::optional<SymValue> Walker::const_value(const std::string& path) {
  if (stack_.empty() || const_depth_ > 8) return std::nullopt;
  auto cands = crate_.resolve_in(frame().fn_item, path);
  if (cands.size() != 1 || cands[0].kind != rust::Candidate::Kind::Item) return std::nullopt;
  const rust::Item& it = crate_.items()[cands[0].item];
  if (it.kind != rust::ItemKind::Const) return std::nullopt;
  const rust::Body& value = crate_.lowered(cands[0].item);
  if (value.root == rust::kNone) return std::nullopt;
  ++const_depth_;
  Frame f;
  f.fn_item = cands[0].item;
  f.file = it.file;
  f.body = &value;
  f.inst = frame().inst;
  f.scopes.emplace_back();
  stack_.push_back(&f);
  SymValue v = eval(value.root);
  stack_.pop_back();
  --const_depth_;
  return v;
}

std::optional<SymValue> Walker::method(const rust::Body&, NodeId recv, std::string_view name,
                                       const std::vector<SymValue>& args) {
  Value b = value_of(recv, 0);
  if (b.kind == Value::Kind::config) return binding_.method(b.config, name, args);
  return std::nullopt;
}

SymValue Walker::eval(NodeId n) {
  return evaluate(body(), n, *this);
}

// Environment -----------------------------------------------------------------------------------

Value* Walker::find_var(const std::string& name) {
  if (stack_.empty()) return nullptr;
  auto& scopes = frame().scopes;
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return &f->second;
  }
  return nullptr;
}

Value Walker::param_value(const rust::Param& p, const std::string& module) {
  Value v;
  if (is_builder_type(builder_types_, crate_, module, p.type_text)) {
    v.kind = Value::Kind::builder;
    v.root = p.name;
    return v;
  }
  if (auto c = binding_.config_of_type(p.type_text, module)) {
    v.kind = Value::Kind::config;
    v.config = *c;
    if (bind_config_) {
      if (auto b = binding_.bind_root(*c))
        v.config = *b;
      else
        unbound_config = crate_.items()[c->item].qualified;
    }
    return v;
  }
  v.kind = Value::Kind::sym;
  if (args_ != nullptr)
    if (auto a = args_->find(p.name); a != args_->end()) {
      v.sym = a->second;
      used_args.insert(p.name);
      return v;
    }
  v.sym = SymValue::symbolic(p.name, "parameter `" + p.name +
                                         "` of the root constructor (bind it with --arg " + p.name +
                                         "=VALUE)");
  return v;
}

std::optional<SymValue> Walker::layer_field(const Value& b, std::string_view name) {
  auto it = b.fields.find(std::string(name));
  if (it != b.fields.end()) return it->second;
  if (b.defaulted) return layer_config_default(name, b.ctor, &catalog_);
  return SymValue::symbolic(b.text + "." + std::string(name),
                            "`" + b.text + "` is not a config literal");
}

// Values ----------------------------------------------------------------------------------------

Value Walker::value_of(NodeId n, int depth) {
  Value v;
  if (n == rust::kNone || depth > 64 || value_depth_ > 256) {
    v.kind = Value::Kind::sym;
    v.sym = SymValue::symbolic(n == rust::kNone ? "" : text(n), "expression too deep");
    return v;
  }
  ++value_depth_;
  struct Guard {
    int& d;
    ~Guard() { --d; }
  } guard{value_depth_};
  const rust::Node& nd = node(n);
  using K = rust::Kind;
  switch (nd.kind) {
    case K::Path:
      if (nd.syntax == "identifier" || nd.syntax == "self" || nd.syntax == "scoped_identifier") {
        if (Value* b = find_var(text(n))) return *b;
        if (auto path = function_path(text(n))) {
          v.kind = Value::Kind::fn_ref;
          v.fns.push_back({*path, Cert{}});
          return v;
        }
      }
      break;
    case K::Ref:
    case K::Paren:
    case K::Try:
      if (nd.a != rust::kNone) return value_of(nd.a, depth + 1);
      break;
    case K::Field: {
      Value base = value_of(nd.a, depth + 1);
      if (base.kind == Value::Kind::config) {
        auto r = binding_.field(base.config, nd.str);
        if (r.config) {
          base.config = *r.config;
          return base;
        }
        v.kind = Value::Kind::sym;
        v.sym = r.value;
        return v;
      }
      break;
    }
    case K::Call:
    case K::MethodCall:
      if (auto c = call_value(n, depth)) return *c;
      break;
    case K::Struct:
      if (auto s = struct_value(n)) return *s;
      break;
    case K::If:
      if (auto c = if_value(n, depth)) return *c;
      break;
    case K::Block:
      if (nd.syntax == "block") return block_value(n, depth);
      break;
    default:
      break;
  }
  v.kind = Value::Kind::sym;
  v.sym = eval(n);
  return v;
}

// A call's value: a builder chain, a cloned layer config, `Some(x)`, `X::default()`; nullopt
// means "evaluate it symbolically".
std::optional<Value> Walker::call_value(NodeId n, int depth) {
  const rust::Node& nd = node(n);
  Value v;
  if (nd.kind == rust::Kind::MethodCall) {
    if (auto b = builder_chain(n, depth)) return *b;
    Value recv = value_of(nd.a, depth + 1);
    if (recv.kind == Value::Kind::layer_config && nd.str == "clone") return recv;
    return std::nullopt;
  }
  std::string path = strip_generics(text(nd.a));
  if (path == "Some" && nd.kids_count == 1) {
    Value inner = value_of(body().kid(n, 0), depth + 1);
    // `Some(Layer::load(..))`: whatever it holds, `.is_some()` of it is true.
    if (inner.kind == Value::Kind::sym && !inner.sym.concrete())
      inner.sym = SymValue::symbolic("Some(" + inner.sym.text + ")", inner.sym.reason);
    return inner;
  }
  std::string leaf = last_segment(path);
  if (leaf == "default" || leaf == "default_no_bias") {
    v.kind = Value::Kind::layer_config;
    v.defaulted = true;
    v.ctor = leaf;
    v.text = text(n);
    return v;
  }
  return std::nullopt;
}

// `Conv2dConfig { groups: 4, ..Default::default() }`: a layer config literal.
std::optional<Value> Walker::struct_value(NodeId n) {
  Value v;
  std::string name = last_segment(strip_generics(std::string(node(n).str)));
  if (!(name.size() > 6 && name.compare(name.size() - 6, 6, "Config") == 0)) return std::nullopt;
  v.kind = Value::Kind::layer_config;
  v.text = text(n);
  for (NodeId fi : body().kids(n))
    v.fields[std::string(node(fi).str)] = eval(node(fi).a);
  if (node(n).a != rust::kNone) v.defaulted = true;
  return v;
}

// `if c { linear } else { linear_no_bias }` or a builder chosen by a branch.
std::optional<Value> Walker::if_value(NodeId n, int depth) {
  const rust::Node& nd = node(n);
  NodeId cond = nd.a, alt = nd.c;
  Value a = block_value(nd.b, depth);
  Value b;
  if (alt != rust::kNone)
    b = node(alt).kind == rust::Kind::Block && node(alt).syntax == "block"
            ? block_value(alt, depth)
            : value_of(alt, depth + 1);
  if (node(cond).kind != rust::Kind::LetCond) {
    SymValue c = eval(cond);
    if (c.kind == SymValue::Kind::boolean) return c.boolean ? a : b;
  }
  if (a.kind == Value::Kind::fn_ref && b.kind == Value::Kind::fn_ref) {
    std::string c = eval(cond).text;
    Value out;
    out.kind = Value::Kind::fn_ref;
    for (auto& f : a.fns)
      out.fns.push_back({f.first, conditional(f.second, "if " + c)});
    for (auto& f : b.fns)
      out.fns.push_back({f.first, conditional(f.second, "unless " + c)});
    return out;
  }
  for (Value* pick : {&a, &b}) {
    if (pick->kind == Value::Kind::builder) {
      pick->cert = conditional(pick->cert, "if " + eval(cond).text);
      return *pick;
    }
  }
  return std::nullopt;
}

// A chain of builder methods (`vb.pp("a").pp(i).set_device(d)`), applied in order without
// recursion, so a chain of any length costs its length: each link is one step of the algebra.
// nullopt when the chain's base is not a builder or a link is not a builder method.
std::optional<Value> Walker::builder_chain(NodeId n, int depth) {
  std::vector<NodeId> links;  // outermost first
  NodeId base = n;
  for (;;) {
    NodeId p = body().peel(base, {rust::Kind::Ref, rust::Kind::Paren, rust::Kind::Try});
    if (p == rust::kNone || node(p).kind != rust::Kind::MethodCall) break;
    links.push_back(p);
    base = node(p).a;
  }
  if (links.empty()) return std::nullopt;
  Value recv = value_of(base, depth + 1);
  if (recv.kind != Value::Kind::builder) return std::nullopt;
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    std::string_view name = node(*it).str;
    auto argv = body().kids(*it);
    if ((name == "pp" || name == "push_prefix") && argv.size() == 1) {
      for (auto& s : prefix_segments(argv[0]))
        recv.segs.push_back(std::move(s));
    } else if (name == "set_prefix" && argv.size() == 1) {
      recv.segs = prefix_segments(argv[0]);
    } else if (name == "root") {
      recv.segs.clear();
    } else if (!(name == "clone" || name == "as_ref" || name == "as_mut" || name == "to_owned" ||
                 name == "to_dtype" || name == "to_device" || name == "set_dtype" ||
                 name == "set_device" || name == "unwrap" || name == "expect")) {
      return std::nullopt;
    }
  }
  return recv;
}

Value Walker::block_value(NodeId block, int depth) {
  if (block == rust::kNone || node(block).kids_count == 0) return Value{};
  NodeId tail = body().tail(block);
  if (tail != rust::kNone) return value_of(tail, depth + 1);
  // A block ending with a statement has no value; one ending with a nested item is evaluated
  // (symbolically) as the syntax walk did.
  NodeId last = body().kid(block, node(block).kids_count - 1);
  if (node(last).kind == rust::Kind::Item) return value_of(last, depth + 1);
  return Value{};
}

// Key segments a prefix argument pushes: `"a.b"` -> {a, b}; `i` -> {"{i}"} (or the index when
// the loop is expanded); `format!("block_{i}")` -> {"block_{i}"}.
std::vector<std::string> Walker::prefix_segments(NodeId arg) {
  arg = body().peel(arg, {rust::Kind::Ref, rust::Kind::Paren});
  const rust::Node& nd = node(arg);
  if (nd.kind == rust::Kind::MethodCall && nd.text.empty()) {
    // `format!(..).as_str()`, `name.to_string()`: the receiver carries the text.
    std::string_view m = nd.str;
    if (m == "as_str" || m == "to_string" || m == "to_owned" || m == "clone")
      return prefix_segments(nd.a);
  }
  if (nd.kind == rust::Kind::Macro && last_segment(std::string(nd.str)) == "format")
    return split_key(format_template(arg));
  if (is_ident(arg) && nd.kind == rust::Kind::Path) {
    if (Value* v = find_var(text(arg)); v && v->kind == Value::Kind::loop_var)
      return {"{" + text(arg) + "}"};
  }
  SymValue s = eval(arg);
  if (s.kind == SymValue::Kind::string) return split_key(s.text);
  if (s.kind == SymValue::Kind::integer) return {std::to_string(s.integer)};
  // Arithmetic on a loop variable (`index + 1`) is a repeated family, not a gap.
  if (s.reason.rfind("loop variable", 0) == 0) return {"{" + s.text + "}"};
  diag(arg, "non-literal prefix `" + text(arg) + "`; its key segment is symbolic");
  return {"{" + text(arg) + "}"};
}

// `format!("layers.{}", i)` / `format!("{name}")` as a key template; bound variables are
// substituted, loop variables stay `{i}`.
std::string Walker::format_template(NodeId macro) {
  rust::FormatArgs f = rust::parse_format_args(node(macro).text);
  if (!f.ok) return "{" + text(macro) + "}";
  return format_key(f, [&](const std::string& expr) { return placeholder_text(expr); });
}

std::string Walker::placeholder_text(const std::string& expr) {
  if (Value* v = find_var(expr)) {
    if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::integer)
      return std::to_string(v->sym.integer);
    if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::string) return v->sym.text;
  }
  return "{" + expr + "}";
}

// A function named as a value: a catalog constructor's external path (`linear`,
// `nn::linear_b`), or `item:<index>` for a unique crate-local free function.
std::optional<std::string> Walker::function_path(const std::string& path) {
  if (stack_.empty()) return std::nullopt;
  auto cands = crate_.resolve_in(frame().fn_item, path);
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

}  // namespace cg::analysis::inventory
