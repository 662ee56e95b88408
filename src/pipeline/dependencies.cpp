#include "pipeline/dependencies.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "analysis/layer_source.hpp"
#include "rust/crate.hpp"

namespace cg::pipeline {

namespace fs = std::filesystem;

bool is_catalogued_package(std::string_view package) {
  static const std::set<std::string_view> kCandle = {
      "candle-core",       "candle-nn",       "candle-transformers",
      "candle-flash-attn", "candle-kernels",  "candle-metal-kernels",
      "candle-onnx",       "candle-datasets", "candle-examples",
      "candle-ug",         "candle-pyo3"};
  return kCandle.count(package) > 0;
}

namespace {

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `text` with comments and string/char literals blanked (same length, newlines kept), so a
// crate named only in a comment or a string is not loaded.
std::string code_only(const std::string& text) {
  std::string out = text;
  const std::size_t n = text.size();
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  std::size_t i = 0;
  while (i < n) {
    char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      std::size_t e = text.find('\n', i);
      e = e == std::string::npos ? n : e;
      blank(i, e);
      i = e;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      std::size_t j = i + 2;
      int depth = 1;
      while (j < n && depth > 0) {
        if (text.compare(j, 2, "/*") == 0) {
          ++depth;
          j += 2;
        } else if (text.compare(j, 2, "*/") == 0) {
          --depth;
          j += 2;
        } else {
          ++j;
        }
      }
      blank(i, j);
      i = j;
    } else if (c == 'r' && i + 1 < n && (text[i + 1] == '"' || text[i + 1] == '#') &&
               (i == 0 || !ident_char(text[i - 1]))) {
      std::size_t j = i + 1, hashes = 0;
      while (j < n && text[j] == '#') {
        ++hashes;
        ++j;
      }
      if (j >= n || text[j] != '"') {
        ++i;
        continue;
      }
      std::string close = "\"" + std::string(hashes, '#');
      std::size_t e = text.find(close, j + 1);
      e = e == std::string::npos ? n : e + close.size();
      blank(i, e);
      i = e;
    } else if (c == '"') {
      std::size_t j = i + 1;
      while (j < n && text[j] != '"')
        j += text[j] == '\\' ? std::size_t{2} : std::size_t{1};
      blank(i, j + 1);
      i = j + 1;
    } else if (c == '\'' && i + 2 < n && (text[i + 1] == '\\' || text[i + 2] == '\'')) {
      std::size_t e = text.find('\'', i + 2);
      e = e == std::string::npos ? n : e + 1;
      blank(i, e);
      i = e;
    } else {
      ++i;
    }
  }
  return out;
}

// Whether `text` (code only: see code_only) names crate `name` as a path's first segment
// (`name::`), in `use name` or in `extern crate name`.
bool names_crate(const std::string& text, const std::string& name) {
  for (std::size_t pos = text.find(name); pos != std::string::npos;
       pos = text.find(name, pos + 1)) {
    if (pos > 0 && (ident_char(text[pos - 1]) || text[pos - 1] == ':')) continue;
    std::size_t end = pos + name.size();
    if (end < text.size() && ident_char(text[end])) continue;
    std::size_t k = end;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\n' || text[k] == '\t'))
      ++k;
    if (text.compare(k, 2, "::") == 0) return true;
    std::size_t b = pos;
    while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t'))
      --b;
    for (std::string_view kw : {std::string_view("use"), std::string_view("crate")})
      if (b >= kw.size() && text.compare(b - kw.size(), kw.size(), kw) == 0 &&
          (b == kw.size() || !ident_char(text[b - kw.size() - 1])) && b != pos)
        return true;
  }
  return false;
}

struct Request {
  std::vector<std::string> features;
  bool default_features = false;
};

}  // namespace

std::vector<std::string> load_dependencies(rust::Crate& crate, cargo::CargoContext& ctx,
                                           std::vector<cargo::DependencySource>& sources,
                                           const DependencyBudget& budget) {
  std::vector<std::string> notes;
  // One source per package: the first usable one (sources are sorted by package and version).
  std::map<std::string, std::size_t> by_package;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto& s = sources[i];
    if (s.origin == cargo::SourceOrigin::missing) continue;
    auto it = by_package.find(s.package);
    if (it == by_package.end() || (!sources[it->second].problem.empty() && s.problem.empty()))
      by_package[s.package] = i;
  }
  // The name a package's code is imported by when not renamed: its `[lib] name`.
  std::map<std::string, std::string> lib_names;
  auto lib_name_of = [&](const std::string& pkg) {
    auto it = lib_names.find(pkg);
    if (it != lib_names.end()) return it->second;
    std::string name = cargo::CargoContext::crate_name(pkg);
    if (auto s = by_package.find(pkg); s != by_package.end()) {
      cargo::PackageManifest m = cargo::read_package_manifest(sources[s->second].dir);
      if (m.error.empty() && !m.lib_name.empty()) name = m.lib_name;
    }
    return lib_names[pkg] = name;
  };
  auto own_name = [&](const std::string& alias, const std::string& pkg) {
    return alias == cargo::CargoContext::crate_name(pkg) ? lib_name_of(pkg) : alias;
  };
  for (auto& d : ctx.dependencies)
    d.alias = own_name(d.alias, d.package);
  // The target's cfg without the analysed crate's features; each dependency adds its own.
  std::vector<std::string> target_cfg;
  for (const auto& line : ctx.cfgs)
    if (line.rfind("feature", 0) != 0) target_cfg.push_back(line);

  std::map<std::string, Request> requests;  // by package: features its dependents ask for
  auto add_requests = [&](const cargo::PackageManifest& m) {
    for (const auto& d : m.dependencies) {
      Request& r = requests[d.package];
      r.features.insert(r.features.end(), d.features.begin(), d.features.end());
      r.default_features = r.default_features || d.default_features;
    }
  };
  add_requests(cargo::read_package_manifest(ctx.package_dir));

  std::size_t files_left = budget.max_files, bytes_left = budget.max_bytes;
  std::set<std::string> decided;  // packages already loaded or refused
  std::deque<std::size_t> units{0};
  while (!units.empty()) {
    std::size_t unit = units.front();
    units.pop_front();
    // The crates this unit's code may name: alias → package.
    std::vector<std::pair<std::string, std::string>> names;
    if (unit == 0) {
      for (const auto& d : ctx.dependencies)
        if (d.active) names.emplace_back(d.alias, d.package);
    } else {
      for (const auto& [alias, pkg] : crate.units()[unit].externs)
        names.emplace_back(alias, pkg);
    }
    for (const auto& [alias, pkg] : names) {
      auto it = by_package.find(pkg);
      if (it == by_package.end() || decided.count(pkg) > 0) continue;
      cargo::DependencySource& src = sources[it->second];
      std::string label = src.package + (src.version.empty() ? "" : " " + src.version);
      if (is_catalogued_package(pkg)) {
        src.analysis =
            "not loaded: Candle's own crate (its constructors and operations are read "
            "from the catalogues)";
        decided.insert(pkg);
        continue;
      }
      if (!src.reaches_candle) {
        src.analysis = "not loaded: it does not reach candle-core or candle-nn";
        decided.insert(pkg);
        continue;
      }
      if (!src.problem.empty()) {
        src.analysis = "not loaded: " + src.problem;
        decided.insert(pkg);
        continue;  // its note (a broken manifest) is already among the dependency notes
      }
      bool named = false;
      const auto& files = crate.files();
      for (std::size_t f = 0; f < files.size() && !named; ++f)
        named = crate.unit_of_file(f) == unit &&
                files[f]->text().find(alias) != std::string::npos &&
                names_crate(code_only(files[f]->text()), alias);
      if (!named) continue;  // another unit may name it later
      decided.insert(pkg);
      cargo::PackageManifest m = cargo::read_package_manifest(src.dir);
      if (!m.error.empty()) {
        src.analysis = "not loaded: " + m.error;
        notes.push_back(label + " at " + src.shown_dir +
                        " is not loaded into the analysis: " + m.error);
        continue;
      }
      if (src.version.empty() && !m.version.empty()) label += " " + m.version;
      fs::path root = src.dir / m.lib_path;
      std::error_code ec;
      if (!fs::is_regular_file(root, ec)) {
        src.analysis = "not loaded: no library root " + m.lib_path;
        notes.push_back(label + " at " + src.shown_dir +
                        " is not loaded into the analysis: it has no library root (" + m.lib_path +
                        ")");
        continue;
      }
      if (files_left == 0 || bytes_left == 0) {
        src.analysis = "not loaded: the dependency budget is spent";
        notes.push_back(label + " at " + src.shown_dir +
                        " is not loaded into the analysis: the budget for dependencies (" +
                        std::to_string(budget.max_files) + " files, " +
                        std::to_string(budget.max_bytes >> 20) + " MiB) is spent");
        continue;
      }
      rust::CrateUnit u;
      u.name = m.lib_name.empty() ? cargo::CargoContext::crate_name(pkg) : m.lib_name;
      u.package = pkg;
      u.version = src.version.empty() ? m.version : src.version;
      u.root_module = "::" + u.name;
      u.file_prefix = pkg + "/";
      for (const auto& d : m.dependencies)
        u.externs.emplace(own_name(d.alias, d.package), d.package);
      const Request& r = requests[pkg];
      std::vector<std::string> cfg = target_cfg;
      for (const auto& f : cargo::expand_features(m, r.features, r.default_features))
        cfg.push_back("feature=\"" + f + "\"");
      u.cfg = rust::CfgSet(cfg);
      std::size_t index =
          crate.load_dependency(std::move(u), src.dir, root, {files_left, bytes_left});
      const rust::CrateUnit& loaded = crate.units()[index];
      files_left -= std::min(files_left, loaded.files);
      bytes_left -= std::min(bytes_left, loaded.bytes);
      src.analysis = "loaded: " + std::to_string(loaded.files) + " files, " +
                     std::to_string(loaded.items) + " items";
      if (!loaded.diagnostics.empty()) {
        std::map<std::string, std::size_t> by_rule;
        for (const auto& d : loaded.diagnostics)
          ++by_rule[d.rule];
        std::string counts;
        for (const auto& [rule, n] : by_rule)
          counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + rule;
        const auto& first = loaded.diagnostics.front();
        std::string where = first.file + (first.line ? ":" + std::to_string(first.line) : "");
        src.analysis += " (incomplete: " + counts + ")";
        notes.push_back(label + " at " + src.shown_dir + " is loaded into the analysis " +
                        (loaded.files == 0 ? "without any file" : "incompletely") + " (" + counts +
                        "; first: " + where + ": " + first.message + ")");
      }
      add_requests(m);
      if (loaded.files > 0) units.push_back(index);
    }
  }
  for (auto& s : sources) {
    if (!s.analysis.empty() || s.origin == cargo::SourceOrigin::missing) continue;
    if (is_catalogued_package(s.package))
      s.analysis =
          "not loaded: Candle's own crate (its constructors and operations are read "
          "from the catalogues)";
    else if (!s.reaches_candle)
      s.analysis = "not loaded: it does not reach candle-core or candle-nn";
    else if (by_package[s.package] != static_cast<std::size_t>(&s - sources.data()))
      s.analysis = "not loaded: another version of the package was chosen";
    else
      s.analysis = "not loaded: no loaded crate's code names it";
  }
  return notes;
}

CandleNnSource use_candle_nn_source(const cargo::CargoContext& ctx,
                                    std::vector<cargo::DependencySource>& sources) {
  CandleNnSource out;
  for (const auto& v : ctx.candle_versions)
    if (v.package == "candle-nn" && v.exact) out.version = v.version;
  const std::string fallback =
      "constructors from the hand-written catalogue (" +
      std::string(out.version.empty() ? "no exact candle-nn version: leaves unknown"
                  : analysis::LayerCatalog::hand_written(out.version).audited()
                      ? "audited for this release"
                      : "not audited for this release: leaves unknown") +
      ")";
  // The lock's version carries `+git` for a git source; the source's own version does not.
  std::string base = out.version.substr(0, out.version.find('+'));
  cargo::DependencySource* chosen = nullptr;
  for (auto& s : sources) {
    if (s.package != "candle-nn") continue;
    if (s.origin == cargo::SourceOrigin::missing) {
      s.analysis = fallback + ": its source is not on disk";
      continue;
    }
    if (chosen == nullptr || (s.version == base && chosen->version != base)) chosen = &s;
  }
  if (chosen == nullptr) return out;
  cargo::DependencySource& src = *chosen;
  for (auto& s : sources)
    if (s.package == "candle-nn" && &s != chosen && s.origin != cargo::SourceOrigin::missing)
      s.analysis = fallback + "; another candle-nn source was chosen";
  std::string label = "candle-nn" + (src.version.empty() ? "" : " " + src.version);
  auto not_used = [&](const std::string& why) {
    src.analysis = fallback + "; its source is not used: " + why;
    out.notes.push_back(label + " at " + src.shown_dir +
                        ": its constructors are not read from source (" + why +
                        "); the hand-written catalogue is used");
    return std::move(out);
  };
  if (!src.problem.empty()) return not_used(src.problem);
  cargo::PackageManifest m = cargo::read_package_manifest(src.dir);
  if (!m.error.empty()) return not_used(m.error);
  // A workspace member inherits its version (`version.workspace = true`): the lock's, then.
  if (src.version.empty() && !(m.version.empty() && out.version.empty()))
    label += " " + (m.version.empty() ? out.version : m.version);
  std::vector<std::string> cfg;
  for (const auto& line : ctx.cfgs)
    if (line.rfind("feature", 0) != 0) cfg.push_back(line);
  for (const auto& f : cargo::expand_features(m, {}, true))
    cfg.push_back("feature=\"" + f + "\"");
  auto derived = analysis::read_layer_source(src.dir, src.dir / m.lib_path, cfg);
  if (!derived->error.empty()) return not_used(derived->error);

  std::vector<analysis::ConstructorSpec> specs = derived->constructors;
  const analysis::LayerCatalog& hand = analysis::LayerCatalog::hand_written(out.version);
  std::vector<std::string> from_hand;
  for (const auto& skipped : derived->skipped) {
    std::string name = skipped.substr(0, skipped.find(' '));
    if (const analysis::ConstructorSpec* h = hand.audited() ? hand.find(name) : nullptr) {
      specs.push_back(*h);
      from_hand.push_back(name);
    }
  }
  // A constructor an unreadable file hides is not among the skipped: every catalogued one not
  // derived keeps its entry.
  if (!derived->problems.empty() && hand.audited())
    for (const auto& h : hand.constructors())
      if (std::none_of(specs.begin(), specs.end(),
                       [&](const analysis::ConstructorSpec& c) { return c.name == h.name; })) {
        specs.push_back(h);
        from_hand.push_back(h.name);
      }
  src.analysis = "constructors read from " + label +
                 "'s source: " + std::to_string(derived->constructors.size()) + " from " +
                 std::to_string(derived->files) + " files";
  if (!from_hand.empty())
    src.analysis += ", " + std::to_string(from_hand.size()) + " from the hand-written catalogue";
  if (!derived->problems.empty()) {
    std::string list;
    for (const auto& s : derived->problems)
      list += (list.empty() ? "" : "; ") + s;
    out.notes.push_back(label + " at " + src.shown_dir + " is not fully readable (" + list +
                        "): the constructors there are not read from source");
  }
  if (!derived->skipped.empty()) {
    std::string list;
    for (const auto& s : derived->skipped)
      list += (list.empty() ? "" : "; ") + s;
    out.notes.push_back(
        label + " at " + src.shown_dir + ": " + std::to_string(derived->skipped.size()) +
        " public functions taking a VarBuilder are not read from source (" + list + ")" +
        (from_hand.empty() ? std::string("; calls to them are unresolved")
                           : "; the hand-written entries are used where the "
                             "release is audited"));
  }
  out.catalog = analysis::LayerCatalog::from_source(
      std::move(specs), label + " at " + src.shown_dir, derived->config_defaults);
  return out;
}

}  // namespace cg::pipeline
