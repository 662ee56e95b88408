#include "rust/span_sites.hpp"

#include <cctype>
#include <cstring>
#include <string_view>

#include "util/text.hpp"

namespace cg::rust {
namespace {

std::string_view kind(TSNode n) {
  return ts_node_is_null(n) ? "" : ts_node_type(n);
}

TSNode field(TSNode n, const char* f) {
  return ts_node_child_by_field_name(n, f, static_cast<std::uint32_t>(std::strlen(f)));
}

// `span`, `trace_span`, `info_span`, `debug_span`, `warn_span`, `error_span` (the `tracing`
// macros that create a span); `tracing::span` too.
bool is_span_macro(const std::string& name) {
  std::string last(last_path_segment(name));
  return last == "span" || (last.size() > 5 && last.compare(last.size() - 5, 5, "_span") == 0);
}

// The literal's value: "attn" for `"attn"` (escapes are kept as written; span names have none).
std::string literal_value(const std::string& text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    return text.substr(1, text.size() - 2);
  return {};
}

// The span name of a `span!`-style call: the first string literal of its token tree that is not
// the value of a `target:` or `parent:` argument.
std::string span_name(const Crate& c, std::size_t file, TSNode call) {
  TSNode tree{};
  for (std::uint32_t i = 0, n = ts_node_named_child_count(call); i < n; ++i) {
    TSNode ch = ts_node_named_child(call, i);
    if (kind(ch) == "token_tree") tree = ch;
  }
  if (ts_node_is_null(tree)) return {};
  std::string previous;  // the identifier before a `:`
  bool after_keyword = false;
  for (std::uint32_t i = 0, n = ts_node_child_count(tree); i < n; ++i) {
    TSNode ch = ts_node_child(tree, i);
    std::string_view k = kind(ch);
    std::string t = c.node_text(file, ch);
    if (k == "identifier") {
      previous = t;
      continue;
    }
    if (t == ":" && (previous == "target" || previous == "parent")) {
      after_keyword = true;
      continue;
    }
    if (t == ",") {
      after_keyword = false;
      previous.clear();
      continue;
    }
    if (k == "string_literal") {
      if (after_keyword) continue;
      return literal_value(t);
    }
  }
  return {};
}

// `Result<Linear>`, `candle::Result<Self>`, `Linear` → `Linear` (empty when not a plain path).
std::string returned_type(std::string text) {
  for (;;) {
    auto lt = text.find('<');
    if (lt == std::string::npos) break;
    std::string head(last_path_segment(text.substr(0, lt)));
    if (head != "Result" && head != "Option" && head != "Box" && head != "Arc") break;
    auto gt = text.rfind('>');
    if (gt == std::string::npos || gt < lt) return {};
    text = text.substr(lt + 1, gt - lt - 1);
    if (auto comma = text.find(','); comma != std::string::npos) text = text.substr(0, comma);
  }
  while (!text.empty() && text.front() == ' ')
    text.erase(text.begin());
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  if (text.find_first_of("<>()[]&, ") != std::string::npos) return {};
  return text;
}

// The qualified name of the struct or enum `name` as written in `module`.
std::string qualify(const Crate& c, const std::string& module, const std::string& name) {
  if (name.empty()) return {};
  for (const Candidate& cand : c.resolve(module, name)) {
    if (cand.kind != Candidate::Kind::Item) continue;
    const Item& it = c.items()[cand.item];
    if (it.kind == ItemKind::Struct || it.kind == ItemKind::Enum) return it.qualified;
  }
  return {};
}

void collect(const Crate& c, std::size_t file, TSNode n, const SpanSite& proto,
             std::vector<SpanSite>& out, int depth) {
  if (ts_node_is_null(n) || depth > 512) return;
  if (kind(n) == "macro_invocation") {
    std::string macro = c.node_text(file, field(n, "macro"));
    if (is_span_macro(macro)) {
      std::string name = span_name(c, file, n);
      if (!name.empty()) {
        SpanSite s = proto;
        s.name = std::move(name);
        s.source = c.files()[file]->path() + ":" + std::to_string(ts_node_start_point(n).row + 1);
        out.push_back(std::move(s));
      }
    }
    return;
  }
  // Nested items (closures stay: they run in the function) are other functions.
  std::string_view k = kind(n);
  if (k == "function_item" || k == "impl_item" || k == "mod_item") return;
  for (std::uint32_t i = 0, cnt = ts_node_named_child_count(n); i < cnt; ++i)
    collect(c, file, ts_node_named_child(n, i), proto, out, depth + 1);
}

}  // namespace

std::vector<SpanSite> find_span_sites(const Crate& c) {
  std::vector<SpanSite> out;
  for (const Item& it : c.items()) {
    if (it.kind != ItemKind::Function && it.kind != ItemKind::Method) continue;
    if (it.cfg.state == Tri::False) continue;
    TSNode body = it.body();
    if (ts_node_is_null(body)) continue;
    SpanSite proto;
    proto.function = it.qualified;
    std::string returned = returned_type(it.return_type);
    if (it.kind == ItemKind::Method && it.impl >= 0) {
      const Impl& im = c.impls()[static_cast<std::size_t>(it.impl)];
      proto.owner_type = qualify(c, im.module, im.self_base);
      proto.in_constructor = it.self_kind == SelfKind::None && returned == "Self";
      if (!proto.in_constructor && it.self_kind == SelfKind::None && !returned.empty())
        proto.in_constructor = qualify(c, im.module, returned) == proto.owner_type;
    } else {
      // A free constructor function (`fn linear(..) -> Result<Linear>`) builds what it returns.
      proto.owner_type = qualify(c, it.module, returned);
      proto.in_constructor = !proto.owner_type.empty();
    }
    if (proto.owner_type.empty()) continue;
    collect(c, it.file, body, proto, out, 0);
  }
  return out;
}

std::string declared_field_type(const Crate& c, const std::string& struct_qualified,
                                const std::string& field) {
  for (const Item& it : c.items()) {
    if (it.kind != ItemKind::Struct || it.qualified != struct_qualified) continue;
    for (const Field& f : it.fields)
      if (f.name == field) return qualify(c, it.module, f.base_type);
  }
  return {};
}

std::map<std::string, std::size_t> forward_field_order(const Crate& c,
                                                       const std::string& struct_qualified) {
  std::map<std::string, std::size_t> out;
  const Item* st = nullptr;
  for (const Item& it : c.items())
    if (it.kind == ItemKind::Struct && it.qualified == struct_qualified) st = &it;
  if (!st) return out;
  std::size_t base = 0;  // later `forward` methods (trait impls) count after earlier ones
  for (const Item& it : c.items()) {
    if (it.kind != ItemKind::Method || it.name != "forward" || it.impl < 0) continue;
    const Impl& im = c.impls()[static_cast<std::size_t>(it.impl)];
    if (qualify(c, im.module, im.self_base) != struct_qualified) continue;
    TSNode body = it.body();
    if (ts_node_is_null(body)) continue;
    std::string text = c.node_text(it.file, body);
    for (const Field& f : st->fields) {
      std::string needle = "self." + f.name;
      for (std::size_t at = text.find(needle); at != std::string::npos;
           at = text.find(needle, at + 1)) {
        std::size_t after = at + needle.size();
        if (after < text.size() &&
            (std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_'))
          continue;
        // `self.f.forward(args)` runs when its argument list closes: in
        // `self.fc2.forward(&self.fc1.forward(x)?)` fc1 runs first.
        std::size_t p = after;
        if (p < text.size() && text[p] == '.') {
          ++p;
          while (p < text.size() &&
                 (std::isalnum(static_cast<unsigned char>(text[p])) || text[p] == '_'))
            ++p;
        }
        std::size_t done = at;
        if (p < text.size() && text[p] == '(') {
          int depth = 0;
          for (std::size_t q = p; q < text.size(); ++q) {
            if (text[q] == '(') ++depth;
            if (text[q] == ')' && --depth == 0) {
              done = q;
              break;
            }
          }
        }
        out.emplace(f.name, base + done);
        break;
      }
    }
    base += text.size() + 1;
  }
  return out;
}

}  // namespace cg::rust
