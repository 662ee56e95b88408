#include "analysis/layer_source.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "analysis/layer_source_eval.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

namespace fs = std::filesystem;

namespace {

using layer_source_detail::Deriver;
using layer_source_detail::is_ident;
using layer_source_detail::mentions_var_builder;
using rust::kNone;

struct Stamp {
  fs::path path;
  std::uintmax_t size = 0;
  fs::file_time_type mtime{};
  bool operator==(const Stamp&) const = default;
};

Stamp stamp_of(const fs::path& p) {
  std::error_code ec;
  Stamp s{p, fs::file_size(p, ec), {}};
  if (ec) s.size = static_cast<std::uintmax_t>(-1);
  s.mtime = fs::last_write_time(p, ec);
  return s;
}

struct CacheEntry {
  std::vector<Stamp> stamps;
  std::shared_ptr<const LayerSource> source;
};

}  // namespace

LayerSource derive_layer_constructors(const rust::Crate& crate) {
  LayerSource out;
  out.files = crate.units().empty() ? 0 : crate.units()[0].files;
  // A syntax error inside a constructor, or one that hides a `pub fn … VarBuilder …` from the
  // item list, keeps that constructor from being read. Errors elsewhere cannot change one (real
  // candle-nn 0.11.0's var_builder.rs and func.rs hold syntax tree-sitter-rust 0.23 rejects).
  std::map<std::size_t, std::vector<std::uint32_t>> error_lines;  // file → problem lines
  for (std::size_t f = 0; f < crate.files().size(); ++f)
    for (const auto& p : crate.files()[f]->problems())
      error_lines[f].push_back(p.line);
  auto error_inside = [&](std::size_t item) -> std::string {
    const rust::Item& it = crate.items()[item];
    auto e = error_lines.find(it.file);
    if (e == error_lines.end()) return "";
    const rust::Body& b = crate.lowered(item);
    std::uint32_t last = it.line;
    if (b.root != kNone) {
      const std::string& text = crate.files()[it.file]->text();
      const rust::Node& r = b[b.root];
      if (r.end <= text.size())
        last = r.line + static_cast<std::uint32_t>(
                            std::count(text.begin() + r.start, text.begin() + r.end, '\n'));
    }
    for (std::uint32_t l : e->second)
      if (l >= it.line && l <= last)
        return crate.files()[it.file]->path() + ":" + std::to_string(l) + ": syntax error in it";
    return "";
  };
  for (const auto& d : crate.diagnostics())
    if (d.rule == "source-load")
      out.problems.push_back((d.file.empty() ? "" : d.file + ": ") + d.message);
  // Public free functions taking a VarBuilder, by name; a name two of them share is the one the
  // crate root exports.
  std::map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& it = crate.items()[i];
    if (it.kind != rust::ItemKind::Function || it.unit != 0 ||
        it.visibility != rust::Visibility::Public || it.cfg.state == rust::Tri::False)
      continue;
    if (std::any_of(it.params.begin(), it.params.end(),
                    [](const rust::Param& p) { return mentions_var_builder(p.type_text); }))
      by_name[it.name].push_back(i);
  }
  for (const auto& entry : error_lines) {
    // Named, not a structured binding: a lambda below captures the file index.
    const std::size_t f = entry.first;
    const auto& lines = entry.second;
    const std::string& text = crate.files()[f]->text();
    for (auto pos = text.find("pub fn "); pos != std::string::npos;
         pos = text.find("pub fn ", pos + 1)) {
      std::size_t n0 = pos + 7, n1 = n0;
      while (n1 < text.size() && is_ident(text.substr(n1, 1)))
        ++n1;
      std::size_t sig_end = text.find_first_of("{;", n1);
      std::string sig =
          text.substr(n1, sig_end == std::string::npos ? std::string::npos : sig_end - n1);
      std::string name = text.substr(n0, n1 - n0);
      if (name.empty() || by_name.count(name) > 0 || !mentions_var_builder(sig)) continue;
      auto line = static_cast<std::uint32_t>(
          1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
      // Parsed after all (a method, or a function the error did not reach): not hidden.
      if (std::any_of(crate.items().begin(), crate.items().end(), [&](const rust::Item& it) {
            return it.file == f && it.line == line && it.name == name;
          }))
        continue;
      out.problems.push_back(crate.files()[f]->path() + ":" + std::to_string(line) + ": `" + name +
                             "` is not parsed (syntax error at line " +
                             std::to_string(lines.front()) + ")");
    }
  }
  for (auto& [name, items] : by_name) {
    if (items.size() > 1) {
      std::vector<std::size_t> exported;
      for (const auto& c : crate.resolve("", name))
        if (c.kind == rust::Candidate::Kind::Item &&
            std::find(items.begin(), items.end(), c.item) != items.end())
          exported.push_back(c.item);
      if (exported.size() != 1) {
        out.skipped.push_back(name + " (" + crate.source(items[0]) +
                              "): " + std::to_string(items.size()) +
                              " public functions share the name and the crate root exports " +
                              (exported.empty() ? "none" : "several"));
        continue;
      }
      items = exported;
    }
    if (std::string e = error_inside(items[0]); !e.empty()) {
      out.skipped.push_back(name + " (" + crate.source(items[0]) + "): " + e);
      continue;
    }
    std::string why;
    Deriver d(crate);
    if (auto spec = d.derive(items[0], why))
      out.constructors.push_back(std::move(*spec));
    else
      out.skipped.push_back(name + " (" + crate.source(items[0]) + "): " + why);
  }
  // Config defaults: `impl Default for XConfig { fn default() -> Self { Self { f: 1, .. } } }`.
  // Literal fields only (an expression or a path such as `Direction::Forward` is left to the
  // hand-written defaults); a field two configs default differently is ambiguous by name alone.
  std::map<std::string, std::optional<ConfigDefault>> defaults;
  for (const auto& im : crate.impls()) {
    if (im.trait != "Default" && !im.trait.ends_with("::Default")) continue;
    if (im.cfg.state == rust::Tri::False) continue;
    for (std::size_t m : im.methods) {
      const rust::Item& it = crate.items()[m];
      if (it.name != "default" || it.unit != 0) continue;
      const rust::Body& b = crate.lowered(m);
      if (b.root == rust::kNone || b[b.root].kind != rust::Kind::Block) continue;
      rust::NodeId lit = b.value_tail(b.root);
      if (lit == rust::kNone || b[lit].kind != rust::Kind::Struct) continue;
      for (rust::NodeId fi : b.kids(lit)) {
        const rust::Node& f = b[fi];
        if (f.cfg == rust::Tri::False || f.a == rust::kNone) continue;
        const rust::Node& v = b[f.a];
        std::optional<ConfigDefault> d;
        if (v.kind == rust::Kind::Lit) {
          const char* kind = v.lit == rust::LitKind::Int     ? "integer_literal"
                             : v.lit == rust::LitKind::Float ? "float_literal"
                             : v.lit == rust::LitKind::Bool  ? "boolean_literal"
                                                             : nullptr;
          if (kind != nullptr) d = ConfigDefault{kind, std::string(v.str)};
        }
        std::string field(f.str);
        auto [pos, fresh] = defaults.try_emplace(field, d);
        if (!fresh && (!pos->second || !d || pos->second->text != d->text)) pos->second.reset();
      }
    }
  }
  for (auto& [field, d] : defaults)
    if (d) out.config_defaults.emplace(field, *d);
  if (out.constructors.empty())
    out.error = out.problems.empty() ? "no public function taking a VarBuilder was understood"
                                     : out.problems.front();
  return out;
}

std::shared_ptr<const LayerSource> read_layer_source(const fs::path& package_dir,
                                                     const fs::path& root_file,
                                                     std::vector<std::string> cfg_lines) {
  static std::mutex mu;
  static std::map<std::string, CacheEntry> cache;
  std::error_code ec;
  // The cfg set is part of the key: a constructor behind `#[cfg(feature = "x")]` exists for one
  // feature set only.
  std::sort(cfg_lines.begin(), cfg_lines.end());
  cfg_lines.erase(std::unique(cfg_lines.begin(), cfg_lines.end()), cfg_lines.end());
  std::string key = fs::weakly_canonical(package_dir, ec).string() + "\n" + root_file.string();
  for (const auto& line : cfg_lines)
    key += "\n" + line;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end() && std::all_of(it->second.stamps.begin(), it->second.stamps.end(),
                                         [](const Stamp& s) { return stamp_of(s.path) == s; }))
      return it->second.source;
  }
  CacheEntry e;
  auto src = std::make_shared<LayerSource>();
  if (!fs::is_regular_file(root_file, ec)) {
    // Relative to the package: notes become IR findings, the same on every machine.
    src->error =
        "it has no library root (" + root_file.lexically_relative(package_dir).string() + ")";
  } else {
    rust::Crate crate =
        rust::Crate::load(package_dir, root_file, nullptr, rust::CfgSet(cfg_lines), 2);
    *src = derive_layer_constructors(crate);
    fs::path dir = fs::weakly_canonical(package_dir, ec);
    for (const auto& f : crate.files())
      e.stamps.push_back(stamp_of(dir / f->path()));
  }
  e.stamps.push_back(stamp_of(root_file));
  e.source = src;
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = e;
  return src;
}

}  // namespace cg::analysis
