// candle-nn's constructors read from candle-nn's own source (issue #17): a release with no
// hand-written catalogue gets exact leaves that follow its source; without the source, or with a
// broken one, the catalogue is the fallback and a note says why; and on candle-nn 0.11.0 the
// source-derived constructors equal the audited catalogue, entry by entry.
#include "analysis/layer_source.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cargo/context.hpp"
#include "cargo/temp_tree.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/cfg.hpp"
#include "rust/crate.hpp"

namespace {

namespace fs = std::filesystem;
using cg::analysis::ConstructorSpec;
using cg::analysis::LayerCatalog;
using ::testing::HasSubstr;

const fs::path kFixture = fs::path(CG_SOURCE_DIR) / "tests/fixtures/crates/nn_source";
const fs::path kNn079 =
    kFixture / "cargo_home/registry/src/index.example-0123456789abcdef/candle-nn-0.7.9";

cg::pipeline::Analysis analyze(const fs::path& app) {
  cg::pipeline::Options o;
  o.path = app.string();
  return cg::pipeline::analyze(o);
}

// "key [d0, d1]" per parameter (concrete shape when known, else the symbolic one).
std::map<std::string, std::string> leaves(const cg::pipeline::Analysis& a) {
  std::map<std::string, std::string> out;
  for (const auto& p : a.ir.parameters) {
    std::string s;
    if (p.shape)
      for (auto d : *p.shape)
        s += (s.empty() ? "" : ", ") + std::to_string(d);
    else if (p.symbolic_shape)
      for (const auto& d : *p.symbolic_shape)
        s += (s.empty() ? "" : ", ") + d;
    out[p.key] = "[" + s + "]";
  }
  return out;
}

std::string doctor_line(const cg::pipeline::Analysis& a, const std::string& pkg) {
  for (const auto& d : a.dependencies)
    if (d.package == pkg) return d.analysis;
  return "(no " + pkg + " entry)";
}

std::vector<std::string> findings(const cg::pipeline::Analysis& a, const std::string& rule) {
  std::vector<std::string> out;
  for (const auto& f : a.ir.findings)
    if (f.rule == rule) out.push_back(f.message);
  return out;
}

std::string describe(const ConstructorSpec& c) {
  std::string s = c.layer_type + "(";
  for (std::size_t i = 0; i < c.params.size(); ++i)
    s += (i ? ", " : "") + c.params[i];
  s += ") ->";
  for (const auto& l : c.leaves) {
    s += " " + l.name + "[";
    for (std::size_t i = 0; i < l.shape.size(); ++i)
      s += (i ? ", " : "") + l.shape[i];
    s += "]";
    if (!l.condition.empty()) s += " if " + l.condition;
    if (l.running_state) s += " (state)";
  }
  return s;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Copies a directory tree (the fixture) so a test can break a file of it.
void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

TEST(LayerSource, AReleaseWithoutCatalogueGetsTheLeavesItsSourceRequests) {
  cg::test::CargoHome home(kFixture / "cargo_home");
  auto a = analyze(kFixture / "app");
  // 0.7.9 is not catalogued: without its source every leaf below would be 0.11.0's and unknown.
  EXPECT_FALSE(LayerCatalog::hand_written("0.7.9").audited());
  std::map<std::string, std::string> expected = {
      {"proj.weight", "[64, 128]"},       // this release stores the weight as (in, out)
      {"proj.b", "[128]"},                // ...and names the bias `b`
      {"norm.gamma", "[128]"},            // its layer norm asks for gamma and beta
      {"norm.beta", "[128]"},             //
      {"attn.qkv.weight", "[384, 128]"},  // a constructor 0.11.0 does not have, with `pp`
      {"gate.weight", "[128, 8]"},        // linear_b(.., false, ..): no bias
      {"conv.weight", "[32, 8, 3, 3]"}};  // groups: 2 halves the input channels
  EXPECT_EQ(leaves(a), expected);
  for (const auto& p : a.ir.parameters)
    EXPECT_EQ(p.confidence, cg::ir::Confidence::proven) << p.key << ": " << p.reason.value_or("");
  EXPECT_THAT(findings(a, "structure-unresolved"), ::testing::IsEmpty());
  // The only unaudited semantics left are candle-core's tensor operations.
  for (const auto& m : findings(a, "candle-semantics-version"))
    EXPECT_THAT(m, HasSubstr("candle-core resolves to 0.7.9")) << m;
  EXPECT_EQ(doctor_line(a, "candle-nn"),
            "constructors read from candle-nn 0.7.9's source: 6 from 5 files");
  // The source-derived catalogue is in use only during the analysis.
  EXPECT_FALSE(LayerCatalog::for_version("0.7.9").audited());
}

TEST(LayerSource, WithoutTheSourceTheCatalogueIsTheFallbackAndLeavesStayUnknown) {
  cg::test::TempTree empty("cg-layer-source", "empty-home");
  cg::test::CargoHome home(empty.root);
  auto a = analyze(kFixture / "app");
  auto l = leaves(a);
  EXPECT_EQ(l.count("proj.bias"), 1u);  // 0.11.0's names, which this release does not use
  EXPECT_EQ(l.count("proj.b"), 0u);
  for (const auto& p : a.ir.parameters)
    EXPECT_EQ(p.confidence, cg::ir::Confidence::unknown) << p.key;
  EXPECT_THAT(findings(a, "structure-unresolved"),
              ::testing::Contains(HasSubstr("candle_nn::fused_qkv")));
  EXPECT_THAT(doctor_line(a, "candle-nn"),
              HasSubstr("constructors from the hand-written catalogue (not audited for this "
                        "release: leaves unknown): its source is not on disk"));
}

TEST(LayerSource, ASyntaxErrorWhereConstructorsAreIsANoteAndOnlyThoseAreNotRead) {
  cg::test::TempTree t("cg-layer-source", "broken");
  copy_tree(kFixture, t.root);
  const fs::path nn =
      t.root / "cargo_home/registry/src/index.example-0123456789abcdef/candle-nn-0.7.9";
  t.write(nn.lexically_relative(t.root) / "src/conv.rs", "pub fn conv2d(vb: crate::VarBuilder {\n");
  cg::test::CargoHome home(t.root / "cargo_home");
  auto a = analyze(t.root / "app");
  auto notes = findings(a, "dependency-source");
  ASSERT_THAT(notes, ::testing::Contains(HasSubstr("src/conv.rs:1")));
  for (const auto& n : notes)
    if (n.find("src/conv.rs") != std::string::npos) {
      EXPECT_THAT(n, HasSubstr("candle-nn 0.7.9 at $CARGO_HOME/registry/src/"));
      EXPECT_THAT(n, HasSubstr("not read from source"));
      EXPECT_THAT(n, HasSubstr("syntax error"));
    }
  // The other files' constructors are still read; conv2d's leaves are not invented.
  auto l = leaves(a);
  EXPECT_EQ(l.count("proj.b"), 1u);
  EXPECT_EQ(l.count("conv.weight"), 0u);
  EXPECT_THAT(findings(a, "structure-unresolved"),
              ::testing::Contains(HasSubstr("candle_nn::conv2d")));
}

// A config's `Default::default()` is read from the source too: a fork whose Conv2dConfig
// defaults to 4 groups gets a quarter of the input channels per filter, where the hand-written
// defaults (groups 1) would say all of them.
TEST(LayerSource, ConfigDefaultsComeFromTheSourcesDefaultImpl) {
  cg::test::TempTree t("cg-layer-source", "defaults");
  copy_tree(kFixture, t.root);
  const fs::path nn =
      t.root / "cargo_home/registry/src/index.example-0123456789abcdef/candle-nn-0.7.9";
  std::string conv = slurp(nn / "src/conv.rs");
  const std::string one = "Self { padding: 0, groups: 1 }";
  ASSERT_NE(conv.find(one), std::string::npos);
  conv.replace(conv.find(one), one.size(), "Self { padding: 0, groups: 4 }");
  t.write(nn.lexically_relative(t.root) / "src/conv.rs", conv);
  std::string app = slurp(t.root / "app/src/lib.rs");
  const std::string two = "groups: 2, ..Default::default()";
  ASSERT_NE(app.find(two), std::string::npos);
  app.replace(app.find(two), two.size(), "padding: 1, ..Default::default()");
  t.write("app/src/lib.rs", app);
  cg::test::CargoHome home(t.root / "cargo_home");
  auto a = analyze(t.root / "app");
  EXPECT_EQ(leaves(a)["conv.weight"], "[32, 4, 3, 3]");
}

TEST(LayerSource, AnUnreadableSourceIsANoteAndTheCatalogueIsUsed) {
  cg::test::TempTree t("cg-layer-source", "unreadable");
  copy_tree(kFixture, t.root);
  const fs::path nn =
      t.root / "cargo_home/registry/src/index.example-0123456789abcdef/candle-nn-0.7.9";
  fs::remove(nn / "src/lib.rs");
  cg::test::CargoHome home(t.root / "cargo_home");
  auto a = analyze(t.root / "app");
  EXPECT_THAT(findings(a, "dependency-source"),
              ::testing::Contains(HasSubstr("the hand-written catalogue is used")));
  for (const auto& n : findings(a, "dependency-source"))  // the same on every machine
    EXPECT_THAT(n, ::testing::Not(HasSubstr(t.root.string()))) << n;
  EXPECT_EQ(leaves(a).count("proj.bias"), 1u);
  EXPECT_THAT(doctor_line(a, "candle-nn"),
              HasSubstr("its source is not used: it has no library root (src/lib.rs)"));
}

TEST(LayerSource, BranchesOnArgumentsBecomeConditionsAndBothSidesMakeALeafCertain) {
  cg::rust::Crate crate = cg::rust::Crate::load(kNn079, kNn079 / "src/lib.rs", nullptr,
                                                cg::rust::CfgSet(cg::cargo::host_default_cfgs()));
  cg::analysis::LayerSource src = cg::analysis::derive_layer_constructors(crate);
  ASSERT_EQ(src.error, "");
  std::map<std::string, std::string> got;
  for (const auto& c : src.constructors)
    got[c.name] = describe(c);
  EXPECT_EQ(got["linear_b"],
            "Linear(in_dim, out_dim, bias) -> weight[{in_dim}, {out_dim}] b[{out_dim}] if {bias}");
  EXPECT_EQ(got["fused_qkv"], "Linear(dim, heads) -> qkv.weight[3 * {dim}, {dim}]");
  EXPECT_EQ(got["conv2d"],
            "Conv2d(in_channels, out_channels, kernel_size, cfg) -> weight[{out_channels}, "
            "{in_channels} / {cfg}.groups, {kernel_size}, {kernel_size}]");
  EXPECT_EQ(got.size(), 6u);
  EXPECT_THAT(src.skipped, ::testing::IsEmpty());
}

TEST(LayerSource, AFunctionItCannotFollowIsLeftOutWithItsReason) {
  cg::test::TempTree t("cg-layer-source", "loop");
  t.write("src/lib.rs",
          "pub struct VarBuilder;\n"
          "pub struct Stack;\n"
          "pub fn stack(n: usize, vb: VarBuilder) -> Result<Stack> {\n"
          "    for i in 0..n {\n"
          "        vb.get(4, \"w\")?;\n"
          "    }\n"
          "    Ok(Stack)\n"
          "}\n"
          "pub fn one(vb: VarBuilder) -> Result<Stack> {\n"
          "    let w = vb.get((2, 2), \"w\")?;\n"
          "    Ok(Stack)\n"
          "}\n");
  cg::rust::Crate crate = cg::rust::Crate::load(t.root, t.root / "src/lib.rs", nullptr,
                                                cg::rust::CfgSet(cg::cargo::host_default_cfgs()));
  auto src = cg::analysis::derive_layer_constructors(crate);
  ASSERT_EQ(src.constructors.size(), 1u);
  EXPECT_EQ(describe(src.constructors[0]), "Stack() -> w[2, 2]");
  ASSERT_EQ(src.skipped.size(), 1u);
  EXPECT_THAT(src.skipped[0],
              HasSubstr("stack (src/lib.rs:3): tensors are requested inside a loop"));
}

// The cache of source-derived constructors is keyed by the cfg set too: a constructor behind a
// feature exists for that feature set only, and reading another set first changes nothing.
TEST(LayerSource, TheCacheKeepsOneReadingPerCfgSet) {
  cg::test::TempTree t("cg-layer-source", "cfg-key");
  t.write("src/lib.rs",
          "pub struct VarBuilder;\n"
          "pub struct Layer;\n"
          "pub fn base(vb: VarBuilder) -> Result<Layer> {\n"
          "    vb.get(4, \"w\")?;\n"
          "    Ok(Layer)\n"
          "}\n"
          "#[cfg(feature = \"extra\")]\n"
          "pub fn extra(vb: VarBuilder) -> Result<Layer> {\n"
          "    vb.get(8, \"x\")?;\n"
          "    Ok(Layer)\n"
          "}\n");
  auto names = [](const cg::analysis::LayerSource& src) {
    std::vector<std::string> out;
    for (const auto& c : src.constructors)
      out.push_back(c.name);
    return out;
  };
  std::vector<std::string> with = cg::cargo::host_default_cfgs();
  with.push_back("feature=\"extra\"");
  auto plain = cg::analysis::read_layer_source(t.root, t.root / "src/lib.rs",
                                               cg::cargo::host_default_cfgs());
  auto extra = cg::analysis::read_layer_source(t.root, t.root / "src/lib.rs", with);
  auto again = cg::analysis::read_layer_source(t.root, t.root / "src/lib.rs",
                                               cg::cargo::host_default_cfgs());
  EXPECT_EQ(names(*plain), std::vector<std::string>({"base"}));
  EXPECT_EQ(names(*extra), std::vector<std::string>({"base", "extra"}));
  EXPECT_EQ(names(*again), std::vector<std::string>({"base"}));
  EXPECT_EQ(again, plain);  // read once per cfg set
}

// The real candle-nn 0.11.0 (CG_CANDLE_SRC, a huggingface/candle checkout): every catalogued
// constructor must be derived from source exactly as the catalogue writes it.
TEST(LayerSource, Candle0110SourceEqualsTheAuditedCatalogue) {
  const char* root = std::getenv("CG_CANDLE_SRC");
  if (root == nullptr || *root == '\0')
    GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout at 0.11.0): the "
                    "comparison of catalogue and source needs candle-nn's real source";
  const fs::path nn = fs::path(root) / "candle-nn";
  auto src = cg::analysis::read_layer_source(nn, nn / "src/lib.rs", cg::cargo::host_default_cfgs());
  ASSERT_EQ(src->error, "");
  std::map<std::string, const ConstructorSpec*> derived;
  for (const auto& c : src->constructors)
    derived[c.name] = &c;
  const LayerCatalog& hand = LayerCatalog::hand_written("0.11.0");
  ASSERT_TRUE(hand.audited());
  for (const auto& h : hand.constructors()) {
    auto it = derived.find(h.name);
    if (it == derived.end()) {
      ADD_FAILURE() << h.name << " is catalogued but not derived from source";
      continue;
    }
    EXPECT_EQ(describe(*it->second), describe(h)) << h.name;
  }
  for (const auto& [name, c] : derived)
    EXPECT_NE(hand.find(name), nullptr)
        << name << " is derived but not catalogued: " << describe(*c);
  EXPECT_THAT(src->skipped, ::testing::IsEmpty());
  // The one thing the description cannot say is in the note: LSTM's backward direction.
  auto lstm = derived.find("lstm");
  ASSERT_NE(lstm, derived.end());
  EXPECT_THAT(lstm->second->note, HasSubstr("`_reverse`"));
}

}  // namespace
