#include "instrument/instrument.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "analysis/inventory.hpp"
#include "instrument/manifest.hpp"
#include "instrument/stats_code.hpp"
#include "instrument/unified_diff.hpp"
#include "ir/model.hpp"
#include "ir/stable_id.hpp"
#include "pipeline/dependencies.hpp"
#include "rust/crate.hpp"
#include "rust/instrument_sites.hpp"
#include "util/error.hpp"
#include "util/read_ledger.hpp"
#include "util/text.hpp"

namespace cg::instrument {

namespace {

namespace fs = std::filesystem;

constexpr const char* kAttr = "#[cfg(feature = \"candle-graph-profile\")]";

// ---- text positions -------------------------------------------------------------------------

std::uint32_t line_begin(const std::string& t, std::uint32_t off) {
  if (off == 0) return 0;
  std::size_t k = t.rfind('\n', off - 1);
  return k == std::string::npos ? 0 : static_cast<std::uint32_t>(k + 1);
}

std::string indent_at(const std::string& t, std::uint32_t off) {
  std::size_t a = line_begin(t, off), b = a;
  while (b < t.size() && (t[b] == ' ' || t[b] == '\t'))
    ++b;
  return t.substr(a, b - a);
}

bool newline_between(const std::string& t, std::uint32_t a, std::uint32_t b) {
  std::size_t k = t.find('\n', a);
  return k != std::string::npos && k < b;
}

std::string eol_of(const std::string& t) {
  std::size_t k = t.find('\n');
  return k != std::string::npos && k > 0 && t[k - 1] == '\r' ? "\r\n" : "\n";
}

// `item` (a declaration or an initializer, without its comma) appended to a field list behind
// the cfg attribute: on lines of its own when the list is written one field a line, else inline.
std::vector<Insertion> field_insertions(const std::string& t, const rust::BraceList& b,
                                        const std::string& item) {
  const std::string eol = eol_of(t);
  const std::uint32_t anchor = b.has_base ? b.base_start : b.close;
  std::vector<Insertion> out;
  if (b.has_last && newline_between(t, b.last_end, anchor)) {
    if (!b.last_comma) out.push_back({b.last_end, ","});
    const std::string ind = indent_at(t, b.has_base ? b.base_start : b.last_start);
    out.push_back({line_begin(t, anchor), ind + kAttr + eol + ind + item + "," + eol});
  } else if (b.has_last) {
    out.push_back({b.last_comma ? b.after_comma : b.last_end,
                   std::string(b.last_comma ? "" : ",") + " " + kAttr + " " + item +
                       (b.last_comma || b.has_base ? "," : "")});
  } else if (b.has_base) {
    out.push_back({b.base_start, std::string(kAttr) + " " + item + ", "});
  } else {
    out.push_back({b.close, std::string(" ") + kAttr + " " + item + " "});
  }
  return out;
}

// `stmt` as the first statement of a body (after inner attributes), behind the cfg attribute.
Insertion statement_insertion(const std::string& t, const rust::BodySite& s,
                              const std::string& stmt) {
  const std::string eol = eol_of(t);
  if (s.has_first && newline_between(t, s.after_inner, s.first_start)) {
    const std::string ind = indent_at(t, s.first_start);
    return {line_begin(t, s.first_start), ind + kAttr + eol + ind + stmt + eol};
  }
  return {s.after_inner, std::string(" ") + kAttr + " " + stmt + (s.has_first ? "" : " ")};
}

// `--stats`: the body runs in a closure called at once, `let cg_out = (|| -> R { BODY })();`, so
// that every way out of it (the tail, `return`, `?`) hands its value to the recording statement
// after it; then `cg_out` is returned. `close` is the byte of the body's `}`.
void wrap_body_for_stats(const std::string& t, const rust::BodySite& s, std::uint32_t close,
                         const std::string& ret, std::vector<Insertion>& out) {
  const std::string eol = eol_of(t);
  const std::string open = "let cg_out = (|| -> " + ret + " {";
  const std::string record =
      stats_record_call(kScopeName, "&self." + std::string(kFieldName), "\"\"");
  const std::uint32_t close_line = line_begin(t, close);
  const bool close_alone =
      t.find_first_not_of(" \t", close_line) == static_cast<std::size_t>(close);
  if (s.has_first && newline_between(t, s.after_inner, s.first_start) && close_alone) {
    const std::string ind = indent_at(t, s.first_start);
    out.push_back({line_begin(t, s.first_start), ind + open + eol});
    out.push_back({close_line, ind + "})();" + eol + ind + record + eol + ind + "cg_out" + eol});
    return;
  }
  out.push_back({s.after_inner, " " + open});
  out.push_back({close, " })(); " + record + " cg_out "});
}

// ---- what the crate says --------------------------------------------------------------------

// `VarBuilder`, `&VarBuilder<'a>`, `candle_nn::VarBuilder`, `VarBuilderArgs<B>`,
// `ShardedVarBuilder`, or an import alias of one.
bool builder_type(const rust::Crate& crate, const std::string& module, const std::string& type) {
  std::string t = type.substr(0, type.find('<'));
  std::string path;
  std::istringstream words(t);
  for (std::string w; words >> w;) {
    while (!w.empty() && w[0] == '&')
      w.erase(0, 1);
    if (w.empty() || w[0] == '\'' || w == "mut" || w == "dyn") continue;
    path = w;
  }
  auto is_name = [](std::string_view p) {
    std::string_view leaf = last_path_segment(p);
    return leaf == "VarBuilder" || leaf == "VarBuilderArgs" || leaf == "ShardedVarBuilder";
  };
  if (path.empty()) return false;
  if (is_name(path)) return true;
  for (const auto& c : crate.resolve(module, path))
    if (c.kind == rust::Candidate::Kind::External && is_name(c.path)) return true;
  return false;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || (std::isdigit(static_cast<unsigned char>(s[0])) != 0)) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

std::string read_text(const fs::path& p) {
  note_input(p);
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string(), "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `Tensor` (any path or reference to it) named in a parameter or the return type.
bool tensor_in_signature(const rust::Item& f) {
  auto names = [](const std::string& t) {
    for (std::size_t k = t.find("Tensor"); k != std::string::npos; k = t.find("Tensor", k + 1)) {
      const bool left =
          k == 0 || (std::isalnum(static_cast<unsigned char>(t[k - 1])) == 0 && t[k - 1] != '_');
      const std::size_t e = k + 6;
      const bool right =
          e >= t.size() || (std::isalnum(static_cast<unsigned char>(t[e])) == 0 && t[e] != '_');
      if (left && right) return true;
    }
    return false;
  };
  if (names(f.return_type)) return true;
  return std::any_of(f.params.begin(), f.params.end(),
                     [&](const rust::Param& p) { return names(p.type_text); });
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
    s.pop_back();
  std::size_t a = 0;
  while (a < s.size() && std::isspace(static_cast<unsigned char>(s[a])) != 0)
    ++a;
  return s.substr(a);
}

// `self.name` as written (whitespace aside): the field name, else empty.
std::string self_field(const std::string& text) {
  std::string t;
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) == 0) t += c;
  if (!t.starts_with("self.")) return {};
  t = t.substr(5);
  return is_identifier(t) ? t : std::string();
}

// A value expression through `&`, `&mut`, `*`, parentheses and the conversions that hand out the
// same layer (`.as_ref()` on an `Option` or an `Arc`, `.as_deref()`, `.as_mut()`, `.deref()`,
// `.unwrap()`), whitespace removed; `field_behind` is the `self.f` it reads, else empty.
std::string strip_same(const std::string& text) {
  // `&mut x` loses its `&mut ` before the spaces go (`&mutable` is a name).
  std::string t;
  const std::string in = trimmed(text);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in.compare(i, 4, "&mut") == 0 && i + 4 < in.size() &&
        std::isspace(static_cast<unsigned char>(in[i + 4])) != 0) {
      t += '&';
      i += 4;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(in[i])) == 0) t += in[i];
  }
  static const char* const kSame[] = {".as_ref()",       ".as_deref()", ".as_mut()",
                                      ".as_deref_mut()", ".deref()",    ".unwrap()"};
  for (bool changed = true; changed;) {
    changed = false;
    if (t.starts_with("&") || t.starts_with("*")) {
      t = t.substr(1);
      changed = true;
    } else if (t.size() > 2 && t.front() == '(' && t.back() == ')' &&
               t.find_first_of("(),", 1) == t.size() - 1) {
      t = t.substr(1, t.size() - 2);
      changed = true;
    }
    for (const char* s : kSame)
      if (t.ends_with(s) && t.size() > std::strlen(s)) {
        t.resize(t.size() - std::strlen(s));
        changed = true;
      }
  }
  return t;
}

std::string field_behind(const std::string& text) {
  return self_field(strip_same(text));
}

// How a `Some(..)` pattern binds `name`: -1 to the option's whole content (`Some(name)`,
// `Some(ref name)`, `Some(&name)`, `Some(mut name)`, spacing aside), k to element k of a tuple
// content (`Some((attn, name))`), -2 not at all.
int some_binds(const std::string& pattern, const std::string& name) {
  std::string t;  // whitespace collapsed to one space, none next to `(`, `)`, `,` or `&`
  for (char c : pattern) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (space) {
      if (!t.empty() && t.back() != ' ' && t.back() != '(' && t.back() != '&' && t.back() != ',')
        t += ' ';
      continue;
    }
    if ((c == '(' || c == ')' || c == '&' || c == ',') && !t.empty() && t.back() == ' ')
      t.pop_back();
    t += c;
  }
  auto binds = [&](std::string e) {
    for (const char* pre : {"ref mut ", "ref ", "mut ", "&"})
      if (e.starts_with(pre)) {
        e = e.substr(std::strlen(pre));
        break;
      }
    return e == name;
  };
  if (t.starts_with("Some((") && t.ends_with("))")) {
    const std::string inner = t.substr(6, t.size() - 8);
    if (inner.find_first_of("()[]{}") != std::string::npos) return -2;
    int k = 0;
    for (std::size_t a = 0;; ++k) {
      const std::size_t b = inner.find(',', a);
      if (binds(inner.substr(a, b == std::string::npos ? std::string::npos : b - a))) return k;
      if (b == std::string::npos) return -2;
      a = b + 1;
    }
  }
  if (t.starts_with("Some(") && t.ends_with(")") && binds(t.substr(5, t.size() - 6))) return -1;
  return -2;
}

// The option a local `name` used at [start, end) of function `fn_item` is bound to the content of,
// as written (`&self.f`): by an enclosing `if let Some(name) = &self.f`, `while let Some(name) =
// ..` or a `match &self.f { .. Some(name) => .. }` arm, with no `let name` shadowing it in
// between; else empty. This is how candle code calls an `Option<Linear>`. `index`: -1, or the
// tuple element `name` is (`Some((attn, ln))` over an `Option<(Attention, LayerNorm)>`).
std::string option_binding(const rust::Crate& crate, std::size_t file, std::size_t fn_item,
                           std::uint32_t start, std::uint32_t end, const std::string& name,
                           int& index) {
  index = -1;
  const TSNode fn = crate.items()[fn_item].node;
  if (ts_node_is_null(fn)) return {};
  TSNode child = ts_node_descendant_for_byte_range(fn, start, end);
  auto text = [&](TSNode n) { return crate.node_text(file, n); };
  for (TSNode p = ts_node_parent(child); !ts_node_is_null(p) && !ts_node_eq(child, fn);
       child = p, p = ts_node_parent(p)) {
    const std::string type = ts_node_type(p);
    if (type == "block") {
      // A `let name = ..` before the use, in a block around it, shadows any outer binding.
      const std::uint32_t n = ts_node_named_child_count(p);
      for (std::uint32_t k = 0; k < n; ++k) {
        TSNode st = ts_node_named_child(p, k);
        if (ts_node_start_byte(st) >= start) break;
        if (std::string(ts_node_type(st)) != "let_declaration") continue;
        TSNode pat = ts_node_child_by_field_name(st, "pattern", 7);
        if (!ts_node_is_null(pat)) {
          std::string pt = text(pat);
          if (pt.starts_with("mut ")) pt = trimmed(pt.substr(4));
          if (pt == name) return {};
        }
      }
    } else if (type == "match_arm") {
      TSNode pat = ts_node_child_by_field_name(p, "pattern", 7);
      if (ts_node_is_null(pat) || ts_node_eq(pat, child)) return {};
      if (std::string(ts_node_type(pat)) == "match_pattern" && ts_node_named_child_count(pat) > 0)
        pat = ts_node_named_child(pat, 0);
      index = some_binds(text(pat), name);
      if (index == -2) continue;
      TSNode block = ts_node_parent(p);
      TSNode match = ts_node_is_null(block) ? block : ts_node_parent(block);
      if (ts_node_is_null(match) || std::string(ts_node_type(match)) != "match_expression")
        return {};
      TSNode value = ts_node_child_by_field_name(match, "value", 5);
      return ts_node_is_null(value) ? std::string() : text(value);
    } else if (type == "if_expression" || type == "while_expression") {
      TSNode cond = ts_node_child_by_field_name(p, "condition", 9);
      TSNode body = ts_node_child_by_field_name(p, type == "if_expression" ? "consequence" : "body",
                                                type == "if_expression" ? 11 : 4);
      if (ts_node_is_null(cond) || ts_node_is_null(body) || !ts_node_eq(body, child)) continue;
      if (std::string(ts_node_type(cond)) != "let_condition") continue;
      TSNode pat = ts_node_child_by_field_name(cond, "pattern", 7);
      TSNode value = ts_node_child_by_field_name(cond, "value", 5);
      if (ts_node_is_null(pat) || ts_node_is_null(value)) continue;
      index = some_binds(text(pat), name);
      if (index == -2) continue;
      return text(value);
    } else if (type == "closure_expression" || type == "function_item") {
      return {};
    }
  }
  return {};
}

// The key segments `vb.pp(LIT)` / `vb.push_prefix(LIT)` chains rooted at the builder `vb` push
// inside `n` (`vb.pp("attn").pp("q")` is `attn.q`); a segment that is not a literal is recorded as
// "?" (a loop index, a format!), so the caller can tell a fixed path from a varying one.
void pp_segments(const rust::Crate& crate, std::size_t file, TSNode n, const std::string& vb,
                 std::set<std::string>& out) {
  if (ts_node_is_null(n)) return;
  // The chain of a `.pp(..)` call back to `vb`: "" when it is not rooted at `vb`.
  auto chain = [&](auto&& self, TSNode call) -> std::optional<std::string> {
    if (std::string(ts_node_type(call)) == "identifier") {
      if (crate.node_text(file, call) == vb) return std::string();
      return std::nullopt;
    }
    if (std::string(ts_node_type(call)) != "call_expression") return std::nullopt;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode args = ts_node_child_by_field_name(call, "arguments", 9);
    if (ts_node_is_null(fn) || ts_node_is_null(args) ||
        std::string(ts_node_type(fn)) != "field_expression")
      return std::nullopt;
    TSNode field = ts_node_child_by_field_name(fn, "field", 5);
    const std::string method = ts_node_is_null(field) ? "" : crate.node_text(file, field);
    if (method != "pp" && method != "push_prefix") return std::nullopt;
    auto inner = self(self, ts_node_child_by_field_name(fn, "value", 5));
    if (!inner) return std::nullopt;
    std::string seg = "?";
    if (ts_node_named_child_count(args) == 1) {
      TSNode a = ts_node_named_child(args, 0);
      const std::string at = ts_node_type(a), text = crate.node_text(file, a);
      if (at == "integer_literal" && text.find_first_not_of("0123456789") == std::string::npos)
        seg = text;
      else if (at == "string_literal" && text.size() >= 2 &&
               text.find_first_of("\\{}") == std::string::npos)
        seg = text.substr(1, text.size() - 2);
    }
    return inner->empty() ? seg : *inner + "." + seg;
  };
  if (std::string(ts_node_type(n)) == "call_expression") {
    if (auto c = chain(chain, n)) {
      if (!c->empty()) out.insert(c->find('?') == std::string::npos ? *c : "?");
      return;
    }
  }
  const std::uint32_t k = ts_node_named_child_count(n);
  for (std::uint32_t i = 0; i < k; ++i)
    pp_segments(crate, file, ts_node_named_child(n, i), vb, out);
}

// Nodes of type `type` under `n`, in source order.
void nodes_of(TSNode n, const char* type, std::vector<TSNode>& out) {
  if (ts_node_is_null(n)) return;
  if (std::string(ts_node_type(n)) == type) out.push_back(n);
  const std::uint32_t k = ts_node_named_child_count(n);
  for (std::uint32_t i = 0; i < k; ++i)
    nodes_of(ts_node_named_child(n, i), type, out);
}

// A `let vb = ..` (or `let mut vb`) in `body`: the builder is rebound, so a segment pushed on it
// later is no longer relative to the path captured from the parameter.
bool rebinds(const rust::Crate& crate, std::size_t file, TSNode body, const std::string& vb) {
  std::vector<TSNode> lets;
  nodes_of(body, "let_declaration", lets);
  for (TSNode l : lets) {
    TSNode pat = ts_node_child_by_field_name(l, "pattern", 7);
    std::string pt = ts_node_is_null(pat) ? "" : trimmed(crate.node_text(file, pat));
    if (pt.starts_with("mut ")) pt = trimmed(pt.substr(4));
    if (pt == vb) return true;
  }
  return false;
}

// The key segment of the layer a struct's field holds, read from how its VarBuilder constructors
// fill the field: `Self { q: linear(.., vb.pp("q"))? }`, or a shorthand `Self { attn_ln }` after
// `let attn_ln = layer_norm(n, vb.pp("attn_ln"))?;`. The value (a helper's call, `Some(..)`, an
// if/else) must push exactly one literal segment on the constructor's builder in every
// constructor; else empty. How the analysis's inventory finds a layer built by a local helper it
// does not list as a module (whisper's `layer_norm`, t5's own `Linear`), for the path only.
std::string field_segment(const rust::Crate& crate, std::size_t type_item,
                          const std::vector<std::size_t>& ctors, const std::string& field,
                          int element = -1) {
  const rust::Item& t = crate.items()[type_item];
  std::set<std::string> segs;
  bool seen = false;
  for (std::size_t c : ctors) {
    const rust::Item& f = crate.items()[c];
    std::string vb;
    for (const auto& p : f.params)
      if (builder_type(crate, f.module, p.type_text)) vb = p.name;
    if (vb.empty() || !is_identifier(vb)) return {};
    const TSNode body = f.body();
    if (rebinds(crate, f.file, body, vb)) return {};
    std::vector<TSNode> literals, lets;
    nodes_of(body, "struct_expression", literals);
    nodes_of(body, "let_declaration", lets);
    auto let_values = [&](const std::string& local, std::uint32_t before, auto&& each) {
      for (TSNode l : lets) {
        if (ts_node_start_byte(l) > before) break;
        TSNode pat = ts_node_child_by_field_name(l, "pattern", 7);
        std::string pt = ts_node_is_null(pat) ? "" : trimmed(crate.node_text(f.file, pat));
        if (pt.starts_with("mut ")) pt = trimmed(pt.substr(4));
        if (pt == local) each(ts_node_child_by_field_name(l, "value", 5));
      }
    };
    // The field's value, or element `element` of each tuple in it (`Some((attn, attn_ln))`,
    // an element that is a local read from its `let`).
    auto segments_of = [&](TSNode value) {
      if (element < 0) return pp_segments(crate, f.file, value, vb, segs);
      std::vector<TSNode> tuples;
      nodes_of(value, "tuple_expression", tuples);
      for (TSNode tu : tuples) {
        if (ts_node_named_child_count(tu) <= static_cast<std::uint32_t>(element)) continue;
        TSNode e = ts_node_named_child(tu, static_cast<std::uint32_t>(element));
        if (std::string(ts_node_type(e)) == "identifier")
          let_values(crate.node_text(f.file, e), ts_node_start_byte(tu),
                     [&](TSNode v) { pp_segments(crate, f.file, v, vb, segs); });
        else
          pp_segments(crate, f.file, e, vb, segs);
      }
    };
    for (TSNode lit : literals) {
      TSNode name = ts_node_child_by_field_name(lit, "name", 4);
      const std::string ln = ts_node_is_null(name) ? "" : crate.node_text(f.file, name);
      if (ln != "Self" && last_path_segment(ln) != t.name) continue;
      std::vector<TSNode> inits, shorts;
      nodes_of(ts_node_child_by_field_name(lit, "body", 4), "field_initializer", inits);
      nodes_of(ts_node_child_by_field_name(lit, "body", 4), "shorthand_field_initializer", shorts);
      for (TSNode fi : inits) {
        TSNode fname = ts_node_child_by_field_name(fi, "field", 5);
        if (ts_node_is_null(fname) || crate.node_text(f.file, fname) != field) continue;
        seen = true;
        segments_of(ts_node_child_by_field_name(fi, "value", 5));
      }
      for (TSNode sf : shorts) {
        if (trimmed(crate.node_text(f.file, sf)) != field) continue;
        seen = true;
        // The `let field = ..` statements before the literal.
        let_values(field, ts_node_start_byte(lit), segments_of);
      }
    }
  }
  if (!seen || segs.size() != 1 || *segs.begin() == "?") return {};
  return *segs.begin();
}

// Evaluating it may run a call (a child's forward among them): it cannot stay inside a child's
// scope unmoved.
bool may_call(const std::string& text) {
  return text.find('(') != std::string::npos || text.find('?') != std::string::npos ||
         text.find('!') != std::string::npos;
}

// "src/a.rs:12" -> ("src/a.rs", 12), for ordering messages by file and line.
std::pair<std::string, unsigned long> location_key(const std::string& where) {
  std::size_t k = where.rfind(':');
  if (k == std::string::npos) return {where, 0};
  return {where.substr(0, k), std::strtoul(where.c_str() + k + 1, nullptr, 10)};
}

// Library layers (and module types skipped above) that an instrumented module holds in a field:
// each `self.f.forward(..)`, `self.f.forward_t(..)`, `x.apply(&self.f)` or `x.apply_t(&self.f, ..)`
// in the module's methods is timed as the module's child, `cg_path` + "." + the child's key
// segment as the IR knows it (`q_proj`, or `attn.q` for `vb.pp("attn").pp("q")`). The scope opens
// after the receiver and arguments are evaluated (a child called in them is not nested in it) and
// closes when the call returns.
// A function that builds a closure module: it takes a VarBuilder `vb` and hands a `move` closure
// to `Func::new` / `candle_nn::func` (candle-transformers' resnet and convnext are made of them).
struct FuncBuilder {
  std::string vb;
  std::uint32_t lo = 0, hi = 0;  // the closure
};

void plan_child_scopes(const rust::Crate& crate, const ir::ModelIr& ir,
                       const std::vector<rust::MethodCall>& calls,
                       const std::map<std::size_t, std::size_t>& owner_of,
                       const std::map<std::string, std::vector<std::size_t>>& items_of,
                       const std::set<std::size_t>& done,
                       const std::map<std::size_t, FuncBuilder>& builders,
                       std::map<std::size_t, std::vector<Insertion>>& edits, Report& report,
                       bool stats) {
  if (done.empty() && builders.empty()) return;
  std::map<std::string, const ir::Module*> by_id;
  for (const auto& m : ir.modules)
    by_id[m.id] = &m;
  auto instrumented = [&](const std::optional<std::string>& qualified) {
    if (!qualified) return false;
    auto it = items_of.find(*qualified);
    if (it == items_of.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](std::size_t i) { return done.count(i) > 0; });
  };
  struct Child {
    std::set<std::string> segments;
    bool scoped = true;  // every instance is an instrumented type: it times itself
  };
  std::map<std::pair<std::size_t, std::string>, Child> children;  // (parent struct, field)
  // A module with no weights of its own at a key another module registered (a head tied to the
  // embedding: `Linear::from_weights(embed.embeddings().clone(), None)`) has the owner's key, not
  // a path of its own: it adds no segment to its field, whose other alternatives name it
  // (`lm_head`), so the tied configuration's head is timed under that field's path too.
  std::set<std::string> owns_weights;
  for (const auto& prm : ir.parameters)
    if (prm.module) owns_weights.insert(*prm.module);
  std::map<std::string, std::vector<const ir::Module*>> at_prefix;
  for (const auto& m : ir.modules)
    at_prefix[m.component + '\0' + m.prefix].push_back(&m);
  auto tied = [&](const ir::Module& c) {
    if (owns_weights.count(c.id)) return false;
    const auto& same = at_prefix[c.component + '\0' + c.prefix];
    return std::any_of(same.begin(), same.end(), [&](const ir::Module* o) {
      return o->id != c.id && o->parent != c.id && c.parent != o->id && owns_weights.count(o->id);
    });
  };
  for (const auto& c : ir.modules) {
    if (!c.parent || !c.field) continue;
    auto p = by_id.find(*c.parent);
    if (p == by_id.end() || !p->second->qualified_type) continue;
    const ir::Module& pm = *p->second;
    if (tied(c)) continue;
    // The child's key segment; "=" for a child at its parent's own path (a wrapper's inner
    // layer, `Self { inner: candle_nn::rms_norm(.., vb)? }`), which the parent's scope times.
    std::string segment;
    if (c.prefix == pm.prefix)
      segment = "=";
    else if (pm.prefix.empty())
      segment = c.prefix;
    else if (c.prefix.starts_with(pm.prefix + "."))
      segment = c.prefix.substr(pm.prefix.size() + 1);
    auto it = items_of.find(*pm.qualified_type);
    if (it == items_of.end()) continue;
    for (std::size_t parent : it->second) {
      if (done.count(parent) == 0) continue;
      Child& ch = children[{parent, *c.field}];
      ch.segments.insert(segment);
      ch.scoped = ch.scoped && instrumented(c.qualified_type);
    }
  }

  // The VarBuilder constructors of each instrumented struct.
  std::map<std::size_t, std::vector<std::size_t>> ctors_of;
  for (const auto& [m, owner] : owner_of) {
    if (done.count(owner) == 0) continue;
    const rust::Item& f = crate.items()[m];
    if (f.self_kind != rust::SelfKind::None) continue;
    for (const auto& p : f.params)
      if (builder_type(crate, f.module, p.type_text)) {
        ctors_of[owner].push_back(m);
        break;
      }
  }
  // The analysis registers a weight under the segment (`….q.weight` for `q`).
  auto knows_segment = [&](const std::string& seg) {
    const std::string needle = "." + seg + ".";
    return std::any_of(ir.parameters.begin(), ir.parameters.end(), [&](const ir::Parameter& p) {
      return ("." + p.key).find(needle) != std::string::npos;
    });
  };
  // A type named `base` (its last path segment) is one of the instrumented structs.
  auto instrumented_name = [&](const std::string& base) {
    const std::string_view leaf = last_path_segment(base.substr(0, base.find('<')));
    return std::any_of(done.begin(), done.end(),
                       [&](std::size_t i) { return crate.items()[i].name == leaf; });
  };

  struct Wrap {
    std::size_t file;
    std::vector<Insertion> opens, closes;  // closes innermost first
  };
  std::vector<Wrap> wraps;
  const std::string attr = std::string(kAttr) + " ";
  // A call in a method of an instrumented struct: the child's segment under `self.cg_path`.
  // The index expression of a call on a `Vec` field's element (`self.layers[i].forward(..)`),
  // set by struct_child for the call it returns a family segment for (`layers.{i}`).
  std::string index_expr;
  auto struct_child = [&](const rust::MethodCall& c) -> std::string {
    index_expr.clear();
    auto o = owner_of.find(static_cast<std::size_t>(c.function));
    if (o == owner_of.end() || done.count(o->second) == 0) return std::string();
    const rust::Item& f = crate.items()[static_cast<std::size_t>(c.function)];
    if (f.self_kind == rust::SelfKind::None) return std::string();
    // The layer called: a field (`self.f`, `self.f.as_ref()` on an `Arc` or `Option`), or a local
    // bound to an `Option` field's content (`if let Some(l) = &self.f { l.forward(..) }`).
    auto layer_field = [&](const std::string& text, std::uint32_t start, std::uint32_t end) {
      std::string field = field_behind(text);
      std::string t = trimmed(text);
      if (t.starts_with("&") && !t.starts_with("&mut")) t = trimmed(t.substr(1));
      if (field.empty() && is_identifier(t)) {
        int k = -1;
        field = field_behind(
            option_binding(crate, c.file, static_cast<std::size_t>(c.function), start, end, t, k));
        if (!field.empty() && k >= 0) field += "." + std::to_string(k);  // a tuple's element
      }
      return field;
    };
    // `self.f[IDX]`: an element of a `Vec` field, IDX a local, a field or a number (evaluated
    // once more for the path, so nothing that could change or run code).
    auto indexed = [&](const std::string& text, std::string& idx) {
      const std::string t = strip_same(text);
      const std::size_t lb = t.find('[');
      if (lb == std::string::npos || t.back() != ']') return std::string();
      idx = t.substr(lb + 1, t.size() - lb - 2);
      std::string plain = idx;
      if (plain.starts_with("self.")) plain = plain.substr(5);
      if (!is_identifier(plain) && plain.find_first_not_of("0123456789") != std::string::npos)
        return std::string();
      return self_field(t.substr(0, lb));
    };
    std::string fieldname, idx;
    if (c.method == "forward" || c.method == "forward_t") {
      fieldname = layer_field(c.receiver, c.receiver_start, c.receiver_end);
      if (fieldname.empty()) fieldname = indexed(c.receiver, idx);
    } else if ((c.method == "apply" || c.method == "apply_t") && !c.arguments.empty()) {
      const auto& a = c.arguments.front();
      if (trimmed(a.text).starts_with("&")) {
        fieldname = layer_field(a.text, a.start, a.end);
        if (fieldname.empty()) fieldname = indexed(a.text, idx);
      }
    }
    if (fieldname.empty()) return std::string();
    if (!idx.empty()) {
      // The analysis's children in the field are one family, `seg.{i}` under the parent, and
      // not a type that times itself: the element's path is the parent's, `seg.` and the index.
      auto ch = children.find({o->second, fieldname});
      if (ch == children.end() || ch->second.scoped || ch->second.segments.size() != 1)
        return std::string();
      const std::string fam = *ch->second.segments.begin();
      const std::size_t open = fam.find('{');
      if (open == std::string::npos || open == 0 || fam[open - 1] != '.' || fam.back() != '}' ||
          fam.find_first_of("{}\"\\=", open + 1) != fam.size() - 1)
        return std::string();
      index_expr = idx;
      return fam.substr(0, open - 1);
    }
    // `field.k`: element k of a tuple the field holds; the analysis's child of the field is some
    // other element, so only the constructor's value tells this one's path.
    const std::size_t dot = fieldname.find('.');
    const std::string base = fieldname.substr(0, dot);
    const int element = dot == std::string::npos ? -1 : std::stoi(fieldname.substr(dot + 1));
    auto ch = children.find({o->second, fieldname});
    if (ch == children.end()) {
      // No module of the analysis in that field: a layer a local helper builds (whisper's
      // `layer_norm`, t5's own `Linear`), whose weights the analysis does list. Its path is the
      // segment its constructors push, when the analysis has a weight under such a segment and
      // the field's type is not one that times itself.
      Child fb;
      const std::string seg = field_segment(crate, o->second, ctors_of[o->second], base, element);
      if (seg.empty() || !knows_segment(seg)) return std::string();
      const rust::Item& pt = crate.items()[o->second];
      for (const auto& fd : pt.fields) {
        if (fd.name != base) continue;
        std::string ty = fd.base_type;
        if (element >= 0) {  // `Option<(A, B)>`: element k of the tuple type
          const std::size_t lo = fd.type_text.find('('), hi = fd.type_text.rfind(')');
          std::string inner = lo < hi && hi != std::string::npos
                                  ? fd.type_text.substr(lo + 1, hi - lo - 1)
                                  : std::string();
          for (int k = 0; k < element && !inner.empty(); ++k) {
            const std::size_t comma = inner.find(',');
            inner = comma == std::string::npos ? std::string() : inner.substr(comma + 1);
          }
          ty = trimmed(inner.substr(0, inner.find(',')));
        }
        fb.scoped = instrumented_name(ty);
      }
      fb.segments.insert(seg);
      ch = children.emplace(std::make_pair(o->second, fieldname), fb).first;
    }
    if (ch->second.scoped) return std::string();
    const std::set<std::string>& segs = ch->second.segments;
    if (segs.size() == 1 && *segs.begin() == "=") return std::string();
    const std::string seg = segs.size() == 1 ? *segs.begin() : std::string();
    if (seg.empty() || seg.find_first_of("{}\"\\=") != std::string::npos) {
      std::string why = segs.size() > 1 ? "its key is not the same under every instance and "
                                          "configuration of `" +
                                              crate.items()[o->second].qualified +
                                              "` (e.g. a weight tied to another layer's)"
                        : seg.empty() ? "its key prefix is not under its parent's"
                                      : "its key segment `" + seg + "` is not a fixed string";
      report.skipped.push_back(
          {c.where, "child call `self." + fieldname + "." + c.method + "` in `" + f.qualified + "`",
           why +
               ": the path cannot be written as the parent's path plus a constant; its time counts "
               "in its parent"});
      return std::string();
    }
    return seg;
  };
  std::set<std::string> builder_names;
  for (const auto& [fi, b] : builders)
    builder_names.insert(crate.items()[fi].name);
  // A call in a closure module: a layer the builder made in a local (`let conv1 = conv2d(..,
  // vb.pp("conv1"))?;` then `xs.apply(&conv1)`), directly or through `Some(l)` over it, is its
  // child under the one literal segment the local's value pushes. A local another builder made
  // (`let layer1 = basic_layer(.., vb.pp("layer1"))?`) times itself.
  auto builder_child = [&](const rust::MethodCall& c) -> std::string {
    if (c.function < 0) return {};
    const std::size_t fi = static_cast<std::size_t>(c.function);
    auto b = builders.find(fi);
    if (b == builders.end() || c.start < b->second.lo || c.end > b->second.hi) return {};
    const rust::Item& f = crate.items()[fi];
    std::string text;
    std::uint32_t st = 0, en = 0;
    if (c.method == "forward" || c.method == "forward_t") {
      text = c.receiver;
      st = c.receiver_start;
      en = c.receiver_end;
    } else if ((c.method == "apply" || c.method == "apply_t") && !c.arguments.empty()) {
      text = c.arguments.front().text;
      st = c.arguments.front().start;
      en = c.arguments.front().end;
    } else {
      return {};
    }
    std::string name = strip_same(text);
    if (!is_identifier(name)) return {};
    int element = -1;
    const std::string scrutinee = option_binding(crate, c.file, fi, st, en, name, element);
    if (element >= 0) return {};
    if (!scrutinee.empty()) name = strip_same(scrutinee);
    if (!is_identifier(name)) return {};
    std::vector<TSNode> lets;
    nodes_of(f.body(), "let_declaration", lets);
    TSNode value{};
    for (TSNode l : lets) {
      if (ts_node_start_byte(l) >= b->second.lo) break;
      TSNode pat = ts_node_child_by_field_name(l, "pattern", 7);
      std::string pt = ts_node_is_null(pat) ? "" : trimmed(crate.node_text(f.file, pat));
      if (pt.starts_with("mut ")) pt = trimmed(pt.substr(4));
      if (pt == name) value = ts_node_child_by_field_name(l, "value", 5);
    }
    if (ts_node_is_null(value) || rebinds(crate, f.file, f.body(), b->second.vb)) return {};
    // Any call of a closure-module builder in the value (`convnext_head(..)` inside a `match`):
    // that module times itself.
    std::vector<TSNode> inner_calls;
    nodes_of(value, "call_expression", inner_calls);
    for (TSNode call : inner_calls) {
      TSNode fn = ts_node_child_by_field_name(call, "function", 8);
      if (!ts_node_is_null(fn) &&
          builder_names.count(std::string(last_path_segment(crate.node_text(f.file, fn)))) > 0)
        return {};
    }
    std::set<std::string> segs;
    pp_segments(crate, f.file, value, b->second.vb, segs);
    if (segs.size() != 1 || *segs.begin() == "?" || !knows_segment(*segs.begin())) return {};
    return *segs.begin();
  };
  for (const auto& c : calls) {
    std::string seg = struct_child(c), parent = "&self." + std::string(kFieldName);
    if (seg.empty()) {
      seg = builder_child(c);
      parent = std::string("&") + kFieldName;
    }
    if (seg.empty()) continue;
    // An element of a `Vec` field: its path is built per call (`model.layers.3`), interned by
    // content, so it costs a formatting and a lookup more than a child scope.
    const std::string open_scope =
        index_expr.empty()
            ? "candle_graph_profile::child_scope(" + parent + ", \"" + seg + "\")"
            : "{ let cg_p = if self." + std::string(kFieldName) + ".is_empty() { format!(\"" + seg +
                  ".{}\", " + index_expr + ") } else { format!(\"{}." + seg + ".{}\", self." +
                  kFieldName + ", " + index_expr +
                  ") }; candle_graph_profile::module_scope(&cg_p) }";
    Wrap w{c.file, {}, {}};
    const std::string lp = c.leftmost ? "(" : "", rp = c.leftmost ? ")" : "";
    bool simple = !may_call(c.receiver);
    for (const auto& a : c.arguments)
      simple = simple && !may_call(a.text);
    if (simple || c.arguments.empty()) {
      // `{ let _cg_child = child_scope(..); let cg_out = self.q_proj.forward(x); cg_out }`
      w.opens.push_back(
          {c.start, lp + "{ " + attr + "let _cg_child = " + open_scope + "; let cg_out = "});
    } else {
      // The receiver or an argument runs code: the scope opens inside the last argument, after
      // everything else is evaluated, and lives in a local of the enclosing block.
      const auto& last = c.arguments.back();
      const std::string lt = trimmed(last.text);
      std::uint32_t at = last.start;
      if (lt.starts_with("&") && !lt.starts_with("&mut") && may_call(lt)) ++at;  // `&{ .. }`
      w.opens.push_back({c.start, lp + "{ " + attr + "let _cg_child; let cg_out = "});
      w.opens.push_back({at, "{ let cg_in = "});
      w.closes.push_back({last.end, "; " + attr + "{ _cg_child = " + open_scope + "; } cg_in }"});
    }
    // --stats: the child's output is recorded under the same path, after its scope closed.
    std::string record;
    if (stats) {
      const std::string child = index_expr.empty()
                                    ? "\"" + seg + "\""
                                    : "&format!(\"" + seg + ".{}\", " + index_expr + ")";
      record = stats_record_call("_cg_child", parent, child) + " ";
      ++report.stats_children;
    }
    w.closes.push_back({c.end, "; " + record + "cg_out }" + rp});
    wraps.push_back(std::move(w));
    ++report.children;
  }
  for (const auto& w : wraps)
    for (const auto& i : w.opens)
      edits[w.file].push_back(i);
  for (auto it = wraps.rbegin(); it != wraps.rend(); ++it)
    for (const auto& i : it->closes)
      edits[it->file].push_back(i);
}

}  // namespace

std::string default_profile_dep() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
    const fs::path crate = d / "bindings" / "rust" / "candle-graph-profile";
    if (fs::is_regular_file(crate / "Cargo.toml", ec) &&
        fs::is_regular_file(crate / "build.rs", ec))
      return "path=" + crate.lexically_normal().string();
    if (d == d.root_path()) break;
  }
  return {};
}

namespace {
Report edit_crate(const rust::LoadedCrate& loaded, const ir::ModelIr& ir,
                  const pipeline::Options& opts, const std::string& dep_source, bool stats);
}

// The same pipeline as every other command (pipeline::analyze: dependencies, candle-nn's source,
// --config, --arg, --root), then the edits on the crate it loaded.
Report instrument_crate(const pipeline::Options& opts, const std::string& profile_dep, bool stats) {
  const std::string dep_source =
      profile_dep.empty() ? std::string("version = \"0.3\"") : dependency_source(profile_dep);
  Report report;
  pipeline::analyze(opts, [&](const rust::LoadedCrate& loaded, const pipeline::Analysis& a) {
    report = edit_crate(loaded, a.ir, opts, dep_source, stats);
  });
  return report;
}

namespace {

Report edit_crate(const rust::LoadedCrate& loaded, const ir::ModelIr& ir,
                  const pipeline::Options& opts, const std::string& dep_source, bool stats) {
  if (!loaded.cargo)
    throw InputError(opts.path,
                     "no Cargo.toml: the instrumentation sits behind the Cargo feature "
                     "`candle-graph-profile`, so instrument needs a Cargo package");
  const rust::Crate& crate = loaded.crate;
  // Only the crate's own files are edited (a loaded dependency's are read, never patched).
  for (std::size_t i = 0; i < crate.files().size(); ++i) {
    const auto& f = crate.files()[i];
    if (crate.unit_of_file(i) != 0 || f->ok()) continue;
    const auto& p = f->problems().front();
    throw InputError(f->path() + ":" + std::to_string(p.line) + ":" + std::to_string(p.column),
                     p.what +
                         "; instrument only edits crates whose every source file parses "
                         "(fix it, or select a cfg that leaves the file out)");
  }
  for (const auto& d : crate.diagnostics())
    if (d.rule == "source-load")
      throw InputError(d.file + (d.line ? ":" + std::to_string(d.line) : ""),
                       d.message + "; instrument needs every source file of the crate");

  // What a macro writes is tokens to the parser: never analyzed, never edited, always listed.
  Report report;
  for (auto& m : rust::macro_items(crate))
    report.skipped.push_back(
        {std::move(m.where), std::move(m.what),
         "written inside " + m.macro +
             ": the parser sees a macro's tokens only, so it is neither analyzed nor edited; if it "
             "is a module, its time counts in the module that calls it (write it outside the "
             "macro to time it)"});
  if (ir.modules.empty()) {
    std::string listed;
    for (const auto& s : report.skipped)
      listed += "; skipped " + s.where + ": " + s.what + " (inside a macro)";
    throw InputError(opts.path,
                     "no module to instrument: no component (a public struct with a "
                     "constructor taking a VarBuilder) was found" +
                         (opts.root.empty() ? std::string() : " for --root " + opts.root) + listed);
  }

  std::vector<std::size_t> types;
  std::set<std::size_t> seen;
  std::map<std::string, std::vector<std::size_t>> items_of;  // IR qualified type -> structs
  std::set<std::string> not_structs, dependency_types;
  for (const auto& m : ir.modules) {
    if (!m.qualified_type) continue;
    const std::vector<std::size_t> found = crate.find(*m.qualified_type);
    // A module type a loaded dependency defines (a serving engine's layers crate): its source
    // is not the crate's to edit; listed once.
    if (!found.empty() && !crate.is_local(found.front())) {
      if (dependency_types.insert(*m.qualified_type).second)
        report.skipped.push_back(
            {crate.source(found.front()), "type `" + *m.qualified_type + "`",
             "defined in the dependency `" +
                 crate.units()[crate.items()[found.front()].unit].package +
                 "`, whose source instrument does not edit; where a parent calls it through a "
                 "field (`self.x.forward(..)`), that call is timed as the parent's child, else its "
                 "time counts in its parent"});
      continue;
    }
    for (std::size_t i : found)
      if (crate.items()[i].kind == rust::ItemKind::Struct) {
        items_of[*m.qualified_type].push_back(i);
        if (seen.insert(i).second) types.push_back(i);
      }
    // A module type of the crate that is an enum or an alias: listed, never left out silently.
    // (A function root, `resnet18`, is a closure module's builder: handled below.)
    if (!found.empty() && items_of.count(*m.qualified_type) == 0 &&
        crate.items()[found.front()].kind != rust::ItemKind::Function &&
        not_structs.insert(*m.qualified_type).second)
      report.skipped.push_back({crate.source(found.front()), "type `" + *m.qualified_type + "`",
                                "not a struct (an enum or a type alias): there is no field list "
                                "to hold the module path; where a parent calls it through a field "
                                "(`self.x.forward(..)`), that call is timed as the parent's child, "
                                "else its time counts in its parent"});
  }
  auto file_line = [&](std::size_t item) {
    const rust::Item& it = crate.items()[item];
    return std::make_pair(crate.files()[it.file]->path(), it.line);
  };
  std::sort(types.begin(), types.end(),
            [&](std::size_t a, std::size_t b) { return file_line(a) < file_line(b); });

  std::set<std::string> entrypoints;
  for (const auto& f : ir.functions)
    if (f.is_entrypoint) entrypoints.insert(f.id);
  // Methods by the struct their impl is for (resolved, so `impl super::Foo` counts).
  std::map<std::size_t, std::vector<std::size_t>> methods_of;
  std::map<std::size_t, std::size_t> owner_of;  // method -> struct
  for (std::size_t m = 0; m < crate.items().size(); ++m) {
    const rust::Item& f = crate.items()[m];
    if (f.kind != rust::ItemKind::Method || f.impl < 0) continue;
    const rust::Impl& im = crate.impls()[static_cast<std::size_t>(f.impl)];
    for (const auto& c : crate.resolve(im.module, im.self_base))
      if (c.kind == rust::Candidate::Kind::Item && seen.count(c.item) > 0) {
        methods_of[c.item].push_back(m);
        owner_of.emplace(m, c.item);
      }
  }
  // Method calls by method name: a method some other code calls on a value (`self.attn.forward(
  // ..)`, `block.forward(..)`) is how a parent runs its child, whatever the method's visibility.
  const std::vector<rust::MethodCall> calls = rust::method_calls(crate);
  std::map<std::string, std::vector<const rust::MethodCall*>> calls_by_name;
  for (const auto& c : calls)
    calls_by_name[c.method].push_back(&c);
  auto called_by_parent = [&](std::size_t method, std::size_t type) {
    auto it = calls_by_name.find(crate.items()[method].name);
    if (it == calls_by_name.end()) return false;
    for (const rust::MethodCall* c : it->second) {
      if (trimmed(c->receiver) == "self") continue;  // the type calling itself
      auto o = owner_of.find(static_cast<std::size_t>(c->function));
      if (o != owner_of.end() && o->second == type) continue;
      return true;
    }
    return false;
  };

  const std::vector<rust::TypeSites> sites = rust::find_type_sites(crate, types);
  std::map<std::size_t, std::vector<Insertion>> edits;  // by file index
  std::size_t already = 0;
  std::set<std::size_t> done;  // instrumented struct items

  for (const rust::TypeSites& s : sites) {
    const rust::Item& t = crate.items()[s.type_item];
    const std::string where_t = crate.source(s.type_item);
    const std::string what_t = "struct `" + t.qualified + "`";
    auto skip = [&](const std::string& why) { report.skipped.push_back({where_t, what_t, why}); };
    if (s.shape == rust::StructShape::Tuple) {
      skip(
          "tuple struct: a named field cannot be added to it, and a positional one would "
          "renumber its fields for every `Self(..)` constructor and pattern");
      continue;
    }
    if (s.shape == rust::StructShape::Unit) {
      skip("unit struct: it has no field list to hold the module path");
      continue;
    }
    if (std::find(s.field_names.begin(), s.field_names.end(), kFieldName) != s.field_names.end()) {
      skip(std::string("already has a field `") + kFieldName + "` (already instrumented?)");
      ++already;
      continue;
    }
    const auto& methods = methods_of[s.type_item];
    std::vector<std::size_t> ctors, forwards;
    std::vector<Skip> forward_skips;
    for (std::size_t m : methods) {
      const rust::Item& f = crate.items()[m];
      if (f.self_kind == rust::SelfKind::None) {
        for (const auto& p : f.params)
          if (builder_type(crate, f.module, p.type_text)) {
            ctors.push_back(m);
            break;
          }
        continue;
      }
      // A forward: an entrypoint of the analysis (`Module::forward`, `ModuleT::forward_t`, a
      // public method with a tensor in its signature), or a method with a tensor in its signature
      // that is named `forward`/`forward_t` or that code outside the type calls (a parent
      // running its child through a private or `pub(crate)` method).
      if (entrypoints.count(ir::function_id(f.qualified, f.cfg.predicates)) == 0 &&
          !(tensor_in_signature(f) &&
            (f.name == "forward" || f.name == "forward_t" || called_by_parent(m, s.type_item))))
        continue;
      const std::string g = rust::generic_parameters(crate, m);
      if (!g.empty()) {
        forward_skips.push_back(
            {crate.source(m), "forward `" + f.qualified + "`",
             "generic forward (over " + g +
                 "): each instantiation is its own function and the analysis does not resolve "
                 "which ones run, so it cannot tie the scope to the module's operations"});
        continue;
      }
      if (!rust::body_site(crate, m)) continue;
      forwards.push_back(m);
    }
    if (ctors.empty()) {
      skip(
          "no constructor taking a VarBuilder: nothing can give it its module path; its time "
          "counts in the module that calls it (to time it on its own, build it in a "
          "`fn new(.., vb: VarBuilder)` constructor)");
      continue;
    }
    if (forwards.empty()) {
      report.skipped.insert(report.skipped.end(), forward_skips.begin(), forward_skips.end());
      skip(forward_skips.empty()
               ? "no forward: none of its methods takes or returns a tensor and is "
                 "`Module::forward`, `ModuleT::forward_t`, a method named `forward`, or a method "
                 "another type calls; its time counts in its parent (implement `Module` for it, "
                 "or call its tensor method from the parent, to time it)"
               : "its only forwards are generic; its time counts in its parent (a non-generic "
                 "`forward` would be timed)");
      continue;
    }
    // Every literal must get the field, or the feature build breaks: each has to be in one of
    // the type's own VarBuilder constructors, where the builder gives the path.
    const std::set<std::size_t> ctor_set(ctors.begin(), ctors.end());
    std::string blocker;
    for (const auto& lit : s.literals)
      if (blocker.empty() &&
          (lit.function < 0 || ctor_set.count(static_cast<std::size_t>(lit.function)) == 0))
        blocker = "built by a struct literal at " + lit.where +
                  (lit.function < 0
                       ? std::string(" outside any function")
                       : " in `" + crate.items()[static_cast<std::size_t>(lit.function)].qualified +
                             "`, not one of its VarBuilder constructors") +
                  ": the module path is not known there";
    if (blocker.empty() && !s.closed_patterns.empty())
      blocker = "destructured by a struct pattern without `..` at " + s.closed_patterns.front() +
                ": a new field would break it";
    if (blocker.empty() && !s.macro_literals.empty())
      blocker = "a macro at " + s.macro_literals.front() +
                " may build it (its tokens hold a struct literal): a literal inside a macro "
                "cannot be edited safely";
    if (blocker.empty() && s.literals.empty())
      blocker =
          "no struct literal of it was found (built by a macro or through another type?), "
          "so the field could not be filled";
    // Per constructor: its builder's name, and whether the path is captured at the top.
    struct CtorPlan {
      std::string vb;
      bool capture = false;
    };
    std::map<std::size_t, CtorPlan> plans;
    for (const auto& lit : s.literals) {
      if (!blocker.empty()) break;
      const std::size_t c = static_cast<std::size_t>(lit.function);
      if (plans.count(c) == 0) {
        const rust::Item& f = crate.items()[c];
        std::string vb;
        for (const auto& p : f.params)
          if (builder_type(crate, f.module, p.type_text)) {
            vb = p.name.starts_with("mut ") ? p.name.substr(4) : p.name;
            break;
          }
        if (!is_identifier(vb)) {
          blocker = "the VarBuilder parameter of `" + f.qualified + "` is a pattern (`" + vb +
                    "`), not a name";
          break;
        }
        if (rust::body_mentions(crate, c, kFieldName)) {
          blocker = "`" + f.qualified + "` already uses the name `" + kFieldName + "`";
          break;
        }
        plans[c].vb = vb;
      }
      if (rust::builder_disturbed(crate, c, plans[c].vb, lit.list.close)) plans[c].capture = true;
    }
    if (!blocker.empty()) {
      const bool name_clash =
          blocker.find("`" + std::string(kFieldName) + "`") != std::string::npos ||
          blocker.starts_with("the VarBuilder parameter");
      skip(blocker + (name_clash
                          ? "; rename it (or bind the builder to a plain name) and run again"
                          : "; where a parent calls it through a field (`self.x.forward(..)`), "
                            "that call is timed as the parent's child, else its time counts in "
                            "its parent (build it only in its VarBuilder constructors to give "
                            "it a scope of its own)"));
      continue;
    }

    // The edits.
    const std::string& type_text = crate.files()[t.file]->text();
    for (auto& i : field_insertions(type_text, s.fields, std::string(kFieldName) + ": String"))
      edits[t.file].push_back(std::move(i));
    ++report.fields;
    for (const auto& [c, plan] : plans) {
      if (!plan.capture) continue;
      const rust::Item& f = crate.items()[c];
      edits[f.file].push_back(
          statement_insertion(crate.files()[f.file]->text(), *rust::body_site(crate, c),
                              std::string("let ") + kFieldName + " = " + plan.vb + ".prefix();"));
      ++report.captures;
    }
    for (const auto& lit : s.literals) {
      const CtorPlan& plan = plans[static_cast<std::size_t>(lit.function)];
      const std::string item = plan.capture
                                   ? std::string(kFieldName)
                                   : std::string(kFieldName) + ": " + plan.vb + ".prefix()";
      for (auto& i : field_insertions(crate.files()[lit.list.file]->text(), lit.list, item))
        edits[lit.list.file].push_back(std::move(i));
      ++report.literals;
    }
    for (std::size_t m : forwards) {
      const rust::Item& f = crate.items()[m];
      const std::string& text = crate.files()[f.file]->text();
      const rust::BodySite site = *rust::body_site(crate, m);
      edits[f.file].push_back(statement_insertion(
          text, site,
          std::string("let ") + kScopeName + " = candle_graph_profile::module_scope(&self." +
              kFieldName + ");"));
      ++report.scopes;
      if (!stats) continue;
      std::optional<std::string> problem = stats_return_problem(f.return_type);
      if (!problem && f.self_kind == rust::SelfKind::Value)
        problem = "it takes `self` by value, so `self.cg_path` is gone when it returns";
      if (problem) {
        report.skipped.push_back({crate.source(m), "statistics of forward `" + f.qualified + "`",
                                  *problem + "; its time is still measured"});
        continue;
      }
      wrap_body_for_stats(text, site, ts_node_end_byte(f.body()) - 1, f.return_type, edits[f.file]);
      ++report.stats_outputs;
    }
    report.skipped.insert(report.skipped.end(), forward_skips.begin(), forward_skips.end());
    report.instrumented.push_back(t.qualified);
    done.insert(s.type_item);
  }
  // Closure modules: a function taking a VarBuilder that hands one `move` closure to `Func::new`
  // or `func` is a module at `vb.prefix()` (resnet's `basic_block`, `downsample`): the path is
  // captured at the top of the function and the closure opens a scope with it.
  std::set<std::string> component_modules;
  for (const auto& m : ir.modules)
    if (m.qualified_type)
      for (std::size_t i : crate.find(*m.qualified_type))
        component_modules.insert(crate.items()[i].module);
  std::map<std::size_t, FuncBuilder> builders;
  std::map<std::size_t, std::vector<Insertion>> late;  // closes, pushed after the child scopes
  for (std::size_t fi = 0; fi < crate.items().size(); ++fi) {
    const rust::Item& f = crate.items()[fi];
    if (f.kind != rust::ItemKind::Function || f.unit != 0 || component_modules.count(f.module) == 0)
      continue;
    std::string vb;
    for (const auto& p : f.params)
      if (builder_type(crate, f.module, p.type_text)) vb = p.name;
    const TSNode body = f.body();
    if (vb.empty() || !is_identifier(vb) || ts_node_is_null(body)) continue;
    std::vector<TSNode> closures, modules;
    nodes_of(body, "closure_expression", closures);
    for (TSNode cl : closures) {
      TSNode args = ts_node_parent(cl);
      TSNode call = ts_node_is_null(args) ? args : ts_node_parent(args);
      if (ts_node_is_null(call) || std::string(ts_node_type(call)) != "call_expression") continue;
      std::string callee;
      for (char ch : crate.node_text(f.file, ts_node_child_by_field_name(call, "function", 8)))
        if (std::isspace(static_cast<unsigned char>(ch)) == 0) callee += ch;
      if ((callee.ends_with("Func::new") || callee == "func" || callee.ends_with("::func")) &&
          trimmed(crate.node_text(f.file, cl)).starts_with("move"))
        modules.push_back(cl);
    }
    if (modules.empty()) continue;
    const std::string what = "closure module `" + f.qualified + "`";
    if (modules.size() > 1) {
      report.skipped.push_back(
          {crate.source(fi), what,
           "it builds several closure modules, which would all need the one captured path; their "
           "time counts in the module that calls them"});
      continue;
    }
    if (crate.node_text(f.file, body).find(kFieldName) != std::string::npos) {
      report.skipped.push_back(
          {crate.source(fi), what,
           std::string("already uses the name `") + kFieldName + "` (already instrumented?)"});
      ++already;
      continue;
    }
    const auto site = rust::body_site(crate, fi);
    if (!site) continue;
    const std::string& text = crate.files()[f.file]->text();
    edits[f.file].push_back(statement_insertion(
        text, *site, std::string("let ") + kFieldName + " = " + vb + ".prefix();"));
    const TSNode cb = ts_node_child_by_field_name(modules.front(), "body", 4);
    const std::string scope = std::string(kAttr) + " let " + kScopeName +
                              " = candle_graph_profile::module_scope(&" + kFieldName + ");";
    // --stats: the closure's value is recorded under its path. A block body runs in a closure
    // called at once (its `return`s and `?`s then hand their value on too); an expression body is
    // bound as it is.
    const std::string record =
        stats ? " " + stats_record_call(kScopeName, "&" + std::string(kFieldName), "\"\"") : "";
    if (std::string(ts_node_type(cb)) == "block") {
      edits[f.file].push_back(
          {ts_node_start_byte(cb) + 1, " " + scope + (stats ? " let cg_out = (|| {" : "")});
      if (stats) late[f.file].push_back({ts_node_end_byte(cb) - 1, "})();" + record + " cg_out "});
    } else {
      edits[f.file].push_back(
          {ts_node_start_byte(cb), "{ " + scope + (stats ? " let cg_out = " : " ")});
      late[f.file].push_back({ts_node_end_byte(cb), stats ? ";" + record + " cg_out }" : " }"});
    }
    if (stats) ++report.stats_outputs;
    builders[fi] = {vb, ts_node_start_byte(modules.front()), ts_node_end_byte(modules.front())};
    report.instrumented.push_back(f.qualified);
    ++report.captures;
    ++report.scopes;
  }
  plan_child_scopes(crate, ir, calls, owner_of, items_of, done, builders, edits, report, stats);
  for (auto& [fi, ins] : late)
    for (auto& i : ins)
      edits[fi].push_back(std::move(i));

  std::stable_sort(report.skipped.begin(), report.skipped.end(), [](const Skip& a, const Skip& b) {
    return location_key(a.where) < location_key(b.where);
  });
  if (report.instrumented.empty()) {
    report.already_instrumented = already > 0;
    return report;
  }

  // --stats: the module that computes the statistics, at the end of the crate root.
  if (stats) {
    const cargo::CargoContext& cc = *loaded.cargo;
    std::string candle, candle_nn;
    for (const auto& d : cc.dependencies) {
      if (!d.active) continue;
      if (d.package == "candle-core" && candle.empty()) candle = d.alias;
      if (d.package == "candle-nn" && candle_nn.empty()) candle_nn = d.alias;
    }
    if (candle.empty())
      throw InputError(fs::relative(cc.manifest_path, cc.package_dir).generic_string(),
                       "--stats computes the statistics with the crate's own candle-core, and "
                       "the crate has no active candle-core dependency (name it in "
                       "[dependencies], or instrument without --stats)");
    const std::string root_rel = fs::path(cc.selected.src_path).lexically_normal().generic_string();
    std::optional<std::size_t> root_file;
    for (std::size_t i = 0; i < crate.files().size(); ++i)
      if (fs::path(crate.files()[i]->path()).lexically_normal().generic_string() == root_rel)
        root_file = i;
    if (!root_file)
      throw std::logic_error("instrument --stats: the crate root " + root_rel + " is not loaded");
    const std::string& text = crate.files()[*root_file]->text();
    if (text.find("mod cg_stats") != std::string::npos)
      throw InputError(root_rel,
                       "already declares a module `cg_stats` (instrumented with --stats before?); "
                       "nothing was written");
    const std::string eol = eol_of(text);
    const bool ends_with_newline = text.empty() || text.back() == '\n';
    edits[*root_file].push_back(
        {static_cast<std::uint32_t>(text.size()),
         (ends_with_newline ? "" : eol) + stats_module_source(candle, candle_nn, eol)});
  }

  // The files, by crate-relative path: sources, then the manifest.
  std::map<std::string, std::pair<std::string, std::vector<Insertion>>> files;
  for (auto& [fi, ins] : edits) {
    const rust::ParsedFile& pf = *crate.files()[fi];
    std::string patched = apply_insertions(pf.text(), ins);
    // Never hand out a patch that breaks the crate: the patched file must parse as cleanly as
    // the original did.
    rust::ParsedFile check = rust::ParsedFile::parse(pf.path(), patched);
    if (!check.ok())
      throw std::logic_error("instrument: the patched " + pf.path() + " does not parse (line " +
                             std::to_string(check.problems().front().line) +
                             "); no diff was written");
    files[pf.path()] = {pf.text(), std::move(ins)};
  }
  const cargo::CargoContext& c = *loaded.cargo;
  // A diff is applied inside the crate: a file that really lies outside it (reached through a
  // symlink or `#[path = "../.."]`) cannot be patched with the rest (`git apply` refuses the whole
  // diff, `patch -p1` writes outside the crate). Never hand out a diff that cannot apply whole.
  {
    std::error_code fs_ec;
    const fs::path root = fs::weakly_canonical(c.package_dir, fs_ec);
    for (const auto& [path, f] : files) {
      const fs::path real = fs::weakly_canonical(c.package_dir / path, fs_ec);
      const fs::path rel = real.lexically_relative(root);
      if (fs::is_symlink(c.package_dir / path, fs_ec) || rel.empty() || *rel.begin() == "..")
        throw InputError(path, "a module file of the crate that lies outside it (really " +
                                   real.string() +
                                   "); a diff applied in the crate cannot patch it, so none was "
                                   "written: copy the file into the crate, or pass --root for a "
                                   "model whose types live elsewhere");
    }
  }
  const std::string manifest_rel = fs::relative(c.manifest_path, c.package_dir).generic_string();
  const std::string manifest_text = read_text(c.manifest_path);
  ManifestEdit me = manifest_insertions(manifest_text, manifest_rel, dep_source, stats);
  report.notes = me.notes;
  if (!me.insertions.empty()) {
    try {
      toml::table patched = toml::parse(apply_insertions(manifest_text, me.insertions));
      if (!patched["features"][kFeature]) throw std::logic_error("feature missing");
    } catch (const std::exception& e) {
      throw std::logic_error("instrument: the patched " + manifest_rel + " is not valid (" +
                             e.what() + "); no diff was written");
    }
    files[manifest_rel] = {manifest_text, std::move(me.insertions)};
  }
  for (auto& [path, f] : files) {
    std::string d = unified_diff(path, f.first, f.second);
    if (d.empty()) continue;
    report.diff += d;
    report.files.push_back(path);
  }
  return report;
}

}  // namespace

}  // namespace cg::instrument
