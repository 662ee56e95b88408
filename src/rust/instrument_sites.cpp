#include "rust/instrument_sites.hpp"

#include <tree_sitter/api.h>

#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>

#include "util/text.hpp"

namespace cg::rust {

namespace {

std::string_view kind(TSNode n) {
  return ts_node_type(n);
}

TSNode field(TSNode n, const char* f) {
  return ts_node_child_by_field_name(n, f, static_cast<std::uint32_t>(std::strlen(f)));
}

std::uint32_t line_of(TSNode n) {
  return ts_node_start_point(n).row + 1;
}

// Every node of `root` in pre-order, visited with a cursor (no recursion: any nesting depth).
template <class F>
void preorder(TSNode root, F&& visit) {
  TSTreeCursor c = ts_tree_cursor_new(root);
  for (;;) {
    visit(ts_tree_cursor_current_node(&c));
    if (ts_tree_cursor_goto_first_child(&c)) continue;
    bool moved = false;
    while (!moved) {
      if (ts_tree_cursor_goto_next_sibling(&c)) {
        moved = true;
      } else if (!ts_tree_cursor_goto_parent(&c)) {
        ts_tree_cursor_delete(&c);
        return;
      }
    }
  }
}

std::string where(const Crate& crate, std::size_t file, TSNode n) {
  return crate.files()[file]->path() + ":" + std::to_string(line_of(n));
}

// `{ field, field: x, ..base }` / `{ a: A, b: B }`: positions of the braces, last field, comma.
BraceList brace_list(std::size_t file, TSNode list) {
  BraceList b;
  b.file = file;
  b.line = line_of(list);
  b.open = ts_node_start_byte(list);
  b.close = ts_node_end_byte(list) - 1;
  std::uint32_t n = ts_node_child_count(list);
  bool after_last = false;
  for (std::uint32_t i = 0; i < n; ++i) {
    TSNode ch = ts_node_child(list, i);
    std::string_view k = kind(ch);
    if (k == "field_declaration" || k == "field_initializer" ||
        k == "shorthand_field_initializer") {
      b.has_last = true;
      b.last_start = ts_node_start_byte(ch);
      // A declaration's attributes are its siblings: the field starts at the first of them.
      for (std::uint32_t j = i; j > 0 && kind(ts_node_child(list, j - 1)) == "attribute_item"; --j)
        b.last_start = ts_node_start_byte(ts_node_child(list, j - 1));
      b.last_end = b.after_comma = ts_node_end_byte(ch);
      b.last_comma = false;
      after_last = true;
    } else if (k == "base_field_initializer") {
      b.has_base = true;
      // `..base` starts at the `..` token written before the expression.
      b.base_start = ts_node_start_byte(ch);
      if (i > 0 && kind(ts_node_child(list, i - 1)) == "..")
        b.base_start = ts_node_start_byte(ts_node_child(list, i - 1));
      after_last = false;
    } else if (k == "," && after_last) {
      b.last_comma = true;
      b.after_comma = ts_node_end_byte(ch);
      after_last = false;
    } else if (k == "..") {
      b.has_base = true;
      b.base_start = ts_node_start_byte(ch);
      after_last = false;
    }
  }
  return b;
}

// The path a struct literal or pattern names, without turbofish or generic arguments.
std::string named_path(const Crate& crate, std::size_t file, TSNode name) {
  if (kind(name) == "generic_type_with_turbofish" || kind(name) == "generic_type") {
    TSNode t = field(name, "type");
    if (!ts_node_is_null(t)) name = t;
  }
  std::string s = crate.node_text(file, name);
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    if (depth == 0 && c != ' ' && c != '\n' && c != '\t') out += c;
    if (c == '>' && depth > 0) --depth;
  }
  while (out.size() >= 2 && out.ends_with("::"))
    out.resize(out.size() - 2);
  return out;
}

}  // namespace

std::vector<TypeSites> find_type_sites(const Crate& crate,
                                       const std::vector<std::size_t>& type_items) {
  std::vector<TypeSites> out(type_items.size());
  std::unordered_map<std::size_t, std::size_t> index;  // type item -> position in `out`
  std::unordered_map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < type_items.size(); ++i) {
    const Item& t = crate.items()[type_items[i]];
    TypeSites& s = out[i];
    s.type_item = type_items[i];
    index[type_items[i]] = i;
    by_name[t.name].push_back(i);
    TSNode body = field(t.node, "body");
    if (ts_node_is_null(body)) {
      s.shape = StructShape::Unit;
    } else if (kind(body) == "ordered_field_declaration_list") {
      s.shape = StructShape::Tuple;
    } else {
      s.shape = StructShape::Named;
      s.fields = brace_list(t.file, body);
      for (const auto& f : t.fields)
        s.field_names.push_back(f.name);
    }
  }
  if (out.empty()) return out;

  // Function items by (file, start byte), to know the function a literal is written in.
  std::map<std::pair<std::size_t, std::uint32_t>, std::size_t> fn_at;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const Item& it = crate.items()[i];
    if (it.kind == ItemKind::Function || it.kind == ItemKind::Method)
      fn_at[{it.file, ts_node_start_byte(it.node)}] = i;
  }

  // The types among ours that `path` (written in function `fn`) may name: the resolved ones, and
  // when resolution finds none of ours, every one with that last segment (a literal we cannot
  // place must never be missed).
  auto targets = [&](std::ptrdiff_t fn, const std::string& path) {
    std::vector<std::size_t> hits;
    if (fn >= 0) {
      for (const auto& c : crate.resolve_in(static_cast<std::size_t>(fn), path))
        if (c.kind == Candidate::Kind::Item) {
          auto it = index.find(c.item);
          if (it != index.end()) hits.push_back(it->second);
        }
      if (!hits.empty()) return hits;
      // A resolved path naming something else (an enum variant, another struct) is not ours.
      if (!crate.resolve_in(static_cast<std::size_t>(fn), path).empty()) return hits;
    }
    std::string_view leaf = last_path_segment(path);
    if (leaf == "Self") {
      if (fn >= 0) {
        const Item& f = crate.items()[static_cast<std::size_t>(fn)];
        if (f.impl >= 0) {
          const Impl& im = crate.impls()[static_cast<std::size_t>(f.impl)];
          auto it = by_name.find(std::string(last_path_segment(im.self_base)));
          if (it != by_name.end()) hits = it->second;
        }
      }
      return hits;
    }
    auto it = by_name.find(std::string(leaf));
    if (it != by_name.end()) hits = it->second;
    return hits;
  };

  for (std::size_t fi = 0; fi < crate.files().size(); ++fi) {
    const ParsedFile& pf = *crate.files()[fi];
    if (pf.tree() == nullptr) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> fns;  // (end byte, item) enclosing
    preorder(ts_tree_root_node(pf.tree()), [&](TSNode n) {
      std::uint32_t start = ts_node_start_byte(n);
      while (!fns.empty() && fns.back().first <= start)
        fns.pop_back();
      std::string_view k = kind(n);
      if (k == "function_item") {
        auto it = fn_at.find({fi, start});
        if (it != fn_at.end()) fns.push_back({ts_node_end_byte(n), it->second});
        return;
      }
      std::ptrdiff_t fn = fns.empty() ? -1 : static_cast<std::ptrdiff_t>(fns.back().second);
      if (k == "struct_expression") {
        TSNode name = field(n, "name");
        TSNode body = field(n, "body");
        if (ts_node_is_null(name) || ts_node_is_null(body)) return;
        for (std::size_t t : targets(fn, named_path(crate, fi, name)))
          out[t].literals.push_back({brace_list(fi, body), fn, where(crate, fi, n)});
      } else if (k == "struct_pattern") {
        TSNode type = field(n, "type");
        if (ts_node_is_null(type)) return;
        bool rest = false;
        for (std::uint32_t i = 0; i < ts_node_named_child_count(n); ++i)
          rest = rest || kind(ts_node_named_child(n, i)) == "remaining_field_pattern";
        if (rest) return;
        for (std::size_t t : targets(fn, named_path(crate, fi, type)))
          out[t].closed_patterns.push_back(where(crate, fi, n));
      } else if (k == "macro_invocation") {
        // `T {` or `Self {` inside the token trees: a literal the parser sees only as tokens.
        for (std::uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
          TSNode tt = ts_node_named_child(n, i);
          if (kind(tt) != "token_tree") continue;
          preorder(tt, [&](TSNode tok) {
            if (kind(tok) != "identifier" && kind(tok) != "self") return;
            TSNode next = ts_node_next_sibling(tok);
            if (ts_node_is_null(next) || kind(next) != "token_tree") return;
            if (crate.files()[fi]->text()[ts_node_start_byte(next)] != '{') return;
            std::string id = crate.node_text(fi, tok);
            if (id != "Self" && by_name.find(id) == by_name.end()) return;
            for (std::size_t t : targets(fn, id))
              out[t].macro_literals.push_back(where(crate, fi, tok));
          });
        }
      }
    });
  }
  return out;
}

std::vector<MacroItem> macro_items(const Crate& crate) {
  std::vector<MacroItem> out;
  for (std::size_t fi = 0; fi < crate.files().size(); ++fi) {
    const ParsedFile& pf = *crate.files()[fi];
    if (pf.tree() == nullptr) continue;
    // The tokens of one token tree, in order (the leaves: nested trees add their brackets).
    auto scan = [&](TSNode tree, const std::string& macro) {
      std::vector<TSNode> tokens;
      preorder(tree, [&](TSNode n) {
        if (ts_node_child_count(n) == 0) tokens.push_back(n);
      });
      for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        const std::string_view k = kind(tokens[i]);
        if (k == "struct") {
          out.push_back({where(crate, fi, tokens[i]),
                         "struct `" + crate.node_text(fi, tokens[i + 1]) + "`", macro});
        } else if (k == "impl") {
          // Up to the body's `{`; listed when the body defines a forward.
          std::string head;
          std::size_t j = i + 1;
          for (; j < tokens.size() && kind(tokens[j]) != "{" && kind(tokens[j]) != ";"; ++j)
            head += (head.empty() ? "" : " ") + crate.node_text(fi, tokens[j]);
          int depth = 0;
          bool forward = false;
          for (std::size_t b = j; b < tokens.size(); ++b) {
            const std::string_view t = kind(tokens[b]);
            depth += t == "{" ? 1 : t == "}" ? -1 : 0;
            if (depth <= 0 && b > j) break;
            if (t == "fn" && b + 1 < tokens.size()) {
              const std::string name = crate.node_text(fi, tokens[b + 1]);
              forward = forward || name == "forward" || name == "forward_t";
            }
          }
          if (forward) out.push_back({where(crate, fi, tokens[i]), "impl `" + head + "`", macro});
        }
      }
    };
    preorder(ts_tree_root_node(pf.tree()), [&](TSNode n) {
      const std::string_view k = kind(n);
      if (k == "macro_definition") {
        TSNode name = field(n, "name");
        const std::string macro =
            "`macro_rules! " + (ts_node_is_null(name) ? "?" : crate.node_text(fi, name)) + "`";
        for (std::uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
          TSNode rule = ts_node_named_child(n, i);
          if (kind(rule) != "macro_rule") continue;
          TSNode right = field(rule, "right");
          if (!ts_node_is_null(right)) scan(right, macro);
        }
      } else if (k == "macro_invocation") {
        TSNode name = field(n, "macro");
        const std::string macro =
            "an invocation of `" + (ts_node_is_null(name) ? "?" : crate.node_text(fi, name)) + "!`";
        for (std::uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
          TSNode tt = ts_node_named_child(n, i);
          if (kind(tt) == "token_tree") scan(tt, macro);
        }
      }
    });
  }
  return out;
}

std::optional<BodySite> body_site(const Crate& crate, std::size_t fn_item) {
  const Item& f = crate.items()[fn_item];
  TSNode body = f.body();
  if (ts_node_is_null(body) || kind(body) != "block") return std::nullopt;
  BodySite s;
  s.file = f.file;
  s.line = f.line;
  s.open = ts_node_start_byte(body);
  s.after_inner = s.open + 1;
  std::uint32_t n = ts_node_child_count(body);
  for (std::uint32_t i = 0; i < n; ++i) {
    TSNode ch = ts_node_child(body, i);
    std::string_view k = kind(ch);
    if (k == "{") continue;
    if (k == "inner_attribute_item") {
      s.after_inner = ts_node_end_byte(ch);
      continue;
    }
    if (k == "}") break;
    s.has_first = true;
    s.first_start = ts_node_start_byte(ch);
    break;
  }
  return s;
}

namespace {

// The non-lifetime parameters of a `<…>` list as written: `<'a, B: Backend>` -> "B: Backend".
std::string non_lifetime_params(std::string_view list) {
  if (list.size() < 2) return {};
  list = list.substr(1, list.size() - 2);
  std::string out;
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::size_t a = cur.find_first_not_of(" \t\n");
    if (a != std::string::npos && cur[a] != '\'')
      out += (out.empty() ? "" : ", ") + cur.substr(a, cur.find_last_not_of(" \t\n") + 1 - a);
    cur.clear();
  };
  for (char c : list) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    cur += c;
  }
  flush();
  return out;
}

}  // namespace

std::string generic_parameters(const Crate& crate, std::size_t fn_item) {
  const Item& f = crate.items()[fn_item];
  std::string out;
  TSNode tp = field(f.node, "type_parameters");
  if (!ts_node_is_null(tp)) out = non_lifetime_params(crate.node_text(f.file, tp));
  if (f.impl >= 0) {
    std::string imp = non_lifetime_params(crate.impls()[static_cast<std::size_t>(f.impl)].generics);
    if (!imp.empty()) out = imp + (out.empty() ? "" : ", " + out);
  }
  return out;
}

std::optional<std::string> builder_disturbed(const Crate& crate, std::size_t fn_item,
                                             const std::string& name, std::uint32_t limit) {
  const Item& f = crate.items()[fn_item];
  TSNode body = f.body();
  if (ts_node_is_null(body)) return std::nullopt;
  std::optional<std::string> found;
  preorder(body, [&](TSNode n) {
    if (found || ts_node_start_byte(n) >= limit) return;
    std::string_view k = kind(n);
    if (k != "identifier" || crate.node_text(f.file, n) != name) return;
    // Inside a `move` closure: the closure owns it from there on.
    for (TSNode a = ts_node_parent(n); !ts_node_is_null(a) && !ts_node_eq(a, body);
         a = ts_node_parent(a)) {
      if (kind(a) == "closure_expression" && crate.node_text(f.file, a).starts_with("move")) {
        found = "captured by a `move` closure at " + where(crate, f.file, n);
        return;
      }
    }
    TSNode p = ts_node_parent(n);
    std::string_view pk = ts_node_is_null(p) ? "" : kind(p);
    if (pk == "reference_expression") return;  // `&vb`
    if (pk == "field_expression" && ts_node_eq(field(p, "value"), n)) {
      TSNode call = ts_node_parent(p);
      TSNode method = field(p, "field");
      std::string m = ts_node_is_null(method) ? "" : crate.node_text(f.file, method);
      bool is_call = !ts_node_is_null(call) && kind(call) == "call_expression" &&
                     ts_node_eq(field(call, "function"), p);
      // VarBuilder methods take `&self`, except the renaming ones that consume the builder.
      if (!is_call || (m != "rename_f" && m != "rename")) return;
      found = "consumed by `." + m + "` at " + where(crate, f.file, n);
      return;
    }
    found = "used by value or rebound at " + where(crate, f.file, n);
  });
  return found;
}

namespace {

// A node that is an expression whose first token may be the first token of a larger one.
bool is_expression(std::string_view k) {
  return k.ends_with("_expression") && k != "closure_expression" && k != "block";
}

}  // namespace

std::vector<MethodCall> method_calls(const Crate& crate) {
  std::map<std::pair<std::size_t, std::uint32_t>, std::size_t> fn_at;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const Item& it = crate.items()[i];
    if (it.unit == 0 && (it.kind == ItemKind::Function || it.kind == ItemKind::Method))
      fn_at[{it.file, ts_node_start_byte(it.node)}] = i;
  }
  std::vector<MethodCall> out;
  for (std::size_t fi = 0; fi < crate.files().size(); ++fi) {
    const ParsedFile& pf = *crate.files()[fi];
    if (pf.tree() == nullptr) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> fns;  // (end byte, item) enclosing
    preorder(ts_tree_root_node(pf.tree()), [&](TSNode n) {
      const std::uint32_t start = ts_node_start_byte(n);
      while (!fns.empty() && fns.back().first <= start)
        fns.pop_back();
      const std::string_view k = kind(n);
      if (k == "function_item") {
        auto it = fn_at.find({fi, start});
        if (it != fn_at.end()) fns.push_back({ts_node_end_byte(n), it->second});
        return;
      }
      if (k != "call_expression" || fns.empty()) return;
      TSNode callee = field(n, "function");
      if (ts_node_is_null(callee) || kind(callee) != "field_expression") return;
      TSNode recv = field(callee, "value");
      TSNode name = field(callee, "field");
      TSNode args = field(n, "arguments");
      if (ts_node_is_null(recv) || ts_node_is_null(name) || ts_node_is_null(args)) return;
      if (kind(name) != "field_identifier") return;  // `x.0(..)`
      MethodCall c;
      c.file = fi;
      c.function = static_cast<std::ptrdiff_t>(fns.back().second);
      c.method = crate.node_text(fi, name);
      c.receiver = crate.node_text(fi, recv);
      c.start = start;
      c.end = ts_node_end_byte(n);
      c.receiver_start = ts_node_start_byte(recv);
      c.receiver_end = ts_node_end_byte(recv);
      for (std::uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
        TSNode a = ts_node_named_child(args, i);
        if (kind(a) == "attribute_item" || kind(a) == "line_comment" || kind(a) == "block_comment")
          continue;
        c.arguments.push_back({ts_node_start_byte(a), ts_node_end_byte(a), crate.node_text(fi, a)});
      }
      // The outermost expression that begins with the call (`call?.x()`), and what holds it.
      TSNode outer = n;
      for (TSNode p = ts_node_parent(n);
           !ts_node_is_null(p) && ts_node_start_byte(p) == start && is_expression(kind(p));
           p = ts_node_parent(p))
        outer = p;
      TSNode holder = ts_node_parent(outer);
      const std::string_view hk = ts_node_is_null(holder) ? "" : kind(holder);
      c.leftmost = hk == "expression_statement" ||
                   (!ts_node_eq(outer, n) &&
                    (hk == "block" || hk == "match_arm" || hk == "closure_expression"));
      c.where = where(crate, fi, n);
      out.push_back(std::move(c));
    });
  }
  return out;
}

bool body_mentions(const Crate& crate, std::size_t fn_item, const std::string& name) {
  const Item& f = crate.items()[fn_item];
  TSNode body = f.body();
  if (ts_node_is_null(body)) return false;
  bool seen = false;
  preorder(body, [&](TSNode n) {
    if (!seen && (kind(n) == "identifier" || kind(n) == "field_identifier" ||
                  kind(n) == "shorthand_field_identifier"))
      seen = crate.node_text(f.file, n) == name;
  });
  return seen;
}

}  // namespace cg::rust
