// The crate loader on small fixtures: module tree, cfg alternatives, re-exports, renames,
// methods and receiver types, and every bad-input diagnostic.
#include "rust/crate.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "rust/types.hpp"
#include "rust/use_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace cg::rust;
using ::testing::HasSubstr;

fs::path fixture(const char* name) {
  return fs::path(CG_SOURCE_DIR) / "tests/fixtures/crates" / name;
}

const LoadedCrate& modules_fixture() {
  static LoadedCrate c = load_crate(fixture("loader_modules"), {});
  return c;
}

std::vector<std::string> describe(const Crate& c, const std::vector<Candidate>& cands) {
  std::vector<std::string> out;
  for (const auto& k : cands) {
    if (k.kind == Candidate::Kind::Item)
      out.push_back("item " + c.items()[k.item].qualified + " [" + c.items()[k.item].cfg.text() +
                    "]");
    else if (k.kind == Candidate::Kind::Module)
      out.push_back("module " + k.path);
    else
      out.push_back("external " + k.path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool has_diag(const Crate& c, const std::string& rule, const std::string& file,
              std::uint32_t line) {
  for (const auto& d : c.diagnostics())
    if (d.rule == rule && d.file == file && d.line == line) return true;
  return false;
}

TEST(CrateLoad, FollowsModFilesPathAttributesAndInlineModules) {
  const Crate& c = modules_fixture().crate;
  for (const char* m : {"", "a", "a::b", "c", "d", "e", "e::inner"})
    EXPECT_NE(c.module(m), nullptr) << m;
  EXPECT_EQ(c.files()[c.module("a::b")->file]->path(), "src/a/b.rs");
  EXPECT_EQ(c.files()[c.module("c")->file]->path(), "src/c/mod.rs");
  EXPECT_EQ(c.files()[c.module("d")->file]->path(), "src/other/custom.rs");
  EXPECT_TRUE(c.module("e")->is_inline);
  EXPECT_EQ(c.find("e::inner::InnerThing").size(), 1u);
  EXPECT_EQ(c.module("gpu"), nullptr) << "cfg(feature = \"cuda\") is false: not loaded";
}

TEST(CrateLoad, MissingModFileIsADiagnosticWithLine) {
  const Crate& c = modules_fixture().crate;
  EXPECT_TRUE(has_diag(c, "source-load", "src/lib.rs", 9));
  EXPECT_FALSE(has_diag(c, "source-load", "src/lib.rs", 11)) << "cfg-false mod is not looked for";
}

TEST(CrateCfg, AlternativesOfTheSameItemKeptApart) {
  const Crate& c = modules_fixture().crate;
  auto pick = c.find("pick");
  ASSERT_EQ(pick.size(), 1u) << "not(feature=\"fast\") is false under default features";
  EXPECT_EQ(c.items()[pick[0]].cfg.text(), "feature=\"fast\"");
  EXPECT_TRUE(c.find("never").empty());
  auto odd = c.find("Odd");
  ASSERT_EQ(odd.size(), 2u) << "unknown predicates keep both sides";
  EXPECT_EQ(c.items()[odd[0]].cfg.state, Tri::Unknown);
  EXPECT_THAT(describe(c, c.resolve("", "Odd")),
              ::testing::ElementsAre("item Odd [custom_predicate(x)]",
                                     "item Odd [not(custom_predicate(x))]"));
  EXPECT_TRUE(has_diag(c, "cfg-unknown", "src/lib.rs", 36));
}

TEST(CrateCfg, ThreeValuedEvaluation) {
  CfgSet s({"unix", "target_os=\"linux\"", "feature=\"a\""});
  EXPECT_EQ(s.eval("all(unix, feature = \"a\")"), Tri::True);
  EXPECT_EQ(s.eval("any(windows, target_os = \"macos\")"), Tri::False);
  EXPECT_EQ(s.eval("not(test)"), Tri::True);
  EXPECT_EQ(s.eval("all(weird(1), windows)"), Tri::False) << "a false wins in all()";
  EXPECT_EQ(s.eval("any(weird(1), unix)"), Tri::True) << "a true wins in any()";
  EXPECT_EQ(s.eval("any(weird(1), windows)"), Tri::Unknown);
  EXPECT_EQ(s.eval("not(a, b)"), Tri::Unknown);
  EXPECT_EQ(s.eval("any()"), Tri::False);
  EXPECT_EQ(s.eval("all()"), Tri::True);
}

TEST(CrateSymbols, StructFieldsPeeledAndMethods) {
  const Crate& c = modules_fixture().crate;
  auto model = c.find("Model");
  ASSERT_EQ(model.size(), 1u);
  const Item& m = c.items()[model[0]];
  ASSERT_EQ(m.fields.size(), 3u);
  EXPECT_EQ(m.fields[0].base_type, "Block");
  EXPECT_EQ(m.fields[0].container, Container::Option);
  EXPECT_EQ(m.fields[1].container, Container::Vec);
  EXPECT_EQ(m.fields[2].base_type, "c::Helper");
  EXPECT_EQ(m.fields[2].container, Container::RefMut);
  EXPECT_EQ(m.visibility, Visibility::Public);
  auto fwd = c.find("Block::forward");
  ASSERT_EQ(fwd.size(), 2u) << "inherent and trait forward";
  auto block = c.find("Block");
  auto methods = c.methods(block[0], "forward");
  ASSERT_EQ(methods.size(), 1u);
  EXPECT_EQ(c.impls()[static_cast<std::size_t>(c.items()[methods[0]].impl)].trait, "")
      << "inherent preferred over trait";
  const Item& f = c.items()[methods[0]];
  EXPECT_EQ(f.self_kind, SelfKind::Ref);
  ASSERT_EQ(f.params.size(), 1u);
  EXPECT_EQ(f.params[0].name, "xs");
  EXPECT_EQ(f.params[0].type_text, "&Tensor");
  EXPECT_EQ(f.return_type, "candle::Result<Tensor>");
  EXPECT_FALSE(ts_node_is_null(f.body()));
  EXPECT_EQ(c.source(methods[0]), "src/lib.rs:50");
}

TEST(CrateResolve, RenamesAndAliasesToExternalPaths) {
  const Crate& c = modules_fixture().crate;
  EXPECT_THAT(describe(c, c.resolve("", "linear")),
              ::testing::ElementsAre("external candle_nn::linear_no_bias"));
  EXPECT_THAT(describe(c, c.resolve("", "Tensor")),
              ::testing::ElementsAre("external candle_core::Tensor"));
  EXPECT_THAT(describe(c, c.resolve("", "candle::DType")),
              ::testing::ElementsAre("external candle_core::DType"));
  EXPECT_THAT(describe(c, c.resolve("", "candle_nn::Embedding")),
              ::testing::ElementsAre("external candle_nn::Embedding"));
}

TEST(CrateResolve, ReExportChainsAndSuperAcrossFiles) {
  const Crate& c = modules_fixture().crate;
  EXPECT_THAT(describe(c, c.resolve("", "Shallow")), ::testing::ElementsAre("item a::b::Deep []"));
  EXPECT_THAT(describe(c, c.resolve("d", "crate::a::Deep")),
              ::testing::ElementsAre("item a::b::Deep []"));
  EXPECT_THAT(describe(c, c.resolve("a::b", "helper")),
              ::testing::ElementsAre("item a::helper []"));
  EXPECT_THAT(describe(c, c.resolve("a::b", "super::super::Block::new")),
              ::testing::ElementsAre("item Block::new []"));
  EXPECT_TRUE(c.resolve("", "NoSuchThing").empty());
}

TEST(CrateResolve, ReceiverTypesThroughFieldsAndLocals) {
  const Crate& c = modules_fixture().crate;
  auto run = c.find("Model::run");
  ASSERT_EQ(run.size(), 1u);
  EXPECT_THAT(describe(c, c.receiver_type(run[0], "self.head")),
              ::testing::ElementsAre("item Block []"));
  EXPECT_THAT(describe(c, c.receiver_type(run[0], "self.shared")),
              ::testing::ElementsAre("item c::Helper []"));
  EXPECT_THAT(describe(c, c.receiver_type(run[0], "b")), ::testing::ElementsAre("item Block []"));
  EXPECT_THAT(describe(c, c.receiver_type(run[0], "h")),
              ::testing::ElementsAre("item c::Helper []"));
  EXPECT_THAT(describe(c, c.resolve_in(run[0], "Self::run")),
              ::testing::ElementsAre("item Model::run []"));
  EXPECT_THAT(describe(c, c.receiver_type(run[0], "x")),
              ::testing::ElementsAre("external candle_core::Tensor"));
}

TEST(CrateResolve, UnresolvedInternalImportsAreListed) {
  const Crate& c = modules_fixture().crate;
  auto un = c.unresolved_imports();
  ASSERT_EQ(un.size(), 1u);
  EXPECT_EQ(c.files()[c.uses()[un[0]].file]->path(), "src/c/mod.rs");
}

TEST(UseTree, GroupsAliasesSelfAndGlobs) {
  auto leaves = parse_use_tree("a::{b, c::{self as d, *}, /* note */ e::f as _}");
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_EQ(leaves[0].name, "b");
  EXPECT_EQ(leaves[1].name, "d");
  EXPECT_THAT(leaves[1].path, ::testing::ElementsAre("a", "c"));
  EXPECT_TRUE(leaves[2].glob);
  EXPECT_EQ(leaves[3].name, "_");
  auto abs = parse_use_tree("::std::sync::Arc");
  ASSERT_EQ(abs.size(), 1u);
  EXPECT_EQ(abs[0].path[0], "");
}

TEST(PeelType, WrappersAndReferences) {
  EXPECT_EQ(peel_type("Option<Box<candle_nn::Linear>>").base, "candle_nn::Linear");
  EXPECT_EQ(peel_type("&'a mut Vec<Block<B>>").container, Container::RefMut);
  EXPECT_EQ(peel_type("&'a mut Vec<Block<B>>").base, "Block");
  EXPECT_EQ(peel_type("HashMap<String, Tensor>").base, "HashMap");
  EXPECT_EQ(peel_type("Box<dyn SimpleBackend + '_>").base, "SimpleBackend");
}

TEST(CrateBadInput, PathCycleIsReportedNotFollowed) {
  auto l = load_crate(fixture("path_cycle"), {});
  EXPECT_TRUE(has_diag(l.crate, "path-cycle", "src/lib.rs", 2));
  EXPECT_EQ(l.crate.files().size(), 1u);
  EXPECT_EQ(l.crate.find("still_loaded").size(), 1u);
}

class TempCrate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cg_loader_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "src");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(TempCrate, NonUtf8FileIsSkippedWithDiagnostic) {
  write("src/lib.rs", "mod bad;\npub fn ok() {}\n");
  write("src/bad.rs", std::string("pub fn f() { let s = \"\xff\xfe\"; }\n"));
  auto l = load_crate(dir_, {});
  EXPECT_FALSE(l.cargo) << "no Cargo.toml: walk src/";
  EXPECT_TRUE(has_diag(l.crate, "source-load", "src/lib.rs", 1));
  EXPECT_THAT(l.crate.diagnostics()[0].message, HasSubstr("UTF-8"));
  EXPECT_EQ(l.crate.find("ok").size(), 1u);
}

TEST_F(TempCrate, FileOverTenMegabytesIsSkipped) {
  write("src/lib.rs", "mod big;\n");
  std::string big = "// generated\n";
  while (big.size() <= 10u * 1024u * 1024u)
    big += "pub const X: u32 = 1; // padding padding\n";
  write("src/big.rs", big);
  auto l = load_crate(dir_, {});
  ASSERT_EQ(l.crate.diagnostics().size(), 1u);
  EXPECT_THAT(l.crate.diagnostics()[0].message, HasSubstr("10 MB"));
}

TEST_F(TempCrate, DeepNestingAndSyntaxErrorsDoNotStopTheLoad) {
  std::string deep = "pub fn deep() -> u32 { ";
  for (int i = 0; i < 20000; ++i)
    deep += "(";
  deep += "1";
  for (int i = 0; i < 20000; ++i)
    deep += ")";
  deep += " }\npub fn broken( {\npub struct After;\n";
  std::string inline_mods;
  for (int i = 0; i < 80; ++i)
    inline_mods += "mod m {";
  for (int i = 0; i < 80; ++i)
    inline_mods += "}";
  write("src/lib.rs", deep + inline_mods + "\n");
  auto l = load_crate(dir_, {});
  EXPECT_EQ(l.crate.find("deep").size(), 1u);
  bool syntax = false, depth = false;
  for (const auto& d : l.crate.diagnostics()) {
    syntax |= d.rule == "syntax-error";
    depth |= d.rule == "parse-depth";
  }
  EXPECT_TRUE(syntax);
  EXPECT_TRUE(depth);
}

}  // namespace
