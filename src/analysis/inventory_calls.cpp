// The inventory walker's calls: crate-local constructors become child module instances and
// helpers are inlined (with recursion and depth bounds), catalog constructors register their
// leaves, closures bound to locals are inlined at their calls, and method calls on builders,
// iterators and fallbacks (`A.or_else(|_| B)`) are followed.
#include "analysis/inventory_walker.hpp"

namespace cg::analysis::inventory {

using rust::Kind;
using rust::kNone;

void Walker::walk_args(const std::vector<NodeId>& args, int depth) {
  for (NodeId a : args)
    walk(a, depth);
}

bool Walker::any_builder(const std::vector<NodeId>& args) {
  for (NodeId a : args)
    if (value_of(a, 0).kind == Value::Kind::builder) return true;
  return false;
}

void Walker::walk_call(NodeId n, int depth) {
  if (node(n).kind == Kind::MethodCall) return walk_method_call(n, depth);
  NodeId fn = node(n).a;
  auto args = body().kids(n);
  walk_args(args, depth);
  std::string path = strip_generics(text(fn));
  if (is_ident(fn) && node(fn).kind == Kind::Path) {
    if (Value* v = find_var(path); v && v->kind == Value::Kind::closure) {
      Value closure = *v;
      inline_closure(path, closure, args, depth);
      return;
    }
    if (Value* v = find_var(path); v && v->kind == Value::Kind::fn_ref)
      return call_fn_ref(n, path, args, depth);
  }
  if (path == "Some" || path == "Ok" || path == "Err" || path == "Box::new" || path == "Arc::new" ||
      path == "Rc::new")
    return;
  call_path(n, path, args, depth);
}

// A local holding constructors (`let f = if b { linear } else { linear_no_bias }`): each
// alternative registers under its condition; what all register stays certain.
void Walker::call_fn_ref(NodeId n, const std::string& path, const std::vector<NodeId>& args,
                         int depth) {
  auto fns = find_var(path)->fns;
  Cert outer = frame().cert;
  std::vector<Marks> ms{marks()};
  const std::string group = new_group(n);
  const int count = static_cast<int>(fns.size());
  for (std::size_t a = 0; a < fns.size(); ++a) {
    const auto& alt = fns[a];
    const std::string& fpath = alt.first;
    auto call = [&] {
      under(join(outer, alt.second), [&] {
        if (fpath.rfind("item:", 0) == 0)
          call_local(n, std::stoul(fpath.substr(5)), args, path, depth);
        else if (const ConstructorSpec* spec = catalog_.find(fpath))
          register_layer(n, *spec, fpath, args);
      });
    };
    if (count > 1)
      in_alt(group, n, static_cast<int>(a), count,
             alt.second.reason.empty() ? path : alt.second.reason, call);
    else
      call();
    ms.push_back(marks());
  }
  if (ms.size() == 3) unify(ms[0], ms[1], ms[2], outer, group);
}

// A call by path: a crate-local function or method (inlined or a child instance), or an
// external path (a candle-nn catalog constructor registers its leaves).
void Walker::call_path(NodeId n, const std::string& path, const std::vector<NodeId>& args,
                       int depth) {
  auto cands = crate_.resolve_in(frame().fn_item, path);
  std::vector<std::size_t> local;
  std::string external;
  for (const auto& c : cands) {
    if (c.kind == rust::Candidate::Kind::Item) {
      const rust::Item& it = crate_.items()[c.item];
      if ((it.kind == rust::ItemKind::Function || it.kind == rust::ItemKind::Method) &&
          it.cfg.state != rust::Tri::False)
        local.push_back(c.item);
    } else if (c.kind == rust::Candidate::Kind::External) {
      external = c.path;
    }
  }
  if (local.empty() && external.empty() && path.find("::") != std::string::npos) {
    // Unresolved but written fully: `candle_nn::linear(..)` without a `use`.
    external = path;
  }
  if (!external.empty() && local.empty()) {
    std::string first = external.substr(0, external.find("::"));
    if (first == "candle_nn" || first == "nn") {
      if (const ConstructorSpec* spec = catalog_.find(external)) {
        register_layer(n, *spec, external, args);
        return;
      }
    }
  }
  if (local.empty()) {
    if (any_builder(args))
      diag(n, "unresolved call `" + path +
                  "` receives a VarBuilder; any parameters it registers are unknown");
    return;
  }
  if (!any_builder(args)) return;
  if (local.size() > 1) {
    diag(n, "ambiguous call `" + path + "` receives a VarBuilder; subtree not expanded");
    return;
  }
  call_local(n, local[0], args, path, depth);
}

void Walker::walk_method_call(NodeId n, int depth) {
  NodeId recv = node(n).a;
  std::string name(node(n).str);
  auto args = body().kids(n);
  // Raw gets on a builder.
  if (name == "get" || name == "get_with_hints" || name == "get_with_hints_dtype" ||
      name == "get_unchecked" || name == "get_unchecked_dtype" || name == "get_no_shape") {
    Value b = value_of(recv, 0);
    if (b.kind == Value::Kind::builder) {
      walk(recv, depth);
      register_raw(n, b, name, args);
      return;
    }
  }
  NodeId closure = kNone;
  for (NodeId a : args)
    if (node(a).kind == Kind::Closure) closure = a;
  if (closure != kNone &&
      (name == "map" || name == "flat_map" || name == "for_each" || name == "and_then" ||
       name == "then" || name == "map_or" || name == "map_or_else")) {
    walk(recv, depth);
    for (NodeId a : args)
      if (node(a).kind != Kind::Closure) walk(a, depth);
    walk_closure_call(recv, name, closure, depth);
    return;
  }
  if (name == "then_some" && args.size() == 1) {
    walk(recv, depth);
    SymValue c = eval(recv);
    if (c.kind == SymValue::Kind::boolean) {
      if (c.boolean) walk(args[0], depth);
      return;
    }
    in_alt(new_group(n), n, 0, 2, "only when " + c.text, [&] {
      under(conditional(frame().cert, "only when " + c.text), [&] { walk(args[0], depth); });
    });
    return;
  }
  if (closure != kNone && args.size() == 1 && (name == "or_else" || name == "unwrap_or_else"))
    return walk_fallback(n, recv, closure, depth);
  walk(recv, depth);
  std::size_t before = frame().created.size();
  walk_args(args, depth);
  if (name == "push" && is_ident(recv) && node(recv).kind == Kind::Path) {
    if (Value* v = find_var(text(recv)))
      for (std::size_t i = before; i < frame().created.size(); ++i) {
        v->modules.push_back(frame().created[i]);
        insts[frame().created[i]].field = text(recv);
      }
    return;
  }
  // A method of a crate-local value receiving a builder (`self.make(vb)` in a helper, a
  // config's factory) is not followed.
  bool builder_arg = false;  // every argument's value is taken (each may report a prefix)
  for (NodeId a : args)
    if (value_of(a, 0).kind == Value::Kind::builder) builder_arg = true;
  if (builder_arg)
    diag(n, "method call `." + name +
                "(..)` receives a VarBuilder; any parameters it registers are unknown");
}

// `A.or_else(|_| B)`: B loads only when A failed — two alternatives, never both.
void Walker::walk_fallback(NodeId n, NodeId recv, NodeId closure, int depth) {
  const std::string group = new_group(n);
  in_alt(group, n, 0, 2, "primary " + brief(text(recv)), [&] { walk(recv, depth); });
  const std::string label = "fallback when " + brief(text(recv)) + " fails";
  in_alt(group, n, 1, 2, label, [&] {
    under(conditional(frame().cert, label), [&] {
      frame().scopes.emplace_back();
      for (NodeId p : closure_params(closure))
        shadow_pattern(p);
      walk(node(closure).a, depth);
      frame().scopes.pop_back();
    });
  });
}

// A closure's parameter patterns as the syntax walk saw them (a bare `_` is no parameter node).
std::vector<NodeId> Walker::closure_params(NodeId closure) {
  return pattern_elems(closure);
}

void Walker::walk_closure_call(NodeId recv, const std::string& name, NodeId closure, int depth) {
  NodeId closure_body = node(closure).a;
  std::vector<NodeId> ps = closure_params(closure);
  Value rv = value_of(recv, 0);
  // `opt_vb.map(|vb| ..)`: the closure parameter is the builder.
  if (rv.kind == Value::Kind::builder && (name == "map" || name == "and_then")) {
    frame().scopes.emplace_back();
    if (!ps.empty()) bind(first_identifier(ps[0]), rv);
    walk(closure_body, depth);
    frame().scopes.pop_back();
    return;
  }
  if (name == "then") {
    SymValue c = eval(recv);
    if (c.kind == SymValue::Kind::boolean) {
      if (c.boolean) walk(closure_body, depth);
      return;
    }
    in_alt(new_group(recv), recv, 0, 2, "only when " + c.text, [&] {
      under(conditional(frame().cert, "only when " + c.text), [&] { walk(closure_body, depth); });
    });
    return;
  }
  // An iterator (`(0..n).map(|i| ..)`, `xs.iter().enumerate().map(..)`) repeats the body.
  bool iterator = false;
  NodeId it = body().peel(recv, {Kind::Paren});
  if (it != kNone && node(it).kind == Kind::Range) iterator = true;
  if (it != kNone && node(it).kind == Kind::MethodCall && node(it).text.empty() &&
      is_iterator_method(node(it).str))
    iterator = true;
  if (iterator && (name == "map" || name == "flat_map" || name == "for_each")) {
    NodeId pat = ps.empty() ? kNone : ps[0];
    std::string var = first_identifier(pat);
    repeat_body(var, recv, pat, [&] { walk(closure_body, depth); });
    return;
  }
  frame().scopes.emplace_back();
  for (NodeId p : ps)
    shadow_pattern(p);
  walk(closure_body, depth);
  frame().scopes.pop_back();
}

void Walker::inline_closure(const std::string& name, const Value& closure,
                            const std::vector<NodeId>& args, int depth) {
  // The closure's nodes live in the body that bound it (a closure passed to a helper).
  const rust::Body* saved = frame().body;
  if (depth > kMaxDepth) {
    frame().body = closure.closure_body;
    diag(closure.closure, "constructor nesting deeper than " + std::to_string(kMaxDepth) +
                              " levels; subtree not expanded");
    frame().body = saved;
    return;
  }
  std::vector<Value> vals;
  for (NodeId a : args)
    vals.push_back(value_of(a, 0));
  frame().body = closure.closure_body;
  frame().scopes.emplace_back();
  // A closure does not see itself: `let linear = |n| linear(.., vb.pp(n))` calls candle-nn.
  bind(name, Value{});
  auto ps = closure_params(closure.closure);
  for (std::size_t i = 0; i < ps.size(); ++i)
    bind(first_identifier(ps[i]), i < vals.size() ? vals[i] : Value{});
  walk(node(closure.closure).a, depth + 1);
  frame().scopes.pop_back();
  frame().body = saved;
}

void Walker::call_local(NodeId n, std::size_t callee, const std::vector<NodeId>& args,
                        const std::string& path, int depth) {
  const rust::Item& it = crate_.items()[callee];
  for (const Frame* f : stack_)
    if (f->fn_item == callee) {
      diag(n, "recursive constructor call `" + path + "`; subtree not expanded");
      return;
    }
  if (depth + 1 > kMaxDepth) {
    diag(n, "constructor nesting deeper than " + std::to_string(kMaxDepth) +
                " levels; subtree not expanded");
    return;
  }
  const rust::Body& callee_body = crate_.lowered(callee);
  if (callee_body.root == kNone) return;
  std::vector<Value> vals;
  for (NodeId a : args)
    vals.push_back(value_of(a, 0));
  std::string owner;
  if (it.impl >= 0) {
    const rust::Impl& impl = crate_.impls()[static_cast<std::size_t>(it.impl)];
    owner = impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base;
  }
  Frame f;
  f.fn_item = callee;
  f.file = it.file;
  f.body = &callee_body;
  f.cert = frame().cert;
  f.repeat = frame().repeat;
  f.scopes.emplace_back();
  const bool child =
      !owner.empty() && owner != frame().type_qualified && it.self_kind == rust::SelfKind::None;
  const Value* builder = nullptr;
  for (const Value& v : vals)
    if (v.kind == Value::Kind::builder) {
      builder = &v;
      break;
    }
  if (child && shallow_) {
    constructed_types.insert(owner);
    return;
  }
  if (child) {
    if (insts.size() >= kMaxInstances) {
      truncated = true;
      diag(n, "analysis truncated at " + std::to_string(kMaxInstances) + " module instances");
      return;
    }
    Inst inst;
    inst.type_name = last_segment(owner);
    inst.qualified_type = owner;
    inst.parent = frame().inst;
    inst.root = builder->root;
    inst.prefix = join_key(builder->segs);
    inst.repeat = frame().repeat.empty() ? "" : frame().repeat.back();
    inst.source = site(n);
    inst.cfg = it.cfg.predicates;
    inst.cert = join(frame().cert, builder->cert);
    f.cert = inst.cert;
    insts.push_back(inst);
    f.inst = insts.size() - 1;
    f.type_qualified = owner;
    frame().created.push_back(f.inst);
    constructed_types.insert(owner);
  } else {
    f.inst = frame().inst;
    f.type_qualified = frame().type_qualified;
    f.call_site = site(n);
  }
  for (std::size_t i = 0; i < it.params.size(); ++i) {
    Value v = i < vals.size() ? vals[i] : Value{};
    v.declared_type = it.params[i].type_text;
    f.scopes.back()[it.params[i].name] = std::move(v);
  }
  stack_.push_back(&f);
  walk(callee_body.root, depth + 1);
  stack_.pop_back();
  if (!child) {
    // Instances an inlined helper created belong to the caller's list, for naming.
    for (std::size_t m : f.created)
      frame().created.push_back(m);
  }
}

}  // namespace cg::analysis::inventory
