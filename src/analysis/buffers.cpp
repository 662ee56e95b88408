// The tensors a constructor computes and keeps in struct fields (buffers.hpp).
#include "analysis/buffers.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "util/deep_stack.hpp"

namespace cg::analysis {
namespace {

using rust::Kind;
using rust::kNone;
using rust::NodeId;

std::string_view last_segment(std::string_view p) {
  auto i = p.rfind("::");
  return i == std::string_view::npos ? p : p.substr(i + 2);
}

// A value of the walk.
struct V {
  enum class K { unknown, scalar, tensor, seq, tuple, strct, dtype, config, vb, weight };
  K k = K::unknown;
  SymValue s;                  // scalar
  std::vector<SymValue> dims;  // tensor (rank known when `ranked`)
  bool ranked = false;         // tensor
  std::string dtype;           // tensor / dtype: "F32", "model" (vb.dtype()), "param:<name>", ""
  std::size_t origin = 0;      // tensor: its creation (buffers of one creation count once)
  std::optional<std::int64_t> len;        // seq
  std::shared_ptr<std::vector<V>> elems;  // tuple / seq of values (array literals)
  std::optional<ConfigRef> cfg;           // config
  std::string prefix;                     // vb
  bool loop_var = false;                  // scalar: a loop's variable (a `{i}` in a prefix)
  std::string loop_name;                  // its name
};

V unknown_v() {
  return {};
}
V scalar_v(SymValue s) {
  V v;
  v.k = V::K::scalar;
  v.s = std::move(s);
  return v;
}

std::optional<std::int64_t> int_of(const SymValue& s) {
  if (s.kind == SymValue::Kind::integer) return s.integer;
  return std::nullopt;
}

std::string dim_text(const SymValue& s) {
  if (s.kind == SymValue::Kind::integer) return std::to_string(s.integer);
  return s.text.empty() ? std::string("?") : s.text;
}

class Walker : public EvalContext {
 public:
  Walker(const rust::Crate& crate, const BufferOptions& opts, ir::ModelIr& ir)
      : crate_(crate), opts_(opts), ir_(ir), binding_(crate, opts.config, opts.built_configs) {}

  // Walks constructor `item` with its parameters bound (config, VarBuilder at "", `--arg`s,
  // DType parameters `param:<name>`).
  void walk_root(std::size_t item, const std::string& reached, bool root) {
    reached_ = reached;
    const rust::Item& f = crate_.items()[item];
    std::vector<V> args;
    for (const auto& p : f.params) {
      V v;
      if (p.type_text.find("VarBuilder") != std::string::npos) {
        v.k = V::K::vb;
      } else if (auto ref = binding_.config_of_type(p.type_text, f.module)) {
        if (auto bound = binding_.bind_root(*ref)) {
          v.k = V::K::config;
          v.cfg = *bound;
        } else if (opts_.built_configs) {
          if (auto b = opts_.built_configs->find(ref->item); b != opts_.built_configs->end()) {
            v.k = V::K::config;
            v.cfg = b->second;
          }
        }
      } else if (last_segment(p.type_text) == "DType") {
        v.k = V::K::dtype;
        v.dtype = "param:" + p.name;
      } else if (root && opts_.args) {
        if (auto a = opts_.args->find(p.name); a != opts_.args->end()) v = scalar_v(a->second);
      }
      args.push_back(std::move(v));
    }
    mult_ = 1;
    budget_ = 400000;
    call(item, args, std::nullopt, "");
  }

  // ---- EvalContext ------------------------------------------------------------------------
  std::optional<SymValue> lookup(std::string_view name) override {
    const V* v = find(name);
    if (!v) return std::nullopt;
    if (v->k == V::K::scalar) return v->s;
    if (v->k == V::K::seq && v->len) {
      SymValue s = SymValue::symbolic(std::string(name), "a Vec");
      s.array_len = v->len;
      return s;
    }
    return std::nullopt;
  }
  std::optional<SymValue> field(const rust::Body& body, NodeId base,
                                std::string_view name) override {
    auto ref = config_at(body, base);
    if (!ref) {
      // A struct the walk built (`DeepSeekV2RopeConfig { qk_rope_head_dim: .., .. }`).
      if (frames_.empty() || &body != frames_.back().body) return std::nullopt;
      const V bv = eval(base);
      if (bv.k == V::K::strct && bv.elems)
        for (const auto& e : *bv.elems)
          if (e.loop_name == name && e.k == V::K::scalar) return e.s;
      return std::nullopt;
    }
    auto r = binding_.field(*ref, name);
    if (r.config) return std::nullopt;
    return r.value;
  }
  std::optional<SymValue> method(const rust::Body& body, NodeId recv, std::string_view name,
                                 const std::vector<SymValue>& args) override {
    auto ref = config_at(body, recv);
    if (!ref) return std::nullopt;
    return binding_.method(*ref, name, args);
  }

 private:
  struct Frame {
    std::size_t item = 0;
    const rust::Body* body = nullptr;
    std::vector<std::map<std::string, V, std::less<>>> scopes;
    std::string prefix;  // the VarBuilder prefix of the constructor running
    std::optional<V> ret;
  };

  const V* find(std::string_view name) const {
    if (frames_.empty()) return nullptr;
    const Frame& f = frames_.back();
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto v = it->find(name);
      if (v != it->end()) return &v->second;
    }
    return nullptr;
  }
  void bind(const std::string& name, V v) {
    if (!frames_.empty()) frames_.back().scopes.back()[name] = std::move(v);
  }
  void assign_existing(const std::string& name, V v) {
    if (frames_.empty()) return;
    Frame& f = frames_.back();
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto e = it->find(name);
      if (e != it->end()) {
        e->second = std::move(v);
        return;
      }
    }
  }

  std::optional<ConfigRef> config_at(const rust::Body& body, NodeId n) {
    if (n == kNone) return std::nullopt;
    const rust::Node& node = body[n];
    if (node.kind == Kind::Ref || node.kind == Kind::Paren) return config_at(body, node.a);
    if (node.kind == Kind::Path) {
      const V* v = find(node.str);
      if (v && v->k == V::K::config) return v->cfg;
      return std::nullopt;
    }
    if (node.kind == Kind::Field) {
      auto base = config_at(body, node.a);
      if (!base) return std::nullopt;
      return binding_.field(*base, node.str).config;
    }
    if (node.kind == Kind::MethodCall && (node.str == "as_ref" || node.str == "clone"))
      return config_at(body, node.a);
    return std::nullopt;
  }

  const rust::Body& body() const { return *frames_.back().body; }
  std::string where(NodeId n) const {
    const rust::Body& b = body();
    return crate_.files()[b.file]->path() + ":" + std::to_string(b[n].line);
  }

  SymValue scalar(NodeId n) { return evaluate(body(), n, *this); }

  V new_tensor(std::vector<SymValue> dims, bool ranked, std::string dtype, NodeId at) {
    V v;
    v.k = V::K::tensor;
    v.dims = std::move(dims);
    v.ranked = ranked;
    v.dtype = std::move(dtype);
    v.origin = ++origins_;
    origin_site_[v.origin] = {where(at), frames_.back().prefix, mult_};
    return v;
  }
  V derived(const V& from, NodeId at) {
    V v = new_tensor(from.dims, from.ranked, from.dtype, at);
    return v;
  }
  V unknown_tensor(NodeId at) { return new_tensor({}, false, "", at); }

  // A shape argument: `(a, b)`, `a`, `&[a, b]`, `()` (inferred: nullopt).
  std::optional<std::vector<SymValue>> shape_arg(NodeId n) {
    const rust::Body& b = body();
    while (n != kNone && (b[n].kind == Kind::Ref || b[n].kind == Kind::Paren))
      n = b[n].a;
    if (n == kNone) return std::nullopt;
    std::vector<SymValue> out;
    if (b[n].kind == Kind::Tuple || b[n].kind == Kind::Array) {
      for (NodeId k : b.kids(n)) {
        if (b[k].kind == Kind::Unit) {
          out.push_back(SymValue::symbolic("()", "inferred"));
          continue;
        }
        V v = eval(k);
        out.push_back(v.k == V::K::scalar ? v.s : scalar(k));
      }
      return out;
    }
    if (b[n].kind == Kind::Unit) return out;
    V v = eval(n);
    if (v.k == V::K::tensor) return std::nullopt;
    if (v.k == V::K::tuple && v.elems) {
      for (const auto& e : *v.elems)
        out.push_back(e.k == V::K::scalar ? e.s : SymValue::symbolic("?", "unknown"));
      return out;
    }
    if (v.k == V::K::scalar) return std::vector<SymValue>{v.s};
    return std::nullopt;
  }

  std::optional<std::int64_t> elements(const std::vector<SymValue>& dims) const {
    std::int64_t n = 1;
    for (const auto& d : dims) {
      auto i = int_of(d);
      if (!i || *i < 0) return std::nullopt;
      n *= *i;
    }
    return n;
  }

  // `reshape(((), 1))`: the `()` is what the element count leaves.
  std::vector<SymValue> infer(std::vector<SymValue> dims, std::optional<std::int64_t> total) {
    std::optional<std::size_t> hole;
    std::int64_t rest = 1;
    bool known = true;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].kind == SymValue::Kind::symbolic && dims[i].text == "()") {
        hole = i;
        continue;
      }
      if (auto x = int_of(dims[i]))
        rest *= *x;
      else
        known = false;
    }
    if (hole) {
      if (total && known && rest > 0 && *total % rest == 0)
        dims[*hole] = SymValue::of_int(*total / rest);
      else
        dims[*hole] = SymValue::symbolic("?", "inferred");
    }
    return dims;
  }

  std::optional<std::size_t> dim_index(NodeId n, std::size_t rank, bool insert) {
    const rust::Body& b = body();
    std::string_view t = b.source(n);
    std::size_t r = rank + (insert ? 1 : 0);
    if (t.find("Minus1") != std::string_view::npos)
      return r >= 1 ? std::optional(r - 1) : std::nullopt;
    if (t.find("Minus2") != std::string_view::npos)
      return r >= 2 ? std::optional(r - 2) : std::nullopt;
    SymValue s = scalar(n);
    if (auto i = int_of(s); i && *i >= 0 && static_cast<std::size_t>(*i) < r)
      return static_cast<std::size_t>(*i);
    return std::nullopt;
  }

  V broadcast(const V& a, const V& b, NodeId at) {
    if (!a.ranked || !b.ranked) return unknown_tensor(at);
    const std::vector<SymValue>& x = a.dims.size() >= b.dims.size() ? a.dims : b.dims;
    const std::vector<SymValue>& y = a.dims.size() >= b.dims.size() ? b.dims : a.dims;
    std::vector<SymValue> out = x;
    const std::size_t off = x.size() - y.size();
    for (std::size_t i = 0; i < y.size(); ++i) {
      auto p = int_of(x[off + i]), q = int_of(y[i]);
      if (p && q) {
        out[off + i] = SymValue::of_int(std::max(*p, *q));
      } else if (q && *q == 1) {
      } else if (p && *p == 1) {
        out[off + i] = y[i];
      } else if (dim_text(x[off + i]) != dim_text(y[i])) {
        out[off + i] = SymValue::symbolic("?", "broadcast");
      }
    }
    return new_tensor(out, true, a.dtype.empty() ? b.dtype : a.dtype, at);
  }

  std::string dtype_of(NodeId n) {
    V v = eval(n);
    if (v.k == V::K::dtype) return v.dtype;
    std::string_view t = body().source(n);
    auto i = t.rfind("::");
    std::string_view last = i == std::string_view::npos ? t : t.substr(i + 2);
    static const std::set<std::string, std::less<>> names = {"F32", "F16", "BF16", "F64", "U8",
                                                             "U32", "I64", "I32",  "I16", "F8E4M3"};
    if (names.count(last)) return std::string(last);
    return "";
  }

  // The dtype of a literal the tensor is built from (`0u32`, `0f32`).
  std::string literal_dtype(NodeId n) {
    std::string_view t = body().source(n);
    static const std::pair<std::string_view, const char*> suffixes[] = {
        {"u32", "U32"}, {"u8", "U8"}, {"i64", "I64"}, {"f32", "F32"}, {"f64", "F64"}};
    for (const auto& [suffix, d] : suffixes)
      if (t.size() > suffix.size() && t.ends_with(suffix)) return d;
    return "";
  }

  // The Rust number type an expression is of, where its text says (`1f32 / x.powf(..)`,
  // `(..) as f32`): the element dtype of a `Vec` a `map` collects; "" when not said.
  std::string number_dtype(NodeId n, int depth = 0) {
    const rust::Body& b = body();
    if (n == kNone || depth > 8) return "";
    const rust::Node& e = b[n];
    static const std::pair<std::string_view, const char*> types[] = {
        {"f32", "F32"}, {"f64", "F64"}, {"u32", "U32"}, {"u8", "U8"}, {"i64", "I64"}};
    switch (e.kind) {
      case Kind::Cast:
        for (const auto& [t, d] : types)
          if (e.str == t) return d;
        return "";
      case Kind::Lit:
        return literal_dtype(n);
      case Kind::Paren:
      case Kind::Block:
        return number_dtype(e.kind == Kind::Block ? b.value_tail(n) : e.a, depth + 1);
      case Kind::Binary: {
        std::string l = number_dtype(e.a, depth + 1);
        return l.empty() ? number_dtype(e.b, depth + 1) : l;
      }
      case Kind::MethodCall:
        // `(0..n).map(move |j| ..)` inside a `flat_map`: the inner closure's number type.
        if (e.str == "map" && e.kids_count == 1 && b[b.kid(n, 0)].kind == Kind::Closure)
          return number_dtype(b[b.kid(n, 0)].a, depth + 1);
        return number_dtype(e.a, depth + 1);
      case Kind::If: {
        std::string t = number_dtype(e.b, depth + 1);
        return t.empty() && e.c != kNone ? number_dtype(e.c, depth + 1) : t;
      }
      case Kind::Path:
        for (const auto& [t, d] : types)
          if (e.str.starts_with(std::string(t) + "::")) return d;
        return "";
      default:
        return "";
    }
  }

  // ---- `Tensor::..` constructors ----------------------------------------------------------
  std::optional<V> tensor_fn(std::string_view name, NodeId n, const std::vector<NodeId>& a) {
    auto arg_int = [&](std::size_t i) -> SymValue {
      if (i >= a.size()) return SymValue::symbolic("?", "missing");
      SymValue v = scalar(a[i]);
      // `0f32`: a number with a type suffix.
      if (!v.concrete() && body()[a[i]].kind == Kind::Lit) {
        std::string t(body().source(a[i]));
        const auto end = t.find_first_not_of("0123456789_.");
        if (end != std::string::npos && end > 0) {
          std::string digits;
          for (char ch : t.substr(0, end))
            if (ch != '_') digits += ch;
          if (digits.find('.') == std::string::npos && digits.size() < 18)
            v = SymValue::of_int(std::stoll(digits));
          else
            v = SymValue::of_real(std::strtod(digits.c_str(), nullptr));
        }
      }
      return v;
    };
    if (name == "arange" && a.size() >= 2) {
      SymValue lo = arg_int(0), hi = arg_int(1);
      SymValue len = binary_value(
          "-", hi, lo, std::string(body().source(a[1])) + " - " + std::string(body().source(a[0])));
      // `arange(0f32, dim as f32)`: a whole number of steps of 1.
      if (len.kind == SymValue::Kind::real && len.real >= 0 && len.real < 9e15)
        len = SymValue::of_int(static_cast<std::int64_t>(std::ceil(len.real)));
      std::string dt = literal_dtype(a[0]);
      if (dt.empty()) dt = literal_dtype(a[1]);
      return new_tensor({len}, true, dt, n);
    }
    if (name == "arange_step" && a.size() >= 3) {
      SymValue lo = arg_int(0), hi = arg_int(1), st = arg_int(2);
      SymValue len = SymValue::symbolic(std::string(body().source(n)), "a step");
      if (auto l = int_of(lo), h = int_of(hi), s = int_of(st); l && h && s && *s > 0 && *h >= *l)
        len = SymValue::of_int((*h - *l + *s - 1) / *s);
      return new_tensor({len}, true, literal_dtype(a[0]), n);
    }
    if ((name == "zeros" || name == "ones") && a.size() >= 2) {
      auto s = shape_arg(a[0]);
      return s ? new_tensor(*s, true, dtype_of(a[1]), n) : unknown_tensor(n);
    }
    if (name == "full" && a.size() >= 2) {
      auto s = shape_arg(a[1]);
      return s ? new_tensor(*s, true, literal_dtype(a[0]), n) : unknown_tensor(n);
    }
    if ((name == "tril2" || name == "eye") && a.size() >= 2) {
      SymValue d = arg_int(0);
      return new_tensor({d, d}, true, dtype_of(a[1]), n);
    }
    if ((name == "from_vec" || name == "from_slice") && a.size() >= 2) {
      V data = eval(a[0]);
      auto s = shape_arg(a[1]);
      if (!s) return unknown_tensor(n);
      return new_tensor(infer(*s, data.k == V::K::seq ? data.len : std::nullopt), true,
                        data.k == V::K::seq ? data.dtype : "", n);
    }
    if (name == "new" && !a.empty()) {
      V data = eval(a[0]);
      if (data.k == V::K::seq && data.len && !data.elems)
        return new_tensor({SymValue::of_int(*data.len)}, true, data.dtype, n);
      if (data.k == V::K::scalar) return new_tensor({}, true, "", n);
      return unknown_tensor(n);
    }
    if ((name == "cat" || name == "stack") && a.size() >= 2) {
      NodeId list = a[0];
      while (list != kNone && (body()[list].kind == Kind::Ref || body()[list].kind == Kind::Paren))
        list = body()[list].a;
      std::vector<V> parts;
      if (list != kNone && body()[list].kind == Kind::Array)
        for (NodeId k : body().kids(list))
          parts.push_back(eval(k));
      if (parts.empty() || !std::all_of(parts.begin(), parts.end(), [&](const V& p) {
            return p.k == V::K::tensor && p.ranked && p.dims.size() == parts[0].dims.size();
          }))
        return unknown_tensor(n);
      const std::size_t rank = parts[0].dims.size();
      auto d = dim_index(a[1], rank, name == "stack");
      if (!d) return unknown_tensor(n);
      std::vector<SymValue> out = parts[0].dims;
      if (name == "stack") {
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(*d),
                   SymValue::of_int(static_cast<std::int64_t>(parts.size())));
      } else {
        SymValue sum = SymValue::of_int(0);
        for (const auto& p : parts)
          sum = binary_value("+", sum, p.dims[*d], "?");
        out[*d] = sum;
      }
      return new_tensor(out, true, parts[0].dtype, n);
    }
    return std::nullopt;
  }

  // ---- tensor methods -------------------------------------------------------------------------
  V tensor_method(const V& t, std::string_view m, NodeId n, const std::vector<NodeId>& a) {
    static const std::set<std::string, std::less<>> same = {
        "sin",       "cos",       "exp",        "log",   "sqrt", "sqr",   "neg",    "abs",
        "recip",     "tanh",      "relu",       "silu",  "gelu", "powf",  "affine", "contiguous",
        "to_device", "ones_like", "zeros_like", "floor", "ceil", "round", "clamp",  "elu"};
    if (m == "clone" || m == "detach" || m == "copy") return t;
    if (same.count(m)) {
      if (m == "contiguous" || m == "to_device") return t;
      return derived(t, n);
    }
    if (m == "to_dtype" && !a.empty()) {
      std::string d = dtype_of(a[0]);
      if (!d.empty() && d == t.dtype) return t;
      V v = derived(t, n);
      v.dtype = d;
      return v;
    }
    if (!t.ranked) return unknown_tensor(n);
    const std::size_t rank = t.dims.size();
    if (m == "elem_count") {
      auto e = elements(t.dims);
      return scalar_v(e ? SymValue::of_int(*e) : SymValue::symbolic("?", "elements"));
    }
    if (m == "dim" && !a.empty()) {
      auto d = dim_index(a[0], rank, false);
      return d ? scalar_v(t.dims[*d]) : unknown_v();
    }
    if (m == "reshape" && !a.empty()) {
      auto s = shape_arg(a[0]);
      if (!s) return unknown_tensor(n);
      V v = t;
      v.dims = infer(*s, elements(t.dims));
      return v;
    }
    if (m == "matmul" || m == "broadcast_matmul") {
      V r = a.empty() ? V{} : eval(a[0]);
      if (r.k != V::K::tensor || !r.ranked || rank < 2 || r.dims.size() < 2)
        return unknown_tensor(n);
      std::vector<SymValue> out = t.dims;
      out.back() = r.dims.back();
      return new_tensor(out, true, t.dtype, n);
    }
    if (m == "t" && rank >= 2) {
      V v = t;
      std::swap(v.dims[rank - 1], v.dims[rank - 2]);
      return v;
    }
    if ((m == "transpose" || m == "narrow" || m == "unsqueeze" || m == "squeeze" ||
         m == "sum_keepdim" || m == "mean_keepdim" || m == "max_keepdim") &&
        !a.empty()) {
      auto d = dim_index(a[0], rank, m == "unsqueeze");
      if (!d) return unknown_tensor(n);
      V v = t;
      if (m == "transpose") {
        auto e = a.size() > 1 ? dim_index(a[1], rank, false) : std::nullopt;
        if (!e) return unknown_tensor(n);
        std::swap(v.dims[*d], v.dims[*e]);
        return v;
      }
      if (m == "narrow") {
        if (a.size() < 3) return unknown_tensor(n);
        v.dims[*d] = scalar(a[2]);
        return v;
      }
      if (m == "unsqueeze") {
        v.dims.insert(v.dims.begin() + static_cast<std::ptrdiff_t>(*d), SymValue::of_int(1));
        return v;
      }
      if (m == "squeeze") {
        v.dims.erase(v.dims.begin() + static_cast<std::ptrdiff_t>(*d));
        return v;
      }
      v = derived(t, n);
      v.dims[*d] = SymValue::of_int(1);
      return v;
    }
    if ((m == "broadcast_as" || m == "expand") && !a.empty()) {
      auto s = shape_arg(a[0]);
      if (!s) return unknown_tensor(n);
      V v = t;
      v.dims = *s;
      return v;
    }
    if (m == "repeat" && !a.empty()) {
      auto s = shape_arg(a[0]);
      if (!s || s->size() < rank) return unknown_tensor(n);
      std::vector<SymValue> out = *s;
      const std::size_t off = s->size() - rank;
      for (std::size_t i = 0; i < rank; ++i)
        out[off + i] = binary_value("*", t.dims[i], (*s)[off + i], "?");
      return new_tensor(out, true, t.dtype, n);
    }
    if (m == "flatten_all") {
      auto e = elements(t.dims);
      V v = t;
      v.dims = {e ? SymValue::of_int(*e) : SymValue::symbolic("?", "flatten")};
      return v;
    }
    static const std::set<std::string, std::less<>> binary = {"broadcast_add",
                                                              "broadcast_sub",
                                                              "broadcast_mul",
                                                              "broadcast_div",
                                                              "add",
                                                              "sub",
                                                              "mul",
                                                              "div",
                                                              "maximum",
                                                              "minimum",
                                                              "broadcast_maximum",
                                                              "broadcast_minimum"};
    static const std::set<std::string, std::less<>> compare = {
        "ge",           "gt",           "le",           "lt",
        "eq",           "ne",           "broadcast_ge", "broadcast_gt",
        "broadcast_le", "broadcast_lt", "broadcast_eq", "broadcast_ne"};
    if ((binary.count(m) || compare.count(m)) && !a.empty()) {
      V r = eval(a[0]);
      V out = r.k == V::K::tensor ? broadcast(t, r, n) : derived(t, n);
      if (compare.count(m)) out.dtype = "U8";
      return out;
    }
    if (m == "where_cond" && a.size() >= 2) {
      V on_true = eval(a[0]);
      V v = derived(t, n);
      v.dtype = on_true.k == V::K::tensor ? on_true.dtype : "";
      return v;
    }
    return unknown_tensor(n);
  }

  // ---- sequences (Vec, iterators, ranges) ---------------------------------------------------
  std::optional<V> seq_method(const V& s, std::string_view m, NodeId n,
                              const std::vector<NodeId>& a) {
    V out = s;
    out.elems.reset();
    auto arg = [&](std::size_t i) { return i < a.size() ? scalar(a[i]) : SymValue{}; };
    if (m == "iter" || m == "into_iter" || m == "collect" || m == "cloned" || m == "copied" ||
        m == "rev" || m == "enumerate" || m == "to_vec" || m == "clone" || m == "as_slice" ||
        m == "as_ref")
      return m == "clone" ? s : out;
    if (m == "len") {
      if (s.len) return scalar_v(SymValue::of_int(*s.len));
      return scalar_v(SymValue::symbolic(std::string(body().source(n)), "a length not followed"));
    }
    if (m == "step_by") {
      auto k = int_of(arg(0));
      out.len = s.len && k && *k > 0 ? std::optional((*s.len + *k - 1) / *k) : std::nullopt;
      return out;
    }
    if (m == "take" || m == "skip") {
      auto k = int_of(arg(0));
      if (!s.len || !k) {
        out.len.reset();
      } else {
        out.len = m == "take" ? std::min(*s.len, *k) : std::max<std::int64_t>(0, *s.len - *k);
      }
      return out;
    }
    if (m == "zip") {
      V o = a.empty() ? V{} : eval(a[0]);
      out.len = s.len && o.k == V::K::seq && o.len ? std::optional(std::min(*s.len, *o.len))
                                                   : std::nullopt;
      return out;
    }
    if (m == "map" || m == "for_each") {
      // A closure run once per element: what it constructs is built that many times.
      if (!a.empty() && body()[a[0]].kind == Kind::Closure) {
        run_closure(a[0], s.len);
        if (m == "map") out.dtype = number_dtype(body()[a[0]].a);
      }
      return out;
    }
    if (m == "filter" || m == "flat_map" || m == "filter_map" || m == "chain") {
      out.len.reset();
      if (m == "flat_map" && !a.empty() && body()[a[0]].kind == Kind::Closure)
        out.dtype = number_dtype(body()[a[0]].a);
      return out;
    }
    return std::nullopt;
  }

  void run_closure(NodeId c, std::optional<std::int64_t> times) {
    const rust::Body& b = body();
    const std::optional<std::uint64_t> saved = mult_;
    if (!times || *times < 0)
      mult_.reset();
    else if (mult_)
      mult_ = *mult_ * static_cast<std::uint64_t>(*times);
    Frame& f = frames_.back();
    f.scopes.emplace_back();
    for (NodeId p : b.kids(c))
      if (b[p].kind == Kind::PIdent) {
        V v = scalar_v(SymValue::symbolic(std::string(b[p].str), "a closure parameter"));
        v.loop_var = true;
        v.loop_name = std::string(b[p].str);
        bind(std::string(b[p].str), v);
      }
    if (b[c].a != kNone) eval(b[c].a);
    frames_.back().scopes.pop_back();
    mult_ = saved;
  }

  // ---- calls --------------------------------------------------------------------------------
  // Calls a crate function with `args` (`self_v`: the receiver of a method).
  V call(std::size_t item, const std::vector<V>& args, std::optional<V> self_v,
         const std::string& inherited_prefix) {
    if (frames_.size() > 24) return unknown_v();
    if (std::count(stack_.begin(), stack_.end(), item) > 1) return unknown_v();
    const rust::Item& f = crate_.items()[item];
    if (f.cfg.state == rust::Tri::False) return unknown_v();
    const rust::Body& b = crate_.lowered(item);
    if (b.root == kNone) return unknown_v();
    Frame fr;
    fr.item = item;
    fr.body = &b;
    fr.scopes.emplace_back();
    fr.prefix = inherited_prefix;
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      V v = i < args.size() ? args[i] : V{};
      if (v.k == V::K::unknown && last_segment(f.params[i].type_text) == "DType") {
        v.k = V::K::dtype;
        v.dtype = "param:" + f.params[i].name;
      }
      if (v.k == V::K::unknown)
        if (auto ref = binding_.config_of_type(f.params[i].type_text, f.module))
          if (auto bound = binding_.bind_root(*ref)) {
            v.k = V::K::config;
            v.cfg = *bound;
          }
      if (v.k == V::K::vb) fr.prefix = v.prefix;
      fr.scopes.back()[f.params[i].name] = v;
    }
    if (self_v) fr.scopes.back()["self"] = *self_v;
    frames_.push_back(std::move(fr));
    stack_.push_back(item);
    V r = eval(b.root);
    if (frames_.back().ret) r = *frames_.back().ret;
    stack_.pop_back();
    frames_.pop_back();
    return r;
  }

  std::optional<std::size_t> resolve_fn(const std::string& path) const {
    for (const auto& c : crate_.resolve_in(frames_.back().item, path))
      if (c.kind == rust::Candidate::Kind::Item) {
        const auto& it = crate_.items()[c.item];
        if ((it.kind == rust::ItemKind::Function || it.kind == rust::ItemKind::Method) &&
            it.cfg.state != rust::Tri::False)
          return c.item;
      }
    return std::nullopt;
  }

  V call_expr(NodeId n) {
    const rust::Body& b = body();
    const rust::Node& node = b[n];
    std::vector<NodeId> a = b.kids(n);
    if (node.a == kNone || b[node.a].kind != Kind::Path) {
      for (NodeId k : a)
        eval(k);
      return unknown_v();
    }
    const std::string path(b[node.a].str);
    const std::string_view last = last_segment(path);
    if ((path == "Some" || path == "Ok" || last == "new") && a.size() == 1) {
      // A view into `path` itself (a view of a temporary substring would dangle).
      const std::string_view type =
          path.size() > 5 ? last_segment(std::string_view(path).substr(0, path.size() - 5))
                          : std::string_view{};
      if (path == "Some" || path == "Ok" || type == "Arc" || type == "Rc" || type == "Box" ||
          type == "RefCell" || type == "Mutex" || type == "RwLock" || type == "Cell")
        return eval(a[0]);
    }
    if (path.rfind("Tensor::", 0) == 0 || path.rfind("candle::Tensor::", 0) == 0 ||
        path.rfind("candle_core::Tensor::", 0) == 0)
      if (auto t = tensor_fn(last, n, a)) return *t;
    std::vector<V> args;
    bool any_vb = false;
    for (NodeId k : a) {
      args.push_back(eval(k));
      any_vb = any_vb || args.back().k == V::K::vb || args.back().k == V::K::weight;
    }
    if (auto item = resolve_fn(path); item && crate_.is_local(*item)) {
      std::string prefix = frames_.back().prefix;
      return call(*item, args, std::nullopt, prefix);
    }
    if (any_vb) {
      V w;
      w.k = V::K::weight;
      return w;
    }
    if (last == "new" && path.find("HashMap") != std::string::npos) return unknown_v();
    return unknown_v();
  }

  V method_expr(NodeId n) {
    const rust::Body& b = body();
    const rust::Node& node = b[n];
    const std::string_view m = node.str;
    std::vector<NodeId> a = b.kids(n);
    V recv = eval(node.a);
    switch (recv.k) {
      case V::K::vb: {
        if ((m == "pp" || m == "push_prefix") && !a.empty()) {
          V v = recv;
          V seg = eval(a[0]);
          // `vb.pp(format!("h.{i}"))`: the literal, each `{..}` an index.
          const rust::Node& an = b[a[0]];
          if (an.kind == Kind::Macro && last_segment(an.str) == "format") {
            std::string_view t = an.text;
            auto q0 = t.find('"'), q1 = q0 == std::string_view::npos ? q0 : t.find('"', q0 + 1);
            if (q1 != std::string_view::npos) {
              std::string lit(t.substr(q0 + 1, q1 - q0 - 1)), out;
              for (std::size_t i = 0; i < lit.size(); ++i) {
                if (lit[i] != '{') {
                  out += lit[i];
                  continue;
                }
                auto close = lit.find('}', i);
                if (close == std::string::npos) break;
                out += "{i}";
                i = close;
              }
              seg = scalar_v(SymValue::of_string(out));
            }
          }
          std::string s = seg.loop_var ? "{i}"
                          : seg.k == V::K::scalar && seg.s.kind == SymValue::Kind::string
                              ? seg.s.text
                          : seg.k == V::K::scalar ? dim_text(seg.s)
                                                  : std::string(b.source(a[0]));
          if (s.size() >= 2 && s.front() == '"') s = s.substr(1, s.size() - 2);
          v.prefix = recv.prefix.empty() ? s : recv.prefix + "." + s;
          return v;
        }
        if (m == "dtype") {
          V d;
          d.k = V::K::dtype;
          d.dtype = "model";
          return d;
        }
        if (m == "clone" || m == "set_dtype" || m == "rename_f") return recv;
        if (m == "device") return unknown_v();
        V w;
        w.k = V::K::weight;
        return w;
      }
      case V::K::weight: {
        V w;
        w.k = V::K::weight;
        return w;
      }
      case V::K::tensor:
        return tensor_method(recv, m, n, a);
      case V::K::seq:
        if (auto r = seq_method(recv, m, n, a)) return *r;
        break;
      case V::K::dtype:
      case V::K::strct:
        if (m == "clone" || m == "as_ref") return recv;
        break;
      default:
        break;
    }
    if (m == "clone" && recv.k != V::K::unknown) return recv;
    // `cfg.partial_rotary_factor.as_ref().map(|v| ..)` of a `None`: still `None`.
    if (recv.k == V::K::scalar && recv.s.kind == SymValue::Kind::none &&
        (m == "map" || m == "as_ref" || m == "and_then" || m == "as_deref" || m == "cloned" ||
         m == "copied" || m == "filter"))
      return recv;
    // A crate method on a struct value (`self.rotary.clone()` handled above): not followed.
    std::vector<V> args;
    bool any_vb = false;
    for (NodeId k : a) {
      args.push_back(eval(k));
      any_vb = any_vb || args.back().k == V::K::vb;
    }
    if (any_vb) {
      V w;
      w.k = V::K::weight;
      return w;
    }
    SymValue s = scalar(n);
    if (s.concrete()) return scalar_v(s);
    if (recv.k == V::K::config || recv.k == V::K::scalar) return scalar_v(s);
    return unknown_v();
  }

  // ---- statements and expressions ---------------------------------------------------------
  void bind_pattern(NodeId pat, const V& v) {
    const rust::Body& b = body();
    if (pat == kNone) return;
    const rust::Node& p = b[pat];
    if (p.kind == Kind::PIdent) {
      bind(std::string(p.str), v);
      return;
    }
    if (p.kind == Kind::PTuple) {
      auto kids = b.kids(pat);
      for (std::size_t i = 0; i < kids.size(); ++i)
        bind_pattern(kids[i],
                     v.k == V::K::tuple && v.elems && i < v.elems->size() ? (*v.elems)[i] : V{});
    }
  }

  V block(NodeId n) {
    const rust::Body& b = body();
    frames_.back().scopes.emplace_back();
    V last;
    const NodeId tail = b.value_tail(n);
    for (NodeId st : b.kids(n)) {
      if (frames_.back().ret) break;
      const rust::Node& s = b[st];
      if (s.cfg == rust::Tri::False) continue;
      if (s.kind == Kind::Let) {
        V v = s.b != kNone ? eval(s.b) : V{};
        // `let v: Vec<f32> = ..`: the element dtype.
        if (v.k == V::K::seq && s.str.starts_with("Vec<") && s.str.size() > 5) {
          const std::string_view el = s.str.substr(4, s.str.size() - 5);
          static const std::pair<std::string_view, const char*> types[] = {
              {"f32", "F32"}, {"f64", "F64"}, {"u32", "U32"}, {"u8", "U8"}, {"i64", "I64"}};
          for (const auto& [t, d] : types)
            if (el == t) v.dtype = d;
        }
        bind_pattern(s.a, v);
        continue;
      }
      if (s.kind == Kind::ExprStmt) {
        V v = eval(s.a);
        if (s.a == tail || st == tail) last = v;
        continue;
      }
      if (s.kind == Kind::Item || s.kind == Kind::MacroStmt) continue;
      V v = eval(st);
      if (st == tail) last = v;
    }
    frames_.back().scopes.pop_back();
    return last;
  }

  V join(const std::vector<V>& vs) {
    if (vs.empty()) return {};
    // Arms giving one shape (or one struct) are that; others are not known.
    const V& f = vs.front();
    for (const auto& v : vs) {
      if (v.k != f.k) return unknown_v();
      if (v.k == V::K::tensor &&
          (!v.ranked || !f.ranked || v.dims.size() != f.dims.size() || v.dtype != f.dtype))
        return unknown_v();
      if (v.k == V::K::tensor)
        for (std::size_t i = 0; i < v.dims.size(); ++i)
          if (dim_text(v.dims[i]) != dim_text(f.dims[i])) return unknown_v();
    }
    return f;
  }

  V eval(NodeId n) {
    if (n == kNone) return {};
    if (budget_ == 0) return {};
    --budget_;
    // Nesting thousands deep (a generated method chain): not followed, rather than the stack.
    if (depth_ >= 500) return {};
    struct Nest {
      int& d;
      explicit Nest(int& x) : d(x) { ++d; }
      ~Nest() { --d; }
      Nest(const Nest&) = delete;
      Nest& operator=(const Nest&) = delete;
    } nest(depth_);
    const rust::Body& b = body();
    const rust::Node& node = b[n];
    switch (node.kind) {
      case Kind::Try:
      case Kind::Paren:
      case Kind::Ref:
      case Kind::Await:
        return eval(node.a);
      case Kind::Lit:
        return scalar_v(scalar(n));
      case Kind::Path: {
        if (const V* v = find(node.str)) return *v;
        std::string_view last = last_segment(node.str);
        if (node.str.find("DType::") != std::string_view::npos) {
          V d;
          d.k = V::K::dtype;
          d.dtype = std::string(last);
          return d;
        }
        SymValue s = scalar(n);
        if (s.concrete()) return scalar_v(s);
        return unknown_v();
      }
      case Kind::Field: {
        V base = eval(node.a);
        if (base.k == V::K::strct && base.elems) {
          // struct fields are kept as tuple elements named in `loop_name`
          for (const auto& e : *base.elems)
            if (e.loop_name == node.str) return e;
          return unknown_v();
        }
        if (base.k == V::K::config) {
          auto r = binding_.field(*base.cfg, node.str);
          if (r.config) {
            V c;
            c.k = V::K::config;
            c.cfg = *r.config;
            return c;
          }
          return scalar_v(r.value);
        }
        if (base.k == V::K::tuple && base.elems) {
          std::string_view f = node.str;
          if (!f.empty() && f.find_first_not_of("0123456789") == std::string_view::npos) {
            auto i = static_cast<std::size_t>(std::stoul(std::string(f)));
            if (i < base.elems->size()) return (*base.elems)[i];
          }
        }
        return unknown_v();
      }
      case Kind::Call:
        return call_expr(n);
      case Kind::MethodCall:
        return method_expr(n);
      case Kind::Binary: {
        V l = eval(node.a), r = eval(node.b);
        if (l.k == V::K::tensor && r.k == V::K::tensor) return broadcast(l, r, n);
        if (l.k == V::K::tensor) return derived(l, n);
        if (r.k == V::K::tensor) return derived(r, n);
        return scalar_v(scalar(n));
      }
      case Kind::Unary: {
        V v = eval(node.a);
        if (v.k == V::K::tensor) return node.str == "*" ? v : derived(v, n);
        if (node.str == "*") return v;
        return scalar_v(scalar(n));
      }
      case Kind::Cast:
        return scalar_v(scalar(n));
      case Kind::Range: {
        V v;
        v.k = V::K::seq;
        SymValue lo = node.a != kNone ? scalar(node.a) : SymValue::of_int(0);
        SymValue hi = node.b != kNone ? scalar(node.b) : SymValue{};
        if (auto l = int_of(lo), h = int_of(hi); l && h)
          v.len = std::max<std::int64_t>(0, *h - *l + (node.str == "..=" ? 1 : 0));
        return v;
      }
      case Kind::Tuple: {
        V v;
        v.k = V::K::tuple;
        v.elems = std::make_shared<std::vector<V>>();
        for (NodeId k : b.kids(n))
          v.elems->push_back(eval(k));
        return v;
      }
      case Kind::Array: {
        V v;
        v.k = V::K::seq;
        v.elems = std::make_shared<std::vector<V>>();
        for (NodeId k : b.kids(n))
          v.elems->push_back(eval(k));
        v.len = static_cast<std::int64_t>(v.elems->size());
        return v;
      }
      case Kind::ArrayRepeat: {
        V v;
        v.k = V::K::seq;
        eval(node.a);
        v.len = int_of(scalar(node.b));
        return v;
      }
      case Kind::Block:
        return block(n);
      case Kind::Return: {
        V v = eval(node.a);
        if (!frames_.back().ret) frames_.back().ret = v;
        return v;
      }
      case Kind::If: {
        SymValue c =
            node.a != kNone && b[node.a].kind != Kind::LetCond ? scalar(node.a) : SymValue{};
        if (c.kind == SymValue::Kind::boolean) {
          if (c.boolean) return eval(node.b);
          return node.c != kNone ? eval(node.c) : V{};
        }
        if (node.a != kNone && b[node.a].kind == Kind::LetCond) eval(b[node.a].b);
        const std::string at = where(n);
        alt_.push_back(at + "#0/2");
        std::vector<V> arms{eval(node.b)};
        alt_.back() = at + "#1/2";
        if (node.c != kNone) arms.push_back(eval(node.c));
        alt_.pop_back();
        return join(arms);
      }
      case Kind::Match: {
        SymValue s = scalar(node.a);
        std::vector<NodeId> arms = b.kids(n);
        auto pattern = [&](NodeId arm) { return std::string(b[arm].text); };
        // A config value that is there (`&cfg.rope_scaling` holding an object, a number): the
        // `None` arm does not run.
        const V sv = eval(node.a);
        if (s.kind != SymValue::Kind::none &&
            (sv.k == V::K::config || (sv.k == V::K::scalar && sv.s.concrete())))
          std::erase_if(arms, [&](NodeId arm) { return pattern(arm) == "None"; });
        // An arm that fails (`=> candle::bail!(..)`) builds no model: no alternative.
        std::erase_if(arms, [&](NodeId arm) {
          const NodeId c = b[arm].c;
          if (c == kNone || b[c].kind != Kind::Macro) return false;
          const std::string_view mac = last_segment(b[c].str);
          return mac == "bail" || mac == "panic" || mac == "unimplemented" || mac == "todo" ||
                 mac == "unreachable";
        });
        if (s.kind == SymValue::Kind::none) {
          for (NodeId arm : arms) {
            std::string t = pattern(arm);
            if (t == "None" || t.rfind("None ", 0) == 0 || t.rfind("None|", 0) == 0 ||
                t.rfind("None\n", 0) == 0)
              return eval(b[arm].c);
          }
        }
        std::vector<V> vs;
        const std::string at = where(n);
        alt_.emplace_back();
        for (std::size_t k = 0; k < arms.size(); ++k) {
          if (b[arms[k]].cfg == rust::Tri::False) continue;
          // One arm left (the others fail or cannot run): it is decided.
          alt_.back() = arms.size() < 2
                            ? alt_.front()
                            : at + "#" + std::to_string(k) + "/" + std::to_string(arms.size());
          vs.push_back(eval(b[arms[k]].c));
        }
        alt_.pop_back();
        return join(vs);
      }
      case Kind::For: {
        V it = eval(node.b);
        const std::optional<std::uint64_t> saved = mult_;
        if (it.k != V::K::seq || !it.len)
          mult_.reset();
        else if (mult_)
          mult_ = *mult_ * static_cast<std::uint64_t>(*it.len);
        frames_.back().scopes.emplace_back();
        if (node.a != kNone && b[node.a].kind == Kind::PIdent) {
          V lv = scalar_v(SymValue::symbolic(std::string(b[node.a].str), "a loop variable"));
          lv.loop_var = true;
          lv.loop_name = std::string(b[node.a].str);
          bind(std::string(b[node.a].str), lv);
        }
        eval(node.c);
        frames_.back().scopes.pop_back();
        mult_ = saved;
        return {};
      }
      case Kind::While:
      case Kind::Loop: {
        const std::optional<std::uint64_t> saved = mult_;
        mult_.reset();
        eval(node.kind == Kind::While ? node.b : node.a);
        mult_ = saved;
        return {};
      }
      case Kind::Assign: {
        V v = eval(node.b);
        if (node.a != kNone && b[node.a].kind == Kind::Path)
          assign_existing(std::string(b[node.a].str), v);
        return {};
      }
      case Kind::Struct:
        return structure(n);
      case Kind::Closure:
        return {};
      default:
        for (NodeId k : b.kids(n))
          eval(k);
        return {};
    }
  }

  // A struct literal: its tensor fields that the walk made are buffers.
  V structure(NodeId n) {
    const rust::Body& b = body();
    const rust::Node& node = b[n];
    std::optional<std::size_t> type;
    for (const auto& c : crate_.resolve_in(frames_.back().item, std::string(node.str)))
      if (c.kind == rust::Candidate::Kind::Item &&
          crate_.items()[c.item].kind == rust::ItemKind::Struct)
        type = c.item;
    V out;
    out.k = V::K::strct;
    out.elems = std::make_shared<std::vector<V>>();
    for (NodeId fi : b.kids(n)) {
      if (b[fi].cfg == rust::Tri::False) continue;
      const std::string name(b[fi].str);
      V v;
      if (b[fi].flags & rust::kShorthand) {
        const V* found = find(name);
        if (found) v = *found;
      } else {
        v = eval(b[fi].a);
      }
      v.loop_name = name;
      out.elems->push_back(v);
      if (!type) continue;
      const rust::Item& st = crate_.items()[*type];
      const rust::Field* fd = nullptr;
      for (const auto& f : st.fields)
        if (f.name == name) fd = &f;
      if (!fd || last_segment(fd->base_type) != "Tensor") continue;
      if (fd->container != rust::Container::None && fd->container != rust::Container::Option &&
          fd->container != rust::Container::Arc && fd->container != rust::Container::Rc)
        continue;
      if (v.k == V::K::weight || v.k == V::K::vb) continue;
      if (v.k == V::K::scalar && v.s.kind == SymValue::Kind::none) continue;
      const NodeId at = (b[fi].flags & rust::kShorthand) ? fi : b[fi].a;
      record(st, name, v, at == kNone ? fi : at);
    }
    return out;
  }

  void record(const rust::Item& st, const std::string& field_name, const V& v, NodeId at) {
    const std::string source = where(at);
    if (v.k == V::K::tensor && recorded_.count(v.origin)) return;
    ir::Buffer buf;
    buf.owner_type = st.qualified;
    buf.field = field_name;
    buf.source = source;
    buf.reached = reached_;
    if (v.k == V::K::tensor) {
      recorded_.insert(v.origin);
      const auto& site = origin_site_.at(v.origin);
      buf.created_at = site.where;
      buf.instance = site.prefix;
      buf.instances = site.mult;
      if (v.ranked) {
        buf.shape.rank = v.dims.size();
        for (const auto& d : v.dims)
          buf.shape.dimensions.push_back({std::nullopt, dim_text(d)});
      }
      if (v.dtype.rfind("param:", 0) == 0 || v.dtype == "model") {
        buf.dtype_param = v.dtype == "model" ? "vb.dtype()" : v.dtype.substr(6);
      } else if (!v.dtype.empty()) {
        buf.dtype = v.dtype;
      }
    } else {
      // A tensor field the walk did not follow: its size is not known, but it is there.
      buf.created_at = source;
      buf.instance = frames_.back().prefix;
      buf.instances = mult_;
    }
    // The outermost undecided branch it was made in (arms of one branch are alternatives).
    for (const auto& a : alt_)
      if (!a.empty()) {
        buf.alternative = a;
        break;
      }
    buf.id = "buffer:" + st.qualified + ":" + field_name + ":" + source +
             (v.k == V::K::tensor ? ":" + buf.created_at : std::string());
    // The same line reached by two calls (two tables from one `RotaryEmbedding::new`): each
    // its own record.
    if (const int k = ids_[buf.id]++; k > 0) buf.id += "#" + std::to_string(k);
    ir_.buffers.push_back(std::move(buf));
  }

  struct Site {
    std::string where, prefix;
    std::optional<std::uint64_t> mult;
  };

  const rust::Crate& crate_;
  const BufferOptions& opts_;
  ir::ModelIr& ir_;
  ConfigBinding binding_;
  std::vector<Frame> frames_;
  std::vector<std::size_t> stack_;
  std::optional<std::uint64_t> mult_ = 1;
  std::size_t budget_ = 0;
  std::size_t origins_ = 0;
  std::unordered_map<std::size_t, Site> origin_site_;
  std::set<std::size_t> recorded_;
  std::string reached_;
  int depth_ = 0;                   // eval calls open
  std::map<std::string, int> ids_;  // records per id, so that each stays its own
  std::vector<std::string> alt_;    // undecided branches open: "file:line#arm/arms"
};

std::optional<std::size_t> item_of_function(const rust::Crate& crate, const ir::ModelIr& ir,
                                            const std::string& fid) {
  for (const auto& f : ir.functions)
    if (f.id == fid)
      for (std::size_t i : crate.find(f.qualified_name))
        if (crate.items()[i].cfg.state != rust::Tri::False) return i;
  return std::nullopt;
}

}  // namespace

namespace {
void build_buffers_here(const rust::Crate& crate, const BufferOptions& opts, ir::ModelIr& ir);
}  // namespace

// On the reserved deep stack, as the inventory and the dataflow run: the walk's nesting bound
// decides, the same in every build (sanitizer frames are several times larger).
void build_buffers(const rust::Crate& crate, const BufferOptions& opts, ir::ModelIr& ir) {
  util::run_on_deep_stack([&] { build_buffers_here(crate, opts, ir); });
}

namespace {
void build_buffers_here(const rust::Crate& crate, const BufferOptions& opts, ir::ModelIr& ir) {
  if (ir.components.size() != 1) return;
  const ir::Component& comp = ir.components.front();
  auto ctor = item_of_function(crate, ir, comp.constructor);
  if (!ctor) return;
  Walker w(crate, opts, ir);
  w.walk_root(*ctor, "constructor", true);
  // A crate type the root's forward takes as an argument (llama's `cache: &mut Cache`): its
  // caller builds one, with the type's own constructor.
  std::set<std::size_t> seen;
  for (const auto& fid : comp.entrypoints) {
    auto fitem = item_of_function(crate, ir, fid);
    if (!fitem || crate.items()[*fitem].name != "forward") continue;
    const rust::Item& f = crate.items()[*fitem];
    for (const auto& p : f.params) {
      std::string t = p.type_text;
      for (const char* strip : {"&mut ", "&"})
        if (t.rfind(strip, 0) == 0) t = t.substr(std::string(strip).size());
      if (t == "Tensor" || t.find('<') != std::string::npos) continue;
      for (const auto& c : crate.resolve(f.module, t)) {
        if (c.kind != rust::Candidate::Kind::Item ||
            crate.items()[c.item].kind != rust::ItemKind::Struct || !seen.insert(c.item).second)
          continue;
        for (std::size_t m : crate.methods(c.item, "new")) {
          if (crate.items()[m].cfg.state == rust::Tri::False) continue;
          w.walk_root(m, "forward argument `" + p.name + "`", false);
          break;
        }
      }
    }
  }
}

}  // namespace

}  // namespace cg::analysis
