#include "analysis/builder_types.hpp"

#include <algorithm>
#include <map>
#include <optional>
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

// Whether a type as written (whitespace stripped) holds a prefix: `String` or `Vec<String>`.
bool prefix_field_type(const std::string& t) {
  return t == "String" || t == "Vec<String>" || t == "std::string::String" ||
         t == "Vec<std::string::String>";
}

// Whether `text` (whitespace stripped) names a tensor type: an identifier ending in `Tensor`
// (`Tensor`, `QTensor`, `Result<Arc<QTensor>>`).
bool names_tensor(const std::string& text) {
  for (std::size_t pos = text.find("Tensor"); pos != std::string::npos;
       pos = text.find("Tensor", pos + 1))
    if (pos + 6 >= text.size() || !ident_char(text[pos + 6])) return true;
  return false;
}

// Whether `text` mentions the identifier `name` (not as part of a longer one).
bool mentions(const std::string& text, const std::string& name) {
  for (auto pos = text.find(name); pos != std::string::npos; pos = text.find(name, pos + 1)) {
    bool before = pos > 0 && ident_char(text[pos - 1]);
    bool after = pos + name.size() < text.size() && ident_char(text[pos + name.size()]);
    if (!before && !after) return true;
  }
  return false;
}

struct OwnBuilder {
  std::string field;
  std::vector<std::string> pushes;
  std::map<std::string, BuilderTypes::Getter, std::less<>> getters;
};

// A struct of the code's own that is a prefix builder (builder_types.hpp), with its push and
// getter methods; nullopt otherwise.
std::optional<OwnBuilder> own_builder(const rust::Crate& crate, std::size_t item) {
  const rust::Item& st = crate.items()[item];
  const auto& items = crate.items();
  for (const auto& f : st.fields) {
    if (!prefix_field_type(strip_space(f.type_text))) continue;
    const std::string self_field = "self." + f.name;
    OwnBuilder b{f.name, {}, {}};
    // Inherent `&self` methods of the struct, split into header and body text.
    std::vector<std::pair<std::size_t, std::pair<std::string, std::string>>> methods;
    for (const auto& impl : crate.impls()) {
      if (!impl.trait.empty() || leaf_of(impl.self_base) != st.name ||
          impl.cfg.state == rust::Tri::False)
        continue;
      bool ours = false;
      for (const auto& c : crate.resolve(impl.module, impl.self_base))
        ours = ours || (c.kind == rust::Candidate::Kind::Item && c.item == item);
      if (!ours) continue;
      for (std::size_t m : impl.methods) {
        const rust::Item& fn = items[m];
        if (fn.self_kind != rust::SelfKind::Ref || fn.cfg.state == rust::Tri::False) continue;
        std::string text = strip_space(crate.node_text(fn.file, fn.node));
        auto brace = text.find('{');
        if (brace == std::string::npos) continue;
        methods.push_back({m, {text.substr(0, brace), text.substr(brace)}});
      }
    }
    // Methods reading the prefix: directly, or through another `&self` method that does
    // (`self.path(name)`).
    std::set<std::string> readers;
    for (const auto& [m, hb] : methods)
      if (hb.second.find(self_field) != std::string::npos) readers.insert(items[m].name);
    auto reads_prefix = [&](const std::string& body) {
      if (body.find(self_field) != std::string::npos) return true;
      for (const auto& r : readers)
        if (body.find("self." + r + "(") != std::string::npos) return true;
      return false;
    };
    for (const auto& [m, hb] : methods) {
      const rust::Item& fn = items[m];
      const std::string ret = strip_space(fn.return_type);
      if (fn.params.size() == 1 &&
          (ret == "Self" || ret == st.name || ret.rfind(st.name + "<", 0) == 0) &&
          hb.second.find(self_field) != std::string::npos &&
          mentions(hb.second, fn.params[0].name)) {
        b.pushes.push_back(fn.name);
        continue;
      }
      if (!names_tensor(ret) || !reads_prefix(hb.second)) continue;
      BuilderTypes::Getter g;
      bool named = false;
      for (std::size_t k = 0; k < fn.params.size(); ++k) {
        std::string t = strip_space(fn.params[k].type_text);
        bool str_ref = t == "&str" || (t.rfind("&'", 0) == 0 && t.size() > 3 &&
                                       t.compare(t.size() - 3, 3, "str") == 0);
        bool shape = t.find("Shape") != std::string::npos ||
                     (hb.first.find(t + ":Into<") != std::string::npos &&
                      hb.first.find("Shape>") != std::string::npos);
        if (!named && str_ref && mentions(hb.second, fn.params[k].name)) {
          g.name_arg = k;
          named = true;
        } else if (g.shape_arg < 0 && shape) {
          g.shape_arg = static_cast<std::ptrdiff_t>(k);
        }
      }
      if (named) b.getters.emplace(fn.name, g);
    }
    if (!b.pushes.empty() && !b.getters.empty()) return b;
  }
  return std::nullopt;
}

}  // namespace

bool BuilderTypes::contains(std::size_t item) const {
  return std::binary_search(items.begin(), items.end(), item);
}

bool BuilderTypes::pushes_prefix(std::string_view method) const {
  return std::binary_search(pushes.begin(), pushes.end(), method);
}

const BuilderTypes::Getter* BuilderTypes::getter(std::string_view method) const {
  auto it = getters.find(method);
  return it == getters.end() ? nullptr : &it->second;
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
  using Getter = BuilderTypes::Getter;
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
  // The code's own prefix builders: VarBuilders in their own right (no field to follow).
  std::map<std::string, int> push_seen;  // method name -> 1 agreed, -1 conflicting
  std::map<std::string, std::pair<Getter, bool>> getter_seen;  // method -> (role, conflicting)
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind != rust::ItemKind::Struct || items[i].cfg.state == rust::Tri::False) continue;
    auto own = own_builder(crate, i);
    if (!own) continue;
    std::string getters;
    for (const auto& [name, g] : own->getters) {
      getters += (getters.empty() ? "`" : ", `") + name + "`";
      auto [it, fresh] = getter_seen.emplace(name, std::make_pair(g, false));
      if (!fresh &&
          (it->second.first.name_arg != g.name_arg || it->second.first.shape_arg != g.shape_arg))
        it->second.second = true;
    }
    for (const auto& p : own->pushes)
      push_seen[p] = push_seen.count(p) > 0 || getter_seen.count(p) > 0 ? -1 : 1;
    found[i] = {"keeps its prefix in `" + own->field + "` (pushed by `" + own->pushes.front() +
                    "`) and gets tensors by name (" + getters + ")",
                ""};
  }
  for (const auto& [name, v] : push_seen)
    if (v > 0 && getter_seen.count(name) == 0) cur.pushes.push_back(name);
  for (const auto& [name, v] : getter_seen)
    if (!v.second && push_seen.count(name) == 0) cur.getters.emplace(name, v.first);
  refresh();
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
