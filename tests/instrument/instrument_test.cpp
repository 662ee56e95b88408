// `candle-graph instrument`: the diff writer, the Cargo.toml edit, and the whole rewrite on the
// fixture crate (every construct it handles or skips) and on examples/tiny-llama. The crate tests
// apply the diff with patch(1) to a fresh copy and check that the copy parses and analyzes to the
// same modules and parameters: what a user relies on when they apply it.
#include "instrument/instrument.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "instrument/manifest.hpp"
#include "instrument/unified_diff.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/crate.hpp"
#include "rust/instrument_sites.hpp"
#include "util/error.hpp"

namespace cg::instrument {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t k = text.find(what); k != std::string::npos; k = text.find(what, k + 1))
    ++n;
  return n;
}

// ---- unified diff -----------------------------------------------------------------------------

TEST(UnifiedDiff, InsertedLinesAreAdditionsWithContext) {
  const std::string text = "a\nb\nc\nd\ne\nf\ng\n";
  // A line inserted before `e` (line 5).
  std::string d = unified_diff("src/x.rs", text, {{8, "new\n"}});
  EXPECT_EQ(d, "--- a/src/x.rs\n+++ b/src/x.rs\n@@ -2,6 +2,7 @@\n b\n c\n d\n+new\n e\n f\n g\n");
}

TEST(UnifiedDiff, InsertionInsideALineReplacesThatLine) {
  std::string d = unified_diff("f.rs", "x { a }\n", {{5, ", b"}});
  EXPECT_EQ(d, "--- a/f.rs\n+++ b/f.rs\n@@ -1 +1 @@\n-x { a }\n+x { a, b }\n");
}

TEST(UnifiedDiff, SecondHunkIsNumberedAfterTheFirstHunksAdditions) {
  std::string text;
  for (int i = 1; i <= 30; ++i)
    text += "l" + std::to_string(i) + "\n";
  // Two lines before l2, one before l25.
  const auto at = [&](const std::string& l) {
    return static_cast<std::uint32_t>(text.find(l + "\n"));
  };
  std::string d = unified_diff("f", text, {{at("l25"), "Z\n"}, {at("l2"), "X\nY\n"}});
  EXPECT_THAT(d, HasSubstr("@@ -1,4 +1,6 @@\n l1\n+X\n+Y\n l2\n"));
  EXPECT_THAT(d, HasSubstr("@@ -22,6 +24,7 @@\n l22\n l23\n l24\n+Z\n l25\n"));
  EXPECT_LT(d.find("+X"), d.find("+Z")) << "hunks in line order whatever the insertion order";
}

TEST(UnifiedDiff, MissingFinalNewlineIsMarked) {
  std::string d = unified_diff("Cargo.toml", "[a]\nx = 1", {{9, "\n[b]\n"}});
  EXPECT_EQ(
      d,
      "--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -1,2 +1,3 @@\n [a]\n-x = 1\n\\ No newline at end "
      "of file\n+x = 1\n+[b]\n");
}

TEST(UnifiedDiff, NoChangeNoSection) {
  EXPECT_EQ(unified_diff("f", "abc\n", {}), "");
  EXPECT_EQ(unified_diff("f", "abc\n", {{1, ""}}), "");
}

// ---- Cargo.toml -------------------------------------------------------------------------------

TEST(Manifest, ExistingFeatureTableIsExtendedNotRepeated) {
  const std::string text =
      "[package]\nname = \"x\"\n\n[features]\ndefault = []\ncuda = [\n  \"a\",\n]\n\n# deps\n"
      "[dependencies]\nserde = \"1\"\n";
  ManifestEdit e = manifest_insertions(text, "Cargo.toml");
  std::string out = apply_insertions(text, e.insertions);
  EXPECT_EQ(count(out, "[features]"), 1u);
  EXPECT_THAT(out, HasSubstr("cuda = [\n  \"a\",\n]\ncandle-graph-profile = "
                             "[\"dep:candle-graph-profile\"]\n\n# deps\n"));
  EXPECT_THAT(out, HasSubstr("serde = \"1\"\n# Added by `candle-graph instrument`; point it at a "
                             "path or git source as you prefer.\ncandle-graph-profile = { version "
                             "= \"0.3\", optional = true }\n"));
}

TEST(Manifest, MissingTablesAreAppended) {
  const std::string text = "[package]\nname = \"x\"";  // no final newline either
  std::string out = apply_insertions(text, manifest_insertions(text, "Cargo.toml").insertions);
  EXPECT_THAT(out, HasSubstr("name = \"x\"\n\n[features]\ncandle-graph-profile = "
                             "[\"dep:candle-graph-profile\"]\n\n[dependencies]\n"));
}

TEST(Manifest, RequiredDependencyGetsAPlainFeatureAndIsLeftAlone) {
  const std::string text =
      "[package]\nname = \"x\"\n[dependencies]\ncandle-graph-profile = { path = \"../p\" }\n";
  ManifestEdit e = manifest_insertions(text, "Cargo.toml");
  std::string out = apply_insertions(text, e.insertions);
  EXPECT_THAT(out, HasSubstr("candle-graph-profile = []\n"));
  EXPECT_EQ(count(out, "candle-graph-profile = {"), 1u);
  ASSERT_EQ(e.notes.size(), 1u);
  EXPECT_THAT(e.notes[0], HasSubstr("already declared"));
}

TEST(Manifest, InlineFeatureTableAndMalformedManifestAreErrors) {
  EXPECT_THROW(manifest_insertions("features = { a = [] }\n", "Cargo.toml"), InputError);
  try {
    manifest_insertions("[package]\nname = \n", "Cargo.toml");
    FAIL() << "a malformed manifest must be refused";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Cargo.toml:2"));
  }
}

// ---- whole crates -----------------------------------------------------------------------------

fs::path source_dir() {
  return fs::path(CG_SOURCE_DIR);
}

class Scratch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cg_instrument_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fresh copy of `crate` (manifest, lockfile, sources) under the scratch directory.
  fs::path copy_of(const fs::path& crate, const std::string& name) {
    fs::path to = dir_ / name;
    fs::create_directories(to);
    fs::copy(crate / "Cargo.toml", to / "Cargo.toml");
    if (fs::exists(crate / "Cargo.lock")) fs::copy(crate / "Cargo.lock", to / "Cargo.lock");
    fs::copy(crate / "src", to / "src", fs::copy_options::recursive);
    return to;
  }

  // Applies `diff` with `patch -p1` inside `crate`; the exit status of patch.
  int patch(const fs::path& crate, const std::string& diff) {
    write(dir_ / "change.diff", diff);
    std::string cmd = "cd '" + crate.string() + "' && patch -p1 -s --no-backup-if-mismatch < '" +
                      (dir_ / "change.diff").string() + "'";
    return std::system(cmd.c_str());
  }

  fs::path dir_;
};

pipeline::Analysis analyze(const fs::path& crate, const std::string& root = "") {
  pipeline::Options o;
  o.path = crate.string();
  o.root = root;
  return pipeline::analyze(o);
}

// Modules and parameters as a user compares them: ids, prefixes, keys, shapes.
std::vector<std::string> inventory_of(const pipeline::Analysis& a) {
  std::vector<std::string> out;
  for (const auto& m : a.ir.modules)
    out.push_back("module " + m.id + " " + m.type_name + " " + m.prefix);
  for (const auto& p : a.ir.parameters) {
    std::string shape;
    for (const auto& d : p.symbolic_shape.value_or(std::vector<std::string>{}))
      shape += d + ",";
    out.push_back("param " + p.id + " " + p.key + " [" + shape + "] " +
                  std::to_string(static_cast<int>(p.confidence)));
  }
  return out;
}

// Every file of the crate parses with no error or missing node.
void expect_parses(const fs::path& crate) {
  rust::LoadedCrate l = rust::load_crate(crate, {});
  ASSERT_FALSE(l.crate.files().empty());
  for (const auto& f : l.crate.files())
    EXPECT_TRUE(f->ok()) << f->path() << ": "
                         << (f->problems().empty() ? "" : f->problems().front().what);
}

bool has_field(const rust::Crate& c, const std::string& qualified, const std::string& field) {
  for (std::size_t i : c.find(qualified))
    for (const auto& f : c.items()[i].fields)
      if (f.name == field) return true;
  return false;
}

const Skip* skipped(const Report& r, const std::string& what) {
  for (const auto& s : r.skipped)
    if (s.what == what) return &s;
  return nullptr;
}

fs::path cases() {
  return source_dir() / "tests/fixtures/crates/instrument_cases";
}

TEST_F(Scratch, FixtureConstructsAreInstrumentedOrSkippedWithAReason) {
  pipeline::Options o;
  o.path = cases().string();
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"blocks::Moved", "blocks::Shadowed",
                                                      "Shorthand", "Multi", "Model"}));
  EXPECT_EQ(r.fields, 5u);
  EXPECT_EQ(r.literals, 5u);
  EXPECT_EQ(r.captures, 2u) << "Moved (vb moved into a helper) and Shadowed (vb rebound)";
  EXPECT_EQ(r.scopes, 5u);
  EXPECT_EQ(r.files, (std::vector<std::string>{"Cargo.toml", "src/blocks.rs", "src/lib.rs"}));

  const Skip* pair = skipped(r, "struct `blocks::Pair`");
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(pair->where, "src/blocks.rs:48");
  EXPECT_THAT(pair->why, HasSubstr("tuple struct"));
  const Skip* generic = skipped(r, "forward `blocks::GenericForward::forward`");
  ASSERT_NE(generic, nullptr);
  EXPECT_THAT(generic->why, HasSubstr("generic forward (over X: std::borrow::Borrow<Tensor>)"));
  ASSERT_NE(skipped(r, "struct `blocks::GenericForward`"), nullptr);
  const Skip* built = skipped(r, "struct `blocks::Built`");
  ASSERT_NE(built, nullptr);
  EXPECT_THAT(built->why, HasSubstr("struct literal at src/blocks.rs:"));
  EXPECT_THAT(built->why, HasSubstr("`blocks::Built::from_layer`"));

  // The edits, as a reviewer reads them.
  EXPECT_THAT(r.diff, HasSubstr("-        Ok(Self { a, b })\n+        Ok(Self { a, b, "
                                "#[cfg(feature = \"candle-graph-profile\")] cg_path: "
                                "vb.prefix() })\n"))
      << "shorthand literal on one line";
  EXPECT_THAT(r.diff,
              HasSubstr("-            proj\n+            proj,\n+            #[cfg(feature = "
                        "\"candle-graph-profile\")]\n+            cg_path: builder.prefix(),\n"))
      << "a comma after the last field, then the field, from the builder's own name";
  EXPECT_THAT(r.diff, HasSubstr("        #![allow(clippy::let_and_return)]\n-        let ys = "
                                "(self.proj.forward(xs)? * self.scale)?;\n+        #[cfg(feature = "
                                "\"candle-graph-profile\")]\n+        let _cg_scope = "
                                "candle_graph_profile::module_scope(&self.cg_path);\n"))
      << "the scope goes after inner attributes";
  // The candle-nn layer in that line is timed as the module's child, `model.multi.proj`.
  EXPECT_THAT(r.diff,
              HasSubstr("+        let ys = ({ #[cfg(feature = \"candle-graph-profile\")] let "
                        "_cg_child = candle_graph_profile::child_scope(&self.cg_path, "
                        "\"proj\"); let cg_out = self.proj.forward(xs); cg_out }? * "
                        "self.scale)?;\n"));
  EXPECT_THAT(r.diff,
              HasSubstr("     pub fn new(vb: VarBuilder) -> Result<Self> {\n+        "
                        "#[cfg(feature = \"candle-graph-profile\")]\n+        let cg_path = "
                        "vb.prefix();\n         let inner"))
      << "a moved builder: the path is captured first";
  EXPECT_THAT(r.diff,
              HasSubstr("Ok(Self { inner, outer, #[cfg(feature = \"candle-graph-profile\")] "
                        "cg_path })"));
  EXPECT_THAT(r.diff, Not(HasSubstr("pub struct Pair(Linear")));
  EXPECT_THAT(r.diff, Not(HasSubstr("Ok(Self(linear")));
  EXPECT_THAT(r.diff, Not(HasSubstr("from_layer")));
  EXPECT_EQ(count(r.diff, "+cuda"), 0u);
  EXPECT_EQ(count(r.diff, "[features]"), 0u) << "the existing table is extended";

  // Applied to a fresh copy: it parses, analyzes the same, and a second run has nothing to do.
  fs::path copy = copy_of(cases(), "cases");
  ASSERT_EQ(patch(copy, r.diff), 0) << r.diff;
  expect_parses(copy);
  EXPECT_EQ(inventory_of(analyze(copy)), inventory_of(analyze(cases())));
  rust::LoadedCrate patched = rust::load_crate(copy, {});
  for (const auto& t : r.instrumented)
    EXPECT_TRUE(has_field(patched.crate, t, "cg_path")) << t;
  EXPECT_FALSE(has_field(patched.crate, "blocks::Pair", "cg_path"));
  o.path = copy.string();
  Report again = instrument_crate(o);
  EXPECT_TRUE(again.instrumented.empty());
  EXPECT_EQ(again.diff, "");
  EXPECT_THAT(read(copy / "Cargo.toml"),
              HasSubstr("cuda = [\"candle-nn/cuda\"]\ncandle-graph-profile = "
                        "[\"dep:candle-graph-profile\"]\n"));
}

TEST_F(Scratch, TinyLlamaEveryModuleGetsItsPathAndScope) {
  const fs::path crate = source_dir() / "examples/tiny-llama";
  pipeline::Options o;
  o.path = crate.string();
  Report r = instrument_crate(o);
  // Structure, not bytes: the example changes under other work.
  const pipeline::Analysis before = analyze(crate);
  std::vector<std::string> local;
  for (const auto& m : before.ir.modules)
    if (m.qualified_type && !m.qualified_type->starts_with("candle_nn::") &&
        std::find(local.begin(), local.end(), *m.qualified_type) == local.end())
      local.push_back(*m.qualified_type);
  std::sort(local.begin(), local.end());
  std::vector<std::string> got = r.instrumented;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, local) << "every crate-local module type of the component";
  // Nothing is skipped. The lm_head is the embedding's weight when tied (a module with no weights
  // of its own at the embedding's key) and its own `lm_head` otherwise: the field's path is
  // `lm_head` either way, so both of its calls are timed under it.
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&self.cg_path, \"lm_head\")"));
  // q, k, v, o; gate, up, down; the block's two norms; embed_tokens, norm and lm_head in forward
  // and in forward_all.
  EXPECT_EQ(r.children, 15u);
  EXPECT_EQ(r.fields, local.size());
  EXPECT_EQ(r.literals, local.size());
  std::size_t forwards = 0;
  for (const auto& f : before.ir.functions)
    if (f.is_entrypoint && f.owner_type &&
        std::find(local.begin(), local.end(), *f.owner_type) != local.end())
      ++forwards;
  EXPECT_EQ(r.scopes, forwards);
  EXPECT_EQ(count(r.diff, "+    cg_path: String,\n"), local.size());
  EXPECT_EQ(count(r.diff, "module_scope(&self.cg_path);"), forwards);
  EXPECT_EQ(count(r.diff, "--- a/"), r.files.size());
  EXPECT_EQ(r.files.front(), "Cargo.toml");

  // Deterministic.
  EXPECT_EQ(instrument_crate(o).diff, r.diff);

  fs::path copy = copy_of(crate, "tiny-llama");
  ASSERT_EQ(patch(copy, r.diff), 0) << r.diff;
  expect_parses(copy);
  const pipeline::Analysis after = analyze(copy);
  EXPECT_EQ(inventory_of(after), inventory_of(before));
  EXPECT_FALSE(inventory_of(after).empty());
  // Under the feature too: the cfg'd field and statements change no module or parameter.
  pipeline::Options with;
  with.path = copy.string();
  with.features = {"candle-graph-profile"};
  EXPECT_EQ(inventory_of(pipeline::analyze(with)), inventory_of(before));
}

TEST_F(Scratch, RootSelectsOneComponent) {
  pipeline::Options o;
  o.path = (source_dir() / "examples/tiny-llama").string();
  o.root = "Mlp";
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"model::Mlp"}));
  EXPECT_EQ(r.scopes, 1u);
  o.root = "NoSuchType";
  EXPECT_THROW(instrument_crate(o), InputError);
}

// instrument runs the pipeline every command runs: a --config or --arg it was given is read (a
// missing file, a parameter the root does not take are errors, as for `check`), never ignored.
TEST_F(Scratch, ConfigAndArgsAreReadAsEveryCommandReadsThem) {
  const fs::path llama = source_dir() / "examples/tiny-llama";
  pipeline::Options o;
  o.path = llama.string();
  o.config = (llama / "config.json").string();
  Report r = instrument_crate(o);
  EXPECT_FALSE(r.instrumented.empty());
  o.config = (dir_ / "no-such-config.json").string();
  EXPECT_THROW(instrument_crate(o), InputError);
  o.config.clear();
  o.args = {"no_such_parameter=3"};
  EXPECT_THROW(instrument_crate(o), InputError);
}

// Which uses of the builder before a literal make `vb.prefix()` there wrong or uncompilable.
TEST_F(Scratch, BuilderMovesAndBorrowsAreTold) {
  write(dir_ / "b/Cargo.toml", "[package]\nname = \"b\"\nversion = \"0.1.0\"\n");
  write(
      dir_ / "b/src/lib.rs",
      "use candle_nn::VarBuilder;\n"
      "pub fn borrows(vb: VarBuilder) { let a = vb.pp(\"x\"); let b = &vb; f(vb.clone()); END; }\n"
      "pub fn moves(vb: VarBuilder) { let a = vb.pp(\"x\"); g(vb); END; }\n"
      "pub fn rebinds(vb: VarBuilder) { let vb = vb.pp(\"x\"); END; }\n"
      "pub fn closure(vb: VarBuilder) { let f = move |n: &str| vb.pp(n); END; }\n"
      "pub fn renames(vb: VarBuilder) { let r = vb.rename_f(h); END; }\n"
      "pub fn after(vb: VarBuilder) { END; g(vb); }\n");
  rust::LoadedCrate l = rust::load_crate(dir_ / "b", {});
  const auto& c = l.crate;
  auto disturbed = [&](const std::string& fn) -> std::string {
    const auto items = c.find(fn);
    if (items.size() != 1) return "not found";
    const std::string& text = c.files()[c.items()[items[0]].file]->text();
    const std::size_t line = text.find("pub fn " + fn);
    const auto end = static_cast<std::uint32_t>(text.find("END", line));
    return rust::builder_disturbed(c, items[0], "vb", end).value_or("");
  };
  EXPECT_EQ(disturbed("borrows"), "");
  EXPECT_THAT(disturbed("moves"), HasSubstr("used by value or rebound at src/lib.rs:3"));
  EXPECT_THAT(disturbed("rebinds"), HasSubstr("used by value or rebound at src/lib.rs:4"));
  EXPECT_THAT(disturbed("closure"), HasSubstr("`move` closure"));
  EXPECT_THAT(disturbed("renames"), HasSubstr("consumed by `.rename_f`"));
  EXPECT_EQ(disturbed("after"), "") << "a move after the literal does not matter";
}

TEST_F(Scratch, CrateThatDoesNotParseIsRefusedWithItsLocation) {
  write(dir_ / "bad/Cargo.toml", "[package]\nname = \"bad\"\nversion = \"0.1.0\"\n");
  write(dir_ / "bad/src/lib.rs",
        "use candle_nn::VarBuilder;\npub struct M { a: u8 }\nimpl M {\n  pub fn new(vb: "
        "VarBuilder) -> Self {\n    Self { a: 1 \n  }\n");
  pipeline::Options o;
  o.path = (dir_ / "bad").string();
  try {
    instrument_crate(o);
    FAIL() << "a crate that does not parse must be refused";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("src/lib.rs:"), HasSubstr("parses")));
  }
}

TEST_F(Scratch, CrateWithoutModulesIsAnError) {
  write(dir_ / "plain/Cargo.toml", "[package]\nname = \"plain\"\nversion = \"0.1.0\"\n");
  write(dir_ / "plain/src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n");
  pipeline::Options o;
  o.path = (dir_ / "plain").string();
  try {
    instrument_crate(o);
    FAIL() << "nothing to instrument must be an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no module to instrument"));
  }
}

// A type a macro writes is only tokens to the parser: instrument can neither analyze nor edit
// it, and lists it with that reason instead of leaving it out silently (issue 36).
TEST_F(Scratch, StructsAndForwardImplsInsideMacrosAreListedAsSkipped) {
  write(dir_ / "mac/Cargo.toml",
        "[package]\nname = \"mac\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  const std::string layer_macro =
      "macro_rules! gated_layer {\n"
      "    ($name:ident) => {\n"
      "        pub struct $name { proj: Linear }\n"
      "        impl $name {\n"
      "            pub fn new(vb: VarBuilder) -> Result<Self> {\n"
      "                Ok(Self { proj: linear(4, 4, vb.pp(\"proj\"))? })\n"
      "            }\n"
      "            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> { self.proj.forward(xs) }\n"
      "        }\n"
      "    };\n"
      "}\n"
      "gated_layer!(Gated);\n"
      "define! { pub struct Inline { scale: f64 } }\n";
  write(dir_ / "mac/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{linear, Linear, VarBuilder};\n\n" +
            layer_macro +
            "\npub struct Model {\n    head: Linear,\n    gate: Gated,\n}\n\nimpl Model {\n"
            "    pub fn new(vb: VarBuilder) -> Result<Self> {\n"
            "        let head = linear(4, 4, vb.pp(\"head\"))?;\n"
            "        let gate = Gated::new(vb.pp(\"gate\"))?;\n"
            "        Ok(Self { head, gate })\n    }\n\n"
            "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
            "        self.gate.forward(&self.head.forward(xs)?)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "mac").string();
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"Model"}));
  const Skip* made = skipped(r, "struct `$name`");
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->where, "src/lib.rs:6");
  EXPECT_THAT(made->why, AllOf(HasSubstr("written inside `macro_rules! gated_layer`"),
                               HasSubstr("neither analyzed nor edited")));
  const Skip* forward = skipped(r, "impl `$name`");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->where, "src/lib.rs:7");
  const Skip* inline_struct = skipped(r, "struct `Inline`");
  ASSERT_NE(inline_struct, nullptr);
  EXPECT_EQ(inline_struct->where, "src/lib.rs:16");
  EXPECT_THAT(inline_struct->why, HasSubstr("an invocation of `define!`"));

  // With no module left to instrument, the error lists them too.
  write(dir_ / "mac/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{linear, Linear, VarBuilder};\n\n" +
            layer_macro);
  try {
    instrument_crate(o);
    FAIL() << "nothing to instrument must be an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("no module to instrument"),
                      HasSubstr("skipped src/lib.rs:6: struct `$name` (inside a macro)")));
  }
}

// A module type that is an enum has no field list for its path: listed with that reason, while a
// parent's call of it is still timed as that parent's child.
TEST_F(Scratch, AnEnumModuleIsListedAsSkipped) {
  write(dir_ / "en/Cargo.toml",
        "[package]\nname = \"en\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  write(dir_ / "en/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{linear, Linear, VarBuilder};\n\n"
        "pub enum Head {\n    Plain(Linear),\n}\n\nimpl Head {\n"
        "    pub fn new(vb: VarBuilder) -> Result<Self> {\n"
        "        Ok(Head::Plain(linear(4, 4, vb.pp(\"proj\"))?))\n    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        match self { Head::Plain(l) => l.forward(xs) }\n    }\n}\n\n"
        "pub struct Model {\n    head: Head,\n    out: Linear,\n}\n\nimpl Model {\n"
        "    pub fn new(vb: VarBuilder) -> Result<Self> {\n"
        "        let head = Head::new(vb.pp(\"head\"))?;\n"
        "        let out = linear(4, 4, vb.pp(\"out\"))?;\n"
        "        Ok(Self { head, out })\n    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        self.out.forward(&self.head.forward(xs)?)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "en").string();
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"Model"}));
  const Skip* head = skipped(r, "type `Head`");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->where, "src/lib.rs:4");
  EXPECT_THAT(head->why, HasSubstr("not a struct (an enum or a type alias)"));
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&self.cg_path, \"head\")"));
}

// candle-transformers holds optional layers as `Option<Linear>` fields (bert's
// `position_embeddings`, t5's `relative_attention_bias`) and calls them through a binding of the
// option's content (whisper a tuple of them), and shared ones as `Arc<Embedding>`: each such call
// is timed as the child the field holds, a binding shadowed by a `let` or bound to something else
// is left alone.
TEST_F(Scratch, CallsThroughAnOptionOrArcFieldAreTimedAsThatChild) {
  write(dir_ / "opt/Cargo.toml",
        "[package]\nname = \"opt\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  write(dir_ / "opt/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{linear, Linear, VarBuilder};\n"
        "use std::sync::Arc;\n\n"
        "pub struct Model {\n    pos: Option<Linear>,\n    bias: Option<Linear>,\n"
        "    shared: Arc<Linear>,\n    out: Linear,\n    cross: Option<(Linear, Linear)>,\n}\n\n"
        "impl Model {\n"
        "    pub fn new(vb: VarBuilder, with: bool) -> Result<Self> {\n"
        "        let pos = if with { Some(linear(4, 4, vb.pp(\"position\"))?) } else { None };\n"
        "        let bias = Some(linear(4, 4, vb.pp(\"rel_bias\"))?);\n"
        "        let shared = Arc::new(linear(4, 4, vb.pp(\"shared\"))?);\n"
        "        let out = linear(4, 4, vb.pp(\"out\"))?;\n"
        "        let cross = if with {\n            let a = linear(4, 4, vb.pp(\"cross_attn\"))?;\n"
        "            let ln = linear(4, 4, vb.pp(\"cross_ln\"))?;\n            Some((a, ln))\n"
        "        } else {\n            None\n        };\n"
        "        Ok(Self { pos, bias, shared, out, cross })\n    }\n"
        "    pub fn forward(&self, xs: &Tensor, extra: Option<&Linear>) -> Result<Tensor> {\n"
        "        let mut xs = self.shared.as_ref().forward(xs)?;\n"
        "        if let Some(p) = &self.pos {\n            xs = p.forward(&xs)?;\n        }\n"
        "        xs = match self.bias {\n            Some(ref b) => b.forward(&xs)?,\n"
        "            None => xs,\n        };\n"
        "        if let Some(p) = &self.pos {\n            let p = &self.out;\n"
        "            xs = p.forward(&xs)?;\n        }\n"
        "        if let Some(e) = extra {\n            xs = e.forward(&xs)?;\n        }\n"
        "        if let Some((attn, ln)) = &self.cross {\n"
        "            xs = attn.forward(&ln.forward(&xs)?)?;\n        }\n"
        "        self.out.forward(&xs)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "opt").string();
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"Model"}));
  const std::string open = "let _cg_child = candle_graph_profile::child_scope(&self.cg_path, ";
  // `.as_ref()` is a call: the scope opens in the last argument, after the receiver ran.
  EXPECT_THAT(r.diff, HasSubstr("let cg_out = self.shared.as_ref().forward({ let cg_in = xs; "
                                "#[cfg(feature = \"candle-graph-profile\")] { _cg_child = "
                                "candle_graph_profile::child_scope(&self.cg_path, \"shared\"); }"));
  EXPECT_THAT(r.diff, HasSubstr(open + "\"position\"); let cg_out = p.forward(&xs); cg_out }"));
  EXPECT_THAT(r.diff, HasSubstr(open + "\"rel_bias\"); let cg_out = b.forward(&xs); cg_out }"));
  // `let p = &self.out;` shadows the option's binding, and `extra` is no field: not `position`.
  EXPECT_EQ(count(r.diff, "\"position\")"), 1u);
  EXPECT_THAT(r.diff, Not(HasSubstr("e.forward(&xs); cg_out")));
  // A tuple in an option (whisper's `cross_attn: Option<(MultiHeadAttention, LayerNorm)>`): each
  // element under the segment its own `let` pushes.
  EXPECT_THAT(r.diff, HasSubstr(open + "\"cross_ln\"); let cg_out = ln.forward(&xs); cg_out }"));
  EXPECT_THAT(r.diff, HasSubstr("{ _cg_child = candle_graph_profile::child_scope(&self.cg_path, "
                                "\"cross_attn\"); } cg_in }); cg_out }"));
  EXPECT_EQ(r.children, 6u);  // shared, position, rel_bias, cross_attn, cross_ln, out
  fs::path copy = copy_of(dir_ / "opt", "opt_patched");
  ASSERT_EQ(patch(copy, r.diff), 0);
  expect_parses(copy);
}

// An element of a `Vec` field of library layers (`self.heads[i].forward(..)`): the analysis knows
// the family `heads.{i}`, so the element is timed under `heads.` and the index, formatted per call.
// An index that is an expression (it would run twice) is left alone.
TEST_F(Scratch, AnIndexedVecElementIsTimedUnderItsIndex) {
  write(dir_ / "vx/Cargo.toml",
        "[package]\nname = \"vx\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  write(dir_ / "vx/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{linear, Linear, VarBuilder};\n\n"
        "pub struct Model {\n    heads: Vec<Linear>,\n}\n\nimpl Model {\n"
        "    pub fn new(n: usize, vb: VarBuilder) -> Result<Self> {\n"
        "        let mut heads = Vec::new();\n        for i in 0..n {\n"
        "            heads.push(linear(4, 4, vb.pp(\"heads\").pp(i))?);\n        }\n"
        "        Ok(Self { heads })\n    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        let mut xs = xs.clone();\n"
        "        for i in 0..self.heads.len() {\n            xs = self.heads[i].forward(&xs)?;\n   "
        "     }\n"
        "        xs = self.heads[0].forward(&xs)?;\n"
        "        self.heads[xs.dims().len() - 1].forward(&xs)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "vx").string();
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"Model"}));
  EXPECT_THAT(r.diff, HasSubstr("let _cg_child = { let cg_p = if self.cg_path.is_empty() { "
                                "format!(\"heads.{}\", i) } else { format!(\"{}.heads.{}\", "
                                "self.cg_path, i) }; candle_graph_profile::module_scope(&cg_p) }; "
                                "let cg_out = self.heads[i].forward(&xs); cg_out }"));
  EXPECT_THAT(r.diff, HasSubstr("format!(\"{}.heads.{}\", self.cg_path, 0)"));
  EXPECT_THAT(r.diff, Not(HasSubstr("xs.dims().len() - 1)")));
  EXPECT_EQ(r.children, 2u);
  fs::path copy = copy_of(dir_ / "vx", "vx_patched");
  ASSERT_EQ(patch(copy, r.diff), 0);
  expect_parses(copy);
}

// A layer a local helper builds from raw weights (whisper's `layer_norm`, t5's own `Linear`) is
// no module of the analysis, but its weights are: the parent's call of it is timed under the
// segment its constructor pushes (`vb.pp("attn_ln")`), read from the literal's field or the
// `let` before it. A value that pushes no literal segment, or several, is left alone.
TEST_F(Scratch, ALayerBuiltByALocalHelperIsTimedUnderTheSegmentItsConstructorPushes) {
  write(dir_ / "hl/Cargo.toml",
        "[package]\nname = \"hl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  write(dir_ / "hl/src/lib.rs",
        "use candle::{Module, Result, Tensor};\nuse candle_nn::{LayerNorm, VarBuilder};\n\n"
        "pub struct Lin {\n    weight: Tensor,\n}\n\n"
        "fn lin(n: usize, vb: VarBuilder) -> Result<Lin> {\n"
        "    Ok(Lin { weight: vb.get((n, n), \"weight\")? })\n}\n\n"
        "impl Module for Lin {\n    fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        xs.matmul(&self.weight)\n    }\n}\n\n"
        "fn norm(n: usize, vb: VarBuilder) -> Result<LayerNorm> {\n"
        "    let w = vb.get(n, \"weight\")?;\n    let b = vb.get(n, \"bias\")?;\n"
        "    Ok(LayerNorm::new(w, b, 1e-5))\n}\n\n"
        "pub struct Block {\n    q: Lin,\n    attn_ln: LayerNorm,\n    k: Lin,\n}\n\n"
        "impl Block {\n    pub fn new(vb: VarBuilder, i: usize) -> Result<Self> {\n"
        "        let attn_ln = norm(4, vb.pp(\"attn_ln\"))?;\n"
        "        Ok(Self { q: lin(4, vb.pp(\"q\"))?, attn_ln, k: lin(4, vb.pp(format!(\"k{i}\")))? "
        "})\n"
        "    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        let xs = self.attn_ln.forward(xs)?;\n"
        "        let xs = self.k.forward(&xs)?;\n"
        "        self.q.forward(&xs)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "hl").string();
  o.root = "Block";
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"Block"}));
  const std::string open = "let _cg_child = candle_graph_profile::child_scope(&self.cg_path, ";
  EXPECT_THAT(r.diff, HasSubstr(open + "\"attn_ln\"); let cg_out = self.attn_ln.forward(xs);"));
  EXPECT_THAT(r.diff, HasSubstr(open + "\"q\"); let cg_out = self.q.forward(&xs);"));
  // `k`'s segment is a format!: no fixed path, no scope.
  EXPECT_THAT(r.diff, Not(HasSubstr("self.k.forward(&xs); cg_out")));
  EXPECT_EQ(r.children, 2u);
  fs::path copy = copy_of(dir_ / "hl", "hl_patched");
  ASSERT_EQ(patch(copy, r.diff), 0);
  expect_parses(copy);
}

// Closure modules, as candle-transformers' resnet and convnext are written: a function taking a
// VarBuilder that hands one `move` closure to `Func::new` is a module at `vb.prefix()`. Its path is
// captured at the top, the closure opens a scope with it, and each layer the function built in a
// local with a literal segment is the closure's child; a local another builder made times itself.
TEST_F(Scratch, ClosureModulesGetAScopeAndTheirLayersChildScopes) {
  write(dir_ / "fm/Cargo.toml",
        "[package]\nname = \"fm\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "candle-nn = \"0.11.0\"\n");
  write(dir_ / "fm/src/lib.rs",
        "use candle::Result;\nuse candle_nn::{batch_norm, conv2d, Conv2dConfig, Func, "
        "VarBuilder};\n\n"
        "fn block(c: usize, vb: VarBuilder) -> Result<Func<'static>> {\n"
        "    let conv = conv2d(c, c, 3, Conv2dConfig::default(), vb.pp(\"conv\"))?;\n"
        "    let bn = batch_norm(c, 1e-5, vb.pp(0))?;\n"
        "    Ok(Func::new(move |xs| xs.apply(&conv)?.apply_t(&bn, false)))\n}\n\n"
        "pub fn net(vb: VarBuilder, extra: bool) -> Result<Func<'static>> {\n"
        "    let first = block(4, vb.pp(\"first\"))?;\n"
        "    let head = candle_nn::linear(4, 2, vb.pp(\"head\"))?;\n"
        "    let more = match extra {\n        false => None,\n"
        "        true => Some(block(4, vb.pp(\"more\"))?),\n    };\n"
        "    let tail = stages(vb.pp(\"tail\"))?;\n"
        "    Ok(Func::new(move |xs| {\n        let ys = xs.apply(&first)?;\n"
        "        let ys = match &more {\n            Some(m) => ys.apply(m)?,\n"
        "            None => ys,\n        };\n"
        "        ys.apply(&head)?.apply(&tail)\n    }))\n}\n\n"
        "fn stages(vb: VarBuilder) -> Result<Func<'static>> {\n"
        "    let vb = vb.pp(\"stages\");\n"
        "    let proj = candle_nn::linear(2, 2, vb.pp(\"proj\"))?;\n"
        "    Ok(Func::new(move |xs| xs.apply(&proj)))\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "fm").string();
  o.root = "net";
  Report r = instrument_crate(o);
  EXPECT_EQ(r.instrumented, (std::vector<std::string>{"block", "net", "stages"}));
  EXPECT_EQ(r.skipped.size(), 0u);  // the function root is no "enum or alias"
  EXPECT_EQ(r.captures, 3u);
  EXPECT_EQ(r.scopes, 3u);
  EXPECT_EQ(count(r.diff, "let cg_path = vb.prefix();"), 3u);
  // A closure module built inside a `match` (`Some(m)` over it) times itself: no child scope.
  EXPECT_THAT(r.diff, Not(HasSubstr("child_scope(&cg_path, \"more\")")));
  // `let vb = vb.pp("stages")` rebinds the builder: `proj` is at `stages.proj`, not at the
  // captured path plus `proj`, so it is left in the closure's time rather than misnamed.
  EXPECT_THAT(r.diff, Not(HasSubstr("child_scope(&cg_path, \"proj\")")));
  // An expression body is wrapped in a block that opens the scope.
  EXPECT_THAT(r.diff, HasSubstr("Func::new(move |xs| { #[cfg(feature = \"candle-graph-profile\")] "
                                "let _cg_scope = candle_graph_profile::module_scope(&cg_path); "));
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&cg_path, \"conv\"); let cg_out = xs.apply(&conv);"));
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&cg_path, \"0\"); } cg_in }); cg_out } }))"));
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&cg_path, \"head\"); let cg_out = ys.apply(&head);"));
  // `first` is another closure module: it opens its own scope, no child scope around it.
  EXPECT_THAT(r.diff, Not(HasSubstr("child_scope(&cg_path, \"first\")")));
  EXPECT_EQ(r.children, 3u);  // conv, 0, head
  fs::path copy = copy_of(dir_ / "fm", "fm_patched");
  ASSERT_EQ(patch(copy, r.diff), 0);
  expect_parses(copy);
  // A second run finds the name taken: nothing to do.
  pipeline::Options again = o;
  again.path = copy.string();
  Report second = instrument_crate(again);
  EXPECT_TRUE(second.instrumented.empty());
  EXPECT_TRUE(second.already_instrumented);
}

// The per-layer fixture (tests/instrument/perlayer/model): module types whose forward is private
// (`Block::forward`), `pub(crate)` under another name (`Attention::attend`, which the block calls)
// or a private `impl Module` (`Mlp`) are all instrumented; every candle-nn layer they hold, and the
// crate-local wrapper instrument must skip, is timed as its parent's child under the key segment
// the IR gives it (field `ln1` is `input_layernorm`, field `o` is `o_proj`). tests/e2e/
// instrument_build.sh compiles and runs the same diff with cargo.
TEST_F(Scratch, PerLayerFixtureEveryModuleAndChildIsTimed) {
  const fs::path crate = source_dir() / "tests/instrument/perlayer/model";
  pipeline::Options o;
  o.path = crate.string();
  Report r = instrument_crate(o, "path=/opt/candle-graph/bindings/rust/candle-graph-profile");
  std::vector<std::string> got = r.instrumented;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"Attention", "Block", "Mlp", "Model"}));
  EXPECT_EQ(r.scopes, 4u) << "attend, Mlp::forward, Block::forward, Model::forward";
  EXPECT_EQ(count(r.diff, "module_scope(&self.cg_path);"), 4u);
  // The wrapper built in a free function (as candle-transformers' `with_tracing::Linear` is):
  // the analysis sees the candle-nn layer inside it, field `o`, key `o_proj`.
  EXPECT_THAT(r.diff, HasSubstr("child_scope(&self.cg_path, \"o_proj\"); let cg_out = "
                                "self.o.forward(&y); cg_out }"));
  // 4 in attend (q, k, v, o), 3 in Mlp, 2 norms in Block, embed, norm and lm_head in Model.
  EXPECT_EQ(r.children, 12u);
  for (const char* seg : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                          "down_proj", "input_layernorm", "post_attention_layernorm",
                          "model.embed_tokens", "model.norm", "lm_head"})
    EXPECT_EQ(count(r.diff, std::string("child_scope(&self.cg_path, \"") + seg + "\")"), 1u) << seg;
  // A plain call: the scope, then the call, the block's value the call's.
  EXPECT_THAT(r.diff, HasSubstr("let q = { #[cfg(feature = \"candle-graph-profile\")] let "
                                "_cg_child = candle_graph_profile::child_scope(&self.cg_path, "
                                "\"q_proj\"); let cg_out = self.q_proj.forward(x); cg_out }?;"));
  // A receiver that runs a child itself: the scope opens in the last argument, after it.
  EXPECT_THAT(r.diff, HasSubstr("let cg_out = (gate * { #[cfg(feature = "));
  EXPECT_THAT(r.diff,
              HasSubstr(".apply({ let cg_in = &self.down_proj; #[cfg(feature = "
                        "\"candle-graph-profile\")] { _cg_child = "
                        "candle_graph_profile::child_scope(&self.cg_path, \"down_proj\"); } "
                        "cg_in }); cg_out }"));
  // An argument that runs a child: `&{ .. }`, the norm's own block inside.
  EXPECT_THAT(r.diff, HasSubstr("self.lm_head.forward(&{ let cg_in = { #[cfg(feature = "));
  EXPECT_THAT(r.diff, HasSubstr("+candle-graph-profile = { path = "
                                "\"/opt/candle-graph/bindings/rust/candle-graph-profile\", "
                                "optional = true }\n"));

  // Siblings, as in the repository: the model's path dependencies resolve.
  copy_of(source_dir() / "tests/instrument/perlayer/candle-core", "candle-core");
  copy_of(source_dir() / "tests/instrument/perlayer/candle-nn", "candle-nn");
  const fs::path copy = copy_of(crate, "model");
  ASSERT_EQ(patch(copy, r.diff), 0) << r.diff;
  expect_parses(copy);
  EXPECT_EQ(inventory_of(analyze(copy)), inventory_of(analyze(crate)));
  // A second run finds every type instrumented and wraps no call twice.
  o.path = copy.string();
  const Report again = instrument_crate(o);
  EXPECT_TRUE(again.already_instrumented);
  EXPECT_EQ(again.children, 0u);
  EXPECT_EQ(again.diff, "");
}

TEST(Manifest, DependencySourceFlag) {
  EXPECT_EQ(dependency_source("path=/x/y"), "path = \"/x/y\"");
  EXPECT_EQ(dependency_source("git=https://h/r.git"), "git = \"https://h/r.git\"");
  EXPECT_EQ(dependency_source("version=0.3"), "version = \"0.3\"");
  EXPECT_EQ(dependency_source("path=C:\\a\"b"), "path = \"C:\\\\a\\\"b\"");  // TOML-escaped
  EXPECT_THROW(dependency_source("nowhere"), InputError);
  EXPECT_THROW(dependency_source("branch=main"), InputError);
  EXPECT_THROW(dependency_source("path="), InputError);
  const ManifestEdit e = manifest_insertions("[package]\nname = \"m\"\n", "Cargo.toml",
                                             dependency_source("path=../p"));
  EXPECT_THAT(apply_insertions("[package]\nname = \"m\"\n", e.insertions),
              HasSubstr("candle-graph-profile = { path = \"../p\", optional = true }\n"));
}

TEST(Manifest, StatsDeclaresItsFeatureOnTopOfTheProfilersOnce) {
  const std::string text = "[package]\nname = \"m\"\n\n[features]\ndefault = []\n";
  const std::string out = apply_insertions(
      text, manifest_insertions(text, "Cargo.toml", "version = \"0.3\"", true).insertions);
  EXPECT_THAT(out, HasSubstr("default = []\ncandle-graph-profile = [\"dep:candle-graph-profile\"]\n"
                             "candle-graph-stats = [\"candle-graph-profile\"]\n"));
  // A second run on the instrumented manifest adds neither feature and says so.
  const ManifestEdit again = manifest_insertions(out, "Cargo.toml", "version = \"0.3\"", true);
  EXPECT_TRUE(again.insertions.empty());
  EXPECT_THAT(again.notes, ::testing::Contains(HasSubstr("`candle-graph-stats` is already")));
}

// --stats: every forward whose value can pass through a closure is wrapped so that all its return
// paths reach the recording statement; one that borrows its result or consumes `self` keeps its
// scope and is listed; the statistics module lands at the end of the crate root, written with the
// crate's own names for candle-core and candle-nn.
TEST_F(Scratch, StatsWrapsEachForwardAndListsWhatItCannotRecord) {
  write(dir_ / "st/Cargo.toml",
        "[package]\nname = \"st\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle_core = { package = \"candle-core\", version = \"0.11.0\" }\n"
        "nn = { package = \"candle-nn\", version = \"0.11.0\" }\n");
  write(dir_ / "st/src/lib.rs",
        "use candle_core::{Module, Result, Tensor};\nuse nn::{linear, Linear, VarBuilder};\n\n"
        "pub struct Block {\n    proj: Linear,\n}\n\nimpl Block {\n"
        "    pub fn new(vb: VarBuilder) -> Result<Self> {\n"
        "        Ok(Self { proj: linear(4, 4, vb.pp(\"proj\"))? })\n    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        if xs.dims().is_empty() {\n            return Ok(xs.clone());\n        }\n"
        "        self.proj.forward(xs)\n    }\n"
        "    pub fn weights(&self, xs: &Tensor) -> Result<&Tensor> {\n"
        "        let _ = xs;\n        Ok(self.proj.weight())\n    }\n"
        "    pub fn into_out(self, xs: &Tensor) -> Result<Tensor> {\n"
        "        self.proj.forward(xs)\n    }\n}\n\n"
        "pub struct Model {\n    block: Block,\n}\n\nimpl Model {\n"
        "    pub fn new(vb: VarBuilder) -> Result<Self> {\n"
        "        Ok(Self { block: Block::new(vb.pp(\"block\"))? })\n    }\n"
        "    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {\n"
        "        let w = self.block.weights(xs)?;\n"
        "        self.block.forward(&xs.broadcast_mul(w)?)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "st").string();
  const Report r = instrument_crate(o, "", true);
  EXPECT_THAT(r.instrumented, ::testing::UnorderedElementsAre("Block", "Model"));
  // Block::forward (two ways out) and Model::forward are wrapped; the child call of `proj` too.
  EXPECT_EQ(count(r.diff, "+        let cg_out = (|| -> Result<Tensor> {\n"), 2u) << r.diff;
  EXPECT_EQ(r.stats_outputs, 2u);
  EXPECT_THAT(r.diff, HasSubstr("(&&crate::cg_stats::Probe(&cg_out)).cg_record(&self.cg_path, "
                                "\"proj\"); }"));
  EXPECT_THAT(r.diff, HasSubstr("drop(_cg_scope);"));
  ASSERT_NE(skipped(r, "statistics of forward `Block::weights`"), nullptr) << r.diff;
  EXPECT_THAT(skipped(r, "statistics of forward `Block::weights`")->why, HasSubstr("borrows"));
  ASSERT_NE(skipped(r, "statistics of forward `Block::into_out`"), nullptr);
  EXPECT_THAT(skipped(r, "statistics of forward `Block::into_out`")->why,
              HasSubstr("`self` by value"));
  // The module, with the crate's names, and the feature.
  EXPECT_THAT(r.diff, HasSubstr("+pub mod cg_stats {\n+    use candle_core::Tensor;\n"));
  EXPECT_THAT(r.diff, HasSubstr("pub fn grads(varmap: &nn::VarMap, grads: "
                                "&candle_core::backprop::GradStore)"));
  EXPECT_THAT(r.diff, HasSubstr("+candle-graph-stats = [\"candle-graph-profile\"]"));
  fs::path copy = copy_of(dir_ / "st", "st_patched");
  ASSERT_EQ(patch(copy, r.diff), 0);
  expect_parses(copy);
  EXPECT_EQ(inventory_of(analyze(copy)), inventory_of(analyze(dir_ / "st")));
  // A second run on the patched copy finds it instrumented and writes nothing.
  pipeline::Options again;
  again.path = copy.string();
  const Report second = instrument_crate(again, "", true);
  EXPECT_TRUE(second.already_instrumented);
  EXPECT_TRUE(second.diff.empty());
}

TEST_F(Scratch, StatsNeedsTheCratesCandleCore) {
  write(dir_ / "nc/Cargo.toml",
        "[package]\nname = \"nc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
        "[dependencies]\ncandle-nn = \"0.11.0\"\n");
  write(dir_ / "nc/src/lib.rs",
        "use candle_nn::{linear, Linear, Module, VarBuilder};\n\n"
        "pub struct M {\n    proj: Linear,\n}\n\nimpl M {\n"
        "    pub fn new(vb: VarBuilder) -> candle_nn::candle::Result<Self> {\n"
        "        Ok(Self { proj: linear(4, 4, vb.pp(\"proj\"))? })\n    }\n"
        "    pub fn forward(&self, xs: &candle_nn::candle::Tensor) -> "
        "candle_nn::candle::Result<candle_nn::candle::Tensor> {\n"
        "        self.proj.forward(xs)\n    }\n}\n");
  pipeline::Options o;
  o.path = (dir_ / "nc").string();
  try {
    (void)instrument_crate(o, "", true);
    FAIL() << "--stats without candle-core was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("Cargo.toml"), HasSubstr("candle-core")));
  }
  // Without --stats the same crate is instrumented for time.
  EXPECT_FALSE(instrument_crate(o).instrumented.empty());
}

}  // namespace
}  // namespace cg::instrument
