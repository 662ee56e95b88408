#include "analysis/builder_types.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "rust/crate.hpp"
#include "rust/types.hpp"

namespace cg::analysis {

namespace {

std::string leaf_of(const std::string& path) {
  auto p = path.rfind("::");
  return p == std::string::npos ? path : path.substr(p + 2);
}

bool is_varbuilder_name(const std::string& leaf) {
  return leaf == "VarBuilder" || leaf == "VarBuilderArgs" || leaf == "ShardedVarBuilder";
}

// The path of a type as written, without references, `mut`, lifetimes and generic arguments.
std::string bare_path(const std::string& type_text) {
  std::string t = rust::peel_type(type_text).base;
  if (t.empty()) t = type_text;
  auto lt = t.find('<');
  if (lt != std::string::npos) t = t.substr(0, lt);
  std::string out;
  for (char c : t)
    if (c != '&' && c != ' ' && c != '\'' && c != '\n' && c != '\t') out.push_back(c);
  if (out.rfind("mut", 0) == 0 && out.size() > 3 && out.compare(3, 2, "::") != 0)
    out = out.substr(3);
  return out;
}

// VarBuilder's methods a wrapper forwards (candle-nn's VarBuilderArgs and ShardedVarBuilder API).
bool is_builder_method(const std::string& m) {
  static const std::set<std::string> kMethods = {
      "pp",     "push_prefix", "set_prefix",      "root",   "set_device", "set_dtype",
      "device", "dtype",       "contains_tensor", "prefix", "to_dtype"};
  return kMethods.count(m) > 0 || m.rfind("get", 0) == 0;
}

std::string strip_space(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') out.push_back(c);
  return out;
}

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `body` (whitespace stripped) calls a VarBuilder method on `self.field`.
bool forwards_to(const std::string& body, const std::string& field) {
  const std::string needle = "self." + field + ".";
  for (auto pos = body.find(needle); pos != std::string::npos; pos = body.find(needle, pos + 1)) {
    if (pos > 0 && (ident_char(body[pos - 1]) || body[pos - 1] == '.')) continue;
    std::size_t a = pos + needle.size(), b = a;
    while (b < body.size() && ident_char(body[b]))
      ++b;
    if (b < body.size() && (body[b] == '(' || body[b] == ':') &&
        is_builder_method(body.substr(a, b - a)))
      return true;
  }
  return false;
}

// Whether a `deref` body (whitespace stripped) returns `&self.field` as its value.
bool returns_field(const std::string& body, const std::string& field) {
  const std::string needle = "&self." + field;
  for (auto pos = body.find(needle); pos != std::string::npos; pos = body.find(needle, pos + 1)) {
    std::size_t end = pos + needle.size();
    if (end < body.size() && (body[end] == '}' || body[end] == ';')) return true;
  }
  return false;
}

}  // namespace

bool BuilderTypes::contains(std::size_t item) const {
  return std::binary_search(items.begin(), items.end(), item);
}

bool BuilderTypes::names(const rust::Crate& crate, const std::string& module,
                         const std::string& type_text, bool wrappers) const {
  std::string path = bare_path(type_text);
  if (path.empty()) return false;
  if (is_varbuilder_name(leaf_of(path))) return true;
  for (const auto& c : crate.resolve(module, path)) {
    if (c.kind == rust::Candidate::Kind::External && is_varbuilder_name(leaf_of(c.path)))
      return true;
    if (c.kind != rust::Candidate::Kind::Item) continue;
    auto it = std::lower_bound(items.begin(), items.end(), c.item);
    if (it != items.end() && *it == c.item &&
        (wrappers || field[static_cast<std::size_t>(it - items.begin())].empty()))
      return true;
  }
  return false;
}

BuilderTypes find_builder_types(const rust::Crate& crate) {
  const auto& items = crate.items();
  std::map<std::size_t, std::pair<std::string, std::string>> found;  // why, field
  BuilderTypes cur;
  auto refresh = [&] {
    cur.items.clear();
    cur.why.clear();
    cur.field.clear();
    for (const auto& [i, w] : found) {
      cur.items.push_back(i);
      cur.why.push_back(w.first);
      cur.field.push_back(w.second);
    }
  };
  // Inherent methods with `self` named as one of VarBuilder's: what a wrapper would forward.
  std::vector<std::size_t> builder_methods;
  for (std::size_t m = 0; m < items.size(); ++m) {
    const rust::Item& fn = items[m];
    if (fn.kind == rust::ItemKind::Method && fn.impl >= 0 && fn.self_kind != rust::SelfKind::None &&
        fn.cfg.state != rust::Tri::False && is_builder_method(fn.name) &&
        crate.impls()[static_cast<std::size_t>(fn.impl)].trait.empty())
      builder_methods.push_back(m);
  }
  // A fixpoint: an alias of a wrapper, a wrapper of an alias … (each round adds at least one
  // type or stops, so it ends after at most as many rounds as there are types).
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const rust::Item& it = items[i];
      if (found.count(i) > 0 || it.cfg.state == rust::Tri::False) continue;
      if (it.kind == rust::ItemKind::TypeAlias) {
        std::string text = crate.node_text(it.file, it.node);
        auto eq = text.find('=');
        if (eq == std::string::npos) continue;
        std::string target = text.substr(eq + 1);
        if (auto semi = target.rfind(';'); semi != std::string::npos) target.erase(semi);
        if (cur.names(crate, it.module, target)) {
          // An alias of a wrapper is a wrapper: it forwards through the same field.
          std::string via;
          if (!cur.names(crate, it.module, target, false))
            for (const auto& c : crate.resolve(it.module, bare_path(target)))
              if (c.kind == rust::Candidate::Kind::Item)
                if (auto f = found.find(c.item); f != found.end()) via = f->second.second;
          found[i] = {"alias of " + bare_path(target), via};
          changed = true;
        }
        continue;
      }
      if (it.kind != rust::ItemKind::Struct) continue;
      std::vector<std::string> builder_fields;
      for (const auto& f : it.fields)
        if (cur.names(crate, it.module, f.type_text)) builder_fields.push_back(f.name);
      std::string why, forwarded;
      for (const auto& field : builder_fields) {
        for (std::size_t m : builder_methods) {
          const rust::Item& fn = items[m];
          const auto own = crate.methods(i, fn.name);
          if (std::find(own.begin(), own.end(), m) == own.end()) continue;
          if (forwards_to(strip_space(crate.node_text(fn.file, fn.node)), field)) {
            why = "forwards `" + fn.name + "` to its VarBuilder field `" + field + "`";
            forwarded = field;
            break;
          }
        }
        if (!why.empty()) break;
      }
      // `impl Deref for W { type Target = VarBuilder; fn deref(&self) -> &Self::Target {
      // &self.vb } }`: every VarBuilder method is reachable on the wrapper through its field.
      for (const auto& field : builder_fields) {
        if (!why.empty()) break;
        for (std::size_t m : crate.methods(i, "deref")) {
          const rust::Item& fn = items[m];
          if (fn.impl < 0 || fn.cfg.state == rust::Tri::False ||
              leaf_of(crate.impls()[static_cast<std::size_t>(fn.impl)].trait) != "Deref")
            continue;
          if (returns_field(strip_space(crate.node_text(fn.file, fn.node)), field)) {
            why = "derefs to its VarBuilder field `" + field + "`";
            forwarded = field;
            break;
          }
        }
      }
      if (!why.empty()) {
        found[i] = {why, forwarded};
        changed = true;
      }
    }
    refresh();
  }
  return cur;
}

}  // namespace cg::analysis
