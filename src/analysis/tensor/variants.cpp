// Enum values that hold modules (deepseek2's `enum QProj { Plain(Linear), Lora { a: Linear, norm:
// RmsNorm, b: Linear } }`, `enum MoeOrMlp { Moe(Box<Moe>), Mlp(Box<Mlp>) }`): the inventory
// records the modules a field of such a type holds, not the variant. The variant is the one whose
// payload types are exactly those modules' types (one `Linear`: `Plain`; a `Linear`, an `RmsNorm`
// and a `Linear`: `Lora`), when exactly one variant's are. A `match` on the value then takes that
// variant's arm (or a catch-all before any other), and a variant pattern binds each name to its
// part of the payload: the modules of that part's type, typed as the part (where the value holds
// such modules; a part no module is, or two parts of one type, stay the enum's value).
#include <algorithm>
#include <set>

#include "analysis/tensor/domain.hpp"
#include "rust/types.hpp"
#include "util/text.hpp"

namespace cg::analysis::tensor {

using rust::Kind;

namespace {

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == ','))
    s.remove_suffix(1);
  return std::string(s);
}

struct Part {
  std::string name;  // "0" for a tuple variant's first element, else the field name
  std::string type;  // as written
  std::string leaf;  // the type a module of it has: `Box<Moe>` -> `Moe`
};

// A variant's payload, `(Linear)` or `{ a: Linear, norm: RmsNorm }`, one part per element.
std::vector<Part> parts_of(const rust::Field& variant) {
  std::vector<Part> out;
  const std::string& t = variant.type_text;
  if (t.size() < 2) return out;
  const bool named = t.front() == '{';
  std::string inner = t.substr(1, t.size() - 2);
  int depth = 0;
  std::size_t start = 0;
  auto add = [&](std::string piece) {
    piece = trimmed(piece);
    if (piece.empty()) return;
    Part p;
    if (named) {
      const auto colon = piece.find(':');
      if (colon == std::string::npos) return;
      p.name = trimmed(piece.substr(0, colon));
      p.type = trimmed(piece.substr(colon + 1));
    } else {
      p.name = std::to_string(out.size());
      p.type = piece;
    }
    p.leaf = std::string(last_path_segment(rust::peel_type(p.type).base));
    out.push_back(std::move(p));
  };
  for (std::size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if (c == '>' || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      add(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  add(inner.substr(start));
  return out;
}

// The variant of enum `e` a pattern path names (`Self::Plain`, `QProj::Plain`); null otherwise.
const rust::Field* variant_named(const rust::Item& e, std::string_view path) {
  const auto sep = path.rfind("::");
  if (sep == std::string_view::npos) return nullptr;
  const std::string_view owner = last_path_segment(path.substr(0, sep));
  if (owner != "Self" && owner != e.name) return nullptr;
  const std::string_view name = path.substr(sep + 2);
  for (const auto& v : e.variants)
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace

std::optional<std::size_t> TensorDomain::variant_arm(Eng& eng, NodeId match, const Val& v) const {
  if (v.type_item < 0 || v.modules.empty()) return std::nullopt;
  const rust::Item& e = crate_.items()[static_cast<std::size_t>(v.type_item)];
  if (e.kind != rust::ItemKind::Enum) return std::nullopt;
  std::multiset<std::string> held;
  for (const auto& id : v.modules) {
    auto m = module_by_id_.find(id);
    if (m == module_by_id_.end()) return std::nullopt;
    held.insert(m->second->type_name);
  }
  // The variants whose payload types are exactly the modules' types.
  std::vector<const rust::Field*> fitting;
  for (const auto& var : e.variants) {
    std::multiset<std::string> types;
    for (const Part& p : parts_of(var))
      types.insert(p.leaf);
    if (types == held) fitting.push_back(&var);
  }
  if (fitting.size() != 1) return std::nullopt;
  const rust::Body& b = eng.body();
  const auto arms = b.kids_view(match);
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const rust::Node& arm = b[arms[i]];
    if (arm.b != rust::kNone) return std::nullopt;  // a guard: not decided by the variant
    NodeId pat = b.peel(arm.a, {Kind::PRef});
    if (pat == rust::kNone) return std::nullopt;
    const rust::Node& p = b[pat];
    if (p.kind == Kind::PWild || (p.kind == Kind::PIdent && p.a == rust::kNone)) return i;
    if (p.kind != Kind::PTupleStruct && p.kind != Kind::PStruct && p.kind != Kind::PPath)
      return std::nullopt;
    const rust::Field* named = variant_named(e, p.str);
    if (named == nullptr) return std::nullopt;
    if (named == fitting.front()) return i;
  }
  return std::nullopt;
}

std::optional<Val> TensorDomain::payload(Eng& eng, NodeId pat, const Val& v,
                                         std::string_view field) {
  // Only an enum holding modules (a cache held in an enum stays the enum's value: the memory
  // analysis names every cache type it may be).
  if (v.type_item < 0 || v.modules.empty()) return std::nullopt;
  const rust::Item& e = crate_.items()[static_cast<std::size_t>(v.type_item)];
  if (e.kind != rust::ItemKind::Enum) return std::nullopt;
  const rust::Field* var = variant_named(e, eng.body()[pat].str);
  if (var == nullptr) return std::nullopt;
  const std::vector<Part> parts = parts_of(*var);
  auto part = std::find_if(parts.begin(), parts.end(), [&](const Part& p) {
    return field.empty() ? p.name == "0" : p.name == field;
  });
  if (part == parts.end() || (field.empty() && parts.size() != 1)) return std::nullopt;
  // Two parts of one type (`{ a: Linear, b: Linear }`): which module is which is not known.
  if (std::count_if(parts.begin(), parts.end(),
                    [&](const Part& p) { return p.leaf == part->leaf; }) > 1)
    return std::nullopt;
  Val out = typed_val(e.module, part->type, rust::peel_type(part->type).base);
  out.field = v.field;
  for (const auto& id : v.modules)
    if (auto m = module_by_id_.find(id);
        m != module_by_id_.end() && m->second->type_name == part->leaf)
      out.modules.insert(id);
  if (out.modules.empty()) return std::nullopt;
  return out;
}

}  // namespace cg::analysis::tensor
