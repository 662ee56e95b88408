#include "rust/crate.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "rust/types.hpp"
#include "rust/use_tree.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg::rust {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxFileBytes = 10u * 1024u * 1024u;
constexpr int kMaxInlineDepth = 64;
constexpr std::size_t kMaxCrateBytes = std::size_t{16} << 20;

std::uint32_t line_of(TSNode n) {
  return ts_node_start_point(n).row + 1;
}

bool valid_utf8(const std::string& s, std::size_t& bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    std::size_t len = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    if (len == 0 || i + len > n) {
      bad_offset = i;
      return false;
    }
    for (std::size_t k = 1; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) {
        bad_offset = i;
        return false;
      }
    i += len;
  }
  return true;
}

std::string join_path(const std::string& module, const std::string& name) {
  return module.empty() ? name : module + "::" + name;
}

// A dependency's root module `::name` is its own parent, as the analysed crate's root `""` is.
std::string parent_of(const std::string& module) {
  auto p = module.rfind("::");
  if (p == 0) return module;
  return p == std::string::npos ? std::string() : module.substr(0, p);
}

std::vector<std::string> split_path(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (depth == 0 && s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.emplace_back(s.substr(start, i - start));
      start = i + 2;
      ++i;
    }
  }
  out.emplace_back(s.substr(start));
  for (auto& seg : out) {
    auto lt = seg.find('<');
    if (lt != std::string::npos) seg.erase(lt);
    seg.erase(std::remove(seg.begin(), seg.end(), ' '), seg.end());
  }
  return out;
}

}  // namespace

std::string CfgInfo::text() const {
  std::string s;
  for (std::size_t i = 0; i < predicates.size(); ++i)
    s += (i ? " && " : "") + predicates[i];
  return s;
}

TSNode Item::body() const {
  if (ts_node_is_null(node)) return node;
  return ts_node_child_by_field_name(node, "body", 4);
}

// Walks parsed files into modules, items, impls and use bindings. Files are parsed a level of
// the module tree at a time, in parallel: candle-transformers has ~125 files under one `mod.rs`.
class CrateBuilder {
 public:
  CrateBuilder(Crate& c, fs::path dir, const CfgSet& cfg)
      : c_(c), dir_(std::move(dir)), cfg_(cfg) {}
  // A dependency: its unit, root module (`::name`), file-name prefix and limits.
  CrateBuilder(Crate& c, fs::path dir, const CfgSet& cfg, std::size_t unit,
               const DependencyLimits& limits)
      : c_(c),
        dir_(std::move(dir)),
        cfg_(cfg),
        unit_(unit),
        root_module_(c.units_[unit].root_module),
        prefix_(c.units_[unit].file_prefix),
        max_bytes_(limits.max_bytes),
        max_files_(limits.max_files) {}

  struct Pending {
    fs::path abs;
    std::string module;
    fs::path child_dir;  // where `mod x;` inside this file looks for x.rs
    CfgInfo cfg;
    std::vector<fs::path> stack;  // files on the way from the root, for `#[path]` cycles
    std::string decl_file;
    std::uint32_t decl_line = 0;
  };

  void run(const fs::path& root_file, int threads) {
    Pending root;
    root.abs = root_file;
    root.module = root_module_;
    items_before_ = c_.items_.size();
    uses_before_ = c_.uses_.size();
    impls_before_ = c_.impls_.size();
    root.child_dir = root_file.parent_path();
    std::vector<Pending> level{root};
    while (!level.empty()) {
      std::vector<std::unique_ptr<ParsedFile>> parsed(level.size());
      std::vector<std::string> errors(level.size());
      auto work = [&](std::size_t t, std::size_t n) {
        for (std::size_t i = t; i < level.size(); i += n)
          read_and_parse(level[i], parsed[i], errors[i]);
      };
      std::size_t n = std::max<std::size_t>(
          1, std::min<std::size_t>(static_cast<std::size_t>(threads), level.size()));
      std::vector<std::thread> pool;
      for (std::size_t t = 1; t < n; ++t)
        pool.emplace_back(work, t, n);
      work(0, n);
      for (auto& th : pool)
        th.join();
      std::vector<Pending> next;
      for (std::size_t i = 0; i < level.size(); ++i) {
        Pending& p = level[i];
        if (!parsed[i]) {
          c_.diags_.push_back({"source-load", p.decl_file.empty() ? rel(p.abs) : p.decl_file,
                               p.decl_line, errors[i]});
          continue;
        }
        // A crate-wide budget on source bytes: analysis memory grows with the source, and real
        // model crates are a few MB (candle-transformers: 3.2 MB). Counted in load order, so the
        // same files are kept on every run.
        std::size_t bytes = parsed[i]->text().size();
        if (loaded_bytes_ + bytes > max_bytes_) {
          c_.diags_.push_back(
              {"source-load", p.decl_file.empty() ? rel(p.abs) : p.decl_file, p.decl_line,
               rel(p.abs) + " is past the " + (unit_ == 0 ? "crate's" : "dependency's") +
                   " source budget of " + budget_text(max_bytes_) + " (" +
                   std::to_string(loaded_bytes_) + " bytes already loaded); skipped"});
          continue;
        }
        if (loaded_files_ + 1 > max_files_) {
          c_.diags_.push_back({"source-load", p.decl_file.empty() ? rel(p.abs) : p.decl_file,
                               p.decl_line,
                               rel(p.abs) + " is past the dependency's budget of " +
                                   std::to_string(max_files_) + " files; skipped"});
          continue;
        }
        loaded_bytes_ += bytes;
        ++loaded_files_;
        std::size_t fi = c_.files_.size();
        file_abs_[fi] = p.abs;
        c_.file_unit_.push_back(unit_);
        c_.files_.push_back(std::move(parsed[i]));
        const ParsedFile& f = *c_.files_.back();
        std::size_t shown = 0;
        for (const auto& prob : f.problems()) {
          if (shown++ == 5) break;
          // The grammar's verdict, not rustc's: valid Rust the grammar does not know (`&raw`
          // naming a local, newer syntax) reads the same, so it is said as the parser's.
          c_.diags_.push_back({"syntax-error", f.path(), prob.line,
                               "the parser reports a " + prob.what + " at column " +
                                   std::to_string(prob.column) +
                                   " (real, or Rust the tree-sitter grammar does not know)" +
                                   (f.problem_count() > 5 && shown == 5
                                        ? " (" + std::to_string(f.problem_count()) + " in file)"
                                        : "")});
        }
        add_module(p.module, fi, false, 0, 0, p.cfg);
        p.stack.push_back(p.abs);
        walk(fi, ts_tree_root_node(f.tree()), p.module, p.child_dir, p.cfg, p.stack, next, 0);
      }
      level = std::move(next);
    }
    finalize();
  }

 private:
  std::string rel(const fs::path& abs) const {
    auto r = abs.lexically_relative(dir_);
    return r.empty() ? abs.string() : prefix_ + r.generic_string();
  }

  static std::string budget_text(std::size_t bytes) {
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                   : std::to_string(bytes) + " bytes";
  }

  void read_and_parse(const Pending& p, std::unique_ptr<ParsedFile>& out, std::string& err) const {
    note_input(p.abs);  // skipped or not, a source file is never an output
    std::error_code ec;
    auto size = fs::file_size(p.abs, ec);
    if (ec) {
      err = "cannot read " + rel(p.abs) + ": " + ec.message();
      return;
    }
    if (size > kMaxFileBytes) {
      err = rel(p.abs) + " is " + std::to_string(size) + " bytes, over the 10 MB limit; skipped";
      return;
    }
    std::string text;
    try {
      text = read_file(p.abs);
    } catch (const std::exception& e) {
      err = e.what();
      return;
    }
    std::size_t bad = 0;
    if (!valid_utf8(text, bad)) {
      err = rel(p.abs) + " is not valid UTF-8 (byte offset " + std::to_string(bad) + "); skipped";
      return;
    }
    out = std::make_unique<ParsedFile>(ParsedFile::parse(rel(p.abs), std::move(text)));
  }

  void add_module(const std::string& path, std::size_t file, bool is_inline, std::uint32_t a,
                  std::uint32_t b, const CfgInfo& cfg) {
    Module m;
    m.path = path;
    m.file = file;
    m.is_inline = is_inline;
    m.first_line = a;
    m.last_line = b;
    m.parent = parent_of(path);
    m.cfg = cfg;
    c_.module_index_.emplace(path, c_.modules_.size());
    c_.modules_.push_back(std::move(m));
  }

  std::string text(std::size_t fi, TSNode n) const { return c_.node_text(fi, n); }

  Visibility visibility(std::size_t fi, TSNode item) const {
    std::uint32_t n = ts_node_named_child_count(item);
    for (std::uint32_t i = 0; i < n; ++i) {
      TSNode ch = ts_node_named_child(item, i);
      if (std::strcmp(ts_node_type(ch), "visibility_modifier") != 0) continue;
      std::string t = text(fi, ch);
      t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
      if (t == "pub") return Visibility::Public;
      if (t == "pub(crate)") return Visibility::Crate;
      return Visibility::Restricted;
    }
    return Visibility::Private;
  }

  struct Attrs {
    std::vector<std::string> cfg;
    std::string path;
    bool macro_export = false;
  };

  void add_attr(std::size_t fi, TSNode attr_item, Attrs& a) const {
    TSNode attr = ts_node_named_child(attr_item, 0);
    if (ts_node_is_null(attr)) return;
    std::string t = text(fi, attr);
    auto starts = [&](const char* p) { return t.rfind(p, 0) == 0; };
    if (starts("cfg") && !starts("cfg_attr")) {
      auto open = t.find('('), close = t.rfind(')');
      if (open != std::string::npos && close != std::string::npos && close > open)
        a.cfg.push_back(normalize_cfg(std::string_view(t).substr(open + 1, close - open - 1)));
    } else if (t == "macro_export") {
      a.macro_export = true;
    } else if (starts("path")) {
      auto q1 = t.find('"'), q2 = t.rfind('"');
      if (q1 != std::string::npos && q2 > q1) a.path = t.substr(q1 + 1, q2 - q1 - 1);
    }
  }

  void walk(std::size_t fi, TSNode container, const std::string& module, const fs::path& child_dir,
            const CfgInfo& mod_cfg, const std::vector<fs::path>& stack, std::vector<Pending>& next,
            int depth) {
    Attrs attrs;
    std::uint32_t n = ts_node_named_child_count(container);
    for (std::uint32_t i = 0; i < n; ++i) {
      TSNode ch = ts_node_named_child(container, i);
      const char* type = ts_node_type(ch);
      if (std::strcmp(type, "attribute_item") == 0) {
        add_attr(fi, ch, attrs);
        continue;
      }
      if (std::strcmp(type, "line_comment") == 0 || std::strcmp(type, "block_comment") == 0 ||
          std::strcmp(type, "inner_attribute_item") == 0)
        continue;
      Attrs own = std::move(attrs);
      attrs = {};
      CfgInfo cfg = mod_cfg;
      for (auto& p : own.cfg)
        cfg.predicates.push_back(p);
      cfg.state = cfg_.eval_all(cfg.predicates);
      if (cfg.state == Tri::False) continue;
      for (auto& p : own.cfg)
        if (cfg_.eval(p) == Tri::Unknown)
          c_.diags_.push_back({"cfg-unknown", c_.files_[fi]->path(), line_of(ch),
                               "cfg(" + p + ") is not understood; both alternatives are kept"});
      item(fi, ch, type, module, child_dir, cfg, own, stack, next, depth);
    }
  }

  std::size_t push_item(std::size_t fi, TSNode n, ItemKind kind, const std::string& module,
                        const CfgInfo& cfg) {
    Item it;
    it.kind = kind;
    TSNode name = ts_node_child_by_field_name(n, "name", 4);
    it.name = ts_node_is_null(name) ? std::string() : text(fi, name);
    it.module = module;
    it.qualified = join_path(module, it.name);
    it.visibility = visibility(fi, n);
    it.cfg = cfg;
    it.file = fi;
    it.line = line_of(n);
    it.node = n;
    it.unit = unit_;
    c_.items_.push_back(std::move(it));
    return c_.items_.size() - 1;
  }

  void fill_function(std::size_t fi, Item& it) {
    TSNode params = ts_node_child_by_field_name(it.node, "parameters", 10);
    TSNode ret = ts_node_child_by_field_name(it.node, "return_type", 11);
    if (!ts_node_is_null(ret)) it.return_type = text(fi, ret);
    if (ts_node_is_null(params)) return;
    std::uint32_t n = ts_node_named_child_count(params);
    for (std::uint32_t i = 0; i < n; ++i) {
      TSNode p = ts_node_named_child(params, i);
      const char* t = ts_node_type(p);
      if (std::strcmp(t, "self_parameter") == 0) {
        std::string s = text(fi, p);
        it.self_kind = s.find('&') == std::string::npos     ? SelfKind::Value
                       : s.find("mut") != std::string::npos ? SelfKind::RefMut
                                                            : SelfKind::Ref;
      } else if (std::strcmp(t, "parameter") == 0) {
        TSNode pat = ts_node_child_by_field_name(p, "pattern", 7);
        TSNode ty = ts_node_child_by_field_name(p, "type", 4);
        it.params.push_back(
            {ts_node_is_null(pat) ? "" : text(fi, pat), ts_node_is_null(ty) ? "" : text(fi, ty)});
      }
    }
  }

  void fill_attributes(std::size_t fi, Item& it) {
    for (TSNode a = ts_node_prev_named_sibling(it.node);
         !ts_node_is_null(a) && std::strcmp(ts_node_type(a), "attribute_item") == 0;
         a = ts_node_prev_named_sibling(a))
      it.attributes.push_back(text(fi, a));
  }

  void fill_variants(std::size_t fi, Item& it) {
    fill_attributes(fi, it);
    TSNode body = ts_node_child_by_field_name(it.node, "body", 4);
    if (ts_node_is_null(body)) return;
    std::vector<std::string> pending;  // attributes since the previous variant
    for (std::uint32_t i = 0, n = ts_node_named_child_count(body); i < n; ++i) {
      TSNode v = ts_node_named_child(body, i);
      if (std::strcmp(ts_node_type(v), "attribute_item") == 0) {
        pending.push_back(text(fi, v));
        continue;
      }
      if (std::strcmp(ts_node_type(v), "enum_variant") != 0) continue;
      Field variant;
      TSNode name = ts_node_child_by_field_name(v, "name", 4);
      TSNode payload = ts_node_child_by_field_name(v, "body", 4);
      variant.name = ts_node_is_null(name) ? "" : text(fi, name);
      variant.type_text = ts_node_is_null(payload) ? "" : text(fi, payload);
      variant.attributes = std::move(pending);
      pending.clear();
      variant.line = line_of(v);
      it.variants.push_back(std::move(variant));
    }
  }

  void fill_fields(std::size_t fi, Item& it) {
    fill_attributes(fi, it);
    TSNode body = ts_node_child_by_field_name(it.node, "body", 4);
    if (ts_node_is_null(body)) return;
    bool tuple = std::strcmp(ts_node_type(body), "ordered_field_declaration_list") == 0;
    std::uint32_t n = ts_node_named_child_count(body);
    std::size_t index = 0;
    std::vector<std::string> pending;  // attributes since the previous field
    for (std::uint32_t i = 0; i < n; ++i) {
      TSNode f = ts_node_named_child(body, i);
      Field field;
      if (!tuple && std::strcmp(ts_node_type(f), "attribute_item") == 0) {
        pending.push_back(text(fi, f));
        continue;
      }
      if (tuple) {
        const char* t = ts_node_type(f);
        if (std::strcmp(t, "visibility_modifier") == 0 || std::strcmp(t, "attribute_item") == 0)
          continue;
        field.name = std::to_string(index++);
        field.type_text = text(fi, f);
      } else {
        if (std::strcmp(ts_node_type(f), "field_declaration") != 0) continue;
        TSNode name = ts_node_child_by_field_name(f, "name", 4);
        TSNode ty = ts_node_child_by_field_name(f, "type", 4);
        field.name = ts_node_is_null(name) ? "" : text(fi, name);
        field.type_text = ts_node_is_null(ty) ? "" : text(fi, ty);
        field.attributes = std::move(pending);
        pending.clear();
        field.line = line_of(f);
      }
      PeeledType p = peel_type(field.type_text);
      field.base_type = p.base;
      field.container = p.container;
      it.fields.push_back(std::move(field));
    }
  }

  void item(std::size_t fi, TSNode ch, const char* type, const std::string& module,
            const fs::path& child_dir, const CfgInfo& cfg, const Attrs& attrs,
            const std::vector<fs::path>& stack, std::vector<Pending>& next, int depth) {
    std::string_view t(type);
    if (t == "mod_item") {
      std::size_t idx = push_item(fi, ch, ItemKind::Module, module, cfg);
      const std::string name = c_.items_[idx].name;
      std::string path = join_path(module, name);
      TSNode body = ts_node_child_by_field_name(ch, "body", 4);
      if (!ts_node_is_null(body)) {
        if (depth >= kMaxInlineDepth) {
          c_.diags_.push_back({"parse-depth", c_.files_[fi]->path(), line_of(ch),
                               "inline modules nest deeper than 64; the rest is skipped"});
          return;
        }
        add_module(path, fi, true, line_of(ch), ts_node_end_point(ch).row + 1, cfg);
        fs::path sub = attrs.path.empty() ? child_dir / name : child_dir / attrs.path;
        walk(fi, body, path, sub, cfg, stack, next, depth + 1);
        return;
      }
      fs::path target;
      std::error_code ec;
      if (!attrs.path.empty()) {
        // `#[path]` is relative to the directory of the file holding the `mod` item.
        target = file_abs_[fi].parent_path() / attrs.path;
        if (depth > 0) target = child_dir / attrs.path;
      } else if (fs::is_regular_file(child_dir / (name + ".rs"), ec)) {
        target = child_dir / (name + ".rs");
      } else if (fs::is_regular_file(child_dir / name / "mod.rs", ec)) {
        target = child_dir / name / "mod.rs";
      }
      if (target.empty() || !fs::is_regular_file(target, ec)) {
        std::string want = attrs.path.empty() ? rel(child_dir / (name + ".rs")) + " or " +
                                                    rel(child_dir / name / "mod.rs")
                                              : rel(target);
        c_.diags_.push_back({"source-load", c_.files_[fi]->path(), line_of(ch),
                             "file not found for module `" + name + "` (looked for " + want + ")"});
        return;
      }
      target = fs::weakly_canonical(target);
      if (std::find(stack.begin(), stack.end(), target) != stack.end()) {
        c_.diags_.push_back({"path-cycle", c_.files_[fi]->path(), line_of(ch),
                             "module `" + name + "` loads " + rel(target) +
                                 ", which is already on the module path; not loaded again"});
        return;
      }
      Pending p;
      p.abs = target;
      p.module = path;
      std::string fname = target.filename().string();
      bool mod_rs = fname == "mod.rs" || !attrs.path.empty();
      p.child_dir = mod_rs ? target.parent_path() : target.parent_path() / target.stem();
      p.cfg = cfg;
      p.stack = stack;
      p.decl_file = c_.files_[fi]->path();
      p.decl_line = line_of(ch);
      next.push_back(std::move(p));
      return;
    }
    if (t == "struct_item" || t == "union_item") {
      std::size_t idx = push_item(fi, ch, ItemKind::Struct, module, cfg);
      fill_fields(fi, c_.items_[idx]);
    } else if (t == "enum_item") {
      std::size_t idx = push_item(fi, ch, ItemKind::Enum, module, cfg);
      fill_variants(fi, c_.items_[idx]);
    } else if (t == "trait_item") {
      push_item(fi, ch, ItemKind::Trait, module, cfg);
    } else if (t == "function_item") {
      std::size_t idx = push_item(fi, ch, ItemKind::Function, module, cfg);
      fill_function(fi, c_.items_[idx]);
    } else if (t == "const_item") {
      push_item(fi, ch, ItemKind::Const, module, cfg);
    } else if (t == "static_item") {
      push_item(fi, ch, ItemKind::Static, module, cfg);
    } else if (t == "macro_definition") {
      // `#[macro_export]` puts the macro at the crate root, whatever module defines it.
      push_item(fi, ch, ItemKind::Macro, attrs.macro_export ? root_module_ : module, cfg);
    } else if (t == "type_item") {
      push_item(fi, ch, ItemKind::TypeAlias, module, cfg);
    } else if (t == "impl_item") {
      impl(fi, ch, module, cfg);
    } else if (t == "use_declaration") {
      TSNode arg = ts_node_child_by_field_name(ch, "argument", 8);
      if (ts_node_is_null(arg)) return;
      bool is_pub = visibility(fi, ch) != Visibility::Private;
      for (auto& leaf : parse_use_tree(text(fi, arg))) {
        UseBinding b;
        b.module = module;
        b.name = leaf.name;
        b.path = std::move(leaf.path);
        b.glob = leaf.glob;
        b.is_pub = is_pub;
        b.cfg = cfg;
        b.file = fi;
        b.line = line_of(ch);
        c_.uses_.push_back(std::move(b));
      }
    } else if (t == "extern_crate_declaration") {
      TSNode name = ts_node_child_by_field_name(ch, "name", 4);
      TSNode alias = ts_node_child_by_field_name(ch, "alias", 5);
      if (ts_node_is_null(name)) return;
      UseBinding b;
      b.module = module;
      b.path = {text(fi, name)};
      b.name = ts_node_is_null(alias) ? b.path[0] : text(fi, alias);
      b.is_pub = visibility(fi, ch) != Visibility::Private;
      b.cfg = cfg;
      b.file = fi;
      b.line = line_of(ch);
      c_.uses_.push_back(std::move(b));
    }
  }

  void impl(std::size_t fi, TSNode ch, const std::string& module, const CfgInfo& cfg) {
    Impl im;
    im.module = module;
    TSNode ty = ts_node_child_by_field_name(ch, "type", 4);
    TSNode tr = ts_node_child_by_field_name(ch, "trait", 5);
    TSNode tp = ts_node_child_by_field_name(ch, "type_parameters", 15);
    im.self_type = ts_node_is_null(ty) ? "" : text(fi, ty);
    im.self_base = peel_type(im.self_type).base;
    im.trait = ts_node_is_null(tr) ? "" : text(fi, tr);
    im.generics = ts_node_is_null(tp) ? "" : text(fi, tp);
    im.cfg = cfg;
    im.file = fi;
    im.line = line_of(ch);
    std::size_t impl_index = c_.impls_.size();
    TSNode body = ts_node_child_by_field_name(ch, "body", 4);
    if (!ts_node_is_null(body)) {
      Attrs attrs;
      std::uint32_t n = ts_node_named_child_count(body);
      for (std::uint32_t i = 0; i < n; ++i) {
        TSNode m = ts_node_named_child(body, i);
        const char* t = ts_node_type(m);
        if (std::strcmp(t, "attribute_item") == 0) {
          add_attr(fi, m, attrs);
          continue;
        }
        if (std::strcmp(t, "line_comment") == 0 || std::strcmp(t, "block_comment") == 0) continue;
        Attrs own = std::move(attrs);
        attrs = {};
        if (std::strcmp(t, "function_item") != 0) continue;
        CfgInfo mc = cfg;
        for (auto& p : own.cfg)
          mc.predicates.push_back(p);
        mc.state = cfg_.eval_all(mc.predicates);
        if (mc.state == Tri::False) continue;
        std::size_t idx = push_item(fi, m, ItemKind::Method, module, mc);
        Item& it = c_.items_[idx];
        it.impl = static_cast<std::ptrdiff_t>(impl_index);
        std::string owner = split_path(im.self_base).back();
        it.qualified = join_path(module, owner + "::" + it.name);
        // Trait methods inherit the trait's visibility; their own is not written.
        if (!im.trait.empty()) it.visibility = Visibility::Public;
        fill_function(fi, it);
        im.methods.push_back(idx);
      }
    }
    c_.impls_.push_back(std::move(im));
  }

  // Indexes what this run added (a dependency is loaded into a crate already indexed).
  void finalize() {
    for (std::size_t i = items_before_; i < c_.items_.size(); ++i) {
      const Item& it = c_.items_[i];
      if (it.kind != ItemKind::Method) c_.by_scope_[it.module + '\n' + it.name].push_back(i);
      c_.by_qualified_[it.qualified].push_back(i);
    }
    for (std::size_t i = uses_before_; i < c_.uses_.size(); ++i) {
      const UseBinding& u = c_.uses_[i];
      if (u.glob)
        c_.globs_by_module_[u.module].push_back(i);
      else if (!u.name.empty() && u.name != "_")
        c_.uses_by_scope_[u.module + '\n' + u.name].push_back(i);
    }
    for (std::size_t i = impls_before_; i < c_.impls_.size(); ++i) {
      Impl& im = c_.impls_[i];
      for (const auto& cand : c_.resolve_segments(im.module, split_path(im.self_base), 0)) {
        if (cand.kind != Candidate::Kind::Item) continue;
        ItemKind k = c_.items_[cand.item].kind;
        if (k != ItemKind::Struct && k != ItemKind::Enum) continue;
        c_.impls_by_type_[cand.item].push_back(i);
        // Methods are named after the type they belong to, wherever the impl is written.
        for (std::size_t m : im.methods) {
          std::string q = c_.items_[cand.item].qualified + "::" + c_.items_[m].name;
          if (q != c_.items_[m].qualified) {
            auto& old = c_.by_qualified_[c_.items_[m].qualified];
            old.erase(std::remove(old.begin(), old.end(), m), old.end());
            c_.items_[m].qualified = q;
            c_.by_qualified_[q].push_back(m);
          }
        }
      }
    }
  }

  Crate& c_;
  fs::path dir_;
  const CfgSet& cfg_;
  std::size_t unit_ = 0;
  std::string root_module_;  // "" or `::name`
  std::string prefix_;       // prepended to file names: "" or "their-layers/"
  std::size_t max_bytes_ = kMaxCrateBytes, max_files_ = SIZE_MAX;
  std::size_t loaded_bytes_ = 0;  // source bytes kept so far
  std::size_t loaded_files_ = 0;
  std::size_t items_before_ = 0, uses_before_ = 0, impls_before_ = 0;
  std::unordered_map<std::size_t, fs::path> file_abs_;  // where each file of this run was read
};

Crate Crate::load(const fs::path& crate_dir, const fs::path& root_file,
                  const cargo::CargoContext* ctx, const CfgSet& cfg, int threads) {
  Crate c;
  c.ctx_ = ctx;
  c.cfg_ = cfg;
  CrateUnit self;
  if (ctx != nullptr) {
    self.name = cargo::CargoContext::crate_name(ctx->package);
    self.package = ctx->package;
    self.version = ctx->version;
  }
  self.cfg = cfg;
  c.units_.push_back(std::move(self));
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(crate_dir, ec);
  fs::path root = fs::weakly_canonical(root_file, ec);
  CrateBuilder(c, dir, cfg).run(root, threads);
  c.units_[0].files = c.files_.size();
  c.units_[0].items = c.items_.size();
  for (const auto& f : c.files_)
    c.units_[0].bytes += f->text().size();
  return c;
}

std::size_t Crate::load_dependency(CrateUnit unit, const fs::path& package_dir,
                                   const fs::path& root_file, const DependencyLimits& limits) {
  std::size_t index = units_.size();
  std::size_t files_before = files_.size(), items_before = items_.size();
  units_.push_back(std::move(unit));
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(package_dir, ec);
  fs::path root = fs::weakly_canonical(root_file, ec);
  std::size_t diags_before = diags_.size();
  CrateBuilder(*this, dir, units_[index].cfg, index, limits).run(root, 2);
  CrateUnit& u = units_[index];
  // What its loader could not do is the dependency's, never the analysed crate's.
  u.diagnostics.assign(diags_.begin() + static_cast<std::ptrdiff_t>(diags_before), diags_.end());
  diags_.resize(diags_before);
  u.files = files_.size() - files_before;
  u.items = items_.size() - items_before;
  for (std::size_t f = files_before; f < files_.size(); ++f)
    u.bytes += files_[f]->text().size();
  return index;
}

std::size_t Crate::unit_of_module(const std::string& module) const {
  if (module.rfind("::", 0) != 0) return 0;
  auto end = module.find("::", 2);
  std::string root = module.substr(0, end);
  for (std::size_t u = 1; u < units_.size(); ++u)
    if (units_[u].root_module == root) return u;
  return 0;
}

std::vector<Candidate> Crate::extern_crate(const std::string& module, const std::string& name,
                                           bool more_segments) const {
  std::size_t unit = unit_of_module(module);
  std::string pkg;
  bool known = false;
  if (unit == 0) {
    pkg = ctx_ != nullptr ? ctx_->package_for_alias(name) : std::string();
    known = !pkg.empty();
    // `name` is `d.package` with `-` → `_` (compared in place: this runs on every lookup of a
    // path's first segment, over every dependency of the manifest).
    auto same_crate = [&](const std::string& package) {
      return package.size() == name.size() &&
             std::equal(package.begin(), package.end(), name.begin(),
                        [](char p, char n) { return (p == '-' ? '_' : p) == n; });
    };
    if (ctx_ != nullptr && !known)
      known = std::any_of(ctx_->dependencies.begin(), ctx_->dependencies.end(),
                          [&](const cargo::Dependency& d) { return same_crate(d.package); });
  } else if (auto it = units_[unit].externs.find(name); it != units_[unit].externs.end()) {
    pkg = it->second;
    known = true;
  }
  if (!pkg.empty())
    for (std::size_t u = 1; u < units_.size(); ++u)
      if (units_[u].package == pkg) return {{Candidate::Kind::Module, 0, units_[u].root_module}};
  bool sysroot = name == "std" || name == "core" || name == "alloc";
  // Without a Cargo context (or in a dependency, whose manifest may name crates the lock does
  // not), a lowercase first segment of a longer path is taken for a crate, as before.
  bool guess = (ctx_ == nullptr || unit != 0) && more_segments && !name.empty() &&
               std::islower(static_cast<unsigned char>(name[0]));
  if (sysroot || known || guess)
    return {
        {Candidate::Kind::External, 0, pkg.empty() ? name : cargo::CargoContext::crate_name(pkg)}};
  return {};
}

Tri Crate::attributes_active(std::size_t file, TSNode node) const {
  std::vector<std::string> preds;
  for (TSNode a = ts_node_prev_named_sibling(node);
       !ts_node_is_null(a) && std::strcmp(ts_node_type(a), "attribute_item") == 0;
       a = ts_node_prev_named_sibling(a)) {
    TSNode attr = ts_node_named_child(a, 0);
    if (ts_node_is_null(attr)) continue;
    std::string t = node_text(file, attr);
    if (t.rfind("cfg", 0) != 0 || t.rfind("cfg_attr", 0) == 0) continue;
    auto open = t.find('('), close = t.rfind(')');
    if (open != std::string::npos && close != std::string::npos && close > open)
      preds.push_back(normalize_cfg(std::string_view(t).substr(open + 1, close - open - 1)));
  }
  std::size_t unit = file < file_unit_.size() ? file_unit_[file] : 0;
  return (unit == 0 ? cfg_ : units_[unit].cfg).eval_all(preds);
}

std::string Crate::node_text(std::size_t file, TSNode n) const {
  const std::string& t = files_[file]->text();
  std::uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
  if (b > t.size() || a > b) return {};
  return t.substr(a, b - a);
}

const Module* Crate::module(const std::string& path) const {
  auto it = module_index_.find(path);
  return it == module_index_.end() ? nullptr : &modules_[it->second];
}

std::vector<std::size_t> Crate::find(const std::string& qualified) const {
  auto it = by_qualified_.find(qualified);
  return it == by_qualified_.end() ? std::vector<std::size_t>{} : it->second;
}

std::string Crate::source(std::size_t item) const {
  return files_[items_[item].file]->path() + ":" + std::to_string(items_[item].line);
}

namespace {

void add_unique(std::vector<Candidate>& out, const Candidate& c) {
  for (const auto& o : out)
    if (o.kind == c.kind && o.item == c.item && o.path == c.path) return;
  out.push_back(c);
}

}  // namespace

namespace {
// Resolution work per top-level query. `use` chains and glob imports fan out at every level, so a
// depth bound alone still allows b^24 steps on a mutated file (found by fuzzing); past this budget
// the path stays unresolved, as any other path the loader cannot follow.
constexpr std::size_t kMaxResolveSteps = 20000;
thread_local std::size_t resolve_steps = 0;
}  // namespace

std::vector<Candidate> Crate::lookup_in(const std::string& module, const std::string& name,
                                        int depth) const {
  std::vector<Candidate> out;
  if (depth > 24 || ++resolve_steps > kMaxResolveSteps) return out;
  std::string key = module + '\n' + name;
  if (auto it = by_scope_.find(key); it != by_scope_.end())
    for (std::size_t i : it->second) {
      if (items_[i].kind == ItemKind::Module)
        add_unique(out, {Candidate::Kind::Module, 0, join_path(module, name)});
      else
        add_unique(out, {Candidate::Kind::Item, i, {}});
    }
  if (auto it = uses_by_scope_.find(key); it != uses_by_scope_.end())
    for (std::size_t u : it->second)
      for (const auto& c : resolve_segments(uses_[u].module, uses_[u].path, depth + 1))
        add_unique(out, c);
  if (!out.empty()) return out;
  if (auto it = globs_by_module_.find(module); it != globs_by_module_.end())
    for (std::size_t u : it->second)
      for (const auto& m : resolve_segments(uses_[u].module, uses_[u].path, depth + 1)) {
        if (m.kind == Candidate::Kind::Module)
          for (const auto& c : lookup_in(m.path, name, depth + 1))
            add_unique(out, c);
        else if (m.kind == Candidate::Kind::Item && items_[m.item].kind == ItemKind::Enum)
          add_unique(out, m);  // `use Enum::*` brings variants: the enum stands for them
      }
  return out;
}

std::vector<Candidate> Crate::resolve_segments(const std::string& module,
                                               const std::vector<std::string>& segs,
                                               int depth) const {
  std::vector<Candidate> cur;
  if (depth == 0) resolve_steps = 0;
  if (segs.empty() || depth > 24 || ++resolve_steps > kMaxResolveSteps) return cur;
  std::size_t i = 0;
  const std::string& s0 = segs[0];
  if (s0.empty()) {  // `::name` — an external crate (a loaded dependency's root module)
    if (segs.size() < 2) return cur;
    cur = extern_crate(module, segs[1], true);
    bool loaded = !cur.empty() && cur[0].kind == Candidate::Kind::Module;
    if (!loaded) {
      // `::their_layers::x` as written by the loader itself names a loaded unit's module.
      cur.clear();
      for (std::size_t u = 1; u < units_.size(); ++u)
        if (units_[u].root_module == "::" + segs[1])
          cur.push_back({Candidate::Kind::Module, 0, units_[u].root_module});
      if (cur.empty()) cur.push_back({Candidate::Kind::External, 0, segs[1]});
    }
    i = 2;
  } else if (s0 == "crate") {
    cur.push_back({Candidate::Kind::Module, 0, units_[unit_of_module(module)].root_module});
    i = 1;
  } else if (s0 == "self" || s0 == "super") {
    std::string m = module;
    while (i < segs.size() && (segs[i] == "super" || (i == 0 && segs[i] == "self"))) {
      if (segs[i] == "super") m = parent_of(m);
      ++i;
    }
    cur.push_back({Candidate::Kind::Module, 0, m});
  } else {
    // A module-relative name (2018 uniform paths), else a dependency or a sysroot crate.
    cur = lookup_in(module, s0, depth);
    if (cur.empty()) cur = extern_crate(module, s0, segs.size() > 1);
    i = 1;
  }
  for (; i < segs.size() && !cur.empty(); ++i) {
    std::vector<Candidate> next;
    for (const auto& c : cur) {
      if (c.kind == Candidate::Kind::Module) {
        for (const auto& n : lookup_in(c.path, segs[i], depth + 1))
          add_unique(next, n);
      } else if (c.kind == Candidate::Kind::External) {
        add_unique(next, {Candidate::Kind::External, 0, c.path + "::" + segs[i]});
      } else {
        ItemKind k = items_[c.item].kind;
        if (k != ItemKind::Struct && k != ItemKind::Enum) continue;
        auto found = methods(c.item, segs[i]);
        for (std::size_t m : found)
          add_unique(next, {Candidate::Kind::Item, m, {}});
        if (found.empty() && k == ItemKind::Enum) add_unique(next, c);  // a variant
      }
    }
    cur = std::move(next);
  }
  return cur;
}

std::vector<Candidate> Crate::resolve(const std::string& module, const std::string& path) const {
  return resolve_segments(module, split_path(path), 0);
}

std::vector<Candidate> Crate::resolve_in(std::size_t fn_item, const std::string& path) const {
  const Item& fn = items_[fn_item];
  auto segs = split_path(path);
  if (!segs.empty() && segs[0] == "Self" && fn.impl >= 0) {
    const Impl& im = impls_[static_cast<std::size_t>(fn.impl)];
    auto base = split_path(im.self_base);
    segs.erase(segs.begin());
    segs.insert(segs.begin(), base.begin(), base.end());
    return resolve_segments(im.module, segs, 0);
  }
  return resolve_segments(fn.module, segs, 0);
}

std::vector<std::size_t> Crate::methods(std::size_t type_item, const std::string& name) const {
  std::vector<std::size_t> inherent, traits;
  auto it = impls_by_type_.find(type_item);
  if (it == impls_by_type_.end()) return {};
  for (std::size_t i : it->second)
    for (std::size_t m : impls_[i].methods)
      if (items_[m].name == name) (impls_[i].trait.empty() ? inherent : traits).push_back(m);
  return inherent.empty() ? traits : inherent;
}

std::vector<Candidate> Crate::resolve_type_text(const std::string& module, std::string text) const {
  std::string base = peel_type(text).base;
  if (base.empty()) return {};
  return resolve_segments(module, split_path(base), 0);
}

std::vector<Candidate> Crate::receiver_type(std::size_t fn_item, const std::string& expr) const {
  const Item& fn = items_[fn_item];
  std::vector<Candidate> owner;
  if (fn.impl >= 0) {
    const Impl& im = impls_[static_cast<std::size_t>(fn.impl)];
    owner = resolve_segments(im.module, split_path(im.self_base), 0);
  }
  std::string e = expr;
  e.erase(std::remove(e.begin(), e.end(), ' '), e.end());
  if (e == "self") return owner;
  if (e.rfind("self.", 0) == 0) {
    std::vector<Candidate> out;
    std::string field = e.substr(5);
    for (const auto& o : owner) {
      if (o.kind != Candidate::Kind::Item) continue;
      const Item& s = items_[o.item];
      for (const auto& f : s.fields)
        if (f.name == field)
          for (const auto& c : resolve_type_text(s.module, f.type_text))
            add_unique(out, c);
    }
    return out;
  }
  std::vector<Candidate> out;
  for (const auto& p : fn.params)
    if (p.name == e || p.name == "mut " + e)
      for (const auto& c : resolve_type_text(fn.module, p.type_text))
        add_unique(out, c);
  TSNode body = fn.body();
  if (ts_node_is_null(body)) return out;
  // Iterative walk: generated bodies nest deeply.
  TSTreeCursor cur = ts_tree_cursor_new(body);
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cur);
    if (std::strcmp(ts_node_type(n), "let_declaration") == 0) {
      TSNode pat = ts_node_child_by_field_name(n, "pattern", 7);
      std::string name = ts_node_is_null(pat) ? "" : node_text(fn.file, pat);
      if (name == e || name == "mut " + e) {
        TSNode ty = ts_node_child_by_field_name(n, "type", 4);
        TSNode val = ts_node_child_by_field_name(n, "value", 5);
        if (!ts_node_is_null(ty)) {
          for (const auto& c : resolve_type_text(fn.module, node_text(fn.file, ty)))
            add_unique(out, c);
        } else if (!ts_node_is_null(val)) {
          // `T::new(..)?` / `T::load(..)` / `T { .. }`: the type is the path before the last
          // segment.
          TSNode v = val;
          while (std::strcmp(ts_node_type(v), "try_expression") == 0 &&
                 ts_node_named_child_count(v) > 0)
            v = ts_node_named_child(v, 0);
          std::string callee;
          if (std::strcmp(ts_node_type(v), "call_expression") == 0) {
            TSNode f = ts_node_child_by_field_name(v, "function", 8);
            if (!ts_node_is_null(f) && std::strcmp(ts_node_type(f), "scoped_identifier") == 0) {
              auto segs = split_path(node_text(fn.file, f));
              segs.pop_back();
              for (const auto& c : resolve_segments(fn.module, segs, 0))
                if (c.kind != Candidate::Kind::Module) add_unique(out, c);
            }
          } else if (std::strcmp(ts_node_type(v), "struct_expression") == 0) {
            TSNode nm = ts_node_child_by_field_name(v, "name", 4);
            if (!ts_node_is_null(nm))
              for (const auto& c :
                   resolve_segments(fn.module, split_path(node_text(fn.file, nm)), 0))
                add_unique(out, c);
          }
        }
      }
    }
    if (ts_tree_cursor_goto_first_child(&cur)) continue;
    bool done = false;
    while (!ts_tree_cursor_goto_next_sibling(&cur))
      if (!ts_tree_cursor_goto_parent(&cur)) {
        done = true;
        break;
      }
    if (done) break;
  }
  ts_tree_cursor_delete(&cur);
  return out;
}

std::vector<std::size_t> Crate::unresolved_imports() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < uses_.size(); ++i) {
    const UseBinding& u = uses_[i];
    if (u.path.empty() || unit_of_module(u.module) != 0) continue;
    const std::string& s0 = u.path[0];
    if (s0 != "crate" && s0 != "self" && s0 != "super") continue;
    if (resolve_segments(u.module, u.path, 0).empty()) out.push_back(i);
  }
  return out;
}

LoadedCrate load_crate(const fs::path& path, const cargo::Selection& selection) {
  LoadedCrate out;
  std::error_code ec;
  fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
  if (fs::is_regular_file(dir / "Cargo.toml", ec)) {
    out.cargo = std::make_unique<cargo::CargoContext>(cargo::load_cargo_context(dir, selection));
    CfgSet cfg(out.cargo->cfgs);
    out.crate = Crate::load(out.cargo->package_dir, out.cargo->root_file, out.cargo.get(), cfg);
    out.analysis_id = out.cargo->analysis_id;
    return out;
  }
  // No Cargo.toml (spec fallback): the crate is `src/`, rooted at lib.rs or main.rs, host cfg.
  fs::path root;
  for (const char* r : {"src/lib.rs", "src/main.rs", "lib.rs", "main.rs"})
    if (fs::is_regular_file(dir / r, ec)) {
      root = dir / r;
      break;
    }
  if (root.empty())
    throw InputError(dir.string(), "no Cargo.toml and no src/lib.rs or src/main.rs to start from");
  CfgSet cfg(cargo::host_default_cfgs());
  out.crate = Crate::load(dir, root, nullptr, cfg);
  out.analysis_id = "analysis:" + fs::weakly_canonical(dir, ec).string();
  return out;
}

}  // namespace cg::rust
