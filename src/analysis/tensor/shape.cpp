// Shape, device and multiply-add facts of the tensor domain (spec reference-static §4.3): symbolic
// output shapes from the catalog's shape rule, `dims3()` destructurings naming a tensor's
// dimensions, config-bound numbers, and torchinfo's "mult-adds" for matmuls and Linear forwards.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "analysis/tensor/domain.hpp"
#include "util/text.hpp"

namespace cg::analysis::tensor {
namespace {

using rust::Kind;

std::string dim_text(double d) {
  return std::to_string(static_cast<std::uint64_t>(d));
}

bool plain_name(std::string_view f) {
  return !f.empty() && (std::isalpha(static_cast<unsigned char>(f[0])) || f[0] == '_') &&
         std::all_of(f.begin(), f.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

// The product of dimension expressions as "b*t*4096" (numbers folded, symbols kept when they are
// plain names such as `b`/`t`); nullopt when a factor is an expression or unknown (`?`).
std::optional<std::string> product(const std::vector<std::string>& factors) {
  // Numbers fold exactly in 64 bits; past 2^64 they stay separate factors ("b*99999999999*
  // 99999999999*256"), which a reader multiplies with its own overflow check ("over 2^64") —
  // never a double's rounded digits that look exact.
  std::uint64_t k = 1;
  bool over = false;
  std::string sym, nums;
  std::vector<std::string> split;
  for (const auto& f : factors) {
    std::size_t from = 0;
    while (true) {
      std::size_t star = f.find('*', from);
      split.push_back(f.substr(from, star == std::string::npos ? std::string::npos : star - from));
      if (star == std::string::npos) break;
      from = star + 1;
    }
  }
  for (const auto& f : split) {
    if (f.empty()) return std::nullopt;
    bool digits = std::all_of(f.begin(), f.end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digits) {
      if (f.size() > 19) return std::nullopt;
      const std::uint64_t v = std::strtoull(f.c_str(), nullptr, 10);
      nums += (nums.empty() ? "" : "*") + std::to_string(v);
      over = over || __builtin_mul_overflow(k, v, &k);
      continue;
    }
    if (dimension_quotient(f)) {  // a pooled dimension: `(h/4)`
      sym += (sym.empty() ? "(" : "*(") + f + ")";
      continue;
    }
    if (!plain_name(f)) return std::nullopt;
    sym += (sym.empty() ? "" : "*") + f;
  }
  std::string num = over ? nums : std::to_string(k);
  if (sym.empty()) return num;
  return !over && k == 1 ? sym : sym + "*" + num;
}

std::vector<std::string> dim_exprs(const ir::TensorShape& s) {
  std::vector<std::string> v;
  for (const auto& d : s.dimensions)
    v.push_back(d.expr);
  return v;
}

// The elements of a tuple or array expression (`[x; n]` is x and n).
std::vector<rust::NodeId> elements(const rust::Body& b, rust::NodeId n) {
  if (b[n].kind == Kind::ArrayRepeat) return {b[n].a, b[n].b};
  return b.kids(n);
}

}  // namespace

const ir::TensorShape* TensorDomain::shape_of_tensor(const Val* v) {
  // A value's own shape, or its explicitly unknown one (make_op), before the IR tensor's.
  if (v->shape) return v->shape->rank ? v->shape.get() : nullptr;
  const ir::Tensor* t = out_.tensor(v->tid);
  if (!t || !t->shape.rank) return nullptr;
  return &t->shape;
}

// The number the constructor of `type_item` gives primitive field `f` with config.json bound
// (`head_dim: cfg.hidden_size / cfg.num_attention_heads`); nullopt when symbolic or unbound.
// A constructor argument as ir::Module::arguments writes it (SymValue::display): an integer, a
// real or a boolean.
static SymValue argument_value(const std::string& text) {
  if (text == "true" || text == "false") return SymValue::of_bool(text == "true");
  std::int64_t i = 0;
  const char* end = text.data() + text.size();
  if (auto r = std::from_chars(text.data(), end, i); r.ec == std::errc() && r.ptr == end)
    return SymValue::of_int(i);
  double d = 0;
  if (auto r = std::from_chars(text.data(), end, d); r.ec == std::errc() && r.ptr == end)
    return SymValue::of_real(d);
  return SymValue::symbolic(text, "a constructor argument");
}

// The fields the constructor of the instances `base` denotes gives, evaluated with the numbers
// their constructor calls passed bound (ir::Module::arguments), when every instance's call passed
// the same: `Self { n_head, .. }` of `load(n_state, n_head, vb)` is the number the caller passed,
// `cross_attn` of `load(.., ca: false, ..)` is `None`. Null when `base` denotes no such instances.
const std::map<std::string, SymValue>* TensorDomain::instance_fields(std::ptrdiff_t type_item,
                                                                     const Val* base) {
  if (type_item < 0 || !base || base->modules.empty()) return nullptr;
  const std::map<std::string, std::string>* args = nullptr;
  for (const auto& id : base->modules) {
    auto m = module_by_id_.find(id);
    const auto* a = m == module_by_id_.end() ? nullptr : &m->second->arguments;
    if (!a || (args && *args != *a)) return nullptr;
    args = a;
  }
  if (!args || args->empty()) return nullptr;
  std::string key = std::to_string(type_item);
  for (const auto& [k, v] : *args)
    key += "\n" + k + "=" + v;
  auto it = instance_fields_.find(key);
  if (it == instance_fields_.end()) {
    std::map<std::string, SymValue> bound;
    for (const auto& [k, v] : *args)
      bound[k] = argument_value(v);
    // Without a config.json the constructor still evaluates over the numbers its caller passed.
    if (!binding_ && !bare_binding_) bare_binding_.emplace(crate_, nullptr, nullptr);
    const ConfigBinding& cb = binding_ ? *binding_ : *bare_binding_;
    it = instance_fields_
             .emplace(std::move(key),
                      cb.constructor_fields(static_cast<std::size_t>(type_item), bound))
             .first;
  }
  return &it->second;
}

std::optional<double> TensorDomain::constructor_number(std::ptrdiff_t type_item,
                                                       const std::string& f, const Val* base) {
  if (const auto* fields = instance_fields(type_item, base))
    if (auto v = fields->find(f); v != fields->end()) {
      if (v->second.kind == SymValue::Kind::integer) return static_cast<double>(v->second.integer);
      if (v->second.kind == SymValue::Kind::real) return v->second.real;
    }
  if (!binding_ || type_item < 0) return std::nullopt;
  auto it = ctor_nums_.find(type_item);
  if (it == ctor_nums_.end()) {
    std::map<std::string, double> nums;
    for (const auto& [name, v] :
         binding_->constructor_fields(static_cast<std::size_t>(type_item))) {
      if (v.kind == SymValue::Kind::integer) nums[name] = static_cast<double>(v.integer);
      if (v.kind == SymValue::Kind::real) nums[name] = v.real;
    }
    it = ctor_nums_.emplace(type_item, std::move(nums)).first;
  }
  auto n = it->second.find(f);
  if (n == it->second.end()) return std::nullopt;
  return n->second;
}

// `xs.apply(&self.act)` / `self.act.forward(xs)` where `act: candle_nn::Activation` is set by
// the constructor from config.json (`act: cfg.hidden_act`, "silu"): candle-nn's forward is one
// elementwise op for every variant but `swiglu` (it halves the last dimension), so the output
// keeps the input's shape, dtype and gradient. When the variant is not known (a config method
// chose it), the output's shape is not known either, but it multiplies nothing: the rule says
// so, and the Mult-Adds total is not made a lower bound by it. nullopt: not an Activation.
std::optional<OpRule> TensorDomain::activation_rule(Eng& eng, NodeId layer, const Val& v) {
  if (!binding_ || !cat_.audited()) return std::nullopt;
  std::string type = v.ext_type.substr(0, v.ext_type.find('<'));
  if (auto sep = type.rfind("::"); sep != std::string::npos) type = type.substr(sep + 2);
  if (type != "Activation") return std::nullopt;
  const rust::Body& b = eng.body();
  layer = b.peel(layer, {Kind::Ref, Kind::Paren});
  if (layer == rust::kNone || b[layer].kind != Kind::Field) return std::nullopt;
  const rust::Node& base = b[b[layer].a];
  if (base.kind != Kind::Path || (!base.is_self() && !base.is_identifier())) return std::nullopt;
  const Val* owner = eng.lookup(std::string(base.str));
  if (!owner || owner->type_item < 0) return std::nullopt;
  auto it = ctor_strings_.find(owner->type_item);
  if (it == ctor_strings_.end()) {
    std::map<std::string, std::string> strs;
    for (const auto& [name, s] :
         binding_->constructor_fields(static_cast<std::size_t>(owner->type_item)))
      if (s.kind == SymValue::Kind::string) strs[name] = s.text;
    it = ctor_strings_.emplace(owner->type_item, std::move(strs)).first;
  }
  auto f = it->second.find(std::string(b[layer].str));
  OpRule r;
  r.name = "Activation::forward";
  r.dtype = DtypeRule::preserve;  // every variant: elementwise in the input's dtype
  r.grad = GradRule::propagates;
  if (f == it->second.end() || f->second == "swiglu") {
    r.shape = ShapeRule::operation_defined;
    r.note = f == it->second.end() ? "candle-nn Activation::forward of a variant not known here "
                                     "(swiglu halves the last dimension, the others keep it)"
                                   : "candle-nn Activation::forward, swiglu: the last dimension "
                                     "halves";
    return r;
  }
  r.shape = ShapeRule::preserve;
  r.domain = NumericDomain::real;
  r.note =
      "candle-nn Activation::forward: one elementwise op for every variant but swiglu; "
      "this one is `" +
      f->second + "`";
  return r;
}

// A dimension expression's value without side effects: literals, locals holding numbers,
// `self.f` bound through the constructor, and + - * / of those. Non-negative integers only.
// A crate-local `const D_STATE: usize = 16;` named from `item`: its value when its expression is
// numbers and other such consts (symbolic evaluation, bounded); nullopt otherwise.
std::optional<double> TensorDomain::const_number(std::size_t item, const std::string& path) {
  const std::string key = std::to_string(item) + '\0' + path;
  if (auto it = const_nums_.find(key); it != const_nums_.end()) return it->second;
  const_nums_[key] = std::nullopt;  // a const naming itself stays unknown
  std::optional<double> r;
  const auto cands = crate_.resolve_in(item, path);
  if (cands.size() == 1 && cands[0].kind == rust::Candidate::Kind::Item &&
      crate_.items()[cands[0].item].kind == rust::ItemKind::Const) {
    const rust::Body& body = crate_.lowered(cands[0].item);
    struct Consts : EvalContext {
      TensorDomain& dom;
      std::size_t at;
      Consts(TensorDomain& d, std::size_t i) : dom(d), at(i) {}
      std::optional<SymValue> lookup(std::string_view name) override {
        auto v = dom.const_number(at, std::string(name));
        if (!v) return std::nullopt;
        return SymValue::of_int(static_cast<std::int64_t>(*v));
      }
      std::optional<SymValue> field(const rust::Body&, NodeId, std::string_view) override {
        return std::nullopt;
      }
      std::optional<SymValue> method(const rust::Body&, NodeId, std::string_view,
                                     const std::vector<SymValue>&) override {
        return std::nullopt;
      }
    } ctx(*this, cands[0].item);
    if (body.root != rust::kNone) {
      SymValue v = evaluate(body, body.root, ctx);
      if (v.kind == SymValue::Kind::integer && v.integer >= 0) r = static_cast<double>(v.integer);
    }
  }
  const_nums_[key] = r;
  return r;
}

std::optional<double> TensorDomain::static_num(Eng& eng, NodeId n, int depth) {
  if (n == rust::kNone || depth > 16) return std::nullopt;
  const rust::Body& b = eng.body();
  const rust::Node& nd = b[n];
  std::optional<double> r;
  if (nd.is_int_literal()) {
    std::string s(nd.str);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    r = std::strtod(s.c_str(), nullptr);
  } else if (nd.kind == Kind::Path && nd.is_identifier() && eng.lookup(std::string(nd.str))) {
    const Val* v = eng.lookup(std::string(nd.str));
    if (!v->tensor) r = v->num;
  } else if (nd.kind == Kind::Path) {
    r = const_number(eng.item(), std::string(nd.str));
  } else if (nd.kind == Kind::Field) {
    const rust::Node& base = b[nd.a];
    if (base.kind == Kind::Path && (base.is_self() || base.is_identifier())) {
      if (const Val* v = eng.lookup(std::string(base.str))) {
        // A struct literal's field (a config record captured by a closure), else the number the
        // type's constructor stores there.
        const Val* f = nullptr;
        if (v->fields)
          if (auto it = v->fields->find(std::string(nd.str)); it != v->fields->end())
            f = &it->second;
        r = f && f->num && !f->tensor ? f->num
                                      : constructor_number(v->type_item, std::string(nd.str), v);
      }
    } else if (base.kind == Kind::Field) {
      // `self.cfg.num_attention_heads`: a chain of fields reads no tensor and records nothing.
      NodeId root = nd.a;
      while (root != rust::kNone && b[root].kind == Kind::Field)
        root = b[root].a;
      if (root != rust::kNone && b[root].kind == Kind::Path)
        if (Val v = eng.eval(n); !v.tensor) r = v.num;
    }
  } else if (nd.kind == Kind::Paren || nd.kind == Kind::Ref ||
             (nd.kind == Kind::Unary && nd.str == "*")) {  // `*split` of a `&usize`
    r = static_num(eng, nd.a, depth + 1);
  } else if (nd.kind == Kind::Binary && nd.is_binary_expression()) {
    auto x = static_num(eng, nd.a, depth + 1);
    auto y = static_num(eng, nd.b, depth + 1);
    if (x && y) {
      if (nd.str == "+") r = *x + *y;
      if (nd.str == "-") r = *x - *y;
      if (nd.str == "*") r = *x * *y;
      if (nd.str == "/" && *y != 0) r = std::floor(*x / *y);
    }
  }
  if (r && (*r < 0 || *r != std::floor(*r) || *r > 1e15)) return std::nullopt;
  return r;
}

// Whether the constructor of `type_item` writes `None` into field `f` (`kv_cache: None`).
// Field `f` of the instances `base` denotes is `None` when built: their constructor calls'
// numbers make it so (whisper's encoder blocks, `load(.., ca: false, ..)`, build no `cross_attn`).
bool TensorDomain::instance_none(std::ptrdiff_t type_item, const std::string& f, const Val& base) {
  const auto* fields = instance_fields(type_item, &base);
  if (!fields) return false;
  auto v = fields->find(f);
  return v != fields->end() && v->second.kind == SymValue::Kind::none;
}

// Field `f` of those instances is written `Some(..)` when built (whisper's decoder blocks,
// `load(.., ca: true, ..)`, build their `cross_attn`).
bool TensorDomain::instance_some(std::ptrdiff_t type_item, const std::string& f, const Val& base) {
  const auto* fields = instance_fields(type_item, &base);
  if (!fields) return false;
  auto v = fields->find(f);
  return v != fields->end() && v->second.kind == SymValue::Kind::symbolic &&
         v->second.text.starts_with("Some(");
}

bool TensorDomain::constructor_none(std::ptrdiff_t type_item, const std::string& f) {
  if (!binding_ || type_item < 0) return false;
  auto it = ctor_nones_.find(type_item);
  if (it == ctor_nones_.end()) {
    std::set<std::string> nones;
    for (const auto& [name, v] : binding_->constructor_fields(static_cast<std::size_t>(type_item)))
      if (v.kind == SymValue::Kind::none) nones.insert(name);
    it = ctor_nones_.emplace(type_item, std::move(nones)).first;
  }
  return it->second.count(f) > 0;
}

namespace {

// A dimension written as a product of numbers and plain names (`b*t`, `16`, `seq_len`): its
// numeric factor and its names, sorted; nullopt for anything else (a sum, `?`, `()`).
std::optional<std::pair<std::uint64_t, std::vector<std::string>>> factors(const std::string& e) {
  std::pair<std::uint64_t, std::vector<std::string>> f{1, {}};
  std::size_t pos = 0;
  while (pos <= e.size()) {
    std::size_t next = e.find('*', pos);
    std::string part = e.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (part.empty()) return std::nullopt;
    if (part.find_first_not_of("0123456789") == std::string::npos) {
      if (part.size() > 15 || __builtin_mul_overflow(f.first, std::stoull(part), &f.first))
        return std::nullopt;
    } else if (std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_') {
      if (part.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
          std::string::npos)
        return std::nullopt;
      f.second.push_back(part);
    } else {
      return std::nullopt;
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::sort(f.second.begin(), f.second.end());
  return f;
}

// The product of dimensions written as products of numbers and names (`[768, 14, 14]` ->
// "150528", `[b, 16]` -> "16*b"); "?" when one is anything else.
std::string product_of(const std::vector<std::string>& dims) {
  std::uint64_t num = 1;
  std::vector<std::string> names;
  for (const auto& d : dims) {
    auto f = factors(d);
    if (!f || __builtin_mul_overflow(num, f->first, &num)) return "?";
    names.insert(names.end(), f->second.begin(), f->second.end());
  }
  std::string e = num == 1 && !names.empty() ? "" : std::to_string(num);
  for (const auto& n : names)
    e += (e.empty() ? "" : "*") + n;
  return e;
}

}  // namespace

// `reshape((b, t, ()))`: the one dimension written `()` is what the element count leaves, when
// every dimension in and out is a product of numbers and names and the names cancel
// (`[b, t, 16, 10]` -> `[b, t, 160]`); else it stays `()`.
void TensorDomain::infer_hole(const ir::TensorShape& in, ir::TensorShape& out) const {
  std::size_t hole = out.dimensions.size();
  for (std::size_t i = 0; i < out.dimensions.size(); ++i)
    if (out.dimensions[i].expr == "()") {
      if (hole != out.dimensions.size()) return;  // candle allows one
      hole = i;
    }
  if (hole == out.dimensions.size() || !in.rank) return;
  std::uint64_t num_in = 1, num_out = 1;
  std::vector<std::string> names_in, names_out;
  for (const auto& d : in.dimensions) {
    auto f = factors(d.expr);
    if (!f || __builtin_mul_overflow(num_in, f->first, &num_in)) return;
    names_in.insert(names_in.end(), f->second.begin(), f->second.end());
  }
  for (std::size_t i = 0; i < out.dimensions.size(); ++i) {
    if (i == hole) continue;
    auto f = factors(out.dimensions[i].expr);
    if (!f || __builtin_mul_overflow(num_out, f->first, &num_out)) return;
    names_out.insert(names_out.end(), f->second.begin(), f->second.end());
  }
  std::sort(names_in.begin(), names_in.end());
  std::sort(names_out.begin(), names_out.end());
  std::vector<std::string> rest;
  std::set_difference(names_in.begin(), names_in.end(), names_out.begin(), names_out.end(),
                      std::back_inserter(rest));
  if (!std::includes(names_in.begin(), names_in.end(), names_out.begin(), names_out.end())) return;
  if (num_out == 0 || num_in % num_out != 0) return;
  std::string e = num_in / num_out == 1 && !rest.empty() ? "" : std::to_string(num_in / num_out);
  for (const auto& r : rest)
    e += (e.empty() ? "" : "*") + r;
  out.dimensions[hole] = {std::nullopt, e};
}

// A dimension argument of an operation on a tensor of rank `rank`: a literal (`2`), `D::Minus1` /
// `D::Minus2` counted from the end (any path ending so: `candle::D::Minus1`), or a local holding
// one (`let dim = dim.to_index(..)?`, a `D::Minus1` passed on). nullopt when it is none of those
// or not below the rank.
std::optional<std::size_t> TensorDomain::dim_index(Eng& eng, NodeId n, std::size_t rank) {
  if (n == rust::kNone) return std::nullopt;
  const rust::Body& b = eng.body();
  n = b.peel(n, {Kind::Paren, Kind::Ref});
  if (n == rust::kNone) return std::nullopt;
  std::optional<std::size_t> d;
  const std::string_view t = b.source(n);
  if (b[n].is_int_literal())
    if (auto k = static_num(eng, n, 0)) d = static_cast<std::size_t>(*k);
  if (t.ends_with("D::Minus1") && rank >= 1) d = rank - 1;
  if (t.ends_with("D::Minus2") && rank >= 2) d = rank - 2;
  if (b[n].kind == Kind::Path && b[n].is_identifier())
    if (const Val* v = eng.lookup(std::string(b[n].str)); v && !v->tensor) {
      if (v->num && *v->num >= 0) d = static_cast<std::size_t>(*v->num);
      if (v->word == "Minus1" && rank >= 1) d = rank - 1;
      if (v->word == "Minus2" && rank >= 2) d = rank - 2;
    }
  if (d && *d >= rank) d.reset();
  return d;
}

// A dimension expression as a product of numbers and plain local names (`b_sz * self.num_heads`
// with the config bound is "b_sz*71"); nullopt when a factor is anything else.
std::optional<std::string> TensorDomain::dim_product(Eng& eng, NodeId n, int depth) {
  if (n == rust::kNone || depth > 16) return std::nullopt;
  if (auto k = static_num(eng, n, depth)) return dim_text(*k);
  const rust::Body& b = eng.body();
  const rust::Node& nd = b[n];
  if (nd.kind == Kind::Path && nd.is_identifier()) {
    const Val* v = eng.lookup(std::string(nd.str));
    if (v && !v->tensor) return v->dim.empty() ? std::string(nd.str) : v->dim;
    return std::nullopt;
  }
  if (nd.kind == Kind::Paren || nd.kind == Kind::Try) return dim_product(eng, nd.a, depth + 1);
  // `q.dim(1)`, `q.dim(D::Minus1)` of a local tensor whose shape is known here.
  if (nd.kind == Kind::MethodCall && nd.str == "dim" && b.kids_view(n).size() == 1) {
    NodeId r = b.peel(nd.a, {Kind::Ref, Kind::Paren});
    const Val* t =
        r != rust::kNone && b[r].kind == Kind::Path ? eng.lookup(std::string(b[r].str)) : nullptr;
    const ir::TensorShape* s = t && t->tensor ? shape_of_tensor(t) : nullptr;
    if (!s || !s->rank) return std::nullopt;
    std::optional<std::size_t> d = dim_index(eng, b.kid(n, 0), s->dimensions.size());
    if (!d) return std::nullopt;
    const std::string& e = s->dimensions[*d].expr;
    if (e == "?" || e == "()") return std::nullopt;
    return e;
  }
  if (nd.kind == Kind::Binary && nd.is_binary_expression() && nd.str == "*") {
    auto x = dim_product(eng, nd.a, depth + 1);
    auto y = dim_product(eng, nd.b, depth + 1);
    if (x && y) return *x == "1" ? *y : *y == "1" ? *x : *x + "*" + *y;
  }
  return std::nullopt;
}

// A candle-nn layer's weight shape from the receiver module's parameters: a Linear's [out, in]
// (rank 2), a conv's [out, in / groups, k..] (rank 3 or 4); for a layer built from tensors
// (`Linear::new(w, b)`, TensorDomain::layer_from_tensors), the weight tensor's shape when every
// dimension of it is a number.
std::optional<std::vector<std::uint64_t>> TensorDomain::linear_weight(const Val* recv,
                                                                      std::size_t rank) {
  if (!recv) return std::nullopt;
  if (recv->modules.empty() && recv->fields)
    if (auto w = recv->fields->find("weight"); w != recv->fields->end() && w->second.tensor)
      if (const ir::TensorShape* s = shape_of_tensor(&w->second); s && s->rank == rank) {
        std::vector<std::uint64_t> dims;
        for (const auto& d : s->dimensions) {
          const std::string& e = d.expr;
          if (e.empty() || e.size() > 15 || e.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
          dims.push_back(std::stoull(e));
        }
        return dims;
      }
  for (const auto& m : recv->modules) {
    auto it = params_by_module_.find(m);
    if (it == params_by_module_.end()) continue;
    for (std::size_t pi : it->second) {
      const auto& p = ir_.parameters[pi];
      bool weight = p.key == "weight" ||
                    (p.key.size() > 7 && p.key.compare(p.key.size() - 7, 7, ".weight") == 0);
      if (weight && p.shape && p.shape->size() == rank) return p.shape;
    }
  }
  return std::nullopt;
}

// A conv layer's output shape and multiply-adds (candle-nn conv.rs, candle-core conv.rs): input
// `(b, c_in, l..)`, weight `[c_out, c_in / groups, k..]` (transposed: `[c_in, c_out / groups,
// k..]`) and the module's padding/stride/dilation/groups attributes. A spatial dimension is
//   conv:       (l + 2·padding − dilation·(k − 1) − 1) / stride + 1
//   transposed: (l − 1)·stride − 2·padding + dilation·(k − 1) + output_padding + 1
// a number when `l` is one, `l` itself when the layer keeps the size (stride 1, "same" padding),
// else `?`. Multiply-adds, torchinfo's rule for the weight: output elements × c_in/groups × k..
// (transposed: each input element meets c_out/groups × k.. weights, input elements × that).
std::optional<std::string> TensorDomain::conv_mult_adds(const OpTraits& tr,
                                                        const std::vector<const Val*>& ins,
                                                        const Val* recv,
                                                        ir::TensorShape& out_shape) {
  const std::size_t sp = static_cast<std::size_t>(tr.conv_spatial);
  auto w = linear_weight(recv, sp + 2);
  const ir::TensorShape* a = ins.empty() ? nullptr : shape_of_tensor(ins[0]);
  if (!w || !a || a->dimensions.size() != sp + 2 || !recv) return std::nullopt;
  std::map<std::string, std::string> attrs;
  for (const auto& m : recv->modules) {
    auto it = module_by_id_.find(m);
    if (it != module_by_id_.end() && !it->second->attributes.empty())
      attrs = it->second->attributes;
  }
  // A layer built without a recorded config (`Conv2d::new(w, b, cfg)` by hand) has no attributes:
  // its shape stays unknown rather than candle-nn's defaults guessed.
  auto attr = [&](const char* k) -> std::optional<std::uint64_t> {
    auto it = attrs.find(k);
    if (it == attrs.end()) return std::nullopt;
    const std::string& v = it->second;
    if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      return std::nullopt;
    return std::stoull(v);
  };
  auto pad = attr("padding"), stride = attr("stride"), dil = attr("dilation"),
       groups = attr("groups"), opad = tr.conv_transposed ? attr("output_padding") : 0;
  bool known =
      pad && stride && dil && groups && (!tr.conv_transposed || opad) && *stride > 0 && *groups > 0;
  out_shape = *a;
  out_shape.source_expr.reset();
  std::uint64_t c_out = tr.conv_transposed ? (*w)[1] * (known ? *groups : 1) : (*w)[0];
  out_shape.dimensions[1] = {std::nullopt,
                             known || !tr.conv_transposed ? std::to_string(c_out) : "?"};
  for (std::size_t i = 0; i < sp; ++i) {
    ir::Dimension& d = out_shape.dimensions[2 + i];
    const std::string in = a->dimensions[2 + i].expr;
    std::uint64_t k = (*w)[2 + i];
    if (!known) {
      d = {std::nullopt, "?"};
      continue;
    }
    std::uint64_t span = *dil * (k - 1);
    bool digits = !in.empty() && in.size() < 16 && std::all_of(in.begin(), in.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (digits) {
      std::int64_t l = static_cast<std::int64_t>(std::stoull(in));
      std::int64_t o =
          tr.conv_transposed
              ? (l - 1) * static_cast<std::int64_t>(*stride) - 2 * static_cast<std::int64_t>(*pad) +
                    static_cast<std::int64_t>(span + *opad) + 1
              : (l + 2 * static_cast<std::int64_t>(*pad) - static_cast<std::int64_t>(span) - 1) /
                        static_cast<std::int64_t>(*stride) +
                    1;
      d = {std::nullopt, o > 0 ? std::to_string(o) : "?"};
    } else {
      bool same = *stride == 1 && 2 * *pad == span + (tr.conv_transposed ? *opad : 0);
      d = same ? ir::Dimension{a->dimensions[2 + i].name, in} : ir::Dimension{std::nullopt, "?"};
    }
  }
  if (!known) return std::nullopt;
  auto f = dim_exprs(tr.conv_transposed ? *a : out_shape);
  for (std::size_t i = 1; i < w->size(); ++i)
    f.push_back(std::to_string((*w)[i]));
  return product(f);
}

// Multiply-adds (torchinfo's "mult-adds") of a matmul or Linear forward; sets the Linear output
// shape. Needs concrete shapes, or symbolic only in plain names (`b`, `t`).
std::optional<std::string> TensorDomain::mult_adds(const OpRule& rule,
                                                   const std::vector<const Val*>& ins,
                                                   const Val* recv, ir::TensorShape& out_shape) {
  if (rule.shape == ShapeRule::matrix_product && ins.size() >= 2) {
    const ir::TensorShape* a = shape_of_tensor(ins[0]);
    const ir::TensorShape* b = shape_of_tensor(ins[1]);
    if (!a || !b || a->dimensions.size() < 2 || b->dimensions.size() < 2) return std::nullopt;
    auto f = dim_exprs(*a);
    f.push_back(b->dimensions.back().expr);
    return product(f);
  }
  if (op_traits(rule.name).linear_weight && !ins.empty()) {
    auto w = linear_weight(recv);
    const ir::TensorShape* a = shape_of_tensor(ins[0]);
    if (!w || !a || a->dimensions.empty()) return std::nullopt;
    // The forward only runs when the input's last dim is the weight's `in` (`_hidden` from
    // dims3() is that number), so the count uses the weight's.
    out_shape = *a;
    out_shape.source_expr.reset();
    out_shape.dimensions.back() = {std::nullopt, std::to_string((*w)[0])};
    auto f = dim_exprs(*a);
    f.back() = std::to_string((*w)[1]);
    f.push_back(std::to_string((*w)[0]));
    return product(f);
  }
  if (op_traits(rule.name).conv_spatial)
    return conv_mult_adds(op_traits(rule.name), ins, recv, out_shape);
  if (op_traits(rule.name).embedding_weight && !ins.empty()) {
    auto w = linear_weight(recv);
    const ir::TensorShape* a = shape_of_tensor(ins[0]);
    if (!w || !a) return std::nullopt;
    out_shape = *a;
    out_shape.source_expr.reset();
    out_shape.dimensions.push_back({std::nullopt, std::to_string((*w)[1])});
    out_shape.rank = out_shape.dimensions.size();
  }
  return std::nullopt;
}

// Device facts (§4.3): `to_device(&Device::Cpu)`, constructors given `&Device::Cpu` or
// `&x.device()`, and every other operation on the device of its first tensor operand.
ir::DeviceFact TensorDomain::device_of(Eng& eng, NodeId node, const std::string& name,
                                       const std::vector<const Val*>& ins) {
  ir::DeviceFact d;
  if (!op_traits(name).device_argument && !ins.empty()) {
    if (!ins[0]->tid.empty()) {
      d.kind = ir::DeviceKind::same_as;
      d.same_as = ins[0]->tid;
    }
    return d;
  }
  const rust::Body& b = eng.body();
  if (b[node].kind != Kind::Call && b[node].kind != Kind::MethodCall) return d;
  for (NodeId a : b.kids(node)) {
    a = b.peel(a, {Kind::Ref});
    std::string_view t = b.source(a);
    if (t == "Device::Cpu" || t == "candle::Device::Cpu" || t == "candle_core::Device::Cpu") {
      d.kind = ir::DeviceKind::cpu;
      return d;
    }
    const rust::Node& an = b[a];
    if (an.kind == Kind::MethodCall && an.str == "device" && an.text.empty()) {
      const Val* v = eng.lookup(std::string(b.source(an.a)));
      if (v && v->tensor && !v->tid.empty()) {
        d.kind = ir::DeviceKind::same_as;
        d.same_as = v->tid;
        return d;
      }
    }
  }
  return d;
}

// Symbolic output shape (§4.3): rank and dimension expressions where the rule and the operands
// say so; an empty shape otherwise.
ir::TensorShape TensorDomain::shape_of(Eng& eng, NodeId node, const OpRule& rule,
                                       const std::vector<const Val*>& ins) {
  ir::TensorShape out;
  const ir::TensorShape* a = ins.empty() ? nullptr : shape_of_tensor(ins[0]);
  // Candle's binary ops that do not broadcast (`lhs * rhs`, `a.add(&b)`) fail unless both
  // operands have one shape: when the first's is not known, the second's is the result's
  // (gemma's `(gate.apply(&act)? * up)?` with an activation of unknown variant).
  const std::string& rn = rule.name;
  if (!a && ins.size() == 2 && rule.shape == ShapeRule::preserve &&
      (rn == "add" || rn == "sub" || rn == "mul" || rn == "div" || rn == "maximum" ||
       rn == "minimum"))
    a = shape_of_tensor(ins[1]);
  const rust::Body& b = eng.body();
  bool has_args = b[node].kind == Kind::Call || b[node].kind == Kind::MethodCall;
  auto arg = [&](std::uint32_t i) { return has_args ? b.kid(node, i) : rust::kNone; };
  auto is = [&](NodeId n, bool (rust::Node::*pred)() const) {
    return n != rust::kNone && (b[n].*pred)();
  };
  // A dimension argument: a literal, or `D::Minus1`/`D::Minus2` counted from the end.
  auto dim_arg = [&](NodeId n) -> std::optional<std::size_t> {
    if (!a) return std::nullopt;
    return dim_index(eng, n, a->dimensions.size());
  };
  auto number = [](const std::string& e) -> std::optional<std::uint64_t> {
    if (e.empty() || e.size() > 15 || e.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoull(e);
  };
  if (rule.shape == ShapeRule::operation_defined && a && has_args) {
    const std::string& nm = rule.name;
    // `pad_with_same(dim, left, right)` / `pad_with_zeros`: that dimension grows by both sides.
    if (nm == "pad_with_same" || nm == "pad_with_zeros") {
      auto d = dim_arg(arg(0));
      auto l = static_num(eng, arg(1), 0), r = static_num(eng, arg(2), 0);
      if (d) {
        out = *a;
        auto n = number(a->dimensions[*d].expr);
        std::string e = "?";
        if (l && r && *l >= 0 && *r >= 0) {
          if (*l + *r == 0) e = a->dimensions[*d].expr;
          if (n) e = std::to_string(*n + static_cast<std::uint64_t>(*l + *r));
        }
        out.dimensions[*d] = {std::nullopt, e};
      }
    }
    // `repeat((1, h, 1, 1))`: each dimension times its count (candle's `Tensor::repeat`; a
    // shorter shape is not padded there, so only a count per dimension is sized).
    if (nm == "repeat") {
      NodeId t = b.peel(arg(0), {Kind::Ref, Kind::Paren});
      std::vector<NodeId> counts;
      if (t != rust::kNone && (b[t].kind == Kind::Tuple || b[t].kind == Kind::Array))
        counts = elements(b, t);
      else if (t != rust::kNone)
        counts.push_back(t);
      if (counts.size() == a->dimensions.size()) {
        out = *a;
        for (std::size_t i = 0; i < counts.size(); ++i) {
          const std::string& in = a->dimensions[i].expr;
          auto k = dim_product(eng, counts[i], 0);
          std::string e = "?";
          if (k && in != "?" && in != "()") {
            auto x = number(in), y = number(*k);
            std::uint64_t xy = 0;
            e = *k == "1"                                        ? in
                : in == "1"                                      ? *k
                : x && y && !__builtin_mul_overflow(*x, *y, &xy) ? std::to_string(xy)
                                                                 : in + "*" + *k;
          }
          out.dimensions[i] = {std::nullopt, e};
        }
      }
    }
    // `max_pool2d(k)` (stride k), `max_pool2d_with_stride(k, s)`, and the avg ones: the last two
    // dimensions are (l − k) / s + 1.
    if (nm.find("pool2d") != std::string::npos && a->dimensions.size() >= 2) {
      auto k = static_num(eng, arg(0), 0);
      auto st = nm.ends_with("_with_stride") ? static_num(eng, arg(1), 0) : k;
      out = *a;
      for (std::size_t i = a->dimensions.size() - 2; i < a->dimensions.size(); ++i) {
        auto n = number(a->dimensions[i].expr);
        std::string e = "?";
        if (n && k && st && *k >= 1 && *st >= 1 && static_cast<double>(*n) >= *k)
          e = std::to_string(
              (*n - static_cast<std::uint64_t>(*k)) / static_cast<std::uint64_t>(*st) + 1);
        // Symbolic, with the window its own stride: (l − k) / k + 1 = ⌊l / k⌋ (l ≥ k, which the
        // op requires), so `h` becomes `h/2` and `h/2` becomes `h/4`.
        const std::string& in = a->dimensions[i].expr;
        bool whole = k && st && *k == *st && *k >= 1 && *k < 1e6 && std::floor(*k) == *k;
        if (!n && whole) {
          auto kk = static_cast<std::uint64_t>(*k);
          if (plain_name(in)) e = in + "/" + std::to_string(kk);
          if (auto q = dimension_quotient(in); q && q->second < 1000000)
            e = std::string(q->first) + "/" + std::to_string(q->second * kk);
        }
        out.dimensions[i] = {std::nullopt, e};
      }
    }
    if (out.rank) out.source_expr.reset();
    if (out.rank) return out;
  }
  last_cat_.reset();
  switch (rule.shape) {
    case ShapeRule::preserve:
    case ShapeRule::keep_dimension:
      if (a) out = *a;
      break;
    case ShapeRule::concatenate: {
      // `Tensor::cat(&[a, b], d)`: the operands' shape with their sizes along d added; an
      // operand whose shape is not known (a cache read back from the model's state) leaves that
      // size unknown. The first known operand is kept (the new positions a cache appends).
      if (rule.name != "cat" || !has_args) break;
      NodeId arr = b.peel(arg(0), {Kind::Ref});
      const std::size_t n =
          arr != rust::kNone && b[arr].kind == Kind::Array ? b.kids(arr).size() : 0;
      const ir::TensorShape* known = nullptr;
      bool all = n > 0 && ins.size() == n;
      for (const Val* v : ins) {
        const ir::TensorShape* s = shape_of_tensor(v);
        if (s && s->rank && !known) known = s;
        if (!s || !s->rank || (known && s->rank != known->rank)) all = false;
      }
      if (!known) break;
      const std::size_t r = known->dimensions.size();
      std::optional<std::size_t> d = dim_index(eng, arg(1), r);
      if (!d) break;
      out = *known;
      std::string sum;
      std::uint64_t total = 0;
      bool numeric = all;
      for (const Val* v : ins) {
        if (!all) break;
        const std::string& e = shape_of_tensor(v)->dimensions[*d].expr;
        auto k = number(e);
        if (k && total <= UINT64_MAX - *k)
          total += *k;
        else
          numeric = false;
        if (e == "?" || e == "()") numeric = all = false;
        sum += (sum.empty() ? "" : " + ") + e;
      }
      out.dimensions[*d] = {std::nullopt, !all ? "?" : numeric ? std::to_string(total) : sum};
      last_cat_ = CatOperands{*known, *d, !all};
      break;
    }
    case ShapeRule::explicit_argument: {
      NodeId t = b.peel(arg(0), {Kind::Ref});
      if (is(t, &rust::Node::is_tuple_expression) || is(t, &rust::Node::is_array_expression)) {
        for (NodeId d : elements(b, t)) {
          auto k = dim_product(eng, d, 0);
          out.dimensions.push_back({std::nullopt, k ? *k : std::string(b.source(d))});
        }
        out.rank = out.dimensions.size();
        if (a) infer_hole(*a, out);
      } else if (NodeId l = b.peel(t, {Kind::Ref, Kind::Paren});
                 l != rust::kNone && ((b[l].kind == Kind::MethodCall && b[l].str == "as_slice") ||
                                      (b[l].kind == Kind::Path && b[l].is_identifier()))) {
        // `reshape(dims.as_slice())` of a local `Vec` of dimensions the run built, and
        // `reshape(target_dims)` of a local array of them (`let target_dims = &[n_batch, n_ctx,
        // self.n_head, n_state / self.n_head];` in whisper).
        NodeId r = b[l].kind == Kind::Path ? l : b.peel(b[l].a, {Kind::Ref, Kind::Paren});
        const Val* v = r != rust::kNone && b[r].kind == Kind::Path
                           ? eng.lookup(std::string(b[r].str))
                           : nullptr;
        if (v && !v->tensor && v->items && !v->items->empty()) {
          for (const Val& d : *v->items)
            out.dimensions.push_back({std::nullopt, !d.dim.empty() ? d.dim
                                                    : d.num        ? dim_text(*d.num)
                                                                   : "?"});
          out.rank = out.dimensions.size();
        }
      } else if (NodeId m = b.peel(t, {Kind::Ref, Kind::Paren});
                 m != rust::kNone && b[m].kind == Kind::MethodCall && b[m].text.empty() &&
                 (b[m].str == "shape" || b[m].str == "dims")) {
        // `broadcast_as(scores.shape())`, `reshape(x.dims())`, `x.shape().dims()`: the shape of
        // that tensor where the run knows it.
        NodeId r = b.peel(b[m].a, {Kind::Ref, Kind::Paren});
        if (b[m].str == "dims" && r != rust::kNone && b[r].kind == Kind::MethodCall &&
            b[r].text.empty() && b[r].str == "shape")
          r = b.peel(b[r].a, {Kind::Ref, Kind::Paren});
        const Val* v = r != rust::kNone && b[r].kind == Kind::Path
                           ? eng.lookup(std::string(b[r].str))
                           : nullptr;
        if (const ir::TensorShape* s = v && v->tensor ? shape_of_tensor(v) : nullptr;
            s && s->rank) {
          out.dimensions = s->dimensions;
          out.rank = s->rank;
        }
      }
      break;
    }
    case ShapeRule::flatten:
      // `flatten_all()`, `flatten_from(d)`, `flatten_to(d)`, `flatten(d0, d1)` (candle-core): the
      // dimensions from the first to the last flattened become their product.
      if (a && a->rank) {
        const std::size_t r = a->dimensions.size();
        std::optional<std::size_t> from = 0, to = r == 0 ? 0 : r - 1;
        if (rule.name == "flatten_from" || rule.name == "flatten") from = dim_arg(arg(0));
        if (rule.name == "flatten_to") to = dim_arg(arg(0));
        if (rule.name == "flatten") to = dim_arg(arg(1));  // `flatten(0, 2)`: both inclusive
        if (!from || !to || r == 0 || *from > *to) break;
        std::vector<std::string> span;
        for (std::size_t i = *from; i <= *to; ++i)
          span.push_back(a->dimensions[i].expr);
        for (std::size_t i = 0; i < *from; ++i)
          out.dimensions.push_back(a->dimensions[i]);
        out.dimensions.push_back({std::nullopt, product_of(span)});
        for (std::size_t i = *to + 1; i < r; ++i)
          out.dimensions.push_back(a->dimensions[i]);
        out.rank = out.dimensions.size();
      }
      break;
    case ShapeRule::permute_dimensions:
      if (a) {
        out = *a;
        Permutation p = op_traits(rule.name).permutation;
        if (p == Permutation::swap_last_two && out.dimensions.size() >= 2) {
          std::swap(out.dimensions[out.dimensions.size() - 1],
                    out.dimensions[out.dimensions.size() - 2]);
        } else if (p == Permutation::swap_literal_arguments &&
                   is(arg(0), &rust::Node::is_int_literal) &&
                   is(arg(1), &rust::Node::is_int_literal)) {
          auto i = std::strtoull(std::string(b.source(arg(0))).c_str(), nullptr, 10);
          auto j = std::strtoull(std::string(b.source(arg(1))).c_str(), nullptr, 10);
          if (i < out.dimensions.size() && j < out.dimensions.size())
            std::swap(out.dimensions[i], out.dimensions[j]);
          else
            out = {};
        } else if (rule.name == "permute" && has_args &&
                   b.peel(arg(0), {Kind::Ref, Kind::Paren}) != rust::kNone &&
                   (b[b.peel(arg(0), {Kind::Ref, Kind::Paren})].kind == Kind::Tuple ||
                    b[b.peel(arg(0), {Kind::Ref, Kind::Paren})].kind == Kind::Array)) {
          // `permute((0, 2, 1, 3))`: dimension i of the output is the input's dimension p[i];
          // anything but a permutation of 0..rank in literals is not claimed.
          const auto order = elements(b, b.peel(arg(0), {Kind::Ref, Kind::Paren}));
          std::vector<bool> seen(a->dimensions.size(), false);
          bool ok = order.size() == a->dimensions.size();
          for (std::size_t i = 0; ok && i < order.size(); ++i) {
            auto k = static_num(eng, order[i], 0);
            ok = k && *k < static_cast<double>(seen.size()) && !seen[static_cast<std::size_t>(*k)];
            if (ok) {
              seen[static_cast<std::size_t>(*k)] = true;
              out.dimensions[i] = a->dimensions[static_cast<std::size_t>(*k)];
            }
          }
          if (!ok)
            for (auto& d : out.dimensions)
              d = {std::nullopt, "?"};
        } else if (p != Permutation::swap_last_two) {
          for (auto& d : out.dimensions)
            d = {std::nullopt, "?"};
        }
      }
      break;
    case ShapeRule::matrix_product:
      if (a && ins.size() >= 2) {
        const ir::TensorShape* m = shape_of_tensor(ins[1]);
        if (m && a->dimensions.size() == m->dimensions.size() && a->dimensions.size() >= 2) {
          out = *a;
          out.dimensions.back() = m->dimensions.back();
        }
      }
      break;
    case ShapeRule::slice_dimension:
      // `x.i((.., t - 1, ..))`: a full range keeps its dimension, `..n` is n long, an index
      // removes its dimension, `s..` of a dimension of d is d - s long and `s..e` e - s where the
      // numbers are known, another range is `?`; dimensions after the tuple are kept.
      // `x.narrow(1, start, len)`: that dimension is `len` long.
      if (a && rule.name == "i" && has_args) {
        NodeId t = b.peel(arg(0), {Kind::Ref});
        std::vector<NodeId> idx =
            is(t, &rust::Node::is_tuple_expression) ? b.kids(t) : std::vector{t};
        if (idx.size() > a->dimensions.size() || t == rust::kNone) break;
        out.dimensions.clear();
        for (std::size_t i = 0; i < a->dimensions.size(); ++i) {
          if (i >= idx.size()) {
            out.dimensions.push_back(a->dimensions[i]);
            continue;
          }
          const rust::Node& e = b[idx[i]];
          if (e.kind != Kind::Range) continue;  // an index: the dimension goes
          if (e.a == rust::kNone && e.b == rust::kNone) {
            out.dimensions.push_back(a->dimensions[i]);
          } else {
            // `..n`, and in numbers `s..` (to the end), `s..e`, `..=e`, `s..=e`.
            const bool incl = e.str == "..=";
            auto k = e.a == rust::kNone && !incl ? dim_product(eng, e.b, 0) : std::nullopt;
            if (!k) {
              auto whole = [&](NodeId x) -> std::optional<std::int64_t> {
                auto v = static_num(eng, x, 0);
                if (!v || *v < 0 || *v > 1e15 ||
                    *v != static_cast<double>(static_cast<std::int64_t>(*v)))
                  return std::nullopt;
                return static_cast<std::int64_t>(*v);
              };
              std::optional<std::int64_t> lo =
                  e.a == rust::kNone ? std::optional<std::int64_t>(0) : whole(e.a);
              std::optional<std::int64_t> hi;
              if (e.b != rust::kNone) {
                hi = whole(e.b);
                if (hi && incl) ++*hi;
              } else if (auto n = number(a->dimensions[i].expr)) {
                hi = static_cast<std::int64_t>(*n);
              }
              if (lo && hi && *lo >= 0 && *hi >= *lo) k = std::to_string(*hi - *lo);
            }
            out.dimensions.push_back({std::nullopt, k ? *k : "?"});
          }
        }
        out.rank = out.dimensions.size();
      } else if (a && rule.name == "narrow" && has_args) {
        // The dimension a literal or `D::Minus1`/`D::Minus2` (phi3's `up.narrow(D::Minus1, 0,
        // self.i_size)` splitting a fused projection).
        auto d = dim_arg(arg(0));
        if (!d) break;
        out = *a;
        auto k = dim_product(eng, arg(2), 0);
        out.dimensions[*d] = {std::nullopt, k ? *k : "?"};
      } else if (a && (rule.name == "index_select" || rule.name == "gather") && has_args &&
                 ins.size() >= 2) {
        // `xs.index_select(&ids, d)`: dimension d is as long as the 1-D `ids` (the rows a MoE
        // router picked); `xs.gather(&ids, d)` has the shape of `ids`, which has xs's rank.
        const ir::TensorShape* ids = shape_of_tensor(ins[1]);
        auto d = dim_arg(arg(1));
        if (!ids || !ids->rank || !d) break;
        if (rule.name == "gather") {
          if (ids->dimensions.size() == a->dimensions.size()) out = *ids;
        } else if (ids->dimensions.size() == 1) {
          out = *a;
          out.dimensions[*d] = ids->dimensions[0];
        }
      } else if (a && rule.name == "chunk" && has_args && b.kids(node).size() == 2) {
        // `x.chunk(2, D::Minus1)`: the pieces (one value stands for all of them) are that
        // dimension / n long. Candle's pieces are ceil(size / n) long and the last may be shorter,
        // so a size n does not divide is `?`.
        auto dd = dim_arg(arg(1));
        auto n = static_num(eng, arg(0), 0);
        if (!dd || !n || *n < 1) break;
        const std::size_t d = *dd;
        out = *a;
        const std::string& e = a->dimensions[d].expr;
        const bool num = !e.empty() && e.size() < 16 && std::all_of(e.begin(), e.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        const auto size = num ? std::strtoull(e.c_str(), nullptr, 10) : 0;
        const auto pieces = static_cast<std::uint64_t>(*n);
        out.dimensions[d] = {std::nullopt,
                             num && size % pieces == 0 ? std::to_string(size / pieces) : "?"};
      }
      break;
    case ShapeRule::remove_dimension:
      // `squeeze(1)`, `sum(2)`, `mean(D::Minus1)`: that dimension goes (`D::Minus1`/`Minus2`
      // count from the end).
      if (a && has_args && b.kids(node).size() == 1) {
        std::optional<std::size_t> dd = dim_arg(arg(0));
        if (!dd) break;
        const std::size_t d = *dd;
        out = *a;
        out.dimensions.erase(out.dimensions.begin() + static_cast<std::ptrdiff_t>(d));
        out.rank = out.dimensions.size();
      }
      break;
    case ShapeRule::insert_dimension:
      if (a) {
        // `unsqueeze(d)` with a literal d (≤ rank) or `D::Minus1` (the end): a 1 there.
        const std::string t = arg(0) == rust::kNone ? "" : std::string(b.source(arg(0)));
        std::optional<std::size_t> d;
        if (is(arg(0), &rust::Node::is_int_literal)) d = std::strtoull(t.c_str(), nullptr, 10);
        if (t.ends_with("D::Minus1")) d = a->dimensions.size();
        if (d && *d <= a->dimensions.size()) {
          out = *a;
          out.dimensions.insert(out.dimensions.begin() + static_cast<std::ptrdiff_t>(*d),
                                {std::nullopt, "1"});
          out.rank = out.dimensions.size();
          break;
        }
        out.rank = *a->rank + 1;
        for (std::uint64_t i = 0; i < *out.rank; ++i)
          out.dimensions.push_back({std::nullopt, "?"});
      }
      break;
    default:
      break;
  }
  if (out.rank) out.source_expr.reset();
  return out;
}

// `let (b, t, c) = x.dims3()?` / `let [b, t] = x.dims()` names x's dimensions (its contract).
void TensorDomain::record_dims(Eng& eng, NodeId let) {
  const rust::Body& b = eng.body();
  NodeId pat = b[let].a;
  if (pat == rust::kNone) return;
  if (b[pat].kind != Kind::PTuple && b[pat].kind != Kind::PSlice) return;
  ir::Tensor* t = out_.tensor(dims_tid_);
  if (!t || t->shape.rank) return;
  ir::TensorShape shape;
  for (NodeId c : b.kids(pat)) {
    const rust::Node& cn = b[c];
    // A plain name (`B` too, which the lowering reads as a constant pattern) or `_`.
    bool ident = (cn.kind == Kind::PIdent || cn.kind == Kind::PPath) && cn.is_identifier() &&
                 cn.a == rust::kNone && !(cn.flags & (rust::kMut | rust::kRefBinding));
    bool wild = cn.kind == Kind::PWild;
    if (!ident && !wild) return;  // `..` rest patterns: rank unknown
    std::string name = wild ? "_" : std::string(cn.str);
    ir::Dimension d;
    if (name != "_" && name.front() != '_') d.name = name;
    // `_b` (a binding Rust is told is unused) names the same dimension as `b`: shown and bound
    // (`--input-shape b=1`) without the underscore.
    // `_` is a size the code does not name: unknown (`?`), never a name in a product.
    d.expr = name == "_" ? std::string("?")
                         : name.substr(name.find_first_not_of('_') == std::string::npos
                                           ? 0
                                           : name.find_first_not_of('_'));
    shape.dimensions.push_back(std::move(d));
  }
  shape.rank = shape.dimensions.size();
  // The whole `let` as written, as the syntax walker quoted it.
  shape.source_expr = std::string(b.source(let));
  if (shape.source_expr->size() > 120) shape.source_expr.reset();
  t->shape = std::move(shape);
}

}  // namespace cg::analysis::tensor
