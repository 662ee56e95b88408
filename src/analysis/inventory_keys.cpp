#include "analysis/inventory_keys.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "util/text.hpp"

namespace cg::analysis::inventory {

Cert join(const Cert& outer, const Cert& inner) {
  if (inner.level > outer.level) return inner;
  return outer;
}

Cert conditional(const Cert& outer, std::string reason) {
  return join(outer, Cert{ir::Confidence::conditional, one_line(reason)});
}

std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  return out;
}

std::string brief(const std::string& s) {
  std::string t = one_line(s);
  if (t.size() > 48) t = t.substr(0, 45) + "...";
  return "`" + t + "`";
}

std::string strip_generics(std::string path) {
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '<') {
      ++depth;
      if (out.size() >= 2 && out.compare(out.size() - 2, 2, "::") == 0) out.resize(out.size() - 2);
      continue;
    }
    if (c == '>') {
      --depth;
      continue;
    }
    if (depth == 0 && c != ' ' && c != '\n') out.push_back(c);
  }
  return out;
}

std::string last_segment(const std::string& path) {
  return std::string(last_path_segment(path));
}

std::vector<std::string> split_key(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == '.' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string join_key(const std::vector<std::string>& segs) {
  std::string out;
  for (const auto& s : segs) {
    if (s.empty()) continue;
    if (!out.empty()) out.push_back('.');
    out += s;
  }
  return out;
}

std::string format_key(const rust::FormatArgs& f,
                       const std::function<std::string(const std::string&)>& placeholder) {
  const std::string& templ = f.templ;
  std::string out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < templ.size(); ++i) {
    char c = templ[i];
    if (c == '{' && i + 1 < templ.size() && templ[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    auto close = templ.find('}', i);
    if (close == std::string::npos) break;
    std::string spec = templ.substr(i + 1, close - i - 1);
    std::string name = spec.substr(0, spec.find(':'));
    std::string expr;
    if (name.empty()) {
      expr = next < f.positional.size() ? f.positional[next++] : "?";
    } else if (std::isdigit(static_cast<unsigned char>(name[0]))) {
      std::size_t idx = static_cast<std::size_t>(std::atoi(name.c_str()));
      expr = idx < f.positional.size() ? f.positional[idx] : name;
    } else {
      const std::string* v = f.find(name);
      expr = v ? *v : name;
    }
    out += placeholder(expr);
    i = close;
  }
  return out;
}

bool is_iterator_method(std::string_view m) {
  static const char* names[] = {"iter",    "into_iter", "iter_mut", "enumerate", "zip",
                                "take",    "skip",      "rev",      "filter",    "chain",
                                "step_by", "windows",   "chunks"};
  for (const char* n : names)
    if (m == n) return true;
  return false;
}

bool ignored_macro(std::string_view name) {
  static const char* names[] = {"assert",
                                "assert_eq",
                                "assert_ne",
                                "debug_assert",
                                "debug_assert_eq",
                                "debug_assert_ne",
                                "bail",
                                "ensure",
                                "panic",
                                "todo",
                                "unimplemented",
                                "unreachable",
                                "print",
                                "println",
                                "eprint",
                                "eprintln",
                                "dbg",
                                "trace",
                                "debug",
                                "info",
                                "warn",
                                "error",
                                "span",
                                "trace_span",
                                "info_span",
                                "debug_span",
                                "write",
                                "writeln"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

std::optional<SymValue> layer_config_default(std::string_view field, std::string_view ctor,
                                             const LayerCatalog* catalog) {
  // `..Default::default()` in a literal leaves `ctor` empty.
  if (catalog != nullptr && (ctor.empty() || ctor == "default"))
    if (const ConfigDefault* d = catalog->config_default(field))
      if (auto v = parse_literal(d->kind, d->text)) return v;
  if (field == "groups" || field == "stride" || field == "dilation") return SymValue::of_int(1);
  if (field == "padding" || field == "output_padding" || field == "layer_idx")
    return SymValue::of_int(0);
  if (field == "affine" || field == "remove_mean") return SymValue::of_bool(true);
  if (field == "b_ih_init" || field == "b_hh_init") {
    if (ctor == "default_no_bias") return SymValue::none();
    return SymValue::of_string("Const(0)");
  }
  return std::nullopt;
}

SymValue template_arithmetic(const std::string& templ,
                             const std::function<SymValue(const std::string&)>& term) {
  std::vector<std::string> terms;
  std::vector<char> ops;
  std::size_t pos = 0;
  while (true) {
    auto m = templ.find(" * ", pos);
    auto d = templ.find(" / ", pos);
    auto next = std::min(m, d);
    terms.push_back(templ.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    ops.push_back(templ[next + 1]);
    pos = next + 3;
  }
  SymValue acc = term(terms[0]);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    SymValue r = term(terms[i + 1]);
    if (acc.kind == SymValue::Kind::integer && r.kind == SymValue::Kind::integer) {
      if (ops[i] == '*')
        acc = SymValue::of_int(acc.integer * r.integer);
      else if (r.integer != 0)
        acc = SymValue::of_int(acc.integer / r.integer);
      else
        acc = SymValue::symbolic(acc.display() + " / 0", "division by zero");
      continue;
    }
    if (r.kind == SymValue::Kind::integer && r.integer == 1) continue;  // `x / 1`, `x * 1`
    auto show = [](const SymValue& v) {
      std::string t = v.concrete() ? v.display() : v.text;
      return t.find(' ') != std::string::npos ? "(" + t + ")" : t;
    };
    std::string reason = !acc.concrete() ? acc.reason : r.reason;
    acc = SymValue::symbolic(show(acc) + " " + ops[i] + " " + show(r), reason);
  }
  return acc;
}

std::map<std::string, std::string> conv_attributes(
    const ConstructorSpec& spec, const std::function<SymValue(const std::string&)>& term) {
  std::map<std::string, std::string> out;
  if (spec.layer_type.rfind("Conv", 0) != 0 ||
      std::find(spec.params.begin(), spec.params.end(), "cfg") == spec.params.end())
    return out;
  const bool transposed = spec.layer_type.rfind("ConvTranspose", 0) == 0;
  for (const char* f : {"padding", "stride", "dilation", "groups", "output_padding"}) {
    if (!transposed && std::string_view(f) == "output_padding") continue;
    SymValue v = term("{cfg}." + std::string(f));
    out[f] = v.concrete() ? v.display() : v.text;
  }
  return out;
}

}  // namespace cg::analysis::inventory
