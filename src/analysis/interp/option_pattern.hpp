#pragma once
// Which arm of a `match`/`if let` an `Option` of known variant takes: one rule for every domain
// that knows a value is `Some(..)` or `None` on every execution (the builder domain from a
// `Some(..)`/`None` it evaluated, the tensor domain from one written on the way).
#include <cstddef>
#include <optional>
#include <string_view>

#include "rust/body.hpp"

namespace cg::analysis::interp {

enum class OptionFit { yes, no, maybe };

// `path` is the variant `name`, bare or qualified (`Some`, `Option::Some`, `std::option::…`).
inline bool names_variant(std::string_view path, std::string_view name) {
  if (path == name) return true;
  return path.size() > name.size() + 2 && path.ends_with(name) &&
         path.substr(path.size() - name.size() - 2, 2) == "::";
}

// `opt.take()`, `opt.replace(v)`, `opt.insert(v)`, …: methods that change which variant a local
// `Option` holds.
inline bool option_mutator(std::string_view m) {
  return m == "take" || m == "replace" || m == "insert" || m == "get_or_insert" ||
         m == "get_or_insert_with" || m == "take_if";
}

// What every known-variant rule shares: `_` and a plain binding match any value, `ref`/`x @ ..`
// and `&p` look through, an or-pattern matches when one alternative does (and not when none
// can); `leaf` decides every other pattern.
template <class Leaf>
OptionFit pattern_fit(const rust::Body& b, rust::NodeId p, const Leaf& leaf) {
  using rust::Kind;
  if (p == rust::kNone) return OptionFit::maybe;
  const rust::Node& pn = b[p];
  switch (pn.kind) {
    case Kind::PWild:
      return OptionFit::yes;
    case Kind::PIdent:
      return pn.a == rust::kNone ? OptionFit::yes : pattern_fit(b, pn.a, leaf);
    case Kind::PRef:
      return pattern_fit(b, pn.a, leaf);
    case Kind::POr: {
      bool all_no = true;
      for (rust::NodeId k : b.kids_view(p)) {
        OptionFit f = pattern_fit(b, k, leaf);
        if (f == OptionFit::yes) return OptionFit::yes;
        all_no = all_no && f == OptionFit::no;
      }
      return all_no ? OptionFit::no : OptionFit::maybe;
    }
    default:
      return leaf(p, pn);
  }
}

// The arm of match `m` a value of known variant takes, `fit` telling whether a pattern matches
// it: the first arm that matches with no guard, past arms that cannot match; nullopt when an arm
// before it may or may not match (a guard, a literal payload).
template <class Fit>
std::optional<std::size_t> first_arm(const rust::Body& b, rust::NodeId m, const Fit& fit) {
  const auto arms = b.kids_view(m);
  for (std::size_t i = 0; i < arms.size(); ++i) {
    OptionFit f = fit(b[arms[i]].a);
    if (f == OptionFit::no) continue;
    if (f == OptionFit::yes && b[arms[i]].b == rust::kNone) return i;
    return std::nullopt;
  }
  return std::nullopt;
}

// Whether pattern `p` matches every value of its type: `_`, a binding, `&P` of one, and a tuple
// of them (`Some((attn, ln))`'s payload).
inline bool irrefutable(const rust::Body& b, rust::NodeId p) {
  using rust::Kind;
  if (p == rust::kNone) return false;
  const rust::Node& pn = b[p];
  switch (pn.kind) {
    case Kind::PWild:
    case Kind::PRest:
      return true;
    case Kind::PIdent:
      return pn.a == rust::kNone || irrefutable(b, pn.a);
    case Kind::PRef:
      return irrefutable(b, pn.a);
    case Kind::PTuple:
      for (rust::NodeId k : b.kids_view(p))
        if (!irrefutable(b, k)) return false;
      return true;
    default:
      return false;
  }
}

// Whether pattern `p` matches every `Option` of variant `some` (yes), none of them (no), or only
// some values of it (maybe: a literal or nested refutable payload pattern, anything that is no
// Option pattern).
inline OptionFit option_fit(const rust::Body& b, rust::NodeId p, bool some) {
  using rust::Kind;
  return pattern_fit(b, p, [&](rust::NodeId at, const rust::Node& pn) {
    if (pn.kind == Kind::PPath) {
      if (names_variant(pn.str, "None")) return some ? OptionFit::no : OptionFit::yes;
      return names_variant(pn.str, "Some") ? OptionFit::no : OptionFit::maybe;
    }
    if (pn.kind != Kind::PTupleStruct || !names_variant(pn.str, "Some")) return OptionFit::maybe;
    if (!some) return OptionFit::no;
    const auto kids = b.kids_view(at);
    if (kids.size() != 1) return OptionFit::maybe;
    return irrefutable(b, kids[0]) ? OptionFit::yes : OptionFit::maybe;
  });
}

// The arm of match `m` an `Option` of variant `some` takes (first_arm).
inline std::optional<std::size_t> option_arm(const rust::Body& b, rust::NodeId m, bool some) {
  return first_arm(b, m, [&](rust::NodeId p) { return option_fit(b, p, some); });
}

// Whether pattern `p` matches an enum value of variant `name` (a bare name, the value's path's
// last segment: `--arg model=Vgg16`): yes for that variant's path (`Models::Vgg16`), `_` or a
// binding; no for another unit variant's path; maybe for anything else (a payload pattern).
inline OptionFit variant_fit(const rust::Body& b, rust::NodeId p, std::string_view name) {
  return pattern_fit(b, p, [&](rust::NodeId, const rust::Node& pn) {
    if (pn.kind != rust::Kind::PPath) return OptionFit::maybe;
    return names_variant(pn.str, name) ? OptionFit::yes : OptionFit::no;
  });
}

// The arm of match `m` a value of enum variant `name` takes (first_arm).
inline std::optional<std::size_t> variant_arm(const rust::Body& b, rust::NodeId m,
                                              std::string_view name) {
  return first_arm(b, m, [&](rust::NodeId p) { return variant_fit(b, p, name); });
}

}  // namespace cg::analysis::interp
