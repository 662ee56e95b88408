// The builder/prefix domain's calls: crate-local constructors of other types become child module
// instances and helpers are inlined (through the engine's `invoke`, with the inventory's own
// recursion and depth messages), catalog constructors register their leaves, closures bound to
// locals run where they are called, and the method calls the domain evaluates itself: raw gets
// on a builder, closures given to `map`/`then`/.., `then_some`, fallbacks (`A.or_else(|_| B)`)
// and modules pushed into a vector.
#include "analysis/builder/domain.hpp"

namespace cg::analysis::builder {

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

namespace {

// An argument that is a tensor a layer instance holds (`embed.embeddings().clone()`): a crate
// function given one builds a module that reuses that instance's weights (a tied head).
const Value* layer_tensor(const std::vector<Value>& args) {
  for (const Value& v : args)
    if (v.tensor_of) return &v;
  return nullptr;
}

bool closure_taker(std::string_view name) {
  return name == "map" || name == "flat_map" || name == "for_each" || name == "and_then" ||
         name == "then" || name == "map_or" || name == "map_or_else";
}

}  // namespace

// What a call is worth as a value, as the walker read it: `Some(x)` is x, `X::default()` a
// layer config, anything else its symbolic value.
BuilderDomain::Value BuilderDomain::plain_call_value(NodeId n, const std::vector<Value>& args) {
  std::string path = inventory::strip_generics(text(node(n).a));
  if (path == "Some" && node(n).kids_count == 1 && !args.empty()) {
    Value inner = args[0];
    // `Some(Layer::load(..))`: whatever it holds, `.is_some()` of it is true.
    if (inner.kind == Value::Kind::sym && !inner.sym.concrete())
      inner.sym = SymValue::symbolic("Some(" + inner.sym.text + ")", inner.sym.reason);
    if (inner.kind == Value::Kind::none) {
      inner.kind = Value::Kind::sym;
      SymValue s = eval_sym(body().kid(n, 0));
      inner.sym = s.concrete() ? s : SymValue::symbolic("Some(" + s.text + ")", s.reason);
    }
    return inner;
  }
  std::string leaf = inventory::last_segment(path);
  Value v;
  if (leaf == "default" || leaf == "default_no_bias") {
    v.kind = Value::Kind::layer_config;
    v.defaulted = true;
    v.ctor = leaf;
    v.text = text(n);
    return v;
  }
  v.kind = Value::Kind::sym;
  v.sym = eval_sym(n);
  return v;
}

// candle-nn's modules made of a closure, which their `forward` calls.
static bool held_closure(const std::string& external) {
  std::string_view p = external;
  for (std::string_view root : {"candle_nn::", "nn::"})
    if (p.rfind(root, 0) == 0) p.remove_prefix(root.size());
  for (std::string_view prefix : {"func::", "ops::"})
    if (p.rfind(prefix, 0) == 0) p.remove_prefix(prefix.size());
  return p == "Func::new" || p == "FuncT::new" || p == "func" || p == "func_t";
}

BuilderDomain::Value BuilderDomain::call(Eng& eng, NodeId n, std::vector<Value> args) {
  NodeId fn = node(n).a;
  std::string path = inventory::strip_generics(text(fn));
  if (is_ident(fn) && node(fn).kind == Kind::Path) {
    if (const Value* v = local(path); v && v->kind == Value::Kind::closure) {
      Value c = *v;
      return call_closure(eng, n, path, c, args);
    }
    if (const Value* v = local(path); v && v->kind == Value::Kind::fn_ref) {
      Value fns = *v;
      return call_fn_ref(eng, n, fns, args);
    }
  }
  if (path == "Some" || path == "Ok" || path == "Err" || path == "Box::new" || path == "Arc::new" ||
      path == "Rc::new")
    return plain_call_value(n, args);
  return call_path(eng, n, path, args);
}

// A local holding constructors (`let f = if b { linear } else { linear_no_bias }`): each
// alternative registers under its condition; what all register stays certain.
BuilderDomain::Value BuilderDomain::call_fn_ref(Eng& eng, NodeId n, const Value& fns,
                                                const std::vector<Value>& args) {
  const std::string path = text(node(n).a);
  Branch br = open_branch(n, Branch::Kind::if_);
  br.count = fns.fns.size();
  br.marks.push_back(marks());
  for (std::size_t a = 0; a < fns.fns.size(); ++a) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const std::string& fpath = fns.fns[a].first;
    const Cert& cert = fns.fns[a].second;
    auto run = [&] {
      under(inventory::join(br.outer, cert), [&] {
        if (fpath.rfind("item:", 0) == 0)
          call_local(eng, n, std::stoul(fpath.substr(5)), args, path);
        else if (const ConstructorSpec* spec = catalog_.find(fpath))
          register_layer(n, *spec, fpath, args);
      });
    };
    if (fns.fns.size() > 1) {
      push_alt(br.group, n, static_cast<int>(a), static_cast<int>(fns.fns.size()),
               cert.reason.empty() ? path : cert.reason);
      run();
      alt_ctx_.pop_back();
    } else {
      run();
    }
    br.marks.push_back(marks());
  }
  if (br.marks.size() == 3) unify(br, true);
  return plain_call_value(n, args);
}

// A call by path: a crate-local function or method (inlined or a child instance), or an
// external path (a candle-nn catalog constructor registers its leaves).
BuilderDomain::Value BuilderDomain::call_path(Eng& eng, NodeId n, const std::string& path,
                                              const std::vector<Value>& args) {
  const auto& cands = resolve_in(eng.item(), path);
  std::vector<std::size_t> local_items;
  std::string external;
  for (const auto& c : cands) {
    if (c.kind == rust::Candidate::Kind::Item) {
      const rust::Item& it = crate_.items()[c.item];
      if ((it.kind == rust::ItemKind::Function || it.kind == rust::ItemKind::Method) &&
          it.cfg.state != rust::Tri::False)
        local_items.push_back(c.item);
    } else if (c.kind == rust::Candidate::Kind::External) {
      external = c.path;
    }
  }
  // Unresolved but written fully: `candle_nn::linear(..)` without a `use`.
  if (local_items.empty() && external.empty() && path.find("::") != std::string::npos)
    external = path;
  if (!external.empty() && local_items.empty()) {
    std::string first = external.substr(0, external.find("::"));
    if (first == "candle_nn" || first == "nn")
      if (const ConstructorSpec* spec = catalog_.find(external)) {
        register_layer(n, *spec, external, args);
        return plain_call_value(n, args);
      }
  }
  if (!external.empty() && local_items.empty())
    if (auto tied = tied_layer(n, external, args)) return *tied;
  if (!external.empty() && local_items.empty())
    if (auto own = own_layer(n, external, args)) return *own;
  if (local_items.empty() && held_closure(external)) {
    // `FuncT::new(move |xs, train| { .. linear(.., vb.pp("head.fc")) .. })`: the module runs
    // the closure at every forward, so the tensors it asks for are the model's parameters.
    for (const Value& a : args)
      if (a.kind == Value::Kind::closure && a.closure_body == &eng.body())
        eng.run_closure(eng.body(), a.closure, {});
    return plain_call_value(n, args);
  }
  if (local_items.empty()) {
    if (any_builder(args))
      diag(n, "unresolved call `" + path +
                  "` receives a VarBuilder; any parameters it registers are unknown");
    return plain_call_value(n, args);
  }
  // While an `--arg cfg=Config::tiny()` runs, the crate functions it calls run too.
  if (arg_calls_ > 0 && local_items.size() == 1 && !any_builder(args))
    return run_arg_fn(eng, local_items[0], args);
  if (!any_builder(args) && !layer_tensor(args)) return plain_call_value(n, args);
  if (local_items.size() > 1) {
    diag(n, "ambiguous call `" + path + "` receives a VarBuilder; subtree not expanded");
    return plain_call_value(n, args);
  }
  const std::size_t before = ctx().created.size();
  Value r = call_local(eng, n, local_items[0], args, path);
  // A helper returning a builder gives that builder (the walker's value had none).
  if (r.kind == Value::Kind::builder) return r;
  // The value holds the modules the call built, wherever it goes next (a tuple's part, a match).
  Value v = plain_call_value(n, args);
  for (std::size_t i = before; i < ctx().created.size(); ++i)
    v.modules.push_back(ctx().created[i]);
  return v;
}

BuilderDomain::Value BuilderDomain::call_local(Eng& eng, NodeId n, std::size_t callee,
                                               const std::vector<Value>& args,
                                               const std::string& path) {
  const rust::Item& it = crate_.items()[callee];
  if (std::find(items_.begin(), items_.end(), callee) != items_.end()) {
    diag(n, "recursive constructor call `" + path + "`; subtree not expanded");
    return {};
  }
  if (depth_ + 1 > inventory::kMaxDepth) {
    diag(n, "constructor nesting deeper than " + std::to_string(inventory::kMaxDepth) +
                " levels; subtree not expanded");
    return {};
  }
  if (crate_.lowered(callee).root == kNone) return {};
  std::string owner;
  if (it.impl >= 0) {
    const rust::Impl& impl = crate_.impls()[static_cast<std::size_t>(it.impl)];
    owner = impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base;
  }
  const bool child =
      !owner.empty() && owner != ctx().type_qualified && it.self_kind == rust::SelfKind::None;
  auto builder = std::find_if(args.begin(), args.end(),
                              [](const Value& v) { return v.kind == Value::Kind::builder; });
  // `Linear::from_weights(embed.embeddings().clone(), None)` of a crate's own wrapper: a child
  // at the key of the instance whose tensor it reuses (its leaves are that instance's).
  const Value* tied = builder == args.end() ? layer_tensor(args) : nullptr;
  if (tied && *tied->tensor_of >= out.insts.size()) tied = nullptr;
  if (child && (shallow_ || (builder == args.end() && !tied))) {
    out.constructed_types.insert(owner);
    ++out.children_met;
    return {};
  }
  Ctx c;
  c.cert = ctx().cert;
  c.repeat = ctx().repeat;
  if (child) {
    if (out.insts.size() >= inventory::kMaxInstances) {
      out.truncated = true;
      diag(n, "analysis truncated at " + std::to_string(inventory::kMaxInstances) +
                  " module instances");
      eng.stop();
      return {};
    }
    inventory::Inst inst;
    inst.type_name = inventory::last_segment(owner);
    inst.qualified_type = owner;
    inst.parent = ctx().inst;
    inst.root = tied ? out.insts[*tied->tensor_of].root : builder->root;
    inst.prefix = tied ? out.insts[*tied->tensor_of].prefix : inventory::join_key(builder->segs);
    inst.repeat = ctx().repeat.empty() ? "" : ctx().repeat.back();
    inst.source = site(n);
    inst.cfg = it.cfg.predicates;
    inst.cert = tied ? ctx().cert : inventory::join(ctx().cert, builder->cert);
    // The numbers the call passes (`MultiHeadAttention::load(n_state, n_head, vb)`): a field the
    // constructor sets from such a parameter is this instance's number in the dataflow.
    for (std::size_t i = 0; i < it.params.size() && i < args.size(); ++i) {
      const SymValue& s = args[i].sym;
      if (args[i].kind == Value::Kind::sym &&
          (s.kind == SymValue::Kind::integer || s.kind == SymValue::Kind::real ||
           s.kind == SymValue::Kind::boolean))
        inst.arguments[it.params[i].name] = s.display();
    }
    c.cert = inst.cert;
    out.insts.push_back(inst);
    c.inst = out.insts.size() - 1;
    c.type_qualified = owner;
    ctx().created.push_back(c.inst);
    out.constructed_types.insert(owner);
  } else {
    c.inst = ctx().inst;
    c.type_qualified = ctx().type_qualified;
    c.call_site = site(n);
  }
  ctxs_.push_back(std::move(c));
  items_.push_back(callee);
  ++depth_;
  Value r = eng.invoke(callee, nullptr, args, false);
  --depth_;
  items_.pop_back();
  Ctx done = std::move(ctxs_.back());
  ctxs_.pop_back();
  // Instances an inlined helper created belong to the caller's list, for naming.
  if (!child) ctx().created.insert(ctx().created.end(), done.created.begin(), done.created.end());
  return r;
}

// A closure bound to a local, called: its body runs here (its nodes live in the body that bound
// it), its parameters bound to the arguments; it does not see its own name (`let linear = |n|
// linear(.., vb.pp(n))` calls candle-nn).
BuilderDomain::Value BuilderDomain::call_closure(Eng& eng, NodeId n, const std::string& name,
                                                 const Value& closure,
                                                 const std::vector<Value>& args) {
  if (depth_ + 1 > inventory::kMaxDepth + 1) {
    diag(n, "constructor nesting deeper than " + std::to_string(inventory::kMaxDepth) +
                " levels; subtree not expanded");
    return {};
  }
  ++depth_;
  eng.run_closure(*closure.closure_body, closure.closure, args, {{name, Value{}}});
  --depth_;
  return plain_call_value(n, args);
}

std::optional<BuilderDomain::Value> BuilderDomain::closure(Eng& eng, NodeId n) {
  Value v;
  v.kind = Value::Kind::closure;
  v.closure = n;
  v.closure_body = &eng.body();
  return v;
}

std::optional<BuilderDomain::Value> BuilderDomain::takes_over(Eng& eng, NodeId n) {
  const rust::Node& nd = node(n);
  if (nd.kind != Kind::MethodCall) return std::nullopt;
  const std::string name(nd.str);
  const auto args = body().kids_view(n);
  if (raw_get(name) || builder_types_.getter(name) != nullptr) {
    Value recv = eng.eval(nd.a);
    if (recv.kind == Value::Kind::builder) {
      const std::size_t before = out.leaves.size();
      register_raw(n, recv, name);
      Value v = sym_of(eng, n);
      if (out.leaves.size() == before + 1) v.leaf_of = before;
      return v;
    }
    std::vector<Value> argv;
    for (NodeId a : args)
      argv.push_back(eng.eval(a));
    return method_call(eng, n, std::move(recv), std::move(argv));
  }
  NodeId closure = kNone;
  for (NodeId a : args)
    if (node(a).kind == Kind::Closure) closure = a;
  if (closure != kNone && closure_taker(name)) return closure_method(eng, n, closure);
  if (name == "then_some" && args.size() == 1) return then_some(eng, n);
  if (closure != kNone && args.size() == 1 && (name == "or_else" || name == "unwrap_or_else"))
    return fallback(eng, n, closure);
  if (name == "push" && is_ident(nd.a) && node(nd.a).kind == Kind::Path) return push_call(eng, n);
  return std::nullopt;
}

// `opt_vb.map(|vb| ..)`, `c.then(|| ..)`, `(0..n).map(|i| ..)`: the closure runs as the method
// would run it (with the builder, under the condition, once per iteration).
std::optional<BuilderDomain::Value> BuilderDomain::closure_method(Eng& eng, NodeId n,
                                                                  NodeId closure) {
  const rust::Node& nd = node(n);
  const std::string name(nd.str);
  Value rv = eng.eval(nd.a);
  for (NodeId a : body().kids_view(n))
    if (node(a).kind != Kind::Closure) eng.eval(a);
  if (rv.kind == Value::Kind::builder && (name == "map" || name == "and_then")) {
    eng.run_closure(body(), closure, {rv});
    return sym_of(eng, n);
  }
  if (name == "then") {
    SymValue c = eval_sym(nd.a);
    if (c.kind == SymValue::Kind::boolean) {
      if (c.boolean) eng.run_closure(body(), closure, {});
      return sym_of(eng, n);
    }
    push_alt(new_group(nd.a), nd.a, 0, 2, "only when " + c.text);
    under(inventory::conditional(ctx().cert, "only when " + c.text),
          [&] { eng.run_closure(body(), closure, {}); });
    alt_ctx_.pop_back();
    return sym_of(eng, n);
  }
  // An iterator (`(0..n).map(|i| ..)`, `xs.iter().enumerate().map(..)`) repeats the body.
  NodeId it = body().peel(nd.a, {Kind::Paren});
  bool iterator = it != kNone && (node(it).kind == Kind::Range ||
                                  (node(it).kind == Kind::MethodCall && node(it).text.empty() &&
                                   inventory::is_iterator_method(node(it).str)));
  if (iterator && (name == "map" || name == "flat_map" || name == "for_each")) {
    repeat_closure(eng, nd.a, closure);
    return sym_of(eng, n);
  }
  eng.run_closure(body(), closure, {});
  return sym_of(eng, n);
}

// `A.or_else(|_| B)`: B loads only when A failed — two alternatives, never both.
BuilderDomain::Value BuilderDomain::fallback(Eng& eng, NodeId n, NodeId closure) {
  NodeId recv = node(n).a;
  const std::string group = new_group(n);
  push_alt(group, n, 0, 2, "primary " + inventory::brief(text(recv)));
  eng.eval(recv);
  alt_ctx_.pop_back();
  const std::string label = "fallback when " + inventory::brief(text(recv)) + " fails";
  push_alt(group, n, 1, 2, label);
  under(inventory::conditional(ctx().cert, label), [&] { eng.run_closure(body(), closure, {}); });
  alt_ctx_.pop_back();
  return sym_of(eng, n);
}

BuilderDomain::Value BuilderDomain::then_some(Eng& eng, NodeId n) {
  const rust::Node& nd = node(n);
  NodeId arg = body().kid(n, 0);
  eng.eval(nd.a);
  SymValue c = eval_sym(nd.a);
  if (c.kind == SymValue::Kind::boolean) {
    if (c.boolean) eng.eval(arg);
    return sym_of(eng, n);
  }
  push_alt(new_group(n), n, 0, 2, "only when " + c.text);
  under(inventory::conditional(ctx().cert, "only when " + c.text), [&] { eng.eval(arg); });
  alt_ctx_.pop_back();
  return sym_of(eng, n);
}

// `layers.push(Block::new(..))`: the instances created by the arguments are held by (and named
// after) the vector.
BuilderDomain::Value BuilderDomain::push_call(Eng& eng, NodeId n) {
  const rust::Node& nd = node(n);
  eng.eval(nd.a);
  const std::size_t before = ctx().created.size();
  for (NodeId a : body().kids_view(n))
    eng.eval(a);
  const std::string name = text(nd.a);
  // What the push moves into the vector: the instances its argument created, or those a local
  // it names holds (`let layer = Block::new(..)?; layers.push(layer)`).
  std::vector<std::size_t> moved(ctx().created.begin() + static_cast<std::ptrdiff_t>(before),
                                 ctx().created.end());
  for (NodeId a : body().kids_view(n)) {
    NodeId p = body().peel(a, {Kind::Try, Kind::Ref, Kind::Paren});
    if (p != kNone && is_ident(p) && node(p).kind == Kind::Path && text(p) != name)
      if (const Value* held = local(text(p)))
        moved.insert(moved.end(), held->modules.begin(), held->modules.end());
  }
  if (Value* v = local_mut(name))
    for (std::size_t m : moved) {
      v->modules.push_back(m);
      out.insts[m].field = name;
    }
  return sym_of(eng, n);
}

BuilderDomain::Value BuilderDomain::method_call(Eng& eng, NodeId n, Value recv,
                                                std::vector<Value> args) {
  const rust::Node& nd = node(n);
  if (recv.kind == Value::Kind::builder)
    if (auto b = builder_method(n, recv)) return *b;
  if (auto t = held_tensor(n, recv, args)) return *t;
  if (recv.kind == Value::Kind::layer_config && nd.str == "clone") return recv;
  // `cfg.clone()`: the same config (its fields assigned later on the copy only).
  if (recv.kind == Value::Kind::config && args.empty() &&
      (nd.str == "clone" || nd.str == "to_owned" || nd.str == "as_ref")) {
    recv.modules.clear();
    return recv;
  }
  // A method of a crate value receiving a builder runs what Rust would run (dispatch.cpp).
  // Where no impl is found and the receiver is a module whose type derives a procedural macro,
  // the message names the macro: the method is its expansion, which the analysis never sees.
  if (any_builder(args)) {
    if (recv.kind != Value::Kind::builder)
      if (Impls impls = method_impls(nd.a, recv, std::string(nd.str)); !impls.methods.empty())
        return call_impls(eng, n, impls, args);
    diag(n, "method call `." + std::string(nd.str) + "(..)` receives a VarBuilder; " +
                generated_by(receiver_items(nd.a, recv), std::string(nd.str)) +
                "no impl of it is found in the crate or its dependencies; any parameters it "
                "registers are unknown");
  }
  return sym_of(eng, n);
}

// The struct items a method call's receiver may be: a module instance's type, or that of a
// local bound to a struct literal (`let mut this = Self { .. }; this.get_lora_model(..)`,
// `let mut qkv = AttentionQKV { .. }`); none otherwise.
std::vector<std::size_t> BuilderDomain::receiver_items(NodeId recv_node, const Value& recv) {
  NodeId r = body().peel(recv_node, {Kind::Ref, Kind::Paren});
  for (NodeId x = 0; r != kNone && is_ident(r) && !ctxs_.empty() && x < body().size(); ++x) {
    const rust::Node& l = node(x);
    if (l.kind != Kind::Let || l.a == kNone || l.b == kNone || node(l.a).str != node(r).str ||
        node(l.b).kind != Kind::Struct)
      continue;
    const std::string name = inventory::strip_generics(std::string(node(l.b).str));
    if (name == "Self") return crate_.find(ctx().type_qualified);
    std::vector<std::size_t> items;
    for (const auto& c : resolve_in(eng_->item(), name))
      if (c.kind == rust::Candidate::Kind::Item) items.push_back(c.item);
    return items;
  }
  if (!recv.modules.empty() && recv.modules[0] < out.insts.size())
    return crate_.find(out.insts[recv.modules[0]].qualified_type);
  return {};
}

// "`#[derive(AutoLoraConvert)]` on `Falcon` (a procedural macro the analysis does not expand)
// may define it; " when the receiver's type has no method `method` in the source and derives a
// macro that is not std's or serde's; "" otherwise.
std::string BuilderDomain::generated_by(const std::vector<std::size_t>& items,
                                        const std::string& method) const {
  static const std::set<std::string, std::less<>> known{"Debug",
                                                        "Clone",
                                                        "Copy",
                                                        "PartialEq",
                                                        "Eq",
                                                        "PartialOrd",
                                                        "Ord",
                                                        "Hash",
                                                        "Default",
                                                        "Serialize",
                                                        "Deserialize",
                                                        "serde::Serialize",
                                                        "serde::Deserialize"};
  for (std::size_t item : items) {
    if (!crate_.methods(item, method).empty()) return "";
    std::vector<std::string> macros;
    for (const std::string& attr : crate_.items()[item].attributes) {
      auto open = attr.find("derive(");
      if (attr.rfind("#[derive(", 0) != 0 || open == std::string::npos) continue;
      std::string list = attr.substr(open + 7, attr.rfind(')') - open - 7);
      for (std::size_t at = 0; at <= list.size();) {
        std::size_t comma = std::min(list.find(',', at), list.size());
        std::string name = list.substr(at, comma - at);
        name.erase(0, name.find_first_not_of(" \t\n"));
        name.erase(name.find_last_not_of(" \t\n") + 1);
        if (!name.empty() && !known.count(name)) macros.push_back(name);
        at = comma + 1;
      }
    }
    if (macros.empty()) return "";
    std::string names;
    for (const auto& m : macros)
      names += (names.empty() ? "" : ", ") + m;
    return "`#[derive(" + names + ")]` on `" + crate_.items()[item].name +
           "` (a procedural macro the analysis does not expand) may define it; ";
  }
  return "";
}

// `embed.embeddings()`, `lin.weight()`: the tensor a local's one candle-nn layer holds, kept
// through `.clone()`, `.t()` and dtype/device moves.
std::optional<BuilderDomain::Value> BuilderDomain::held_tensor(NodeId n, const Value& recv,
                                                               const std::vector<Value>& args) {
  const std::string_view m = node(n).str;
  if (recv.tensor_of && (m == "clone" || m == "t" || m == "contiguous" || m == "detach" ||
                         m == "to_dtype" || m == "to_device" || m == "copy")) {
    Value v = recv;
    v.modules.clear();
    return v;
  }
  if (!args.empty() || recv.modules.size() != 1 || recv.modules[0] >= out.insts.size() ||
      !out.insts[recv.modules[0]].layer || !(m == "weight" || m == "embeddings"))
    return std::nullopt;
  Value v;
  v.kind = Value::Kind::sym;
  v.sym = SymValue::symbolic(text(n), "a layer's tensor");
  v.tensor_of = recv.modules[0];
  return v;
}

// `Linear::new(embed.embeddings().clone(), None)`: a candle-nn layer built from a tensor another
// layer instance holds is a module of its own that reuses that instance's weights (tied
// weights): it is registered at the owner's prefix with no leaves of its own, so the summary
// counts the weights once and marks it shared.
std::optional<BuilderDomain::Value> BuilderDomain::tied_layer(NodeId n, const std::string& external,
                                                              const std::vector<Value>& args) {
  auto type = new_layer_type(external);
  if (!type || args.empty() || !args[0].tensor_of) return std::nullopt;
  const std::size_t owner = *args[0].tensor_of;
  if (out.insts.size() >= inventory::kMaxInstances) return std::nullopt;
  inventory::Inst tied;
  tied.type_name = *type;
  tied.qualified_type = "candle_nn::" + *type;
  tied.parent = ctx().inst;
  tied.root = out.insts[owner].root;
  tied.prefix = out.insts[owner].prefix;
  tied.repeat = ctx().repeat.empty() ? "" : ctx().repeat.back();
  tied.source = site(n);
  tied.cert = ctx().cert;
  tied.layer = true;
  out.insts.push_back(std::move(tied));
  ctx().created.push_back(out.insts.size() - 1);
  return plain_call_value(n, args);
}

// `candle_nn::Conv1d::new`, `nn::Linear::new`: the candle-nn layer type a `::new` path builds,
// when the constructor catalog knows it; nullopt otherwise.
std::optional<std::string> BuilderDomain::new_layer_type(const std::string& external) const {
  std::string first = external.substr(0, external.find("::"));
  auto sep = external.rfind("::");
  if (!(first == "candle_nn" || first == "nn") || sep == std::string::npos ||
      external.substr(sep + 2) != "new")
    return std::nullopt;
  std::string type = inventory::last_segment(external.substr(0, sep));
  for (const auto& c : catalog_.constructors())
    if (c.layer_type == type) return type;
  return std::nullopt;
}

// `Conv1d::new(vb.get(..)?, Some(vb.get(..)?), cfg)` (whisper's `conv1d` helper): a candle-nn
// layer built from tensors the code asked its own VarBuilder for is a module of that type at
// their prefix and owns them, as the catalog constructor it stands for would: a row of its own
// in the summary, and in the dataflow its weight shape and, for a conv, the padding, stride,
// dilation and groups its config argument gives (`candle_nn::Conv1d::new(weight, bias, config)`
// takes the config third).
std::optional<BuilderDomain::Value> BuilderDomain::own_layer(NodeId n, const std::string& external,
                                                             const std::vector<Value>& args) {
  auto type = new_layer_type(external);
  if (!type || args.empty() || !args[0].leaf_of || *args[0].leaf_of >= out.leaves.size())
    return std::nullopt;
  const inventory::Leaf& first = out.leaves[*args[0].leaf_of];
  if (first.inst != ctx().inst || !first.key.ends_with(first.name)) return std::nullopt;
  const std::string prefix = first.key.size() > first.name.size()
                                 ? first.key.substr(0, first.key.size() - first.name.size() - 1)
                                 : std::string();
  auto key_of = [&](const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
  };
  std::vector<std::size_t> owned;
  for (const Value& a : args) {
    if (!a.leaf_of || *a.leaf_of >= out.leaves.size()) continue;
    const inventory::Leaf& l = out.leaves[*a.leaf_of];
    // Tensors from two prefixes are no one layer's: leave them where they are.
    if (l.inst != ctx().inst || l.root != first.root || l.key != key_of(l.name))
      return std::nullopt;
    owned.push_back(*a.leaf_of);
  }
  if (out.insts.size() >= inventory::kMaxInstances) return std::nullopt;
  inventory::Inst layer;
  layer.type_name = *type;
  layer.qualified_type = "candle_nn::" + *type;
  layer.parent = ctx().inst;
  layer.root = first.root;
  layer.prefix = prefix;
  layer.repeat = ctx().repeat.empty() ? "" : ctx().repeat.back();
  layer.source = site(n);
  layer.cert = first.cert;
  layer.layer = true;
  if (args.size() == 3) {
    ConstructorSpec spec;
    spec.layer_type = *type;
    spec.params = {"weight", "bias", "cfg"};
    const auto nodes = body().kids_view(n);
    layer.attributes = inventory::conv_attributes(
        spec, [&](const std::string& term) { return term_value(term, spec, args, nodes); });
  }
  out.insts.push_back(std::move(layer));
  const std::size_t li = out.insts.size() - 1;
  for (std::size_t l : owned)
    out.leaves[l].inst = li;
  ctx().created.push_back(li);
  return plain_call_value(n, args);
}

namespace {
// The rows of an array whose elements are literals or tuples of literals; null otherwise.
std::shared_ptr<const std::vector<std::vector<SymValue>>> rows_of(const std::vector<Value>& elems) {
  auto rows = std::make_shared<std::vector<std::vector<SymValue>>>();
  for (const Value& e : elems) {
    if (e.rows && e.rows->size() == 1)
      rows->push_back(e.rows->front());
    else if (e.kind == Value::Kind::sym && e.sym.concrete())
      rows->push_back({e.sym});
    else
      return nullptr;
    if (rows->back().size() != rows->front().size()) return nullptr;
  }
  return rows->empty() ? nullptr : rows;
}
}  // namespace

void BuilderDomain::array_argument(std::vector<Value> elems, std::vector<Value>& args) {
  // `f(&[a, b])` is one argument, as the catalog's parameter positions count it.
  Value v;
  v.kind = Value::Kind::sym;
  v.sym = SymValue::symbolic("[..]", "an array argument");
  v.rows = rows_of(elems);
  args.push_back(std::move(v));
}

BuilderDomain::Value BuilderDomain::aggregate(Eng& eng, NodeId n, std::vector<Value> elems) {
  Value v = sym_of(eng, n);
  if (node(n).kind == Kind::Tuple) {
    std::vector<SymValue> row;
    for (const Value& e : elems) {
      if (e.kind != Value::Kind::sym || !e.sym.concrete()) {
        row.clear();
        break;
      }
      row.push_back(e.sym);
    }
    if (!row.empty())
      v.rows = std::make_shared<std::vector<std::vector<SymValue>>>(
          std::vector<std::vector<SymValue>>{std::move(row)});
    if (!elems.empty()) v.elems = std::make_shared<const std::vector<Value>>(std::move(elems));
  } else if (node(n).kind == Kind::Array) {
    v.rows = rows_of(elems);
  }
  return v;
}

}  // namespace cg::analysis::builder
