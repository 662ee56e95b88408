// Calls, method calls and operators in the tensor domain: crate-local functions are inlined (one
// Call operation in the caller), candle functions and tensor methods go through the op catalog,
// `backward`/optimizer steps mark losses, and `xs.apply(&layer)` is `layer.forward(xs)`.
#include <cmath>
#include <cstdlib>
#include <set>

#include "analysis/interp/option_pattern.hpp"
#include "analysis/tensor/domain.hpp"
#include "util/text.hpp"

namespace cg::analysis::tensor {
namespace {

using rust::Kind;

std::string first_segment(const std::string& p) {
  auto s = p.find("::");
  return s == std::string::npos ? p : p.substr(0, s);
}

bool cache_type(std::string_view t) {
  return t == "KvCache" || t == "ConcatKvCache" || t == "RotatingKvCache" || t == "Cache" ||
         t == "RotatingCache";
}

// A crate enum whose every variant holds a candle-nn cache (gemma3's `enum KvCache {
// Normal(candle_nn::kv_cache::KvCache), Rotating(candle_nn::kv_cache::RotatingKvCache) }`): the
// cache types, joined by `|` ("KvCache|RotatingKvCache"); "" otherwise. A match arm's binding
// (`KvCache::Normal(cache) => cache.append(..)`) is the enum's value here, so which variant an
// instance holds is not known.
std::string enum_cache_types(const rust::Item& e) {
  if (e.kind != rust::ItemKind::Enum || e.variants.empty()) return "";
  std::set<std::string> types;
  for (const auto& v : e.variants) {
    std::string t = v.type_text;
    if (t.size() < 2 || t.front() != '(' || t.back() != ')') return "";
    t = t.substr(1, t.size() - 2);
    while (!t.empty() && t.back() == ' ')
      t.pop_back();
    const std::string leaf(last_path_segment(t));
    if (!cache_type(leaf)) return "";
    types.insert(leaf);
  }
  std::string out;
  for (const auto& t : types)
    out += (out.empty() ? "" : "|") + t;
  return out;
}

}  // namespace

Val TensorDomain::call(Eng& eng, NodeId n, std::vector<Val> args) {
  const rust::Body& b = eng.body();
  NodeId callee = b[n].a;
  if (callee == rust::kNone) return {};
  if (!b[callee].is_identifier() && !b[callee].is_scoped_identifier()) return {};
  // `Ok(x)`, `Some(x)`, `Box::new(x)` are x as far as tensors go: a function ending in
  // `Ok((q, k))` returns its tensors.
  std::string_view fp = b.source(callee);
  // `f(xs)` on a local closure value; `Func::new(c)`, `FuncT::new(c)`, `candle_nn::func(c)`
  // are the closure `c`.
  if (b[callee].is_identifier())
    if (const Val* f = eng.lookup(std::string(fp)); f && (f->fn || f->items))
      if (auto r = apply_callable(eng, n, *f, args, false)) return *r;
  if (args.size() == 1 && args.front().fn) {
    std::string_view leaf = last_path_segment(fp);
    if (leaf == "new" || leaf == "func" || leaf == "func_t") return std::move(args.front());
  }
  if (args.size() == 1 && interp::names_variant(fp, "Some")) {
    Val v = std::move(args.front());
    v.variant = Val::Variant::some;
    return v;
  }
  if (args.size() == 1 && (fp == "Ok" || fp == "Box::new" || fp == "Arc::new" || fp == "Rc::new" ||
                           fp == "std::sync::Arc::new"))
    return std::move(args.front());
  return free_call(eng, n, std::string(b.source(callee)), args);
}

Val TensorDomain::free_call(Eng& eng, NodeId n, const std::string& path, std::vector<Val>& args) {
  for (const auto& c : crate_.resolve_in(eng.item(), path)) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    const auto& it = crate_.items()[c.item];
    if (it.kind != rust::ItemKind::Function && it.kind != rust::ItemKind::Method) continue;
    if (it.cfg.state == rust::Tri::False) continue;
    if (it.self_kind != rust::SelfKind::None && !args.empty()) {
      Val self = args.front();
      std::vector<Val> rest(args.begin() + 1, args.end());
      return inline_call(eng, n, c.item, &self, rest, it.name);
    }
    Val r = inline_call(eng, n, c.item, nullptr, args, it.name);
    std::string_view leaf = last_path_segment(path);
    if (!r.tensor && (leaf == "new" || leaf == "load")) {
      std::ptrdiff_t o = owner_item(c.item);
      if (o >= 0) r.type_item = o;
      // In a constructor run, a crate-local layer built on a VarBuilder is the module there.
      if (o >= 0 && ctor_)
        for (const auto& a : args)
          if (a.vb) {
            r.modules = modules_at(*a.vb, &crate_.items()[static_cast<std::size_t>(o)].qualified);
            break;
          }
    }
    return r;
  }
  std::string first = first_segment(path);
  std::string leaf(last_path_segment(path));
  // A `Vec` a forward run fills with `push`: empty until then, so a loop that pushes without
  // being expanded joins two different lists and forgets them.
  if (!ctor_ && first == "Vec" && (leaf == "new" || leaf == "with_capacity")) {
    Val v;
    v.items = std::make_shared<std::vector<Val>>();
    return v;
  }
  if (ctor_ && leaf == "seq") {
    Val v;
    v.items = std::make_shared<std::vector<Val>>();
    return v;
  }
  // A VarBuilder exists only in constructor runs, and in the closures they built: a layer made
  // at forward time (`FuncT::new(move |xs, t| { let lin3 = linear(.., vb.pp("head.fc"))?; ..`).
  if (auto v = built_layer(args, leaf)) return *v;
  if (auto v = layer_from_tensors(eng.item(), path, args)) return *v;
  if (first == "Var" && var_constructor(leaf)) {
    OpRule rule = cat_.lookup(leaf);
    Val v = apply_catalog(eng, n, "Var::" + leaf, rule, args, nullptr);
    v.grad = Grad::trainable;
    run_.trainable.insert(v.tid);
    out_.tensor(v.tid)->requires_grad = true;
    return v;
  }
  if (candle_call_root(first) || path.find("::") == std::string::npos) {
    // `Tensor::new(data, device)`: a constant from host data, as `Tensor::from_slice` (another
    // type's `new`, `candle_nn::Linear::new(w, b)`, is no such op); `Tensor::try_from(f32::MIN)`
    // and `Tensor::from(..)` (std's conversions candle implements) too.
    const bool host = first == "Tensor" && (leaf == "new" || leaf == "try_from" || leaf == "from");
    OpRule rule = cat_.lookup(host ? "from_slice" : leaf);
    if (rule.known() || first == "Tensor") {
      Val v = apply_catalog(eng, n, leaf, rule, args, nullptr);
      if ((host || reads_host_data(leaf)) && v.dtype == "Unknown") {
        if (auto d = host_dtype(eng, eng.body().kid(n, 0), n)) {
          v.dtype = *d;
          mark_host_dtype(eng, v, *d, n);
        }
      }
      return v;
    }
  }
  return {};
}

Val TensorDomain::method_call(Eng& eng, NodeId n, Val recv, std::vector<Val> args) {
  const rust::Body& b = eng.body();
  const std::string method(b[n].str);
  if (method == "backward" && recv.tensor) {
    if (!recv.tid.empty()) mark_loss(eng, recv.tid, false);
    return {};
  }
  if (method == "backward_step" || method == "step") {
    for (const auto& a : args)
      if (a.tensor && !a.tid.empty()) mark_loss(eng, a.tid, false);
    if (method == "backward_step") run_.train = true;
    return {};
  }
  // `pieces.remove(0)` on what `chunk` made (`let mut xs = x.chunk(2, D::Minus1)?`): one piece,
  // which the chunk's value stands for (every piece has the shape its rule gave).
  if ((method == "remove" || method == "swap_remove") && recv.tensor && !recv.tid.empty())
    if (auto o = op_of_output_.find(recv.tid);
        o != op_of_output_.end() && ir_.operations[o->second].name == "chunk")
      return recv;
  // `xs.dims().to_vec()`: the dimensions as a `Vec` a forward may `pop` and `push` (bert's
  // `transpose_for_scores`), then reshape to.
  if (!recv.tensor && recv.elems && !recv.items && (method == "to_vec" || method == "into_vec")) {
    Val v;
    v.items = recv.elems;
    return v;
  }
  if (!recv.tensor && recv.items && (method == "as_slice" || method == "to_vec")) return recv;
  if (ctor_ || recv.vb || (recv.items && (method == "push" || method == "pop")))
    if (auto v = builder_method(eng, n, recv, args)) return *v;
  // A closure or a `Sequential` applied: `xs.apply(&f)`, `xs.apply_t(&f, train)`,
  // `f.forward(xs)`.
  if ((method == "apply" || method == "apply_t") && !args.empty() &&
      (args[0].fn || args[0].items)) {
    std::vector<Val> a{recv};
    if (args.size() > 1) a.push_back(args[1]);
    if (auto r = apply_callable(eng, n, args[0], a, method == "apply_t")) return *r;
  }
  if ((method == "forward" || method == "forward_t") && (recv.fn || recv.items))
    if (auto r = apply_callable(eng, n, recv, args, method == "forward_t")) return *r;
  // `opt.take()`, `opt.replace(v)`, `opt.insert(v)` change which variant the local holds.
  if (recv.variant != Val::Variant::unknown && interp::option_mutator(method)) {
    NodeId r = b.peel(b[n].a, {Kind::Paren});
    if (r != rust::kNone && b[r].kind == Kind::Path && b[r].is_identifier())
      if (Val* local = eng.frame().env.find_mut(std::string(b[r].str)))
        local->variant = Val::Variant::unknown;
  }
  if (passthrough_method(method)) return recv;
  // (a) crate-local receiver type: inline the unique method.
  std::ptrdiff_t m = pick_method(recv.type_item, method);
  if (m >= 0) return inline_call(eng, n, static_cast<std::size_t>(m), &recv, args, method);
  // `xs.apply(&layer)` is `layer.forward(xs)`.
  if (method == "apply" && !args.empty()) {
    std::ptrdiff_t fwd = pick_method(args[0].type_item, "forward");
    if (fwd >= 0)
      return inline_call(eng, n, static_cast<std::size_t>(fwd), &args[0], {recv}, "forward");
    if (recv.tensor) {
      OpRule rule = cat_.lookup_method(args[0].ext_type, "forward");
      if (!rule.known())
        if (auto act = activation_rule(eng, b.kid(n, 0), args[0])) rule = *act;
      std::vector<Val> ops{recv};
      return layer_call(eng, n, "forward", rule, ops, &args[0]);
    }
  }
  // `xs.apply_t(&bn, train)` is `bn.forward_t(xs, train)`.
  if (method == "apply_t" && !args.empty() && recv.tensor &&
      (!args[0].modules.empty() || !args[0].ext_type.empty())) {
    std::ptrdiff_t fwd = pick_method(args[0].type_item, "forward_t");
    if (fwd >= 0) {
      std::vector<Val> a{recv};
      if (args.size() > 1) a.push_back(args[1]);
      return inline_call(eng, n, static_cast<std::size_t>(fwd), &args[0], a, "forward_t");
    }
    if (!args[0].ext_type.empty()) {
      OpRule rule = cat_.lookup_method(args[0].ext_type, "forward_t");
      std::vector<Val> ops{recv};
      return layer_call(eng, n, "forward_t", rule, ops, &args[0]);
    }
  }
  if (method.rfind("dims", 0) == 0 && recv.tensor && !recv.tid.empty()) {
    dims_tid_ = recv.tid;
    // On a known shape the destructured names are its dimensions, so shapes built from them
    // (`reshape((b, t, ..))`) speak of the same dimensions as the input's.
    const ir::TensorShape* s = shape_of_tensor(&recv);
    if (s) {
      auto es = std::make_shared<std::vector<Val>>();
      for (const auto& d : s->dimensions) {
        Val dv;
        // `()` (the dimension `reshape` infers) and `?` are no known dimension: the name
        // destructured stays.
        if (d.expr != "()" && d.expr != "?") dv.dim = d.expr;
        if (!d.expr.empty() && d.expr.find_first_not_of("0123456789") == std::string::npos)
          dv.num = std::strtod(d.expr.c_str(), nullptr);
        es->push_back(std::move(dv));
      }
      Val out;
      out.elems = std::move(es);
      return out;
    }
  }
  // `t.dim(1)?`, `t.dim(D::Minus1)?`: that dimension of a known shape; `t.shape()`: every one.
  if ((method == "dim" || method == "shape") && recv.tensor)
    if (const ir::TensorShape* s = shape_of_tensor(&recv); s && s->rank) {
      auto dims = std::make_shared<std::vector<Val>>();
      for (const auto& d : s->dimensions) {
        Val dv;
        if (d.expr != "()" && d.expr != "?") dv.dim = d.expr;
        if (!d.expr.empty() && d.expr.size() < 16 &&
            d.expr.find_first_not_of("0123456789") == std::string::npos)
          dv.num = std::strtod(d.expr.c_str(), nullptr);
        dims->push_back(std::move(dv));
      }
      if (method == "shape") {
        Val out;
        out.elems = std::move(dims);
        return out;
      }
      if (args.size() == 1) {
        std::optional<std::size_t> i;
        if (args[0].num && *args[0].num >= 0) i = static_cast<std::size_t>(*args[0].num);
        if (args[0].word == "Minus1" && !dims->empty()) i = dims->size() - 1;
        if (args[0].word == "Minus2" && dims->size() >= 2) i = dims->size() - 2;
        if (i && *i < dims->size()) return (*dims)[*i];
      }
      return {};
    }
  // `dim.to_index(xs.shape(), "op")?` of a `D::Minus1`, or of a number.
  if (method == "to_index" && !recv.tensor) {
    if (recv.num) return recv;
    const std::size_t rank = !args.empty() && args[0].elems ? args[0].elems->size() : 0;
    Val out;
    if (recv.word == "Minus1" && rank >= 1) out.num = static_cast<double>(rank - 1);
    if (recv.word == "Minus2" && rank >= 2) out.num = static_cast<double>(rank - 2);
    return out;
  }
  if (non_tensor_method(method)) return {};
  // A candle-nn KV cache appended to in a root's run: the model's state grows by the arguments.
  if (!recv.tensor && method == "append" && root_run_) {
    std::string ty(last_path_segment(recv.ext_type));
    if (ty.empty() && recv.type_item >= 0)
      ty = enum_cache_types(crate_.items()[static_cast<std::size_t>(recv.type_item)]);
    if (cache_type(ty) || ty.find('|') != std::string::npos) {
      std::vector<const Val*> stored;
      for (const auto& a : args)
        if (a.tensor) stored.push_back(&a);
      if (!stored.empty()) {
        record_store(eng, n, stored, std::string(ty));
        cache_arguments(eng, b[n].a, ir_.state_stores.back());
      }
    }
  }
  // (b) external module type with a catalog rule (`Linear::forward`).
  if (!recv.tensor && !recv.ext_type.empty()) {
    OpRule rule = cat_.lookup_method(recv.ext_type, method);
    if (!rule.known() && method == "forward")
      if (auto act = activation_rule(eng, b[n].a, recv)) rule = *act;
    if (rule.known() || method == "forward" || method == "forward_t") {
      wrapped_layer(rule, args, recv);
      return layer_call(eng, n, method, rule, args, &recv);
    }
    return {};
  }
  // (c) a crate trait's method on a tensor (`q.split(&[a, b], D::Minus1)` of `impl SplitOp for
  // Tensor`): inlined like any crate-local method.
  if (recv.tensor && recv.type_item < 0)
    if (std::ptrdiff_t tm = tensor_trait_method(method); tm >= 0)
      return inline_call(eng, n, static_cast<std::size_t>(tm), &recv, args, method);
  // (d) tensor receiver (or unknown receiver with a known tensor op).
  OpRule rule = cat_.lookup(method);
  NodeId rnode = b.peel(b[n].a, {Kind::Paren});
  bool scalar_recv = recv.num || (rnode != rust::kNone &&
                                  (b[rnode].kind == Kind::Cast || b[rnode].kind == Kind::Lit));
  if (!scalar_recv && (recv.tensor || rule.known())) {
    std::vector<Val> ops{recv};
    ops.insert(ops.end(), args.begin(), args.end());
    if (!recv.tensor) ops.front().tensor = true;
    return apply_catalog(eng, n, method, rule, ops, nullptr);
  }
  // `lin.forward(xs)` on a value whose type is not known here (an enum arm's binding): an
  // operation of unknown rule, so its output and multiply-adds are unknown, never missing from
  // a total that would then look final.
  if ((method == "forward" || method == "forward_t") && !recv.tensor &&
      std::any_of(args.begin(), args.end(), [](const Val& a) { return a.tensor; }))
    return apply_catalog(eng, n, method, OpRule{}, args, nullptr);
  return {};
}

// A candle-nn cache held in a field (`self.kv_cache.append(&k, &v)`) that its owner's constructor
// builds with `KvCache::new(dim, max_seq_len)` (or `RotatingKvCache`, `Cache`, `RotatingCache`):
// both arguments, when the config bound there makes them numbers. A cache reached any other way
// (a `match` arm's binding, a lock) keeps them unknown.
void TensorDomain::cache_arguments(Eng& eng, NodeId recv, ir::StateStore& s) {
  if (!binding_ || recv == rust::kNone) return;
  const rust::Body& b = eng.body();
  recv = b.peel(recv, {Kind::Ref, Kind::Paren});
  if (recv == rust::kNone || b[recv].kind != Kind::Field) return;
  const NodeId base = b[recv].a;
  if (base == rust::kNone || b[base].kind != Kind::Path) return;
  const Val* owner = eng.lookup(std::string(b[base].str));
  if (!owner || owner->type_item < 0) return;
  auto call =
      binding_->constructor_field_call(static_cast<std::size_t>(owner->type_item), b[recv].str);
  if (!call || call->args.size() != 2) return;
  // `KvCache::new`, `candle_nn::kv_cache::KvCache::new`: the type the forward appends to.
  const std::string_view callee = call->callee;
  if (last_path_segment(callee) != "new" || callee.size() < 5) return;
  if (last_path_segment(callee.substr(0, callee.size() - 5)) != s.library) return;
  const SymValue& dim = call->args[0];
  const SymValue& len = call->args[1];
  if (dim.kind != SymValue::Kind::integer || len.kind != SymValue::Kind::integer ||
      dim.integer < 0 || len.integer <= 0)
    return;
  s.cache_dim = static_cast<std::uint64_t>(dim.integer);
  s.cache_max_seq_len = static_cast<std::uint64_t>(len.integer);
}

// A wrapper layer's forward applying the candle-nn layer it holds (`self.inner.forward(xs)`, the
// inner field denoting the wrapper's own module): the layer's multiply-adds in this call are the
// wrapper instance's, which the layer operation — one syntax node shared by every wrapper
// instance — cannot say per instance.
void TensorDomain::wrapped_layer(const OpRule& rule, const std::vector<Val>& args,
                                 const Val& recv) {
  if (open_instances_.empty() || recv.modules.empty()) return;
  ir::InstanceCall& ic = ir_.instance_calls[open_instances_.back()];
  std::set<std::string> open(ic.modules.begin(), ic.modules.end());
  if (open != recv.modules || ic.mult_adds) return;
  std::vector<const Val*> ins;
  for (const auto& v : args)
    if (v.tensor) ins.push_back(&v);
  ir::TensorShape s;
  ic.mult_adds = mult_adds(rule, ins, &recv, s);
}

Val TensorDomain::binary(Eng& eng, NodeId n, Val l, Val r) {
  const std::string_view op = eng.body()[n].str;
  auto name = operator_op(op);
  if (!name || (!l.tensor && !r.tensor)) {
    Val v;
    if (l.num && r.num) {
      double a = *l.num, c = *r.num;
      v.real = l.real || r.real;
      // Integers divide as Rust's do (toward zero); a zero divisor gives no number (Rust panics
      // on integer division by zero): the figures depending on it stay unknown.
      if (op == "/" || op == "%") {
        if (c != 0) v.num = op == "%" ? std::fmod(a, c) : v.real ? a / c : std::trunc(a / c);
      } else if (op == "+" || op == "-" || op == "*") {
        v.num = op == "+" ? a + c : op == "-" ? a - c : a * c;
      }
      // A constructor run, and a root's forward run, decide `if`s on known numbers (choose):
      // comparisons are 1 or 0.
      if ((ctor_ || root_run_) && !name) {
        if (op != "/" && op != "%" && op != "+" && op != "-" && op != "*") v.real = false;
        if (op == "==")
          v.num = a == c;
        else if (op == "!=")
          v.num = a != c;
        else if (op == "<")
          v.num = a < c;
        else if (op == ">")
          v.num = a > c;
        else if (op == "<=")
          v.num = a <= c;
        else if (op == ">=")
          v.num = a >= c;
        else if (op == "&&")
          v.num = a != 0 && c != 0;
        else if (op == "||")
          v.num = a != 0 || c != 0;
        else if (op != "%" && op != "/" && op != "+" && op != "-" && op != "*")
          v.num.reset();
      }
    } else if ((op == "+" && l.num == 0.0) || ((op == "+" || op == "-") && r.num == 0.0)) {
      // `past_kv_len + seq_len` with nothing cached yet (a fresh model's first call): the other
      // operand's size, or the name it is written with.
      const rust::Body& b = eng.body();
      const bool left = !(l.num == 0.0);
      const Val& other = left ? l : r;
      const NodeId side = b.peel(left ? b[n].a : b[n].b, {Kind::Paren});
      if (!other.dim.empty())
        v.dim = other.dim;
      else if (side != rust::kNone && b[side].kind == Kind::Path && b[side].is_identifier())
        v.dim = std::string(b[side].str);
    }
    return v;
  }
  const std::string op_name(*name);
  if (l.tensor != r.tensor) {
    // tensor ∘ scalar: dtype and grad of the tensor operand, no conflict or risk.
    const Val& t = l.tensor ? l : r;
    OpRule rule;
    rule.name = op_name;
    rule.dtype = DtypeRule::preserve;
    rule.grad = GradRule::propagates;
    rule.shape = ShapeRule::preserve;
    std::vector<const Val*> ins{&t};
    Val out = make_op(eng, n, op_name, rule, ins, nullptr, std::nullopt);
    const Val& s = l.tensor ? r : l;
    if (s.num) {
      double k = *s.num;
      if (op == "+" && l.tensor)
        out.dom = affine_domain(t.dom, 1.0, k);
      else if (op == "*")
        out.dom = affine_domain(t.dom, k, 0.0);
      else
        out.dom = NumericDomain::unknown;
    }
    return out;
  }
  OpRule rule = cat_.lookup(op_name);
  std::vector<Val> ops{l, r};
  return apply_catalog(eng, n, op_name, rule, ops, nullptr);
}

}  // namespace cg::analysis::tensor
