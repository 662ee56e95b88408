#include "instrument/instrument.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "analysis/inventory.hpp"
#include "instrument/manifest.hpp"
#include "instrument/unified_diff.hpp"
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

// "src/a.rs:12" -> ("src/a.rs", 12), for ordering messages by file and line.
std::pair<std::string, unsigned long> location_key(const std::string& where) {
  std::size_t k = where.rfind(':');
  if (k == std::string::npos) return {where, 0};
  return {where.substr(0, k), std::strtoul(where.c_str() + k + 1, nullptr, 10)};
}

}  // namespace

Report instrument_crate(const pipeline::Options& opts) {
  cargo::Selection sel;
  sel.features = opts.features;
  sel.all_features = opts.all_features;
  sel.no_default_features = opts.no_default_features;
  sel.target_triple = opts.target;
  sel.cargo_target = opts.cargo_target;
  std::error_code ec;
  if (!fs::exists(opts.path, ec))
    throw InputError(opts.path,
                     "no such file or directory; expected a crate directory or its Cargo.toml");
  rust::LoadedCrate loaded = rust::load_crate(opts.path, sel);
  if (!loaded.cargo)
    throw InputError(opts.path,
                     "no Cargo.toml: the instrumentation sits behind the Cargo feature "
                     "`candle-graph-profile`, so instrument needs a Cargo package");
  const rust::Crate& crate = loaded.crate;
  for (const auto& f : crate.files())
    if (!f->ok()) {
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

  // The modules the inventory finds are the ones to instrument.
  ir::ModelIr ir;
  ir.functions = pipeline::functions_of(crate);
  analysis::InventoryOptions inv;
  inv.root = opts.root;
  for (const auto& v : loaded.cargo->candle_versions)
    if (v.package == "candle-nn" && v.exact) inv.candle_nn_version = v.version;
  // The same constructors the analysis walks with: candle-nn's own source when it is on disk
  // (any release or fork), else the hand-written catalogue.
  auto sources = cargo::locate_dependency_sources(*loaded.cargo);
  inv.layer_catalog = pipeline::use_candle_nn_source(*loaded.cargo, sources).catalog;
  analysis::build_inventory(crate, inv, ir);
  if (ir.modules.empty())
    throw InputError(opts.path,
                     "no module to instrument: no component (a public struct with a "
                     "constructor taking a VarBuilder) was found" +
                         (opts.root.empty() ? std::string() : " for --root " + opts.root));

  std::vector<std::size_t> types;
  std::set<std::size_t> seen;
  for (const auto& m : ir.modules) {
    if (!m.qualified_type) continue;
    for (std::size_t i : crate.find(*m.qualified_type))
      if (crate.items()[i].kind == rust::ItemKind::Struct && seen.insert(i).second)
        types.push_back(i);
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
  for (std::size_t m = 0; m < crate.items().size(); ++m) {
    const rust::Item& f = crate.items()[m];
    if (f.kind != rust::ItemKind::Method || f.impl < 0) continue;
    const rust::Impl& im = crate.impls()[static_cast<std::size_t>(f.impl)];
    for (const auto& c : crate.resolve(im.module, im.self_base))
      if (c.kind == rust::Candidate::Kind::Item && seen.count(c.item) > 0)
        methods_of[c.item].push_back(m);
  }

  const std::vector<rust::TypeSites> sites = rust::find_type_sites(crate, types);
  Report report;
  std::map<std::size_t, std::vector<Insertion>> edits;  // by file index
  std::size_t already = 0;

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
      if (entrypoints.count(ir::function_id(f.qualified, f.cfg.predicates)) == 0) continue;
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
      skip("no constructor taking a VarBuilder: nothing can give it its module path");
      continue;
    }
    if (forwards.empty()) {
      report.skipped.insert(report.skipped.end(), forward_skips.begin(), forward_skips.end());
      skip(forward_skips.empty()
               ? "no forward: none of its methods is an entrypoint (`Module::forward`, "
                 "`ModuleT::forward_t`, or a public method with a tensor in its signature)"
               : "its only forwards are generic");
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
      skip(blocker);
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
      edits[f.file].push_back(statement_insertion(
          crate.files()[f.file]->text(), *rust::body_site(crate, m),
          std::string("let ") + kScopeName + " = candle_graph_profile::module_scope(&self." +
              kFieldName + ");"));
      ++report.scopes;
    }
    report.skipped.insert(report.skipped.end(), forward_skips.begin(), forward_skips.end());
    report.instrumented.push_back(t.qualified);
  }

  std::stable_sort(report.skipped.begin(), report.skipped.end(), [](const Skip& a, const Skip& b) {
    return location_key(a.where) < location_key(b.where);
  });
  if (report.instrumented.empty()) {
    report.already_instrumented = already > 0;
    return report;
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
  const std::string manifest_rel = fs::relative(c.manifest_path, c.package_dir).generic_string();
  const std::string manifest_text = read_text(c.manifest_path);
  ManifestEdit me = manifest_insertions(manifest_text, manifest_rel);
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

}  // namespace cg::instrument
