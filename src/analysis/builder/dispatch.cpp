// Method calls on crate values that are given a VarBuilder: `self.make_layer(vb.pp("x"))`,
// `mapper.set_device(i, vb.pp("mlp"), isq)` on a `&dyn DeviceMapper`, `loader.load(vb)` on a
// generic `L: Loader`. The call runs what Rust would run: the method of the receiver's type where
// the analysis knows that type (a module instance, a local bound to a struct literal, `self`, a
// field of `self`, a parameter declared with a crate type); for a trait object, an `impl Trait`,
// or a receiver whose type is not written (a generic parameter, a local bound from another
// value's field), every impl of the trait that has the method, in the crate and its
// dependencies. Impls that agree on what they return make the call as certain as a direct one
// (every device mapper returns the builder it was given, moved to a device: the prefix is the
// same); what they register is an alternative per impl, and where they return different builders
// the keys that follow are conditional, the impls named.
#include <algorithm>

#include "analysis/builder/domain.hpp"
#include "rust/types.hpp"

namespace cg::analysis::builder {

using rust::Kind;
using rust::kNone;
using Value = inventory::Value;

namespace {

bool live(const rust::Item& it) {
  return it.cfg.state != rust::Tri::False;
}

// `&(dyn Mapper + Send + Sync)` → `&dyn Mapper + Send + Sync`, for `peel_type`.
std::string without_parens(std::string t) {
  std::erase_if(t, [](char c) { return c == '(' || c == ')'; });
  return t;
}

// Methods that hand back the receiver itself, or what it points to (`mapper.as_ref()`).
bool same_receiver(std::string_view m) {
  return m == "as_ref" || m == "deref" || m == "as_deref" || m == "borrow" || m == "clone";
}

}  // namespace

std::string BuilderDomain::impl_label(std::size_t method) const {
  const rust::Item& it = crate_.items()[method];
  if (it.impl < 0) return "fn " + it.name;
  const rust::Impl& im = crate_.impls()[static_cast<std::size_t>(it.impl)];
  return im.trait.empty() ? "impl " + im.self_type : "impl " + im.trait + " for " + im.self_type;
}

// Every live impl of one of `traits` (trait items) that has a method `name`.
BuilderDomain::Impls BuilderDomain::trait_impls(const std::vector<std::size_t>& traits,
                                                const std::string& name) {
  Impls found;
  for (const rust::Impl& im : crate_.impls()) {
    if (im.trait.empty() || im.cfg.state == rust::Tri::False) continue;
    auto m = std::find_if(im.methods.begin(), im.methods.end(), [&](std::size_t x) {
      return crate_.items()[x].name == name && live(crate_.items()[x]);
    });
    if (m == im.methods.end()) continue;
    const auto cands = crate_.resolve(im.module, rust::peel_type(im.trait).base);
    if (std::none_of(cands.begin(), cands.end(), [&](const rust::Candidate& c) {
          return c.kind == rust::Candidate::Kind::Item &&
                 std::find(traits.begin(), traits.end(), c.item) != traits.end();
        }))
      continue;
    found.methods.push_back(*m);
    found.labels.push_back(impl_label(*m));
  }
  return found;
}

// A receiver whose type the source does not write where the call is: every trait impl with a
// method `name` (Rust would need the trait in scope and one of its impls to be the type).
BuilderDomain::Impls BuilderDomain::impls_by_name(const std::string& name) {
  Impls found;
  for (const rust::Impl& im : crate_.impls()) {
    if (im.trait.empty() || im.cfg.state == rust::Tri::False) continue;
    for (std::size_t x : im.methods)
      if (crate_.items()[x].name == name && live(crate_.items()[x])) {
        found.methods.push_back(x);
        found.labels.push_back(impl_label(x));
      }
  }
  found.via = "its type is not written here";
  return found;
}

// The methods `name` of the type `type_text` as written in `module`: a struct's or enum's own
// (inherent first, as Rust picks), a trait object's or `impl Trait`'s over the trait's impls; a
// type the crate does not define that is no path (a generic parameter) over every impl by name.
BuilderDomain::Impls BuilderDomain::impls_of_type(const std::string& module,
                                                  const std::string& type_text,
                                                  const std::string& name) {
  const std::string base = rust::peel_type(without_parens(type_text)).base;
  if (base.empty()) return {};
  const auto cands = crate_.resolve(module, base);
  std::vector<std::size_t> traits;
  for (const auto& c : cands) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    const rust::Item& it = crate_.items()[c.item];
    if (it.kind == rust::ItemKind::Trait) {
      traits.push_back(c.item);
    } else if (it.kind == rust::ItemKind::Struct || it.kind == rust::ItemKind::Enum) {
      Impls found;
      for (std::size_t m : crate_.methods(c.item, name))
        if (live(crate_.items()[m])) {
          found.methods.push_back(m);
          found.labels.push_back(impl_label(m));
          break;  // the one Rust runs
        }
      return found;
    }
  }
  if (!traits.empty()) {
    Impls found = trait_impls(traits, name);
    found.via = "`" + type_text + "`";
    return found;
  }
  if (cands.empty() && base.find("::") == std::string::npos) return impls_by_name(name);
  return {};
}

// The type of a receiver expression as the source writes it, with the module to resolve it in:
// `self` (the impl's type), a parameter (its declared type), a struct literal, and fields of those
// (`meta.mapper`, `self.mapper`: the field's declared type); nullopt where it is not written.
std::optional<std::pair<std::string, std::string>> BuilderDomain::written_type(NodeId r,
                                                                               int depth) {
  if (depth > 16) return std::nullopt;
  const rust::Item& fn = crate_.items()[eng_->item()];
  const rust::Node& x = node(r);
  if (x.kind == Kind::Path && x.is_self()) {
    if (fn.impl < 0) return std::nullopt;
    const rust::Impl& im = crate_.impls()[static_cast<std::size_t>(fn.impl)];
    return std::make_pair(im.module, im.self_type);
  }
  if (x.kind == Kind::Path && is_ident(r)) {
    for (const auto& p : fn.params)
      if (p.name == x.str || p.name == "mut " + std::string(x.str))
        return std::make_pair(fn.module, p.type_text);
    return std::nullopt;
  }
  // A struct literal (`Weights { .. }.quantize(vb)`): the type it names.
  if (x.kind == Kind::Struct) {
    std::string t = inventory::strip_generics(std::string(x.str));
    if (t == "Self" && fn.impl >= 0) {
      const rust::Impl& im = crate_.impls()[static_cast<std::size_t>(fn.impl)];
      return std::make_pair(im.module, im.self_type);
    }
    return std::make_pair(fn.module, t);
  }
  if (x.kind != Kind::Field || x.a == kNone) return std::nullopt;
  auto base = written_type(body().peel(x.a, {Kind::Ref, Kind::Paren}), depth + 1);
  if (!base) return std::nullopt;
  for (const auto& c : crate_.resolve(base->first, rust::peel_type(base->second).base)) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    const rust::Item& s = crate_.items()[c.item];
    for (const auto& f : s.fields)
      if (f.name == x.str) return std::make_pair(s.module, f.type_text);
  }
  return std::nullopt;
}

BuilderDomain::Impls BuilderDomain::method_impls(NodeId recv_node, const Value& recv,
                                                 const std::string& name) {
  for (std::size_t item : receiver_items(recv_node, recv))
    for (std::size_t m : crate_.methods(item, name))
      if (live(crate_.items()[m])) return Impls{{m}, {impl_label(m)}, ""};
  NodeId r = recv_node;
  for (int guard = 0; guard < 16 && r != kNone; ++guard) {
    r = body().peel(r, {Kind::Ref, Kind::Paren});
    if (r == kNone) break;
    const rust::Node& x = node(r);
    if (x.kind == Kind::Unary && x.str == "*") {
      r = x.a;
    } else if (x.kind == Kind::MethodCall && x.kids_count == 0 && same_receiver(x.str)) {
      r = x.a;
    } else {
      break;
    }
  }
  if (r == kNone) return {};
  if (auto t = written_type(r)) return impls_of_type(t->first, t->second, name);
  // A local bound from another value, a closure's parameter: its type is not written here.
  if (is_ident(r) || node(r).kind == Kind::Field) return impls_by_name(name);
  return {};
}

// Every impl run as alternative of `br`, what every one registers kept certain; their returns.
std::vector<Value> BuilderDomain::run_impls(Eng& eng, NodeId n, const Impls& impls,
                                            const std::vector<Value>& args, Branch& br) {
  const std::string call = "." + std::string(node(n).str) + "(..)";
  std::vector<Value> results;
  br.count = impls.methods.size();
  br.labels = impls.labels;
  br.marks.push_back(marks());
  for (std::size_t i = 0; i < impls.methods.size(); ++i) {
    push_alt(br.group, n, static_cast<int>(i), static_cast<int>(br.count), impls.labels[i]);
    under(inventory::conditional(br.outer, impls.labels[i]),
          [&] { results.push_back(call_local(eng, n, impls.methods[i], args, call)); });
    alt_ctx_.pop_back();
    br.marks.push_back(marks());
  }
  unify(br, true);
  return results;
}

// The impls run as alternatives of one choice. Their returns agree: that value. They differ:
// the first impl's builder, conditional on that impl, and a message naming the others (a `let`
// of such a call forks instead: `split_impls`).
BuilderDomain::Value BuilderDomain::call_impls(Eng& eng, NodeId n, const Impls& impls,
                                               const std::vector<Value>& args) {
  if (auto it = settled_.find({&body(), n}); it != settled_.end()) {
    Value v = std::move(it->second);
    settled_.erase(it);
    return v;
  }
  const std::size_t before = ctx().created.size();
  std::vector<Value> results;
  if (impls.methods.size() == 1) {
    results.push_back(
        call_local(eng, n, impls.methods[0], args, "." + std::string(node(n).str) + "(..)"));
  } else {
    Branch br = open_branch(n, Branch::Kind::if_);
    results = run_impls(eng, n, impls, args, br);
  }
  Value r = results.front();
  if (!agree(results)) {
    auto b = std::find_if(results.begin(), results.end(),
                          [](const Value& v) { return v.kind == Value::Kind::builder; });
    if (b != results.end()) {
      const std::size_t i = static_cast<std::size_t>(b - results.begin());
      r = *b;
      r.cert = inventory::conditional(r.cert, impls.labels[i]);
      std::string others;
      for (std::size_t k = 0; k < impls.labels.size(); ++k)
        if (k != i) others += (others.empty() ? "`" : ", `") + impls.labels[k] + "`";
      diag(n, "`" + quoted(n) + "` may run " + std::to_string(impls.methods.size()) +
                  " impls that return different VarBuilders; the keys after it follow `" +
                  impls.labels[i] + "`'s, conditional on it, and not " + others + "'s");
    } else {
      r = sym_of(eng, n);
    }
  }
  // The value holds the modules the call built, wherever it goes next.
  for (std::size_t i = before; i < ctx().created.size(); ++i)
    if (std::find(r.modules.begin(), r.modules.end(), ctx().created[i]) == r.modules.end())
      r.modules.push_back(ctx().created[i]);
  return r;
}

// Whether evaluating `n` twice changes nothing: names, literals, fields, references and builder
// methods (`vb.pp("x")`, `vb.clone()`) of such, nested at most 32 deep.
bool BuilderDomain::side_effect_free(NodeId n, int depth) const {
  if (n == kNone) return true;
  if (depth > 32) return false;
  const rust::Node& x = node(n);
  switch (x.kind) {
    case Kind::Path:
    case Kind::Lit:
      return true;
    case Kind::Field:
    case Kind::Ref:
    case Kind::Paren:
    case Kind::Unary:
    case Kind::Cast:
      return side_effect_free(x.a, depth + 1);
    case Kind::Binary:
    case Kind::Index:
      return side_effect_free(x.a, depth + 1) && side_effect_free(x.b, depth + 1);
    case Kind::MethodCall: {
      const std::string_view m = x.str;
      if (m != "pp" && m != "push_prefix" && m != "clone" && m != "set_device" &&
          m != "set_dtype" && m != "as_ref" && !builder_types_.pushes_prefix(m))
        return false;
      const auto kids = body().kids_view(n);
      return side_effect_free(x.a, depth + 1) &&
             std::all_of(kids.begin(), kids.end(),
                         [&](NodeId k) { return side_effect_free(k, depth + 1); });
    }
    default:
      return false;
  }
}

// `let vb_m = layout.text(vb.clone());` on a `&dyn Layout` whose impls push different prefixes:
// the rest of the block runs once per impl, each with the builder that impl returns, under that
// impl's name (the split's group is the one the impls ran in). Impls that agree settle the call:
// its value waits for the `let`'s own evaluation, which does not run them again.
std::vector<BuilderDomain::Names> BuilderDomain::split_impls(Eng& eng, NodeId let) {
  NodeId pat = node(let).a;
  NodeId call = body().peel(node(let).b, {Kind::Try, Kind::Paren});
  if (!is_ident(pat) || node(call).kind != Kind::MethodCall || !side_effect_free(node(call).a))
    return {};
  const auto kids = body().kids_view(call);
  if (!std::all_of(kids.begin(), kids.end(), [&](NodeId k) { return side_effect_free(k); }))
    return {};
  Value recv = eng.eval(node(call).a);
  if (recv.kind == Value::Kind::builder) return {};
  std::vector<Value> args;
  for (NodeId k : kids)
    args.push_back(eng.eval(k));
  if (!any_builder(args)) return {};
  Impls impls = method_impls(node(call).a, recv, std::string(node(call).str));
  if (impls.methods.size() < 2) return {};
  Branch br = open_branch(call, Branch::Kind::split);
  br.cond_text = quoted(call);
  std::vector<Value> results = run_impls(eng, call, impls, args, br);
  if (agree(results) || std::any_of(results.begin(), results.end(), [](const Value& v) {
        return v.kind != Value::Kind::builder;
      })) {
    // Not a choice of builders: the call's value as `call_impls` gives it, without a rerun.
    Value r = results.front();
    if (!agree(results)) r = sym_of(eng, call);
    settled_[{&body(), call}] = std::move(r);
    return {};
  }
  ++forks_;
  br.marks.clear();
  splits_.emplace_back(let, br);
  std::vector<Names> alts;
  for (Value& v : results)
    alts.push_back(Names{{text(pat), std::move(v)}});
  return alts;
}

}  // namespace cg::analysis::builder
