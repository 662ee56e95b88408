// Dependency crates loaded into the analysis (issue #17): a workspace layer crate, a vendored
// fork and registry crates (one renamed, one reached through another) resolve to their items, and
// the model's parameters built through their constructors appear; what cannot be loaded is a note
// naming the dependency and its path, and the rest of the analysis goes on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "analysis/builder_types.hpp"
#include "cargo/temp_tree.hpp"
#include "pipeline/dependencies.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/crate.hpp"

namespace {

namespace fs = std::filesystem;
using cg::rust::Candidate;
using ::testing::HasSubstr;

const fs::path kFixtures = fs::path(CG_SOURCE_DIR) / "tests/fixtures/crates";

fs::path empty_home() {
  fs::path p = fs::temp_directory_path() / ("cg-deps-empty-home-" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

struct Loaded {
  cg::rust::LoadedCrate crate;
  std::vector<cg::cargo::DependencySource> sources;
  std::vector<std::string> notes;
};

Loaded load(const fs::path& dir, const fs::path& home,
            const cg::pipeline::DependencyBudget& budget = {}) {
  Loaded l;
  l.crate = cg::rust::load_crate(dir, {});
  cg::cargo::SourceOptions so;
  so.cargo_home = home;
  l.sources = cg::cargo::locate_dependency_sources(*l.crate.cargo, so);
  l.notes = cg::pipeline::load_dependencies(l.crate.crate, *l.crate.cargo, l.sources, budget);
  return l;
}

const cg::cargo::DependencySource& source(const Loaded& l, const std::string& pkg) {
  for (const auto& s : l.sources)
    if (s.package == pkg) return s;
  throw std::runtime_error("no source for " + pkg);
}

// The single item a path resolves to from `module`, as "qualified @ file:line".
std::string resolved(const cg::rust::Crate& c, const std::string& module, const std::string& path) {
  auto cands = c.resolve(module, path);
  std::string out;
  for (const auto& k : cands) {
    if (!out.empty()) out += " | ";
    if (k.kind == Candidate::Kind::Item)
      out += c.items()[k.item].qualified + " @ " + c.source(k.item);
    else
      out += (k.kind == Candidate::Kind::Module ? "module " : "external ") + k.path;
  }
  return out;
}

std::set<std::string> parameter_keys(const cg::pipeline::Analysis& a) {
  std::set<std::string> keys;
  for (const auto& p : a.ir.parameters)
    keys.insert(p.key);
  return keys;
}

TEST(DependencyLoad, WorkspaceLayerCrateResolvesToItsItems) {
  Loaded l = load(kFixtures / "deps_workspace/model", empty_home());
  const cg::rust::Crate& c = l.crate.crate;
  EXPECT_EQ(source(l, "their-layers").analysis, "loaded: 2 files, 10 items");
  ASSERT_EQ(c.units().size(), 2u);
  EXPECT_EQ(c.units()[1].root_module, "::their_layers");
  // `their_layers::linear(…)` is the dependency's function (its default feature `bias` chose
  // the variant), not an External path.
  EXPECT_EQ(resolved(c, "", "their_layers::linear"),
            "::their_layers::linear @ their-layers/src/lib.rs:10");
  EXPECT_EQ(resolved(c, "", "their_layers::blocks::Block::new"),
            "::their_layers::blocks::Block::new @ their-layers/src/blocks/mod.rs:11");
  // Inside the dependency, `crate::` is the dependency's root and its own dependencies stay
  // External (candle-nn is catalogued): `candle` is its rename of candle-core.
  EXPECT_EQ(resolved(c, "::their_layers", "crate::Mlp::new"),
            "::their_layers::Mlp::new @ their-layers/src/lib.rs:25");
  EXPECT_EQ(resolved(c, "::their_layers", "candle::Tensor"), "external candle_core::Tensor");
  EXPECT_EQ(resolved(c, "::their_layers::blocks", "rms_norm"), "external candle_nn::rms_norm");
  // Qualified names resolve from anywhere, and every dependency item says which crate it is from.
  for (std::size_t i : c.find("::their_layers::Mlp")) {
    EXPECT_FALSE(c.is_local(i));
    EXPECT_EQ(c.units()[c.items()[i].unit].package, "their-layers");
  }
  auto model_new = c.find("Model::new");
  ASSERT_EQ(model_new.size(), 1u);
  EXPECT_TRUE(c.is_local(model_new[0]));
  auto in_fn = c.resolve_in(model_new[0], "Block::new");
  ASSERT_EQ(in_fn.size(), 1u);
  EXPECT_EQ(c.items()[in_fn[0].item].qualified, "::their_layers::blocks::Block::new");
}

TEST(DependencyLoad, ParametersBuiltThroughTheLayerCrateAppear) {
  cg::test::CargoHome home(empty_home());
  cg::pipeline::Options o;
  o.path = (kFixtures / "deps_workspace/model").string();
  auto a = cg::pipeline::analyze(o);
  auto keys = parameter_keys(a);
  for (const char* k :
       {"blocks.0.norm.weight", "blocks.1.mlp.up_proj.weight", "blocks.1.mlp.up_proj.bias",
        "blocks.0.mlp.down_proj.bias", "head.weight", "head.bias"})
    EXPECT_EQ(keys.count(k), 1u) << k;
  EXPECT_EQ(keys.size(), 12u);
  // The layer crate's unused public layer (`Gate`, with a VarBuilder constructor) is not one of
  // the model crate's components.
  ASSERT_EQ(a.ir.components.size(), 1u);
  EXPECT_EQ(a.ir.components[0].qualified_name, "Model");
  for (const auto& m : a.ir.modules)
    EXPECT_EQ(m.component, a.ir.components[0].id);
  for (const auto& p : a.ir.parameters) {
    if (p.key == "head.weight") {
      EXPECT_EQ(p.source, "src/lib.rs:17");
    }
    if (p.key == "blocks.0.norm.weight") {
      EXPECT_EQ(p.source, "their-layers/src/blocks/mod.rs:12");
    }
  }
  // The crate's functions and counts are its own; the dependency's are walked, not listed.
  for (const auto& f : a.ir.functions)
    EXPECT_EQ(f.qualified_name.rfind("::", 0), std::string::npos) << f.qualified_name;
  EXPECT_EQ(a.files, 1u);
  EXPECT_EQ(a.dependency_files, 2u);
}

TEST(DependencyLoad, RenamedRegistryCrateAndTheCrateItReaches) {
  fs::path home = kFixtures / "deps_registry/cargo_home";
  Loaded l = load(kFixtures / "deps_registry/app", home);
  const cg::rust::Crate& c = l.crate.crate;
  EXPECT_EQ(source(l, "quant-layers").analysis, "loaded: 2 files, 3 items");
  // Named only by quant-layers' code, under its rename `qk`.
  EXPECT_EQ(source(l, "quant-kernels").analysis, "loaded: 1 files, 2 items");
  EXPECT_EQ(source(l, "tokenizer-glue").analysis,
            "not loaded: it does not reach candle-core or candle-nn");
  EXPECT_EQ(resolved(c, "", "ql::QLinear::new"),
            "::quant_layers::linear::QLinear::new @ quant-layers/src/linear.rs:10");
  EXPECT_EQ(resolved(c, "::quant_layers::linear", "qk::packed_linear"),
            "::quant_kernels::packed_linear @ quant-kernels/src/lib.rs:3");
  EXPECT_EQ(resolved(c, "", "ql::VarBuilder"),
            "external candle_nn::var_builder::ShardedVarBuilder");
  EXPECT_TRUE(l.notes.empty()) << l.notes.front();

  cg::test::CargoHome env(home);
  cg::pipeline::Options o;
  o.path = (kFixtures / "deps_registry/app").string();
  auto keys = parameter_keys(cg::pipeline::analyze(o));
  EXPECT_EQ(keys, (std::set<std::string>{"k_proj.packed.weight", "q_proj.packed.weight"}));
}

TEST(DependencyLoad, VendoredForkIsLoadedWithItsVarBuilderWrapper) {
  Loaded l = load(kFixtures / "deps_vendor", empty_home());
  const cg::rust::Crate& c = l.crate.crate;
  EXPECT_EQ(source(l, "lora-layers").origin, cg::cargo::SourceOrigin::vendor);
  EXPECT_EQ(source(l, "lora-layers").analysis, "loaded: 1 files, 9 items");
  EXPECT_EQ(resolved(c, "", "lora_layers::lora_linear"),
            "::lora_layers::lora_linear @ lora-layers/src/lib.rs:46");
  auto bt = cg::analysis::find_builder_types(c);
  std::vector<std::string> names;
  for (std::size_t i : bt.items)
    names.push_back(c.items()[i].qualified);
  EXPECT_EQ(names, std::vector<std::string>{"::lora_layers::LoraVarBuilder"});
  EXPECT_TRUE(bt.names(c, "", "&LoraVarBuilder"));
}

// A temporary workspace: app → a layer crate per case, each reaching candle-nn.
struct Tree : cg::test::TempTree {
  explicit Tree(const std::string& name) : TempTree("cg-depload", name) {}
  void package(const std::string& name, const std::string& deps, const std::string& lib) const {
    write(name + "/Cargo.toml", "[package]\nname = \"" + name +
                                    "\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
                                    "[dependencies]\ncandle-nn = \"0.11.0\"\n" +
                                    deps);
    if (!lib.empty()) write(name + "/src/lib.rs", lib);
  }
};

TEST(DependencyLoad, WhatCannotBeLoadedIsANoteAndTheRestGoesOn) {
  Tree t("bad");
  t.write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"broken\", \"noroot\", \"big\"]\n");
  t.package("app",
            "broken = { path = \"../broken\" }\nnoroot = { path = \"../noroot\" }\n"
            "big = { path = \"../big\" }\n",
            "use candle_nn::VarBuilder;\npub struct M { l: candle_nn::Linear }\n"
            "impl M {\n  pub fn new(vb: VarBuilder) -> candle_core::Result<Self> {\n"
            "    let l = big::linear(vb.pp(\"big\"))?;\n    broken::f();\n    noroot::g();\n"
            "    let _ = candle_nn::linear(2, 2, vb.pp(\"own\"))?;\n    Ok(Self { l })\n  }\n}\n");
  t.package("broken", "", "mod bad;\npub fn f() {}\n");
  t.write("broken/src/bad.rs", "pub fn g( { let = ; }\n");
  t.package("noroot", "", "");
  std::string big_lib =
      "pub fn linear(vb: candle_nn::VarBuilder) -> candle_nn::Linear {\n"
      "  candle_nn::linear(2, 2, vb).unwrap()\n}\nmod m0;\nmod m1;\nmod m2;\n";
  t.package("big", "", big_lib);
  for (int i = 0; i < 3; ++i)
    t.write("big/src/m" + std::to_string(i) + ".rs", "pub fn f() {}\n");
  Loaded l = load(t.root / "app", empty_home());
  std::string all;
  for (const auto& n : l.notes)
    all += n + "\n";
  EXPECT_THAT(
      all, HasSubstr("broken 0.1.0 at broken is loaded into the analysis incompletely (2 "
                     "syntax-error; first: broken/src/bad.rs:1: the parser reports a missing `)`"));
  EXPECT_THAT(all, HasSubstr("noroot 0.1.0 at noroot is not loaded into the analysis: it has no "
                             "library root (src/lib.rs)"));
  // The broken dependency's problems are its notes, never the analysed crate's findings.
  EXPECT_TRUE(l.crate.crate.diagnostics().empty());
  EXPECT_EQ(resolved(l.crate.crate, "", "big::linear"), "::big::linear @ big/src/lib.rs:1");
  EXPECT_EQ(resolved(l.crate.crate, "", "broken::f"), "::broken::f @ broken/src/lib.rs:2");
  EXPECT_EQ(resolved(l.crate.crate, "", "noroot::g"), "external noroot::g");

  // Past the budget (`big` comes first: 3 of its 4 files), then nothing more.
  cg::pipeline::DependencyBudget budget;
  budget.max_files = 3;
  Loaded cut = load(t.root / "app", empty_home(), budget);
  all.clear();
  for (const auto& n : cut.notes)
    all += n + "\n";
  EXPECT_THAT(all, HasSubstr("big 0.1.0 at big is loaded into the analysis incompletely (1 "
                             "source-load; first: big/src/lib.rs:6: big/src/m2.rs is past the "
                             "dependency's budget of 3 files; skipped)"));
  EXPECT_THAT(all, HasSubstr("broken 0.1.0 at broken is not loaded into the analysis: the budget "
                             "for dependencies (3 files, 24 MiB) is spent"));
  EXPECT_EQ(resolved(cut.crate.crate, "", "big::linear"), "::big::linear @ big/src/lib.rs:1");
}

TEST(DependencyLoad, BudgetSpentCyclesAndCandlesOwnCrates) {
  Tree t("cycle");
  t.write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"a\", \"b\", \"late\", \"unnamed\"]\n");
  t.package("app",
            "a = { path = \"../a\" }\nlate = { path = \"../late\" }\n"
            "unnamed = { path = \"../unnamed\" }\n",
            "pub fn f() { a::x(); late::y(); }\n// unnamed is only in a comment: unnamed_x::\n");
  t.package("unnamed", "", "pub fn u() {}\n");
  t.package("a", "b = { path = \"../b\" }\n", "pub fn x() { b::z(); }\n");
  t.package("b", "a = { path = \"../a\" }\n", "pub fn z() { a::x(); }\n");
  t.package("late", "", "pub fn y() {}\n");
  // candle-nn in the registry: Candle's own crate, never loaded.
  fs::path home = t.root / "home";
  t.write("home/registry/src/idx/candle-nn-0.11.0/Cargo.toml",
          "[package]\nname = \"candle-nn\"\nversion = \"0.11.0\"\n");
  t.write("home/registry/src/idx/candle-nn-0.11.0/src/lib.rs", "pub fn linear() {}\n");
  cg::pipeline::DependencyBudget budget;
  budget.max_files = 3;
  Loaded l = load(t.root / "app", home, budget);
  EXPECT_EQ(source(l, "a").analysis, "loaded: 1 files, 1 items");
  EXPECT_EQ(source(l, "late").analysis, "loaded: 1 files, 1 items");
  EXPECT_EQ(source(l, "b").analysis, "loaded: 1 files, 1 items");
  EXPECT_THAT(source(l, "candle-nn").analysis, HasSubstr("not loaded: Candle's own crate"));
  // Lazily: a dependency no loaded code names is not read.
  EXPECT_EQ(source(l, "unnamed").analysis, "not loaded: no loaded crate's code names it");
  EXPECT_EQ(l.crate.crate.units().size(), 4u) << "each package once, whatever the cycle";
  EXPECT_EQ(resolved(l.crate.crate, "::b", "a::x"), "::a::x @ a/src/lib.rs:1");
  EXPECT_EQ(resolved(l.crate.crate, "", "candle_nn::linear"), "external candle_nn::linear");

  budget.max_files = 2;
  Loaded spent = load(t.root / "app", home, budget);
  EXPECT_EQ(source(spent, "b").analysis, "not loaded: the dependency budget is spent");
  ASSERT_EQ(spent.notes.size(), 1u);
  EXPECT_THAT(spent.notes[0], HasSubstr("b 0.1.0 at b is not loaded into the analysis: the budget "
                                        "for dependencies (2 files"));
}

}  // namespace

// A crate named only in a comment, a doc comment or a string is not loaded: its code is not used.
TEST(DependencyLoad, ACrateNamedOnlyInCommentsOrStringsIsNotLoaded) {
  Tree t("comments");
  t.write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"layers\", \"used\"]\n");
  t.package("app", "layers = { path = \"../layers\" }\nused = { path = \"../used\" }\n",
            "// layers::linear(..) was used here once\n"
            "/* use layers; /* nested */ layers::x */\n"
            "/// extern crate layers;\n"
            "pub fn f() -> &'static str { let _c = '\"'; \"layers::linear\" }\n"
            "pub fn g() -> &'static str { r#\"use layers;\"# }\n"
            "pub fn h() { used::f(); }\n");
  t.package("layers", "", "pub fn linear() {}\n");
  t.package("used", "", "pub fn f() {}\n");
  Loaded l = load(t.root / "app", empty_home());
  EXPECT_EQ(source(l, "layers").analysis, "not loaded: no loaded crate's code names it");
  EXPECT_EQ(source(l, "used").analysis, "loaded: 1 files, 1 items");
}

// A dependency whose Cargo.toml renames its library (`[lib] name = "tl"`) is imported as `tl`
// by a dependent that does not rename it: that name loads it and resolves to its items.
TEST(DependencyLoad, ALibraryRenamedInItsOwnManifestIsFoundByThatName) {
  Tree t("libname");
  t.write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"their-layers\"]\n");
  t.package("app", "their-layers = { path = \"../their-layers\" }\n",
            "use candle_nn::VarBuilder;\npub struct M { l: candle_nn::Linear }\n"
            "impl M {\n  pub fn new(vb: VarBuilder) -> candle_core::Result<Self> {\n"
            "    let l = tl::proj(vb.pp(\"proj\"))?;\n    Ok(Self { l })\n  }\n}\n");
  t.package("their-layers", "",
            "pub fn proj(vb: candle_nn::VarBuilder) -> candle_core::Result<candle_nn::Linear> {\n"
            "  candle_nn::linear(4, 8, vb)\n}\n");
  {
    std::ofstream(t.root / "their-layers/Cargo.toml", std::ios::app) << "\n[lib]\nname = \"tl\"\n";
  }
  Loaded l = load(t.root / "app", empty_home());
  EXPECT_EQ(source(l, "their-layers").analysis, "loaded: 1 files, 1 items");
  EXPECT_EQ(resolved(l.crate.crate, "", "tl::proj"), "::tl::proj @ their-layers/src/lib.rs:1");
}
