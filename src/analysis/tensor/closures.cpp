// Closures as values (issue #18): models written as candle-nn `Func`/`FuncT` closures
// (candle-transformers' resnet: `Ok(Func::new(move |xs| xs.apply(&conv1)?...))`) have no
// `forward` method the dataflow reaches. A function root (`--root models::resnet::resnet18`) runs
// here as a constructor: a closure is a value capturing the environment it was written in (the
// layers it applies), `vb.pp(..)` prefixes are followed so a candle-nn layer constructor's value
// denotes the inventory module under that key, `for` loops over known ranges run once per value,
// and `Vec::push`/`seq().add` collect what they are given. The closure it returns then runs on an
// input tensor as the root module's `forward`: `xs.apply(&f)`, `f.forward(xs)`, `f(xs)` and a
// `Sequential`'s forward run a closure's body with its captures, so its operations get shapes and
// Mult-Adds and each layer it applies its own instance call.
#include <algorithm>
#include <cmath>

#include "analysis/interp/option_pattern.hpp"
#include "analysis/tensor/domain.hpp"
#include "rust/literal.hpp"
#include "util/text.hpp"

namespace cg::analysis::tensor {
namespace {

using rust::Kind;

// Whether module prefix `prefix` matches `pattern`, a `?` segment matching any one segment.
bool prefix_matches(const std::string& prefix, const std::string& pattern) {
  std::size_t i = 0, j = 0;
  while (true) {
    std::size_t ie = prefix.find('.', i), je = pattern.find('.', j);
    std::string a = prefix.substr(i, ie == std::string::npos ? std::string::npos : ie - i);
    std::string b = pattern.substr(j, je == std::string::npos ? std::string::npos : je - j);
    if (b != "?" && a != b) return false;
    if ((ie == std::string::npos) != (je == std::string::npos)) return false;
    if (ie == std::string::npos) return true;
    i = ie + 1;
    j = je + 1;
  }
}

constexpr std::size_t kMaxExpanded = 1024;  // iterations of one expanded constructor loop
constexpr std::size_t kMaxClosureDepth = 24;

}  // namespace

std::optional<Val> TensorDomain::closure(Eng& eng, NodeId n) {
  if (!ctor_) return std::nullopt;  // elsewhere: analyzed where written, as before
  auto c = std::make_shared<Closure>();
  c->item = eng.item();
  c->body = &eng.body();
  c->node = n;
  c->env = std::make_shared<const interp::Locals<Val>>(eng.frame().env);
  Val v;
  v.fn = std::move(c);
  return v;
}

std::optional<std::vector<Val>> TensorDomain::expand(Eng& eng, NodeId n, const Val& iter) {
  // A collection a constructor filled (`for layer in layers.iter()`): each of its values.
  if (iter.items) {
    if (iter.items->size() > kMaxExpanded) return std::nullopt;
    return *iter.items;
  }
  if (!ctor_) return std::nullopt;
  // `for index in 0..cnt` with `cnt` known: one iteration per index, so `vb.pp(index)` names
  // each instance.
  const rust::Body& b = eng.body();
  NodeId r = b.peel(b[n].b, {Kind::Paren});
  if (r == rust::kNone || b[r].kind != Kind::Range || b[r].a == rust::kNone ||
      b[r].b == rust::kNone)
    return std::nullopt;
  Val lo = eng.eval(b[r].a), hi = eng.eval(b[r].b);
  if (!lo.num || !hi.num || *lo.num < 0 || *hi.num > 1e9) return std::nullopt;
  auto l = static_cast<long long>(std::llround(*lo.num));
  auto h = static_cast<long long>(std::llround(*hi.num)) + (b[r].str == "..=" ? 1 : 0);
  if (h - l > static_cast<long long>(kMaxExpanded)) return std::nullopt;
  std::vector<Val> out;
  for (long long i = l; i < h; ++i) {
    Val v;
    v.num = static_cast<double>(i);
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<std::size_t> TensorDomain::choose(Eng& eng, NodeId n, const Val& cond) const {
  const rust::Body& b = eng.body();
  const rust::Node& nd = b[n];
  // A known `Option` variant takes the arm it selects, in any run: the value was written
  // `Some(..)`/`None` on the way here (an argument of this inlined call, a constructor's field).
  if (cond.variant != Val::Variant::unknown) {
    const bool some = cond.variant == Val::Variant::some;
    if (nd.kind == Kind::Match) return interp::option_arm(b, n, some);
    if (nd.kind == Kind::If && nd.a != rust::kNone && b[nd.a].kind == Kind::LetCond) {
      interp::OptionFit f = interp::option_fit(b, b[nd.a].a, some);
      if (f != interp::OptionFit::maybe) return f == interp::OptionFit::yes ? 0 : 1;
      return std::nullopt;
    }
  }
  if (!cond.word.empty() && nd.kind == Kind::Match) return interp::variant_arm(b, n, cond.word);
  if (nd.kind == Kind::Match)
    if (auto arm = variant_arm(eng, n, cond)) return arm;
  // A constructor run, and a root's forward run (`if k.dims()[1] > self.max_position_embeddings`
  // with both sizes from the config): an `if` on a known number takes that branch.
  if (!(ctor_ || root_run_) || !cond.num || nd.kind != Kind::If) return std::nullopt;
  if (nd.a != rust::kNone && b[nd.a].kind == Kind::LetCond) return std::nullopt;
  return *cond.num != 0 ? 0 : 1;
}

std::optional<std::size_t> TensorDomain::lead(Eng& eng, NodeId n, const Val& cond) const {
  if (!root_run_ || !cond.fresh_none) return std::nullopt;
  const rust::Body& b = eng.body();
  const rust::Node& nd = b[n];
  if (nd.kind == Kind::Match) return interp::option_arm(b, n, false);
  if (nd.kind == Kind::If && nd.a != rust::kNone && b[nd.a].kind == Kind::LetCond) {
    interp::OptionFit f = interp::option_fit(b, b[nd.a].a, false);
    if (f != interp::OptionFit::maybe) return f == interp::OptionFit::yes ? 0 : 1;
  }
  return std::nullopt;
}

Val TensorDomain::call_closure(Eng& eng, const Closure& c, const std::vector<Val>& args) {
  if (!eng.running() || !c.env || closure_depth_ >= kMaxClosureDepth) return {};
  ++closure_depth_;
  // The closure runs as the function that wrote it (its operations are that function's, its
  // paths resolve there) with the locals it captured.
  auto& fr = eng.frame();
  std::size_t item = fr.item;
  auto env = std::move(fr.env);
  fr.item = c.item;
  fr.env = *c.env;
  Val out = eng.run_closure(*c.body, c.node, args);
  auto& back = eng.frame();
  back.env = std::move(env);
  back.item = item;
  --closure_depth_;
  return out;
}

std::optional<Val> TensorDomain::apply_callable(Eng& eng, NodeId n, const Val& f,
                                                std::vector<Val> args, bool train) {
  if (f.fn) return call_closure(eng, *f.fn, args);
  if (!f.items || args.empty()) return std::nullopt;
  // A `Sequential` (or a collection applied in order): each member on the previous one's output.
  Val x = args[0];
  for (const auto& e : *f.items) {
    std::vector<Val> a = args;
    a[0] = x;
    if (auto r = apply_callable(eng, n, e, a, train)) {
      x = std::move(*r);
    } else if (!e.ext_type.empty() && x.tensor && n != rust::kNone) {
      const std::string m = train ? "forward_t" : "forward";
      std::vector<Val> ops{x};
      x = layer_call(eng, n, m, cat_.lookup_method(e.ext_type, m), ops, &e);
    } else {
      x = {};
    }
  }
  return x;
}

std::optional<Val> TensorDomain::builder_method(Eng& eng, NodeId n, const Val& recv,
                                                const std::vector<Val>& args) {
  const rust::Body& b = eng.body();
  const std::string_view m = b[n].str;
  if (recv.vb) {
    if (m == "pp" || m == "push_prefix") {
      std::string seg = "?";
      NodeId a = b.peel(b.kid(n, 0), {Kind::Ref, Kind::Paren});
      if (a != rust::kNone && b[a].kind == Kind::Lit && b[a].lit == rust::LitKind::Str) {
        if (auto s = rust::decode_string_literal(b[a].str)) seg = *s;
      } else if (!args.empty() && !args[0].word.empty()) {
        seg = args[0].word;
      } else if (!args.empty() && args[0].num && *args[0].num >= 0 && *args[0].num < 1e15 &&
                 std::floor(*args[0].num) == *args[0].num) {
        seg = std::to_string(static_cast<long long>(*args[0].num));
      }
      Val v = recv;
      v.vb = recv.vb->empty() ? seg : *recv.vb + "." + seg;
      return v;
    }
    if (m == "clone" || m == "set_dtype" || m == "to_dtype" || m == "set_device") return recv;
    return Val{};
  }
  // Elsewhere only `push` onto a `Vec` the run made (`let mut out = Vec::new()`); a push in a
  // loop run once symbolically leaves a count the join forgets (value.cpp).
  if (!ctor_ && !((m == "push" || m == "pop") && recv.items)) return std::nullopt;
  // `dims.pop()`: the local loses its last value, which is returned (`Option`, unwrapped as far
  // as this domain goes).
  if (m == "pop" && args.empty() && recv.items) {
    NodeId r = b.peel(b[n].a, {Kind::Ref, Kind::Paren});
    if (r == rust::kNone || b[r].kind != Kind::Path || !b[r].is_identifier()) return std::nullopt;
    Val v = recv;
    auto items = std::make_shared<std::vector<Val>>(*recv.items);
    Val last = items->empty() ? Val{} : items->back();
    if (!items->empty()) items->pop_back();
    v.items = std::move(items);
    eng.frame().env.set(std::string(b[r].str), std::move(v));
    return last;
  }
  if (m == "push" && args.size() == 1) {
    NodeId r = b.peel(b[n].a, {Kind::Ref, Kind::Paren});
    if (r == rust::kNone || b[r].kind != Kind::Path || !b[r].is_identifier()) return std::nullopt;
    Val v = recv;
    auto items = recv.items ? std::make_shared<std::vector<Val>>(*recv.items)
                            : std::make_shared<std::vector<Val>>();
    items->push_back(args[0]);
    v.items = std::move(items);
    eng.frame().env.set(std::string(b[r].str), std::move(v));
    return Val{};
  }
  // `convs.iter().map(|&(c_in, c_out, name)| conv2d(.., vb.pp(name))).collect()`: the closure
  // on each element, in order.
  if (m == "map" && recv.items && args.size() == 1 && args[0].fn) {
    if (recv.items->size() > kMaxExpanded) return Val{};
    auto items = std::make_shared<std::vector<Val>>();
    for (const Val& e : *recv.items)
      items->push_back(call_closure(eng, *args[0].fn, {e}));
    Val v;
    v.items = std::move(items);
    return v;
  }
  if (m == "collect" && recv.items) return recv;
  if ((m == "add" || m == "add_fn") && recv.items && args.size() == 1) {
    Val v = recv;
    auto items = std::make_shared<std::vector<Val>>(*recv.items);
    items->push_back(args[0]);
    v.items = std::move(items);
    return v;
  }
  return std::nullopt;
}

std::set<std::string> TensorDomain::modules_at(const std::string& prefix,
                                               const std::string* type) const {
  std::set<std::string> out;
  for (const auto& m : ir_.modules) {
    if (m.component != ctor_component_ || !prefix_matches(m.prefix, prefix)) continue;
    if (type ? m.qualified_type.value_or("") != *type : !params_by_module_.count(m.id)) continue;
    out.insert(m.id);
  }
  return out;
}

std::optional<Val> TensorDomain::built_layer(const std::vector<Val>& args, const std::string&) {
  const Val* vb = nullptr;
  for (const auto& a : args)
    if (a.vb) {
      vb = &a;
      break;
    }
  if (!vb) return std::nullopt;
  Val v;
  v.modules = modules_at(*vb->vb, nullptr);
  if (!v.modules.empty()) v.ext_type = module_by_id_.at(*v.modules.begin())->type_name;
  return v;
}

// A candle-nn layer made from values rather than a VarBuilder (`candle_nn::Linear::new(w, b)`,
// `Embedding::new(table, h)`, `Dropout::new(0.5)`): a value of that type, its weight the first
// argument's tensor (vgg's pre-logits reshape a loaded tensor into a Linear's). Only a path Rust
// resolves into a candle crate, to a type whose forward the catalog knows; a crate's own `Linear`
// resolved earlier (TensorDomain::free_call).
std::optional<Val> TensorDomain::layer_from_tensors(std::size_t fn_item, const std::string& path,
                                                    const std::vector<Val>& args) {
  if (last_path_segment(path) != "new") return std::nullopt;
  for (const auto& c : crate_.resolve_in(fn_item, path)) {
    if (c.kind != rust::Candidate::Kind::External) continue;
    const std::string& full = c.path;
    if (!(full.starts_with("candle_nn::") || full.starts_with("candle_core::") ||
          full.starts_with("candle::")) ||
        !full.ends_with("::new"))
      continue;
    const std::string owner = full.substr(0, full.size() - 5);  // less `::new`
    const std::string type(last_path_segment(owner));
    if (!cat_.knows_layer(type)) continue;
    Val v;
    v.ext_type = type;
    if (!args.empty() && args[0].tensor) {
      auto f = std::make_shared<std::map<std::string, Val>>();
      (*f)["weight"] = args[0];
      v.fields = std::move(f);
    }
    return v;
  }
  return std::nullopt;
}

// A root's constructor run: its VarBuilder parameter at the empty prefix, the others the values
// `--arg` gives (a number, an enum variant's name), the rest unknown.
Val TensorDomain::run_constructor(Eng& eng, std::size_t item, const std::string& component) {
  const auto& it = crate_.items()[item];
  std::vector<Val> args;
  for (const auto& p : it.params) {
    Val v;
    if (p.type_text.find("VarBuilder") != std::string::npos) v.vb = "";
    // A config parameter: bound to config.json, or to what an `--arg cfg=Config::tiny()` call
    // built (convnext's `cfg.blocks[stage_idx]` then bounds the loop that builds the blocks).
    if (!v.vb && binding_)
      if (auto c = binding_->bind_param(p.type_text, it.module, arg(p.name) != nullptr))
        v.config = std::make_shared<const ConfigRef>(std::move(*c));
    if (const SymValue* a = arg(p.name)) {
      const SymValue& s = *a;
      Val n = number_val(s);
      v.num = n.num;
      v.real = n.real;
      if (s.kind == SymValue::Kind::string) v.word = std::string(last_path_segment(s.text));
      if (s.kind == SymValue::Kind::none)
        v.variant = Val::Variant::none;
      else if (p.type_text.starts_with("Option<") ||
               p.type_text.find("::Option<") != std::string::npos)
        v.variant = Val::Variant::some;
    }
    args.push_back(std::move(v));
  }
  ctor_ = true;
  fn_root_run_ = true;
  ctor_component_ = component;
  Val built = eng.invoke(item, nullptr, args, true);
  ctor_ = false;
  return built;
}

void TensorDomain::root_constructor(std::ptrdiff_t type_item, std::size_t ctor_item,
                                    const std::string& component) {
  root_types_.insert(type_item);
  const auto& fields = crate_.items()[static_cast<std::size_t>(type_item)].fields;
  // Only a struct holding closures needs its constructor run: its other fields are typed.
  bool closures = std::any_of(fields.begin(), fields.end(), [](const rust::Field& f) {
    std::string_view base = last_path_segment(f.base_type);
    return base == "Func" || base == "FuncT" || base == "Sequential" || base == "SequentialT" ||
           f.type_text.find("dyn Fn") != std::string::npos ||
           f.type_text.find("dyn Module") != std::string::npos;
  });
  if (closures) root_ctors_[type_item] = {ctor_item, component};
}

std::size_t TensorDomain::run_function_root(Eng& eng, std::size_t fn_index, std::size_t item,
                                            const std::string& component) {
  begin_run(fn_index);
  eng.begin_run();
  reset_instances();
  Val f = run_constructor(eng, item, component);
  if (f.fn || f.items) {
    std::set<std::string> roots;
    for (const auto& m : ir_.modules)
      if (m.component == component && !m.parent) roots.insert(m.id);
    eng.in_frame(item, [&] {
      // The input: the closure's first parameter (`xs`).
      std::string name = "xs";
      if (f.fn) {
        auto ps = f.fn->body->kids(f.fn->node);
        if (!ps.empty() && (*f.fn->body)[ps[0]].kind == Kind::PIdent)
          name = std::string((*f.fn->body)[ps[0]].str);
      }
      Val xs;
      xs.tensor = true;
      xs.tid = ir::contract_tensor_id(run_.entry_fid, name);
      given_shape(name, out_.add_tensor(xs.tid, name, ir::TensorRole::input, run_.entry_fid));
      auto& ins = ir_.functions[fn_index].tensor_inputs;
      if (std::find(ins.begin(), ins.end(), xs.tid) == ins.end()) ins.push_back(xs.tid);
      std::size_t root = open_instance(roots, "forward", run_.entry_fid);
      NodeId where = f.fn ? rust::kNone : eng.body().root;
      root_run_ = true;
      std::optional<Val> out = apply_callable(eng, where, f, {xs, Val{}}, false);
      root_run_ = false;
      Val ret = out ? *out : Val{};
      close_instance(root, ret, shape_of_tensor(&ret), "");
      settle_branches();
      if (ret.tensor && !ret.tid.empty()) {
        run_.returned.insert(ret.tid);
        auto& outs = ir_.functions[fn_index].tensor_outputs;
        if (std::find(outs.begin(), outs.end(), ret.tid) == outs.end()) outs.push_back(ret.tid);
      }
      return Val{};
    });
  }
  fn_root_run_ = false;
  auto& fn = ir_.functions[fn_index];
  if (std::find(fn.execution_phases.begin(), fn.execution_phases.end(),
                ir::ExecutionPhase::infer) == fn.execution_phases.end())
    fn.execution_phases.push_back(ir::ExecutionPhase::infer);
  for (std::size_t oi : run_.ops) {
    if (op_phases_.size() <= oi) op_phases_.resize(oi + 1, 0);
    op_phases_[oi] |= 2;
  }
  for (auto& c : checks_)
    c->run_end(run_, out_);
  return eng.used();
}

// `--input-shape xs=1x3x224x224`: a root's tensor input of that name has that shape (each
// dimension a number or a name the summary's --input-shape can bind).
void TensorDomain::given_shape(const std::string& name, std::size_t tensor) {
  if (inputs_offered_) inputs_offered_->insert(name);
  if (!input_tensors_) return;
  auto it = input_tensors_->find(name);
  if (it == input_tensors_->end()) return;
  if (inputs_used_) inputs_used_->insert(name);
  ir::TensorShape s;
  s.rank = it->second.size();
  for (const auto& d : it->second)
    s.dimensions.push_back({std::nullopt, d});
  ir_.tensors[tensor].shape = std::move(s);
}

}  // namespace cg::analysis::tensor
