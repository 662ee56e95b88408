// The tensor domain's answers for values that are not operations: literals, paths, fields of
// module instances (parameters, config-bound numbers, submodules), `let` annotations, parameters
// of inlined functions, and the element type of host data.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "analysis/interp/option_pattern.hpp"
#include "analysis/tensor/domain.hpp"
#include "analysis/tensor/dtype.hpp"
#include "rust/literal.hpp"
#include "util/text.hpp"

namespace cg::analysis::tensor {
namespace {

using rust::Kind;

bool mentions(const std::string& s, const char* w) {
  return s.find(w) != std::string::npos;
}

std::string last_segment(const std::string& p) {
  return std::string(last_path_segment(p));
}

std::string peel_generics(std::string t) {
  while (!t.empty() && (t[0] == '&' || t[0] == ' '))
    t.erase(0, 1);
  if (t.rfind("mut ", 0) == 0) t = t.substr(4);
  if (t.rfind("dyn ", 0) == 0) t = t.substr(4);
  auto lt = t.find('<');
  if (lt != std::string::npos) t = t.substr(0, lt);
  return t;
}

bool tensor_type(const std::string& t) {
  std::string b = last_segment(peel_generics(t));
  while (!b.empty() && (b[0] == '&' || b[0] == ' '))
    b.erase(0, 1);
  if (b.rfind("mut ", 0) == 0) b = b.substr(4);
  return b == "Tensor" || b == "Var";
}

bool var_type(const std::string& t) {
  return last_segment(peel_generics(t)) == "Var";
}

std::string strip_result(std::string t) {
  auto lt = t.find('<');
  if (lt != std::string::npos &&
      (t.rfind("Result", 0) == 0 || t.rfind("Option", 0) == 0 || mentions(t, "::Result<")))
    return t.substr(lt + 1, t.rfind('>') - lt - 1);
  return t;
}

// The last `let <name> = ..` under `n` ending before byte `before` (preorder, as written).
rust::NodeId let_of(const rust::Body& b, rust::NodeId n, std::string_view name,
                    std::uint32_t before, int depth) {
  rust::NodeId best = rust::kNone;
  if (n == rust::kNone || depth > 64 || b[n].start >= before) return best;
  const rust::Node& nd = b[n];
  if (nd.kind == Kind::Let && nd.a != rust::kNone) {
    const rust::Node& p = b[nd.a];
    // Not the `let` the call is in (`let mask = Tensor::from_slice(&mask, ..)`).
    if (p.kind == Kind::PIdent && p.is_identifier() && p.str == name && nd.end <= before) best = n;
  }
  auto visit = [&](rust::NodeId c) {
    rust::NodeId r = let_of(b, c, name, before, depth + 1);
    if (r != rust::kNone) best = r;
  };
  visit(nd.a);
  visit(nd.b);
  visit(nd.c);
  for (rust::NodeId c : b.kids(n))
    visit(c);
  return best;
}

}  // namespace

const std::string& TensorDomain::fid_of(std::size_t item) const {
  if (fids_.size() <= item) fids_.resize(crate_.items().size());
  std::string& fid = fids_[item];
  if (fid.empty()) {
    const auto& it = crate_.items()[item];
    fid = ir::function_id(it.qualified, it.cfg.predicates);
  }
  return fid;
}

std::string TensorDomain::src(Eng& eng, NodeId n) const {
  return crate_.files()[crate_.items()[eng.item()].file]->path() + ":" +
         std::to_string(eng.node(n).line);
}

// The struct/enum item the impl of method `item` is for.
std::ptrdiff_t TensorDomain::owner_item(std::size_t item) const {
  const auto& it = crate_.items()[item];
  if (it.impl < 0) return -1;
  const auto& impl = crate_.impls()[static_cast<std::size_t>(it.impl)];
  for (const auto& c : crate_.resolve(impl.module, impl.self_base))
    if (c.kind == rust::Candidate::Kind::Item) return static_cast<std::ptrdiff_t>(c.item);
  return -1;
}

std::ptrdiff_t TensorDomain::resolve_type(const std::string& module,
                                          const std::string& type) const {
  std::string t = peel_generics(type);
  if (t.empty()) return -1;
  for (const auto& c : crate_.resolve(module, t)) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    auto k = crate_.items()[c.item].kind;
    if (k == rust::ItemKind::Struct || k == rust::ItemKind::Enum)
      return static_cast<std::ptrdiff_t>(c.item);
  }
  return -1;
}

std::ptrdiff_t TensorDomain::pick_method(std::ptrdiff_t type_item, const std::string& name) const {
  if (type_item < 0) return -1;
  for (std::size_t m : crate_.methods(static_cast<std::size_t>(type_item), name))
    if (crate_.items()[m].cfg.state != rust::Tri::False) return static_cast<std::ptrdiff_t>(m);
  return -1;
}

// The config the constructor of `type_item` stores whole in field `f`, evaluated once per pair.
std::shared_ptr<const ConfigRef> TensorDomain::constructor_config(std::ptrdiff_t type_item,
                                                                  const std::string& f) {
  auto key = std::make_pair(type_item, f);
  auto it = ctor_configs_.find(key);
  if (it == ctor_configs_.end()) {
    std::shared_ptr<const ConfigRef> c;
    if (binding_ && type_item >= 0)
      if (auto r = binding_->constructor_field_config(static_cast<std::size_t>(type_item), f))
        c = std::make_shared<const ConfigRef>(std::move(*r));
    it = ctor_configs_.emplace(std::move(key), std::move(c)).first;
  }
  return it->second;
}

bool TensorDomain::field_ever_written(std::ptrdiff_t type_item, const std::string& f) {
  if (!written_fields_) {
    written_fields_.emplace();
    for (std::size_t i = 0; i < crate_.items().size(); ++i) {
      const rust::Item& it = crate_.items()[i];
      if (it.kind != rust::ItemKind::Function && it.kind != rust::ItemKind::Method) continue;
      const rust::Body& b = crate_.lowered(i);
      // `if let Some(x) = &mut p` / `match &mut p`: the pattern reaches into the payload; the
      // Option itself keeps its variant.
      std::set<NodeId> scrutinees;
      for (NodeId n = 0; n < b.size(); ++n) {
        if (b[n].kind == Kind::LetCond && b[n].b != rust::kNone) scrutinees.insert(b[n].b);
        if (b[n].kind == Kind::Match && b[n].a != rust::kNone) scrutinees.insert(b[n].a);
      }
      for (NodeId n = 0; n < b.size(); ++n) {
        const rust::Node& nd = b[n];
        NodeId place = rust::kNone;
        if (nd.kind == Kind::Assign || nd.kind == Kind::CompoundAssign) place = nd.a;
        if (nd.kind == Kind::MethodCall && interp::option_mutator(nd.str)) place = nd.a;
        if (nd.kind == Kind::Ref && (nd.flags & rust::kMut) && !scrutinees.count(n)) place = nd.a;
        // Every field on the place's way (`self.caches[i].k = ..` writes `caches` and `k`); the
        // owner's type where the chain starts at `self` or at a parameter of a crate type, else
        // any type (-1).
        std::vector<std::pair<NodeId, std::string>> chain;
        while (place != rust::kNone &&
               (b[place].kind == Kind::Field || b[place].kind == Kind::Index ||
                b[place].kind == Kind::Paren)) {
          if (b[place].kind == Kind::Field) chain.emplace_back(place, std::string(b[place].str));
          place = b[place].a;
        }
        if (chain.empty()) continue;
        std::ptrdiff_t owner = -1;
        if (place != rust::kNone && b[place].kind == Kind::Path) {
          if (b[place].is_self()) owner = owner_item(i);
          for (const auto& p : it.params)
            if (b[place].is_identifier() && p.name == b[place].str)
              owner = resolve_type(it.module, p.type_text);
        }
        // Only the field read first off the owner has the owner's type; deeper ones any type.
        for (std::size_t k = 0; k < chain.size(); ++k)
          written_fields_->insert({k + 1 == chain.size() ? owner : -1, chain[k].second});
      }
    }
  }
  return written_fields_->count({type_item, f}) > 0 || written_fields_->count({-1, f}) > 0;
}

// A method a trait of the crate (or of a dependency) adds to candle's `Tensor` (`impl SplitOp for
// Tensor { fn split(&self, ..) }`), when Tensor has no method of that name itself (an inherent
// method wins, as in Rust) and no crate-local type is named `Tensor`; -1 otherwise.
std::ptrdiff_t TensorDomain::tensor_trait_method(const std::string& name) const {
  if (cat_.lookup(name).known()) return -1;
  std::ptrdiff_t found = -1;
  for (const auto& im : crate_.impls()) {
    if (im.trait.empty() || last_path_segment(im.self_base) != "Tensor" ||
        im.cfg.state == rust::Tri::False)
      continue;
    for (std::size_t m : im.methods) {
      const rust::Item& it = crate_.items()[m];
      if (it.name != name || it.cfg.state == rust::Tri::False ||
          it.self_kind == rust::SelfKind::None)
        continue;
      if (found >= 0) return -1;  // two traits add it: the one in scope is not decided here
      found = static_cast<std::ptrdiff_t>(m);
    }
  }
  if (found < 0) return -1;
  for (const auto& it : crate_.items())
    if (it.name == "Tensor" && it.kind == rust::ItemKind::Struct) return -1;
  return found;
}

Val number_val(const SymValue& s) {
  Val v;
  if (s.kind == SymValue::Kind::integer) v.num = static_cast<double>(s.integer);
  if (s.kind == SymValue::Kind::real) {
    v.num = s.real;
    v.real = true;
  }
  if (s.kind == SymValue::Kind::boolean) v.num = s.boolean ? 1 : 0;
  return v;
}

// The element types of a tuple type written `(A, B)`, `Option<(A, B)>` or `&mut (A, B)`; empty
// when the type is no tuple.
static std::vector<std::string> tuple_parts(std::string t) {
  auto trim = [](std::string& x) {
    while (!x.empty() && (x.front() == ' ' || x.front() == '&'))
      x.erase(0, 1);
    if (x.rfind("mut ", 0) == 0) x.erase(0, 4);
    while (!x.empty() && x.back() == ' ')
      x.pop_back();
  };
  trim(t);
  if (t.rfind("Option<", 0) == 0 && t.back() == '>') t = t.substr(7, t.size() - 8);
  trim(t);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return {};
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : t.substr(1, t.size() - 2)) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      trim(cur);
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  trim(cur);
  if (!cur.empty()) parts.push_back(cur);
  return parts.size() >= 2 ? parts : std::vector<std::string>{};
}

Val TensorDomain::typed_val(const std::string& module, const std::string& type_text,
                            const std::string& base) {
  Val v;
  // A tuple of modules (`cross_attn: Option<(MultiHeadAttention, LayerNorm)>`): each element its
  // own typed value, so `if let Some((attn, ln)) = &self.cross_attn` binds each (a tuple holding a
  // tensor stays one opaque value, as before).
  if (auto parts = tuple_parts(type_text); !parts.empty()) {
    std::vector<Val> elems;
    for (const auto& part : parts) {
      elems.push_back(typed_val(module, part, ""));
      if (elems.back().tensor) {
        elems.clear();
        break;
      }
    }
    if (!elems.empty()) {
      v.elems = std::make_shared<const std::vector<Val>>(std::move(elems));
      return v;
    }
  }
  const std::string& t = base.empty() ? type_text : base;
  if (tensor_type(t) && !mentions(type_text, "Vec") && !mentions(type_text, "Option")) {
    v.tensor = true;
    v.grad = var_type(t) ? Grad::trainable : Grad::unknown;
    return v;
  }
  v.type_item = resolve_type(module, t);
  if (v.type_item < 0) {
    // External types only (`Linear`); primitives (`usize`, `f64`) are scalars.
    std::string ext = last_segment(peel_generics(t));
    if (!ext.empty() && std::isupper(static_cast<unsigned char>(ext[0]))) v.ext_type = ext;
  }
  return v;
}

Val TensorDomain::literal(Eng& eng, NodeId n) {
  const rust::Node& nd = eng.node(n);
  Val v;
  if (ctor_ && nd.kind == Kind::Lit && nd.lit == rust::LitKind::Str) {
    if (auto text = rust::decode_string_literal(nd.str)) v.word = *text;
    return v;
  }
  if (!nd.is_int_literal() && !nd.is_float_literal()) return v;
  std::string s(nd.str);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  v.num = std::strtod(s.c_str(), nullptr);
  // `2.0`, `1e-6`, `1f64`: a float; `2`, `2usize`: an integer (hex `0xf` has no float suffix).
  const bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  v.real = nd.is_float_literal() ||
           (!hex && (s.find("f32") != std::string::npos || s.find("f64") != std::string::npos));
  v.grad = Grad::frozen;
  return v;
}

// `e as T`: a cast to a float type makes the number a float; to an integer type, truncates it
// toward zero (Rust's `as` from a float saturates; a number out of the type's range is left
// unknown rather than wrapped).
Val TensorDomain::cast(Eng& eng, NodeId n, Val v) {
  const std::string_view to = eng.node(n).str;
  if (to == "f32" || to == "f64") {
    v.real = true;
  } else if (v.num && !to.empty() && (to[0] == 'u' || to[0] == 'i')) {
    const double t = std::trunc(*v.num);
    if ((to[0] == 'u' && t < 0) || std::fabs(t) > 9.0e15)
      v.num.reset();
    else
      v.num = t;
    v.real = false;
  }
  return v;
}

Val TensorDomain::path(Eng& eng, NodeId n) {
  const rust::Node& nd = eng.node(n);
  Val v;
  if (!nd.is_scoped_identifier()) return v;
  if (interp::names_variant(nd.str, "None")) {
    v.variant = Val::Variant::none;
    return v;
  }
  // `D::Minus1`: the dimension counted from the end, resolved by `to_index` or a shape rule.
  for (std::string_view d : {"D::Minus1", "D::Minus2"})
    if (nd.str == d || nd.str.ends_with("::" + std::string(d))) {
      v.word = std::string(d.substr(3));
      return v;
    }
  if (nd.str.rfind("DType::", 0) == 0 || nd.str.rfind("candle_core::DType::", 0) == 0 ||
      nd.str.rfind("candle::DType::", 0) == 0) {
    v.dtype = std::string(last_path_segment(nd.str));
    v.grad = Grad::frozen;
  }
  return v;
}

Val TensorDomain::unbound(Eng& eng, NodeId n) const {
  Val v;
  if (eng.node(n).str == "None") v.variant = Val::Variant::none;
  return v;
}

Val TensorDomain::unary(Eng& eng, NodeId n, Val v) {
  if (v.num && eng.node(n).str == "-") v.num = -*v.num;
  return v;
}

Val TensorDomain::aggregate(Eng& eng, NodeId n, std::vector<Val> elems) {
  Val out;
  for (auto& v : elems)
    if (v.tensor) {
      out = v;
      break;
    }
  // A tuple's elements stay apart, so `let (q, k) = (..)` / `Ok((q, k))` bind each its own.
  bool carries = std::any_of(elems.begin(), elems.end(), [](const Val& v) {
    return v.tensor || v.type_item >= 0 || !v.ext_type.empty() || v.num || v.elems ||
           !v.word.empty() || v.fn || v.items || !v.modules.empty() || v.fields || v.config;
  });
  if (eng.node(n).kind == Kind::Tuple && carries) {
    out.elems = std::make_shared<const std::vector<Val>>(std::move(elems));
  } else {
    out.elems.reset();
  }
  if (eng.node(n).kind == Kind::Array && !out.tensor) {
    // Outside constructor runs, an element of no known number is its expression, as a shape's
    // dimension it is (`&[n_batch, n_ctx, self.n_head, n_state / self.n_head]`, then
    // `reshape(target_dims)`: whisper's heads), when the others are numbers or dimensions.
    const auto kids = eng.body().kids(n);
    if (!ctor_ && kids.size() == elems.size())
      for (std::size_t i = 0; i < elems.size(); ++i) {
        Val& e = elems[i];
        const Kind k = eng.node(kids[i]).kind;
        if (!e.num && e.dim.empty() && !e.tensor && e.type_item < 0 && e.ext_type.empty() &&
            !e.fn && !e.items && !e.elems && !e.fields && e.modules.empty() && e.word.empty() &&
            (k == Kind::Field || k == Kind::Binary || k == Kind::Path))
          e.dim = std::string(eng.body().source(kids[i]));
      }
    if (auto c = collection(elems)) out = std::move(*c);
  }
  return out;
}

// In a constructor run, an array of known values is a collection: `vec![block(..)?, ..]` of
// closures or layers is applied in order (as one filled by `push`), `&[(3, 64, "features.0"),
// ..]` is iterated.
std::optional<Val> TensorDomain::collection(std::vector<Val>& elems) const {
  bool known = !elems.empty() && std::all_of(elems.begin(), elems.end(), [](const Val& v) {
    return v.fn || v.items || !v.modules.empty() || v.elems || v.num || !v.word.empty();
  });
  // Elsewhere, an array of numbers (`&[nope_dim, rope_dim]`) or of a tensor's dimensions
  // (`&[n_batch, n_ctx, self.n_head, n_state / self.n_head]`), iterated, indexed or a shape.
  const bool numbers = !elems.empty() && elems.size() <= 1024 &&
                       std::all_of(elems.begin(), elems.end(), [](const Val& v) {
                         return (v.num || !v.dim.empty()) && !v.tensor && !v.elems;
                       });
  if (!(ctor_ ? known : numbers)) return std::nullopt;
  Val out;
  out.items = std::make_shared<const std::vector<Val>>(std::move(elems));
  return out;
}

// `&[&a, &b]` contributes every tensor element (cat/stack).
void TensorDomain::array_argument(std::vector<Val> elems, std::vector<Val>& args) {
  bool any = false;
  for (auto& v : elems)
    if (v.tensor) {
      args.push_back(std::move(v));
      any = true;
    }
  if (any) return;
  auto c = collection(elems);
  args.push_back(c ? std::move(*c) : Val{});
}

Val TensorDomain::let_value(Eng& eng, NodeId let, Val v) {
  if (!dims_tid_.empty()) record_dims(eng, let);
  const std::string ty(eng.node(let).str);
  if (!ty.empty() && !v.tensor && v.type_item < 0) {
    Val tv = typed_val(crate_.items()[eng.item()].module, ty, "");
    if (tv.tensor || tv.type_item >= 0) v = tv;
  }
  return v;
}

Val TensorDomain::structure(Eng& eng, NodeId n) {
  const rust::Body& b = eng.body();
  auto fields = std::make_shared<std::map<std::string, Val>>();
  for (NodeId fi : b.kids_view(n))
    (*fields)[std::string(b[fi].str)] = b[fi].a != rust::kNone ? eng.eval(b[fi].a) : Val{};
  if (b[n].a != rust::kNone) eng.eval(b[n].a);  // `..base`
  const auto& it = crate_.items()[eng.item()];
  std::string type(b[n].str);
  Val out;
  if (type == "Self" || type.starts_with("Self::")) {
    if (std::ptrdiff_t owner = owner_item(eng.item()); owner >= 0 && type == "Self")
      out.type_item = owner;
  } else {
    out = typed_val(it.module, type, "");
    out.tensor = false;
  }
  out.fields = std::move(fields);
  return out;
}

Val TensorDomain::field(Eng& eng, NodeId n, Val base) {
  const std::string f(eng.node(n).str);
  const std::string& fid = fid_of(eng.item());
  // A field of a struct value whose literal was evaluated: what was written there.
  if (base.fields)
    if (auto w = base.fields->find(f); w != base.fields->end()) {
      const Val& v = w->second;
      if (v.tensor || v.fn || v.items || v.fields || v.num || v.elems || !v.word.empty() ||
          !v.ext_type.empty()) {
        Val out = v;
        out.field = f;
        return out;
      }
    }
  Val out;
  // `self.cfg.kv_lora_rank`: a field of a config the constructor stored whole.
  if (base.config && binding_) {
    FieldResult r = binding_->field(*base.config, f);
    if (r.config) {
      out.config = std::make_shared<const ConfigRef>(std::move(*r.config));
    } else if (r.value.elements) {
      // `cfg.blocks[stage_idx]` of `blocks: [3, 3, 9, 3]`: the array's numbers, indexable.
      auto es = std::make_shared<std::vector<Val>>();
      for (const auto& e : *r.value.elements)
        es->push_back(number_val(e));
      out.elems = std::move(es);
    } else {
      out = number_val(r.value);
    }
    out.field = f;
    return out;
  }
  if (base.type_item >= 0) {
    const auto& owner = crate_.items()[static_cast<std::size_t>(base.type_item)];
    for (const auto& fl : owner.fields) {
      if (fl.name != f) continue;
      Val typed = typed_val(owner.module, fl.type_text, fl.base_type);
      out = typed;
      if (!typed.tensor && typed.type_item < 0 && typed.ext_type.empty()) {
        out.num = constructor_number(base.type_item, f, &base);
        out.real = fl.type_text == "f64" || fl.type_text == "f32";
      }
      if (root_run_ && binding_ && typed.type_item >= 0 && !typed.tensor)
        out.config = constructor_config(base.type_item, f);
      // Outside a root's run only the instances' own constructor calls decide it.
      out.fresh_none = instance_none(base.type_item, f, base) ||
                       (root_run_ && constructor_none(base.type_item, f));
      // Written `None` by every constructor and by nothing else (no assignment, `take`,
      // `insert`, `&mut` borrow of a field of that name anywhere): it is `None` on every call,
      // so `if let Some(dea) = &self.dea` never runs (rwkv_v7's V7b-only attention).
      if (out.fresh_none && !field_ever_written(base.type_item, f))
        out.variant = Val::Variant::none;
      // Written `Some(..)` by the constructor call that built these instances, and by nothing
      // after: `if let Some((attn, ln)) = &mut self.cross_attn` runs its arm.
      else if (!typed.tensor && instance_some(base.type_item, f, base) &&
               !field_ever_written(base.type_item, f))
        out.variant = Val::Variant::some;
      if (typed.tensor &&
          (fl.container == rust::Container::None || fl.container == rust::Container::Ref ||
           fl.container == rust::Container::Arc)) {
        out.tid = ir::contract_tensor_id(fid, "self." + f);
        auto ti = out_.add_tensor(out.tid, f, ir::TensorRole::parameter, fid);
        if (typed.grad == Grad::trainable) {
          ir_.tensors[ti].requires_grad = true;
          run_.trainable.insert(out.tid);
        }
      }
      break;
    }
  }
  out.field = f;
  for (const auto& m : base.modules) {
    auto it = children_.find(m);
    if (it == children_.end()) continue;
    for (const ir::Module* c : it->second)
      if (c->field && *c->field == f) out.modules.insert(c->id);
  }
  // A tuple field's elements denote the field's modules of their own type.
  if (out.elems && !out.modules.empty()) {
    auto es = std::make_shared<std::vector<Val>>(*out.elems);
    for (Val& e : *es) {
      std::string tname = e.type_item >= 0
                              ? crate_.items()[static_cast<std::size_t>(e.type_item)].name
                              : e.ext_type;
      for (const auto& id : out.modules) {
        auto mi = module_by_id_.find(id);
        if (mi != module_by_id_.end() && !tname.empty() && mi->second->type_name == tname)
          e.modules.insert(id);
      }
    }
    out.elems = std::move(es);
  }
  // A wrapper layer (`struct Linear { inner: candle_nn::Linear, span: Span }` whose forward is
  // `self.inner.forward(xs)`): the inventory folds the inner layer into the wrapper's module, which
  // then has no child modules of its own. The inner layer field denotes that same module, so its
  // forward finds the weight (shapes, multiply-adds) and links the parameters.
  bool layer = pick_method(out.type_item, "forward") >= 0 ||
               (!out.ext_type.empty() && cat_.lookup_method(out.ext_type, "forward").known());
  if (out.modules.empty() && layer && !out.tensor)
    for (const auto& m : base.modules)
      if (!children_.count(m) && params_by_module_.count(m)) out.modules.insert(m);
  if (!out.tensor || out.tid.empty()) return out;
  // A raw tensor field read links the parameters of the owning module whose key ends in `f`.
  for (const auto& m : base.modules) {
    auto it = params_by_module_.find(m);
    if (it == params_by_module_.end()) continue;
    for (std::size_t pi : it->second) {
      const auto& key = ir_.parameters[pi].key;
      bool ends = key == f ||
                  (key.size() > f.size() && key.compare(key.size() - f.size(), f.size(), f) == 0 &&
                   key[key.size() - f.size() - 1] == '.');
      if (!ends) continue;
      ir::Tensor& pt = *out_.tensor(out.tid);
      pt.parameter = ir_.parameters[pi].id;
      if (ir_.parameters[pi].shape && !pt.shape.rank) {
        for (std::uint64_t d : *ir_.parameters[pi].shape)
          pt.shape.dimensions.push_back({std::nullopt, std::to_string(d)});
        pt.shape.rank = pt.shape.dimensions.size();
      }
    }
  }
  return out;
}

std::optional<std::string> TensorDomain::host_dtype(Eng& eng, NodeId arg, NodeId call) {
  const rust::Body& b = eng.body();
  arg = b.peel(arg, {Kind::Ref});
  if (arg == rust::kNone) return std::nullopt;
  const rust::Node& an = b[arg];
  if (an.is_macro_invocation() || an.is_array_expression() || an.is_int_literal() ||
      an.is_float_literal())
    return named_dtype(std::string(b.source(arg)));
  // `f32::MIN`, `f64::NEG_INFINITY`: a constant of a primitive type names its element.
  if (std::string_view path = b.source(arg); an.kind == Kind::Path && !an.is_identifier()) {
    const std::string_view first = path.substr(0, path.find("::"));
    for (std::string_view prim : {"f16", "bf16", "f32", "f64", "u8", "u32", "i64"})
      if (first == prim) return named_dtype(std::string(first));
    return std::nullopt;
  }
  if (!an.is_identifier()) return std::nullopt;
  std::string_view name = b[arg].str;
  const auto& item = crate_.items()[eng.item()];
  NodeId let = let_of(b, b.root, name, b[call].start, 0);
  if (let != rust::kNone) {
    const rust::Node& ln = b[let];
    if (!ln.str.empty()) {
      if (auto d = named_dtype(std::string(ln.str))) return d;
    }
    // Host data built in place; a call result (`x.to_vec1()?`, `load(..)`) names no element.
    // `.collect()` of an iterator chain names its element in the closures; any other call's
    // argument types say nothing about what it returns.
    if (ln.b == rust::kNone) return std::nullopt;
    const rust::Node& val = b[ln.b];
    bool collect = val.kind == Kind::MethodCall && val.str == "collect" && val.text.empty();
    if (val.is_macro_invocation() || val.is_array_expression() || collect)
      return named_dtype(std::string(b.source(ln.b)));
    return std::nullopt;
  }
  for (const auto& p : item.params)
    if (p.name == name) return named_dtype(p.type_text);
  return std::nullopt;
}

void TensorDomain::mark_host_dtype(Eng& eng, const Val& v, const std::string& dtype, NodeId node) {
  ir::Tensor* t = out_.tensor(v.tid);
  if (!t || t->dtype != "Unknown") return;
  t->dtype = dtype;
  ir::Evidence e;
  e.kind = ir::EvidenceKind::inferred;
  e.confidence = ir::Confidence::proven;
  e.source = src(eng, node);
  e.detail = "static dtype from the element type of the host data";
  t->evidence.push_back(std::move(e));
}

// ---- calls into crate-local functions ----------------------------------------------------------

Val TensorDomain::index(Eng&, NodeId, Val v, Val i) {
  // `pieces[0]` of a `Vec` a run filled (`split_res.push(..)`) or an array of known values.
  if (!v.tensor && v.items && i.num && *i.num >= 0 && *i.num == std::floor(*i.num) &&
      *i.num < static_cast<double>(v.items->size()))
    return (*v.items)[static_cast<std::size_t>(*i.num)];
  if (v.tensor || !v.elems || !i.num || *i.num < 0 || *i.num != std::floor(*i.num) ||
      *i.num >= static_cast<double>(v.elems->size()))
    return v;
  return (*v.elems)[static_cast<std::size_t>(*i.num)];
}

std::optional<Val> TensorDomain::assign(Eng& eng, NodeId n, Val v) {
  const rust::Body& b = eng.body();
  if (!root_run_ || b[n].kind != Kind::Assign) return v;
  NodeId base = b[n].a;
  bool place = false;
  while (base != rust::kNone && (b[base].kind == Kind::Field || b[base].kind == Kind::Index)) {
    base = b[base].a;
    place = true;
  }
  if (!place || base == rust::kNone || b[base].kind != Kind::Path) return v;
  const std::string root(b[base].str);
  const auto& params = crate_.items()[eng.item()].params;
  bool state = root == "self" || std::any_of(params.begin(), params.end(),
                                             [&](const rust::Param& p) { return p.name == root; });
  if (!state) return v;
  std::vector<const Val*> stored;
  if (v.elems) {
    for (const auto& e : *v.elems)
      if (e.tensor) stored.push_back(&e);
  } else if (v.tensor) {
    stored.push_back(&v);
  }
  if (stored.empty()) return v;
  record_store(eng, n, stored);
  return v;
}

Val TensorDomain::parameter(std::size_t item, std::size_t i, Val v) {
  // An inlined call from a root's run: the argument's shape is the callee's contract tensor's
  // in that context.
  if (v.tensor && root_run_ && fid_of(item) != run_.entry_fid)
    note_context_shape(ir::contract_tensor_id(fid_of(item), crate_.items()[item].params[i].name),
                       v.shape ? *v.shape : ir::TensorShape{});
  if (v.tensor || v.type_item >= 0) return v;
  const auto& it = crate_.items()[item];
  Val t = typed_val(it.module, it.params[i].type_text, "");
  if (!t.tensor && t.type_item < 0) return v;
  t.modules = v.modules;
  t.word = v.word;      // `depth: Depth` given `--arg depth=Deep`
  t.fields = v.fields;  // a struct literal passed on
  t.config = v.config;  // a bound config passed on (`convnext_stage(cfg, 0, vb.pp(0))`)
  return t;
}

void TensorDomain::enter(Eng& eng, std::size_t callee, bool entry) {
  if (!eng.running() || entry) return;
  auto ci = fn_index_.find(fid_of(eng.item()));
  if (ci == fn_index_.end()) return;
  auto& calls = ir_.functions[ci->second].calls;
  std::string fid = fid_of(callee);
  if (std::find(calls.begin(), calls.end(), fid) == calls.end()) calls.push_back(fid);
}

Val TensorDomain::returned(std::size_t item, Val out) {
  const std::string& rt = crate_.items()[item].return_type;
  if (!out.tensor && tensor_type(rt.empty() ? "" : strip_result(rt))) out.tensor = true;
  return out;
}

}  // namespace cg::analysis::tensor
