#include "analysis/config_binding.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "analysis/layer_catalog.hpp"
#include "rust/body.hpp"
#include "rust/literal.hpp"
#include "util/text.hpp"

namespace cg::analysis {
namespace {

// `&'a mut crate::Config` -> `crate::Config`; `Arc<Config>` -> `Config`.
std::string peel_type(std::string t) {
  auto trim = [](std::string s) {
    std::size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  t = trim(t);
  while (!t.empty()) {
    if (t[0] == '&') {
      t = trim(t.substr(1));
      if (!t.empty() && t[0] == '\'') {
        auto sp = t.find(' ');
        t = sp == std::string::npos ? "" : trim(t.substr(sp));
      }
      if (t.rfind("mut ", 0) == 0) t = trim(t.substr(4));
      continue;
    }
    bool peeled = false;
    for (const char* w : {"Arc<", "Rc<", "Box<", "std::sync::Arc<", "std::rc::Rc<"}) {
      std::size_t n = std::strlen(w);
      if (t.rfind(w, 0) == 0 && t.back() == '>') {
        t = trim(t.substr(n, t.size() - n - 1));
        peeled = true;
        break;
      }
    }
    if (!peeled) break;
  }
  return t;
}

// The string inside `key = "value"` of an attribute text, if present.
std::optional<std::string> attr_value(const std::string& attr, const std::string& key) {
  std::size_t p = 0;
  while ((p = attr.find(key, p)) != std::string::npos) {
    bool left =
        p == 0 || !(std::isalnum(static_cast<unsigned char>(attr[p - 1])) || attr[p - 1] == '_');
    std::size_t e = p + key.size();
    while (e < attr.size() && attr[e] == ' ')
      ++e;
    if (left && e < attr.size() && attr[e] == '=') {
      std::size_t v = e + 1;
      while (v < attr.size() && attr[v] == ' ')
        ++v;
      std::size_t len = rust::string_literal_length(std::string_view(attr).substr(v));
      if (len > 0) return rust::decode_string_literal(std::string_view(attr).substr(v, len));
    }
    p = e;
  }
  return std::nullopt;
}

SymValue type_default(const std::string& type_text) {
  std::string t = peel_type(type_text);
  if (t.rfind("Option<", 0) == 0) return SymValue::none();
  if (t == "bool") return SymValue::of_bool(false);
  if (t == "f32" || t == "f64") return SymValue::of_real(0.0);
  for (const char* i : {"usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"})
    if (t == i) return SymValue::of_int(0);
  if (t == "String") return SymValue::of_string("");
  return SymValue::symbolic("Default::default()", "the default of `" + t + "` is not evaluated");
}

// Why serde would refuse a config.json value for a field of Rust type `type_text` (serde_json
// deserializes integers strictly: no float, no negative into an unsigned type, no value out of
// the type's range); "" when it accepts it or the type is not a primitive integer. A value past
// 2^63 (read as symbolic, "exceeds i64") is refused too: no dimension or count can be that large.
std::string serde_refusal(const std::string& type_text, const SymValue& v) {
  std::string t = peel_type(type_text);
  if (t.rfind("Option<", 0) == 0 && t.back() == '>') t = peel_type(t.substr(7, t.size() - 8));
  struct IntType {
    const char* name;
    bool is_signed;
    int bits;
  };
  static constexpr IntType kTypes[] = {
      {"usize", false, 64}, {"u64", false, 64},  {"u32", false, 32}, {"u16", false, 16},
      {"u8", false, 8},     {"isize", true, 64}, {"i64", true, 64},  {"i32", true, 32},
      {"i16", true, 16},    {"i8", true, 8}};
  const IntType* it = nullptr;
  for (const auto& k : kTypes)
    if (t == k.name) it = &k;
  if (it == nullptr) return "";
  switch (v.kind) {
    case SymValue::Kind::real:
      return v.real == static_cast<double>(static_cast<std::int64_t>(v.real))
                 ? "a floating-point number (serde_json gives an integer field no float, even "
                   "a whole one)"
                 : "a number with a fraction";
    case SymValue::Kind::integer: {
      if (!it->is_signed && v.integer < 0) return "a negative value";
      if (it->bits < 64) {
        const std::int64_t hi = it->is_signed ? (std::int64_t{1} << (it->bits - 1)) - 1
                                              : (std::int64_t{1} << it->bits) - 1;
        const std::int64_t lo = it->is_signed ? -(std::int64_t{1} << (it->bits - 1)) : 0;
        if (v.integer > hi || v.integer < lo) return "out of the range of " + t;
      }
      return "";
    }
    case SymValue::Kind::symbolic:
      if (v.reason.find("exceeds i64") != std::string::npos) return "larger than 2^63";
      return "";
    case SymValue::Kind::string:
      return "a string";
    case SymValue::Kind::boolean:
      return "a boolean";
    case SymValue::Kind::none:
      return peel_type(type_text).rfind("Option<", 0) == 0 ? "" : "null";
  }
  return "";
}

// Every string of `key = "value"` in an attribute text (`#[serde(alias = "a", alias = "b")]`).
std::vector<std::string> attr_values(const std::string& attr, const std::string& key) {
  std::vector<std::string> out;
  for (std::size_t p = attr.find(key); p != std::string::npos; p = attr.find(key, p + 1))
    if (auto v = attr_value(attr.substr(p), key)) {
      out.push_back(*v);
      p = attr.find('"', attr.find('"', p) + 1);
      if (p == std::string::npos) break;
    }
  return out;
}

// A variant's name as `#[serde(rename_all = "..")]` writes it: `GeluPytorchTanh` ->
// "gelupytorchtanh" (lowercase), "gelu_pytorch_tanh" (snake_case), "geluPytorchTanh".
std::string serde_case(const std::string& name, const std::string& rule) {
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  auto upper = [](char c) {
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  };
  std::string out;
  if (rule == "lowercase" || rule == "UPPERCASE") {
    for (char c : name)
      out += rule == "lowercase" ? lower(c) : upper(c);
    return out;
  }
  if (rule == "camelCase") return name.empty() ? name : lower(name[0]) + name.substr(1);
  const bool screaming = rule == "SCREAMING_SNAKE_CASE" || rule == "SCREAMING-KEBAB-CASE";
  const char sep = rule == "kebab-case" || rule == "SCREAMING-KEBAB-CASE" ? '-' : '_';
  if (!screaming && rule != "snake_case" && rule != "kebab-case") return name;  // PascalCase
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(name[i]))) out += sep;
    out += screaming ? upper(name[i]) : lower(name[i]);
  }
  return out;
}

using rust::Kind;
using rust::kNone;
using rust::NodeId;

// The first struct literal under `n` in source order (depth-first): any when `name` is empty,
// else `Self { .. }` / `<name> { .. }` outside closures.
rust::NodeId first_struct_literal(const rust::Body& b, rust::NodeId n, const std::string& name,
                                  int depth) {
  if (n == rust::kNone || (depth > 64 && !name.empty())) return rust::kNone;
  const rust::Node& node = b[n];
  if (node.kind == rust::Kind::Struct) {
    if (name.empty() || node.str == "Self" || node.str == name) return n;
  }
  if (!name.empty() && (node.kind == rust::Kind::Closure || node.kind == rust::Kind::Item))
    return rust::kNone;
  // Children in source order: a struct literal's fields come before its `..base`.
  std::vector<rust::NodeId> order;
  if (node.kind == rust::Kind::Struct) order = b.kids(n);
  for (rust::NodeId c : {node.a, node.b, node.c})
    order.push_back(c);
  if (node.kind != rust::Kind::Struct)
    for (rust::NodeId c : b.kids(n))
      order.push_back(c);
  for (rust::NodeId c : order) {
    rust::NodeId r = first_struct_literal(b, c, name, depth + 1);
    if (r != rust::kNone) return r;
  }
  return rust::kNone;
}

// The warning for a config value read through a custom deserializer that is not evaluated.
std::string unevaluated(const std::string& key, const std::string& origin,
                        const std::string& with) {
  return "`" + key + "` in " + origin + " is read through `#[serde(" + with +
         ")]`, which is not evaluated; what the field decides stays symbolic";
}

// Evaluates a function body: `let` bindings, then the tail (or a `return`).
class BodyContext : public EvalContext {
 public:
  BodyContext(const ConfigBinding& b, std::optional<ConfigRef> self)
      : binding_(b), self_(std::move(self)) {}
  std::map<std::string, SymValue, std::less<>> locals;
  std::map<std::string, ConfigRef, std::less<>> config_locals;  // `cfg` parameters (constructors)
  std::string module;  // the evaluated body's module, where its paths resolve

  std::optional<SymValue> lookup(std::string_view name) override {
    auto it = locals.find(name);
    if (it != locals.end()) return it->second;
    return std::nullopt;
  }
  std::optional<SymValue> field(const rust::Body& body, NodeId base,
                                std::string_view name) override {
    auto ref = resolve(body, base);
    if (!ref) return std::nullopt;
    auto r = binding_.field(*ref, name);
    if (r.config) return std::nullopt;
    return r.value;
  }
  std::optional<SymValue> method(const rust::Body& body, NodeId recv, std::string_view name,
                                 const std::vector<SymValue>& args) override {
    auto ref = resolve(body, recv);
    if (!ref) return std::nullopt;
    return binding_.method(*ref, name, args);
  }
  std::optional<std::vector<std::string>> variant_spellings(std::string_view path) override {
    return binding_.variant_spellings(path, module);
  }

  std::optional<ConfigRef> resolve(const rust::Body& body, NodeId n) {
    if (n == kNone) return std::nullopt;
    if (body[n].is_self()) return self_;
    if (body[n].is_identifier()) {
      auto it = config_locals.find(body.source(n));
      if (it != config_locals.end()) return it->second;
      return std::nullopt;
    }
    if (body[n].kind == Kind::Field) {
      auto base = resolve(body, body[n].a);
      if (!base) return std::nullopt;
      return binding_.field(*base, body[n].str).config;
    }
    return std::nullopt;
  }

 private:
  const ConfigBinding& binding_;
  std::optional<ConfigRef> self_;
};

}  // namespace

// The strings serde's derived Deserialize accepts for a unit variant of the field's enum type:
// a crate-local `#[derive(Deserialize)]` enum (its `rename_all`, `rename` and `alias`es) or a
// candle-nn enum (layer_catalog); nullopt when the type is no such enum or serde's rule is not
// judged here (`untagged`, `#[serde(other)]`, a hand-written Deserialize).
std::optional<std::vector<std::string>> ConfigBinding::variant_names(
    const std::string& type_text, const std::string& module) const {
  std::string t = peel_type(type_text);
  if (t.rfind("Option<", 0) == 0 && t.back() == '>') t = peel_type(t.substr(7, t.size() - 8));
  if (t.empty() || t.find('<') != std::string::npos) return std::nullopt;
  for (const auto& c : crate_.resolve(module, t)) {
    if (c.kind == rust::Candidate::Kind::External) return library_enum_names(c.path);
    if (c.kind == rust::Candidate::Kind::Item) break;  // the first that names one decides
  }
  auto table = variant_table(t, module);
  if (!table) return std::nullopt;
  std::vector<std::string> names;
  for (auto& [variant, spellings] : *table)
    for (auto& n : spellings)
      names.push_back(std::move(n));
  return names;
}

// The strings serde's derived Deserialize reads as each unit variant of crate-local enum `t`
// (its `rename_all`, `rename` and `alias`es), variant by variant; nullopt when `t` is no such
// enum or serde's rule is not judged here (`untagged`, `#[serde(other)]`, a hand-written
// Deserialize).
std::optional<std::vector<std::pair<std::string, std::vector<std::string>>>>
ConfigBinding::variant_table(const std::string& t, const std::string& module) const {
  for (const auto& c : crate_.resolve(module, t)) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    const rust::Item& e = crate_.items()[c.item];
    if (e.kind != rust::ItemKind::Enum) return std::nullopt;
    std::string rule;
    bool derived = false;
    for (const std::string& a : e.attributes) {
      if (contains_word(a, "derive") && contains_word(a, "Deserialize")) derived = true;
      if (!contains_word(a, "serde")) continue;
      if (contains_word(a, "untagged") || a.find("rename_all(") != std::string::npos)
        return std::nullopt;
      if (auto r = attr_value(a, "rename_all")) rule = *r;
    }
    if (!derived) return std::nullopt;
    std::vector<std::pair<std::string, std::vector<std::string>>> table;
    for (const rust::Field& v : e.variants) {
      std::string name = serde_case(v.name, rule);
      std::vector<std::string> aliases;
      for (const auto& a : v.attributes) {
        if (!contains_word(a, "serde")) continue;
        if (contains_word(a, "other") || a.find("rename(") != std::string::npos)
          return std::nullopt;
        if (contains_word(a, "skip") || contains_word(a, "skip_deserializing")) name.clear();
        if (auto r = attr_value(a, "rename")) name = *r;
        for (auto& al : attr_values(a, "alias"))
          aliases.push_back(std::move(al));
      }
      if (!v.type_text.empty()) continue;  // a value-carrying variant: no bare string names it
      std::vector<std::string> spellings;
      if (!name.empty()) spellings.push_back(name);
      for (auto& al : aliases)
        spellings.push_back(std::move(al));
      table.emplace_back(v.name, std::move(spellings));
    }
    return table;
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> ConfigBinding::variant_spellings(
    std::string_view path, const std::string& module) const {
  const auto sep = path.rfind("::");
  if (sep == std::string_view::npos) return std::nullopt;
  auto table = variant_table(std::string(path.substr(0, sep)), module);
  if (!table) return std::nullopt;
  for (auto& [variant, spellings] : *table)
    if (variant == path.substr(sep + 2)) return spellings;
  return std::nullopt;
}

// The problem serde has with JSON value `v` for field `f` of config struct `st` (a number its
// integer type cannot hold, a name no variant of its enum has); nullopt when serde takes it.
std::optional<ConfigProblem> ConfigBinding::refusal(const rust::Item& st, const FieldInfo& f,
                                                    const std::string& key,
                                                    const SymValue& v) const {
  std::string why = serde_refusal(f.type_text, v);
  if (why.empty() && v.kind == SymValue::Kind::string)
    if (auto accepted = variant_names(f.type_text, st.module);
        accepted && std::find(accepted->begin(), accepted->end(), v.text) == accepted->end()) {
      std::string list;
      for (std::size_t i = 0; i < accepted->size(); ++i)
        list += (i ? ", " : "") + ("\"" + (*accepted)[i] + "\"");
      why = "not a variant serde accepts (one of " + list + ")";
    }
  if (why.empty()) return std::nullopt;
  ConfigProblem pr;
  pr.key = key;
  pr.value =
      v.kind == SymValue::Kind::symbolic ? v.reason.substr(0, v.reason.find(' ')) : v.display();
  pr.rust_type = peel_type(f.type_text);
  pr.field = st.name + "." + f.name;
  pr.field_source = crate_.files()[st.file]->path() + ":" + std::to_string(f.line);
  pr.why = why;
  return pr;
}

// Serde reads every field of the struct the root constructor is given, not only those a
// constructor reads: each value it would refuse is recorded as refusing the whole file. Nested
// config structs are checked the same way (at most 8 levels).
void ConfigBinding::validate(std::size_t item, const std::string& path, int depth) const {
  if (depth > 8 || !validated_.insert(path + '\0' + std::to_string(item)).second) return;
  const rust::Item& st = crate_.items()[item];
  for (const FieldInfo& f : info(item).fields) {
    if (!f.deserialize_with.empty()) continue;
    if (auto nested = config_of_type(f.type_text, st.module)) {
      if (info(nested->item).deserialize)
        validate(nested->item, path + f.json_name + ".", depth + 1);
      continue;
    }
    std::vector<std::string> names{f.json_name};
    names.insert(names.end(), f.aliases.begin(), f.aliases.end());
    for (const auto& n : names)
      if (const SymValue* v = values_->find(path + n)) {
        if (auto pr = refusal(st, f, path + n, *v)) {
          pr->whole_file = true;
          auto [it, fresh] = values_->problems.emplace(path + n, std::move(*pr));
          it->second.whole_file = true;
        }
        break;
      }
  }
}

ConfigBinding::ConfigBinding(const rust::Crate& crate, const ConfigValues* values,
                             const std::map<std::size_t, ConfigRef>* built)
    : crate_(crate), values_(values), built_(built) {}

const ConfigBinding::StructInfo& ConfigBinding::info(std::size_t item) const {
  auto it = infos_.find(item);
  if (it != infos_.end()) return it->second;
  StructInfo s;
  const rust::Item& st = crate_.items()[item];
  for (const std::string& t : st.attributes) {
    if (contains_word(t, "derive") && contains_word(t, "Deserialize")) s.deserialize = true;
    if (contains_word(t, "serde") && contains_word(t, "default") && !attr_value(t, "default"))
      s.struct_default = true;
  }
  for (const rust::Field& field : st.fields) {
    if (field.line == 0) continue;  // tuple fields
    FieldInfo f;
    f.name = field.name;
    f.type_text = field.type_text;
    f.json_name = f.name;
    f.line = field.line;
    for (const auto& a : field.attributes) {
      if (!contains_word(a, "serde")) continue;
      if (auto r = attr_value(a, "rename")) f.json_name = *r;
      if (auto al = attr_value(a, "alias")) f.aliases.push_back(*al);
      if (auto w = attr_value(a, "deserialize_with")) {
        f.deserialize_with = "deserialize_with = \"" + *w + "\"";
        f.deserializer = *w;
      } else if (auto m = attr_value(a, "with"))
        f.deserialize_with = "with = \"" + *m + "\"";
      if (auto d = attr_value(a, "default"))
        f.default_fn = *d;
      else if (contains_word(a, "default"))
        f.serde_default = true;
    }
    s.fields.push_back(std::move(f));
  }
  return infos_.emplace(item, std::move(s)).first->second;
}

std::optional<ConfigRef> ConfigBinding::config_of_type(const std::string& type_text,
                                                       const std::string& module) const {
  std::string t = peel_type(type_text);
  if (t.empty() || t.find("VarBuilder") != std::string::npos) return std::nullopt;
  auto lt = t.find('<');
  if (lt != std::string::npos) t = t.substr(0, lt);
  for (const auto& c : crate_.resolve(module, t)) {
    if (c.kind != rust::Candidate::Kind::Item) continue;
    if (crate_.items()[c.item].kind != rust::ItemKind::Struct) continue;
    ConfigRef r;
    r.item = c.item;
    return r;
  }
  return std::nullopt;
}

std::string ConfigBinding::field_type(const ConfigRef& c, std::string_view name) const {
  for (const auto& f : info(c.item).fields)
    if (f.name == name) return peel_type(f.type_text);
  return {};
}

std::optional<ConfigRef> ConfigBinding::bind_param(const std::string& type_text,
                                                   const std::string& module, bool given) const {
  auto ref = config_of_type(type_text, module);
  if (!ref) return std::nullopt;
  if (given) {
    if (built_ == nullptr) return std::nullopt;
    auto b = built_->find(ref->item);
    if (b == built_->end()) return std::nullopt;
    return b->second;
  }
  return bind_root(*ref);
}

std::optional<ConfigRef> ConfigBinding::bind_root(const ConfigRef& c) const {
  if (values_ == nullptr) return std::nullopt;
  ConfigRef r = c;
  r.bound = true;
  if (info(c.item).deserialize) {
    validate(c.item, c.path, 0);
    return r;
  }
  // `impl LlamaConfig { fn into_config(self, ..) -> Config { Config { .. } } }`
  const std::string& target = crate_.items()[c.item].name;
  for (std::size_t m = 0; m < crate_.items().size(); ++m) {
    const rust::Item& f = crate_.items()[m];
    if (f.kind != rust::ItemKind::Method || f.impl < 0 || f.self_kind == rust::SelfKind::None)
      continue;
    std::string ret = peel_type(f.return_type);
    auto lt = ret.find('<');  // `Result<Config>`
    if (lt != std::string::npos && ret.back() == '>') ret = ret.substr(lt + 1, ret.size() - lt - 2);
    if (ret.size() < target.size() ||
        ret.compare(ret.size() - target.size(), target.size(), target) != 0)
      continue;
    const rust::Impl& impl = crate_.impls()[static_cast<std::size_t>(f.impl)];
    bool same = false;  // the return type is this very struct, not a namesake
    for (const auto& rc : crate_.resolve(impl.module, ret))
      same = same || (rc.kind == rust::Candidate::Kind::Item && rc.item == c.item);
    if (!same) continue;
    for (const auto& cand : crate_.resolve(impl.module, impl.self_base)) {
      if (cand.kind != rust::Candidate::Kind::Item) continue;
      if (crate_.items()[cand.item].kind != rust::ItemKind::Struct) continue;
      if (!info(cand.item).deserialize) continue;
      r.via = static_cast<std::ptrdiff_t>(m);
      r.via_source = cand.item;
      validate(cand.item, c.path, 0);
      return r;
    }
  }
  return std::nullopt;
}

bool ConfigBinding::can_bind(const ConfigRef& c) const {
  return values_ != nullptr && info(c.item).deserialize;
}

FieldResult ConfigBinding::field(const ConfigRef& c, std::string_view name) const {
  FieldResult out;
  const StructInfo& s = info(c.item);
  const FieldInfo* f = nullptr;
  for (const auto& x : s.fields)
    if (x.name == name) f = &x;
  std::string shown = "cfg." + c.path + std::string(name);
  if (!f) {
    out.value =
        SymValue::symbolic(shown, "the config struct has no field `" + std::string(name) + "`");
    return out;
  }
  if (c.assigned)
    if (auto it = c.assigned->find(name); it != c.assigned->end()) {
      out.value = it->second;
      return out;
    }
  if (c.assigned_configs)
    for (const auto& [n, nested] : *c.assigned_configs)
      if (n == name) {
        out.config = nested;
        return out;
      }
  if (c.defaulted) {
    out.value = impl_default(c, *f);
    if (!out.value.concrete()) out.value.text = shown;
    return out;
  }
  if (c.computed) {
    auto it = c.computed->find(name);
    out.value = it != c.computed->end()
                    ? it->second
                    : SymValue::symbolic(
                          shown, "the deserializer's struct sets no `" + std::string(name) + "`");
    return out;
  }
  if (!f->deserializer.empty() && c.bound) {
    if (auto r = deserialized(c, *f)) return *r;
    const std::string key = c.path + f->json_name;
    if (values_->find(key) != nullptr && reported_.insert(key).second)
      diags_.push_back(
          {crate_.files()[crate_.items()[c.item].file]->path() + ":" + std::to_string(f->line),
           unevaluated(key, values_->origin, f->deserialize_with)});
  }
  // A nested config struct (`text_config: TextConfig`).
  const rust::Item& st = crate_.items()[c.item];
  if (auto nested = config_of_type(f->type_text, st.module)) {
    if (info(nested->item).deserialize || !nested->bound) {
      nested->path = c.path + f->json_name + ".";
      nested->bound = c.bound && info(nested->item).deserialize;
      // Absent from the file and `#[serde(default)]`: serde builds it with `Default::default()`.
      if (nested->bound && f->serde_default && f->default_fn.empty()) {
        auto it = values_->fields.lower_bound(nested->path);
        const bool given = values_->find(c.path + f->json_name) != nullptr ||
                           (it != values_->fields.end() && it->first.rfind(nested->path, 0) == 0);
        nested->defaulted = !given;
      }
      out.config = nested;
      return out;
    }
  }
  if (!c.bound) {
    out.value = SymValue::symbolic(shown, "no config.json bound");
    return out;
  }
  if (c.via >= 0) {
    // The conversion's struct literal says how the field is computed from the source struct.
    const std::size_t conv_item = static_cast<std::size_t>(c.via);
    const rust::Item& conv = crate_.items()[conv_item];
    const rust::Body& body = crate_.lowered(conv_item);
    NodeId lit = first_struct_literal(body, body.root, {}, 0);
    ConfigRef source;
    source.item = c.via_source;
    source.bound = true;
    BodyContext ctx(*this, source);
    for (NodeId fi : lit == kNone ? std::vector<NodeId>{} : body.kids(lit)) {
      if (!(body[fi].flags & rust::kShorthand) && body[fi].str == name) {
        out.value = evaluate(body, body[fi].a, ctx);
        if (!out.value.concrete()) out.value.text = shown;
        return out;
      }
    }
    out.value = SymValue::symbolic(
        shown, "`" + conv.name + "` does not set `" + std::string(name) + "` from config.json");
    return out;
  }
  std::vector<std::string> names{f->json_name};
  for (const auto& a : f->aliases)
    names.push_back(a);
  const std::string field_source = crate_.files()[st.file]->path() + ":" + std::to_string(f->line);
  for (const auto& n : names)
    if (const SymValue* v = values_->find(c.path + n)) {
      const std::string key = c.path + n;
      // A custom deserializer turns the JSON value into something else: not evaluated, said.
      if (!f->deserialize_with.empty()) {
        out.value = SymValue::symbolic(
            shown, "read through `#[serde(" + f->deserialize_with + ")]`, which is not evaluated");
        if (reported_.insert(key).second)
          diags_.push_back({field_source, unevaluated(key, values_->origin, f->deserialize_with)});
        return out;
      }
      if (auto pr = refusal(st, *f, key, *v)) {
        const std::string why = pr->why;
        values_->problems.emplace(key, std::move(*pr));
        out.value =
            SymValue::symbolic(shown, "config.json gives `" + key + "` " + why + ", which `" +
                                          peel_type(f->type_text) + "` cannot hold");
        return out;
      }
      values_->read.insert(key);
      out.value = *v;
      if (out.value.kind == SymValue::Kind::symbolic) out.value.text = shown;
      return out;
    }
  out.value = default_of(c, s, *f);
  if (!out.value.concrete() && reported_.insert(c.path + f->name).second) {
    // Serde has a default (`#[serde(default)]`, `default = "f"`, a struct-level default, an
    // Option) that is not evaluated here: the file is still one serde accepts, so the field is not
    // missing, only unknown to this analysis.
    const bool serde_defaults = !f->default_fn.empty() || f->serde_default || s.struct_default ||
                                peel_type(f->type_text).rfind("Option<", 0) == 0;
    if (serde_defaults) {
      diags_.push_back({field_source, values_->origin + " has no field `" + c.path + f->json_name +
                                          "`; serde's default for it is not " + "evaluated (" +
                                          out.value.reason + "); shapes using it stay symbolic"});
    } else {
      if (c.path.empty()) values_->missing.emplace(f->json_name, field_source);
      diags_.push_back(
          {field_source, values_->origin + " has no field `" + c.path + f->json_name +
                             "` and serde gives it no default; shapes using it stay symbolic"});
    }
  }
  return out;
}

// A deserializer of the serde idiom "read a primitive, match on it, build a struct":
//   match String::deserialize(d)?.as_str() { "gated-gelu" => Ok(S { gated: true, .. }), .., x => ..
//   }
// evaluated on the field's JSON value: the arm the value selects (string literal patterns, or a
// binding / `_`), and that arm's struct literal's fields. nullopt when the body is not of that
// shape or the field's type is not a crate-local struct; the caller then keeps the field symbolic.
std::optional<FieldResult> ConfigBinding::deserialized(const ConfigRef& c,
                                                       const FieldInfo& f) const {
  const rust::Item& st = crate_.items()[c.item];
  auto target = config_of_type(f.type_text, st.module);
  if (!target) return std::nullopt;
  const std::string key = c.path + f.json_name;
  const SymValue* json = values_->find(key);
  if (json == nullptr || json->kind != SymValue::Kind::string) return std::nullopt;
  std::optional<std::size_t> fn;
  for (const auto& cand : crate_.resolve(st.module, f.deserializer))
    if (cand.kind == rust::Candidate::Kind::Item &&
        crate_.items()[cand.item].kind == rust::ItemKind::Function)
      fn = cand.item;
  if (!fn) return std::nullopt;
  const rust::Body& body = crate_.lowered(*fn);
  if (body.root == kNone) return std::nullopt;
  // The input: `X::deserialize(d)?` read inline or bound by a `let` first.
  std::set<std::string, std::less<>> input_names;
  auto reads_input = [&](NodeId n) {
    const std::string_view text = body.source(n);
    if (text.find("::deserialize(") != std::string_view::npos) return true;
    NodeId base = n;
    while (base != kNone && (body[base].kind == Kind::MethodCall || body[base].kind == Kind::Try ||
                             body[base].kind == Kind::Ref || body[base].kind == Kind::Paren))
      base = body[base].a;
    return base != kNone && body[base].kind == Kind::Path && input_names.count(body[base].str);
  };
  NodeId match = kNone;
  for (NodeId stmt : body.kids(body.root)) {
    const rust::Node& n = body[stmt];
    if (n.kind == Kind::Let && n.a != kNone && body[n.a].kind == Kind::PIdent && n.b != kNone &&
        reads_input(n.b))
      input_names.insert(std::string(body[n.a].str));
    if (n.kind == Kind::Match) match = stmt;
    if (n.kind == Kind::ExprStmt && n.a != kNone && body[n.a].kind == Kind::Match) match = n.a;
  }
  if (match == kNone || !reads_input(body[match].a)) return std::nullopt;
  BodyContext ctx(*this, std::nullopt);
  NodeId chosen = kNone;
  for (NodeId arm : body.kids(match)) {
    const rust::Node& a = body[arm];
    if (a.b != kNone || a.a == kNone) return std::nullopt;  // a guard: not evaluated
    std::vector<NodeId> alts = body[a.a].kind == Kind::POr ? body.kids(a.a) : std::vector{a.a};
    for (NodeId p : alts) {
      const rust::Node& pat = body[p];
      bool hit = pat.kind == Kind::PWild;
      if (pat.kind == Kind::PIdent) {
        ctx.locals[std::string(pat.str)] = *json;
        hit = true;
      }
      if (pat.kind == Kind::PLit)
        if (auto lit = rust::decode_string_literal(pat.str)) hit = *lit == json->text;
      if (pat.kind == Kind::PUnsupported || pat.kind == Kind::PPath) return std::nullopt;
      if (hit) chosen = a.c;
    }
    if (chosen != kNone) break;
  }
  if (chosen == kNone) return std::nullopt;
  NodeId lit = first_struct_literal(body, chosen, "", 0);
  if (lit == kNone) return std::nullopt;
  auto fields = std::make_shared<std::map<std::string, SymValue, std::less<>>>();
  for (NodeId fi : body.kids(lit)) {
    if (body[fi].flags & rust::kShorthand) continue;
    (*fields)[std::string(body[fi].str)] = evaluate(body, body[fi].a, ctx);
  }
  values_->read.insert(key);
  FieldResult out;
  out.config = *target;
  out.config->path = key + ".";
  out.config->bound = true;
  out.config->computed = std::move(fields);
  return out;
}

// Field `f` of `Default::default()` of config struct `c`: its value in the struct literal of an
// `impl Default`, else (a derived `Default`) its type's default.
SymValue ConfigBinding::impl_default(const ConfigRef& c, const FieldInfo& f) const {
  for (std::size_t m : crate_.methods(c.item, "default")) {
    const rust::Body& body = crate_.lowered(m);
    if (body.root == kNone || (body[body.root].flags & rust::kTrailingExtras)) continue;
    NodeId tail = body.tail(body.root);
    if (tail == kNone || !body[tail].is_struct_expression()) continue;
    for (NodeId fi : body.kids(tail)) {
      if (body[fi].flags & rust::kShorthand) continue;
      if (body[fi].str != f.name) continue;
      BodyContext ctx(*this, std::nullopt);
      return evaluate(body, body[fi].a, ctx);
    }
  }
  return type_default(f.type_text);
}

SymValue ConfigBinding::default_of(const ConfigRef& c, const StructInfo& s,
                                   const FieldInfo& f) const {
  const rust::Item& st = crate_.items()[c.item];
  std::string shown = "cfg." + c.path + f.name;
  if (!f.default_fn.empty()) {
    for (const auto& cand : crate_.resolve(st.module, f.default_fn))
      if (cand.kind == rust::Candidate::Kind::Item &&
          (crate_.items()[cand.item].kind == rust::ItemKind::Function ||
           crate_.items()[cand.item].kind == rust::ItemKind::Method)) {
        SymValue v = eval_fn_body(cand.item, std::nullopt, {});
        if (v.concrete()) return v;
        return SymValue::symbolic(
            shown, "serde default `" + f.default_fn + "()` not evaluated: " + v.reason);
      }
    return SymValue::symbolic(shown, "serde default `" + f.default_fn + "` not found");
  }
  if (f.serde_default) return type_default(f.type_text);
  if (s.struct_default) {
    // `impl Default for Config { fn default() -> Self { Self { field: .., .. } } }`
    return impl_default(c, f);
  }
  if (peel_type(f.type_text).rfind("Option<", 0) == 0) return SymValue::none();
  return SymValue::symbolic(shown, "config.json has no field `" + c.path + f.json_name + "`");
}

std::optional<SymValue> ConfigBinding::method(const ConfigRef& c, std::string_view name,
                                              const std::vector<SymValue>& args) const {
  auto ms = crate_.methods(c.item, std::string(name));
  if (ms.size() != 1) return std::nullopt;
  const rust::Item& m = crate_.items()[ms[0]];
  if (m.self_kind == rust::SelfKind::None) return std::nullopt;
  SymValue v = eval_fn_body(ms[0], c, args);
  if (!v.concrete() && !c.bound) {
    // Unbound: the call reads best as written on the config.
    std::string t = "cfg." + c.path + std::string(name) + "(";
    for (std::size_t i = 0; i < args.size(); ++i)
      t += (i ? ", " : "") + (args[i].concrete() ? args[i].display() : args[i].text);
    return SymValue::symbolic(t + ")", v.reason);
  }
  return v;
}

SymValue ConfigBinding::eval_fn_body(std::size_t fn_item, const std::optional<ConfigRef>& self,
                                     const std::vector<SymValue>& args) const {
  const rust::Item& f = crate_.items()[fn_item];
  const rust::Body& body = crate_.lowered(fn_item);
  if (body.root == kNone) return SymValue::symbolic(f.name + "()", "no body");
  if (depth_ > 16) return SymValue::symbolic(f.name + "()", "config methods nest too deeply");
  ++depth_;
  struct Guard {
    int& d;
    ~Guard() { --d; }
  } guard{depth_};
  BodyContext ctx(*this, self);
  ctx.module = f.module;
  for (std::size_t i = 0; i < f.params.size() && i < args.size(); ++i)
    ctx.locals[f.params[i].name] = args[i];
  // A comment or attribute after the last statement leaves no tail to evaluate.
  const bool trailing = body[body.root].flags & rust::kTrailingExtras;
  const std::vector<NodeId> stmts = body.kids(body.root);
  for (std::size_t i = 0; i < stmts.size(); ++i) {
    NodeId st = stmts[i];
    const rust::Node& n = body[st];
    if (n.kind == Kind::Let) {
      if (n.a != kNone && body[n.a].is_identifier() && n.b != kNone)
        ctx.locals[std::string(body.source(n.a))] = evaluate(body, n.b, ctx);
      continue;
    }
    if (n.kind == Kind::ExprStmt || n.kind == Kind::MacroStmt) {
      if (n.kind == Kind::ExprStmt && n.a != kNone && body[n.a].kind == Kind::Return)
        return evaluate(body, body[n.a].a, ctx);
      continue;
    }
    if (n.kind == Kind::Return) return evaluate(body, n.a, ctx);
    if (i + 1 == stmts.size() && !trailing) return evaluate(body, st, ctx);
  }
  return SymValue::symbolic(f.name + "()", "body without a tail expression");
}

// The constructor (`new`, else `load`) of struct `type_item` that takes a config bound to the
// file (or to the config an `--arg` call built) and builds the struct with a literal: `visit(body,
// literal, context)`, the context holding the config parameters and the top-level `let`s before the
// literal. False when there is none.
bool ConfigBinding::with_constructor(
    std::size_t type_item,
    const std::function<void(const rust::Body&, NodeId, EvalContext&, const LetValues&)>& visit,
    const std::map<std::string, SymValue>& arguments) const {
  if (arguments.empty() && values_ == nullptr && (built_ == nullptr || built_->empty()))
    return false;
  const std::string& type_name = crate_.items()[type_item].name;
  for (const char* ctor : {"new", "load"}) {
    for (std::size_t m : crate_.methods(type_item, ctor)) {
      const rust::Item& f = crate_.items()[m];
      if (f.cfg.state == rust::Tri::False) continue;
      const rust::Body& body = crate_.lowered(m);
      if (body.root == kNone) continue;
      NodeId lit = first_struct_literal(body, body.root, type_name, 0);
      if (lit == kNone) continue;
      BodyContext ctx(*this, std::nullopt);
      ctx.module = f.module;
      for (const auto& p : f.params) {
        auto ref = config_of_type(p.type_text, f.module);
        if (!ref) continue;
        if (auto bound = bind_root(*ref))
          ctx.config_locals[p.name] = *bound;
        else if (built_ != nullptr)
          if (auto b = built_->find(ref->item); b != built_->end())
            ctx.config_locals[p.name] = b->second;
      }
      bool bound = false;
      for (const auto& p : f.params)
        if (auto a = arguments.find(p.name); a != arguments.end()) {
          ctx.locals[p.name] = a->second;
          bound = true;
        }
      if (ctx.config_locals.empty() && !bound) continue;
      // Top-level `let x = <expr>;` bindings before the literal (the usual shape of a `new`).
      LetValues lets;
      for (NodeId st : body.kids(body.root)) {
        const rust::Node& n = body[st];
        if (n.start >= body[lit].start) break;
        if (n.kind != Kind::Let) continue;
        if (n.a != kNone && body[n.a].is_identifier() && n.b != kNone) {
          std::string name(body.source(n.a));
          ctx.locals[name] = evaluate(body, n.b, ctx);
          lets[name] = n.b;
        }
      }
      visit(body, lit, ctx, lets);
      return true;
    }
  }
  return false;
}

std::map<std::string, SymValue> ConfigBinding::constructor_fields(
    std::size_t type_item, const std::map<std::string, SymValue>& arguments) const {
  std::map<std::string, SymValue> out;
  with_constructor(
      type_item,
      [&](const rust::Body& body, NodeId lit, EvalContext& ctx, const LetValues&) {
        for (NodeId c : body.kids(lit)) {
          if (body[c].flags & rust::kShorthand) {
            std::string name(body.source(c));
            if (auto v = ctx.lookup(name)) out.emplace(name, *v);
          } else {
            out.emplace(std::string(body[c].str), evaluate(body, body[c].a, ctx));
          }
        }
      },
      arguments);
  return out;
}

std::optional<ConstructorCall> ConfigBinding::constructor_field_call(std::size_t type_item,
                                                                     std::string_view field) const {
  std::optional<ConstructorCall> out;
  with_constructor(
      type_item, [&](const rust::Body& body, NodeId lit, EvalContext& ctx, const LetValues& lets) {
        NodeId init = kNone;
        for (NodeId c : body.kids(lit)) {
          if (body[c].flags & rust::kShorthand) {
            if (body.source(c) != field) continue;
            if (auto l = lets.find(std::string(field)); l != lets.end()) init = l->second;
          } else if (body[c].str == field) {
            init = body[c].a;
          }
          if (init != kNone) break;
        }
        // `KvCache::new(2, 512)`, also under `?` or parentheses.
        while (init != kNone && (body[init].kind == Kind::Try || body[init].kind == Kind::Paren))
          init = body[init].a;
        if (init == kNone || body[init].kind != Kind::Call || body[init].a == kNone ||
            body[body[init].a].kind != Kind::Path)
          return;
        ConstructorCall call;
        call.callee = std::string(body[body[init].a].str);
        for (NodeId arg : body.kids(init))
          call.args.push_back(evaluate(body, arg, ctx));
        out = std::move(call);
      });
  return out;
}

std::optional<ConfigRef> ConfigBinding::constructor_field_config(std::size_t type_item,
                                                                 std::string_view field) const {
  std::optional<ConfigRef> out;
  with_constructor(
      type_item, [&](const rust::Body& body, NodeId lit, EvalContext& ctx, const LetValues& lets) {
        NodeId init = kNone;
        for (NodeId c : body.kids(lit)) {
          if (body[c].flags & rust::kShorthand) {
            if (body.source(c) != field) continue;
            auto l = lets.find(std::string(field));
            init = l != lets.end() ? l->second : body[c].a;
          } else if (body[c].str == field) {
            init = body[c].a;
          }
          if (init != kNone) break;
        }
        // `cfg.clone()`, `&cfg`, `(cfg)`: the config itself.
        while (init != kNone && (body[init].kind == Kind::Try || body[init].kind == Kind::Paren ||
                                 body[init].kind == Kind::Ref ||
                                 (body[init].kind == Kind::MethodCall &&
                                  body[init].str == "clone" && body.kids(init).empty())))
          init = body[init].a;
        if (init != kNone) out = static_cast<BodyContext&>(ctx).resolve(body, init);
      });
  return out;
}

std::string rust_value_refusal(const std::string& type_text, const SymValue& v) {
  std::string t = peel_type(type_text);
  if (t.rfind("Option<", 0) == 0 && t.back() == '>') {
    if (v.kind == SymValue::Kind::none) return "";
    t = peel_type(t.substr(7, t.size() - 8));
  } else if (v.kind == SymValue::Kind::none) {
    return "None, and the parameter is no Option";
  }
  if (std::string why = serde_refusal(t, v); !why.empty()) return why;
  if ((t == "f32" || t == "f64") && v.kind != SymValue::Kind::integer &&
      v.kind != SymValue::Kind::real)
    return "not a number";
  if (t == "bool" && v.kind != SymValue::Kind::boolean) return "not true or false";
  return "";
}

}  // namespace cg::analysis
