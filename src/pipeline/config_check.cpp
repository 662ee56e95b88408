#include "pipeline/config_check.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "util/error.hpp"

namespace cg::pipeline {

namespace {

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// The config keys a symbolic expression still names: `cfg.hidden_size / cfg.text_config.n_head`
// -> {"hidden_size", "text_config.n_head"}. Method calls (`cfg.head_dim()`) are not fields.
std::set<std::string> config_keys_in(const std::string& expr) {
  std::set<std::string> out;
  for (std::size_t p = expr.find("cfg."); p != std::string::npos; p = expr.find("cfg.", p + 4)) {
    // Not the tail of another name (`self.cfg.x`, `my_cfg.x`); a range's `..` may precede it.
    const bool range = p >= 2 && expr[p - 1] == '.' && expr[p - 2] == '.';
    if (p > 0 && !range &&
        (std::isalnum(static_cast<unsigned char>(expr[p - 1])) || expr[p - 1] == '_' ||
         expr[p - 1] == '.'))
      continue;
    std::size_t e = p + 4;
    while (e < expr.size() && key_char(expr[e]))
      ++e;
    std::string key = expr.substr(p + 4, e - p - 4);
    while (!key.empty() && key.back() == '.')
      key.pop_back();
    if (key.empty() || (e < expr.size() && expr[e] == '(')) continue;
    out.insert(key);
  }
  return out;
}

// 1234567 -> "1,234,567"
std::string group_thousands_text(std::uint64_t n) {
  std::string d = std::to_string(n), out;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

std::optional<std::uint64_t> whole_number(const std::string& t) {
  if (t.empty() || t.size() > 19 ||
      !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(t);
}

// A module's repeat text: "i in 0..n", "i in 0..n (not expanded: why)", "i in 0..cfg.n".
struct Repeat {
  std::string loop;  // without the "(not expanded: …)" note
  bool template_ = false;
  std::optional<std::uint64_t> count;  // a template's concrete count
};

Repeat repeat_of(const std::optional<std::string>& text) {
  Repeat r;
  if (!text) return r;
  r.loop = *text;
  auto open = r.loop.find(" (not expanded: ");
  if (open != std::string::npos) {
    r.template_ = true;
    r.loop = r.loop.substr(0, open);
  }
  auto in = r.loop.find(" in ");
  if (in == std::string::npos) return r;
  std::string range = r.loop.substr(in + 4);
  auto dots = range.find("..");
  if (dots == std::string::npos) return r;
  const bool inclusive = range.compare(dots, 3, "..=") == 0;
  auto lo = whole_number(range.substr(0, dots));
  auto hi = whole_number(range.substr(dots + (inclusive ? 3 : 2)));
  if (!lo || !hi) {
    r.template_ = true;  // a symbolic bound is always a template
    return r;
  }
  if (inclusive) ++*hi;
  if (r.template_) r.count = *hi > *lo ? *hi - *lo : 0;
  return r;
}

std::string shape_text(const std::vector<std::string>& dims) {
  std::string out;
  for (const auto& d : dims)
    out += (out.empty() ? "" : ", ") + d;
  return "[" + out + "]";
}

// "`a`, `b`, `c` and 4 more"
std::string name_list(const std::vector<std::string>& names, std::size_t shown = 3) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + std::string("`") + names[i] + "`";
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// The keys a constructor read whose integer value is `v` ("num_hidden_layers"): where a concrete
// dimension or count came from, by value (a derived value names none).
std::vector<std::string> keys_with_value(const analysis::ConfigValues& config, std::int64_t v) {
  std::vector<std::string> out;
  for (const auto& key : config.read)
    if (const auto* s = config.find(key);
        s && s->kind == analysis::SymValue::Kind::integer && s->integer == v)
      out.push_back(key);
  return out;
}

std::string from_keys(const analysis::ConfigValues& config, std::uint64_t v) {
  if (v > static_cast<std::uint64_t>(INT64_MAX)) return "";
  auto keys = keys_with_value(config, static_cast<std::int64_t>(v));
  if (keys.empty()) return "";
  std::string out;
  for (const auto& k : keys)
    out += (out.empty() ? "" : " or ") + ("`" + k + "`");
  return out + " = " + std::to_string(v);
}

struct Modules {
  std::map<std::string, const ir::Module*> by_id;
  const ir::Module* parent(const ir::Module& m) const {
    if (!m.parent) return nullptr;
    auto it = by_id.find(*m.parent);
    return it == by_id.end() ? nullptr : it->second;
  }
  // The count a template module record stands for (1 for an expanded instance, or a record
  // inside a template built by its parent's own loop); nullopt when symbolic.
  std::optional<std::uint64_t> count(const ir::Module& m) const {
    Repeat r = repeat_of(m.repeat);
    if (!r.template_) return 1;
    if (const ir::Module* p = parent(m); p && repeat_of(p->repeat).loop == r.loop) return 1;
    return r.count;
  }
};

// Which parameters (and families) each config key still named in a shape feeds.
struct KeyUses {
  std::map<std::string, std::vector<std::string>> params, families;
};

KeyUses key_uses(const ir::ModelIr& ir, const Modules& mods) {
  KeyUses out;
  for (const auto& p : ir.parameters) {
    if (p.shape || !p.symbolic_shape) continue;
    std::set<std::string> keys;
    for (const auto& d : *p.symbolic_shape)
      for (auto& k : config_keys_in(d))
        keys.insert(std::move(k));
    for (const auto& k : keys)
      out.params[k].push_back(p.key);
  }
  for (const auto& m : ir.modules)
    if (const ir::Module* up = mods.parent(m);
        m.repeat && !(up && repeat_of(up->repeat).loop == repeat_of(m.repeat).loop))
      for (const auto& k : config_keys_in(*m.repeat))
        out.families[k].push_back(m.prefix.empty() ? m.type_name : m.prefix);
  return out;
}

// 1. Values serde refuses for the field's type, where they feed a shape or a family count (an
//    error), or feed nothing in a config struct of the analysed component's files (a warning).
void check_refused_values(const analysis::ConfigValues& config, const KeyUses& uses, bool partial,
                          ir::ModelIr& ir, std::vector<std::string>& errors) {
  for (const auto& [key, pr] : config.problems) {
    auto ps = uses.params.find(key);
    auto fs = uses.families.find(key);
    std::string feeds;
    if (ps != uses.params.end())
      feeds = "the shape of " + name_list(ps->second) + " (" + std::to_string(ps->second.size()) +
              " parameter" + (ps->second.size() == 1 ? "" : "s") + ")";
    if (fs != uses.families.end())
      feeds += (feeds.empty() ? "" : " and ") + std::string("the count of family ") +
               name_list(fs->second);
    std::string what = "`" + key + "` is " + pr.value + ": " + pr.why + ", which `" + pr.field +
                       "` (" + pr.rust_type + ", " + pr.field_source +
                       ") cannot hold; serde refuses it";
    // A refused value that feeds nothing is said only for a config struct of the analysed
    // component's own files (the dataflow binds the file to every config type of the crate).
    const std::string file = pr.field_source.substr(0, pr.field_source.rfind(':'));
    const bool own = std::any_of(ir.components.begin(), ir.components.end(),
                                 [&](const auto& c) { return c.source.rfind(file + ":", 0) == 0; });
    if (!feeds.empty()) {
      errors.push_back(what + ". It feeds " + feeds);
    } else if (pr.whole_file && own && !partial) {
      // A field of a config struct the analysed component's own files declare (the dataflow
      // binds the file to every config type of the crate, so another model's struct is no
      // evidence): serde fails the whole file, so the model never loads.
      errors.push_back(what);
    } else if (own) {
      ir.findings.push_back(ir::make_finding(
          "config-value", ir::Severity::warning, ir::Confidence::proven,
          config.origin + ": " + what + " (no parameter shape uses it)", pr.field_source));
    }
  }
}

// One parameter's concrete dimensions: nullopt (with the error said) when a dimension is
// negative or the element count is too large for one tensor; `all` false when one is symbolic.
struct Dims {
  std::vector<std::uint64_t> dims;
  bool all = true;
  std::uint64_t elems = 1;
};

std::optional<Dims> concrete_dims(const analysis::ConfigValues& config, const ir::Parameter& p,
                                  std::vector<std::string>& errors) {
  Dims out;
  std::optional<std::int64_t> negative;
  for (const auto& d : *p.symbolic_shape) {
    if (auto n = whole_number(d)) {
      out.dims.push_back(*n);
    } else {
      out.all = false;
      if (d.size() > 1 && d[0] == '-' && whole_number(d.substr(1)))
        negative = -static_cast<std::int64_t>(*whole_number(d.substr(1)));
    }
  }
  if (p.shape) out.dims = *p.shape, out.all = true;
  const std::string shown = shape_text(*p.symbolic_shape);
  if (negative) {
    auto keys = keys_with_value(config, *negative);
    std::string from;
    for (const auto& k : keys)
      from += (from.empty() ? "" : " or ") + ("`" + k + "`");
    errors.push_back("parameter `" + p.key + "` gets shape " + shown + ": a negative dimension" +
                     (from.empty() ? std::string(" from the config values it reads")
                                   : " from " + from + " = " + std::to_string(*negative)));
    return std::nullopt;
  }
  if (p.reason && p.reason->find("division by zero") != std::string::npos) {
    auto keys = keys_with_value(config, 0);
    std::string from;
    for (const auto& k : keys)
      from += (from.empty() ? "" : " or ") + ("`" + k + "` = 0");
    const std::string& r = *p.reason;
    const std::size_t at = r.find("division by zero");
    errors.push_back("parameter `" + p.key + "` (" + p.source +
                     "): " + r.substr(at, r.find(';', at) - at) +
                     (from.empty() ? std::string() : " (from " + from + ")") +
                     "; Rust panics on an integer division by zero, so the constructor fails");
    return std::nullopt;
  }
  if (std::find(out.dims.begin(), out.dims.end(), 0) != out.dims.end()) {
    // A weight with no elements: a 0 a config gives a dimension (`hidden_size: 0`) makes a model
    // that holds nothing. A 0 the code writes itself is its author's choice and stays.
    auto keys = keys_with_value(config, 0);
    if (!keys.empty()) {
      std::string from;
      for (const auto& k : keys)
        from += (from.empty() ? "" : " or ") + ("`" + k + "`");
      errors.push_back("parameter `" + p.key + "` gets shape " + shown +
                       ": an empty dimension, from " + from + " = 0");
      return std::nullopt;
    }
  }
  if (!out.all) return out;
  bool overflow = false;
  for (auto d : out.dims)
    overflow = overflow || __builtin_mul_overflow(out.elems, d, &out.elems);
  if (overflow || out.elems > kMaxTensorElements) {
    std::string from;
    for (auto d : out.dims)
      if (auto f = from_keys(config, d); !f.empty() && d > 1)
        from += (from.empty() ? "" : ", ") + f;
    errors.push_back("parameter `" + p.key + "` gets shape " + shown + ": " +
                     (overflow ? std::string("its element count does not fit in 64 bits")
                               : group_thousands_text(out.elems) + " elements, over 2^40 for one "
                                                                   "tensor") +
                     (from.empty() ? "" : " (from " + from + ")"));
    return std::nullopt;
  }
  return out;
}

// `elems` times the counts of the families (templates of known count) parameter `p` repeats
// in; the family that overflows 64 bits is named in `family_from`, else it stays empty.
std::uint64_t through_families(const analysis::ConfigValues& config, const Modules& mods,
                               const ir::Parameter& p, std::uint64_t elems,
                               std::string& family_from) {
  std::uint64_t n = elems;
  bool fam_overflow = false;
  if (p.module)
    for (auto it = mods.by_id.find(*p.module); it != mods.by_id.end();) {
      const ir::Module* m = it->second;
      auto c = mods.count(*m);
      if (c && *c != 1) {
        if (__builtin_mul_overflow(n, *c, &n)) fam_overflow = true;
        if (fam_overflow && family_from.empty()) {
          std::string f = from_keys(config, *c);
          family_from = "family `" + m->prefix + "` × " + group_thousands_text(*c) +
                        (f.empty() ? "" : " (" + f + ")");
        }
      }
      if (!m->parent || fam_overflow) break;
      it = mods.by_id.find(*m->parent);
    }
  return n;
}

// 2. Concrete shapes: a tensor over 2^40 elements, a negative dimension from a signed field, an
//    element count past 64 bits; and counts through the families a parameter repeats in.
void check_concrete_shapes(const analysis::ConfigValues& config, const Modules& mods,
                           const ir::ModelIr& ir, std::vector<std::string>& errors) {
  std::map<std::string, std::uint64_t> component_total;
  std::set<std::string> component_overflow;
  std::map<std::string, std::vector<std::string>> family_overflow;  // family -> parameters
  for (const auto& p : ir.parameters) {
    if (!p.symbolic_shape) continue;
    std::optional<Dims> d = concrete_dims(config, p, errors);
    if (!d || !d->all) continue;
    std::string family_from;
    std::uint64_t n = through_families(config, mods, p, d->elems, family_from);
    if (!family_from.empty()) {
      family_overflow[family_from].push_back(p.key + " " + shape_text(*p.symbolic_shape));
      continue;
    }
    if (p.confidence == ir::Confidence::proven || p.confidence == ir::Confidence::conditional) {
      auto& t = component_total[p.component];
      if (__builtin_add_overflow(t, n, &t)) component_overflow.insert(p.component);
    }
  }
  for (const auto& [family, ps] : family_overflow)
    errors.push_back(family + " makes " + name_list(ps, 2) + " count past 2^64 elements");
  for (const auto& c : component_overflow) {
    std::string name = c;
    for (const auto& comp : ir.components)
      if (comp.id == c) name = comp.qualified_name;
    errors.push_back("the parameters of `" + name + "` add up past 2^64");
  }
}

// The errors of steps 1 and 2, sorted and deduplicated, as one usage error naming the file.
void throw_if_errors(const analysis::ConfigValues& config, std::vector<std::string> errors) {
  if (errors.empty()) return;
  std::sort(errors.begin(), errors.end());
  errors.erase(std::unique(errors.begin(), errors.end()), errors.end());
  std::string msg = "config values no model can have";
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < errors.size() && i < kShown; ++i)
    msg += "\n  " + errors[i];
  if (errors.size() > kShown) msg += "\n  and " + std::to_string(errors.size() - kShown) + " more";
  throw InputError(config.origin, msg);
}

// 3. Fields a constructor reads that the file does not bind: shapes and counts still name them.
void warn_unbound_keys(const analysis::ConfigValues& config, const KeyUses& uses, ir::ModelIr& ir) {
  std::vector<const ir::Finding*> existing;
  for (const auto& f : ir.findings)
    if (f.rule == "config-binding") existing.push_back(&f);
  std::set<std::string> keys;
  for (const auto& [k, v] : uses.params)
    keys.insert(k);
  for (const auto& [k, v] : uses.families)
    keys.insert(k);
  // The root's config could not be bound at all (not Deserialize): one warning lists its fields.
  const bool root_unbound = std::any_of(existing.begin(), existing.end(), [](const ir::Finding* f) {
    return f->message.find(" is not bound to `") != std::string::npos;
  });
  if (root_unbound && !keys.empty()) {
    std::vector<std::string> names;
    for (const auto& k : keys)
      names.push_back("cfg." + k);
    ir.findings.push_back(ir::make_finding(
        "config-binding", ir::Severity::warning, ir::Confidence::proven,
        config.origin + " binds none of the " + std::to_string(names.size()) +
            " config fields the constructors read for shapes and counts: " + name_list(names, 12),
        ""));
    return;
  }
  std::vector<ir::Finding> added;
  for (const auto& key : keys) {
    const bool named = std::any_of(existing.begin(), existing.end(), [&](const ir::Finding* f) {
      return f->message.find("`" + key + "`") != std::string::npos;
    });
    if (named) continue;
    std::string what;
    if (auto ps = uses.params.find(key); ps != uses.params.end())
      what = std::to_string(ps->second.size()) + " parameter" +
             (ps->second.size() == 1 ? std::string(" keeps") : "s keep") + " a symbolic shape (" +
             name_list(ps->second) + ")";
    if (auto fs = uses.families.find(key); fs != uses.families.end())
      what += (what.empty() ? "" : "; ") + std::string("family ") + name_list(fs->second) +
              " keeps a symbolic count";
    added.push_back(ir::make_finding(
        "config-binding", ir::Severity::warning, ir::Confidence::proven,
        "a constructor reads `cfg." + key + "` but " + config.origin + " does not bind it: " + what,
        ""));
  }
  ir.findings.insert(ir.findings.end(), added.begin(), added.end());
}

}  // namespace

void check_config(const analysis::ConfigValues& config, ir::ModelIr& ir, bool partial) {
  Modules mods;
  for (const auto& m : ir.modules)
    mods.by_id[m.id] = &m;
  const KeyUses uses = key_uses(ir, mods);
  std::vector<std::string> errors;
  check_refused_values(config, uses, partial, ir, errors);
  for (const auto& key : config.duplicates)
    if (config.read.count(key))
      errors.push_back("`" + key + "` is written twice in one object; serde refuses a duplicate " +
                       "field (which value was meant?)");
  check_concrete_shapes(config, mods, ir, errors);
  throw_if_errors(config, std::move(errors));
  warn_unbound_keys(config, uses, ir);
}

std::string config_warning_lines(const ir::ModelIr& ir, std::size_t max) {
  std::string out;
  std::size_t shown = 0, more = 0;
  // The `--config-key` suggestion first: it explains the missing-field warnings after it.
  std::vector<const ir::Finding*> warnings;
  for (const auto& f : ir.findings)
    if ((f.rule == "config-binding" || f.rule == "config-value") &&
        f.severity == ir::Severity::warning)
      warnings.push_back(&f);
  std::stable_partition(warnings.begin(), warnings.end(), [](const ir::Finding* f) {
    return f->message.find("--config-key") != std::string::npos;
  });
  for (const ir::Finding* fp : warnings) {
    const ir::Finding& f = *fp;
    if (shown++ >= max) {
      ++more;
      continue;
    }
    out += "warning: " + f.message +
           (f.source && !f.source->empty() ? " (" + *f.source + ")" : "") + "\n";
  }
  if (more > 0)
    out += "warning: and " + std::to_string(more) +
           " more config-binding warnings (candle-graph check)\n";
  return out;
}

}  // namespace cg::pipeline
