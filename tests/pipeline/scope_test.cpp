// One model at a time (issue #18): with one component, the IR is scoped to what it reaches.
#include "pipeline/scope.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "pipeline/pipeline.hpp"

namespace {

using namespace cg;

std::set<std::string> function_names(const ir::ModelIr& ir) {
  std::set<std::string> out;
  for (const auto& f : ir.functions)
    out.insert(f.qualified_name);
  return out;
}

std::size_t count_rule(const ir::ModelIr& ir, const std::string& rule) {
  return static_cast<std::size_t>(std::count_if(ir.findings.begin(), ir.findings.end(),
                                                [&](const auto& f) { return f.rule == rule; }));
}

pipeline::Analysis run(const std::string& crate, const std::string& root, bool all) {
  pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/" + crate;
  o.root = root;
  o.all = all;
  return pipeline::analyze(o);
}

TEST(Scope, RootKeepsItsOwnCodeAndWhatTakesItsTypes) {
  auto a = run("tests/fixtures/crates/two_models", "encoder::Encoder", false);
  auto names = function_names(a.ir);
  // The root's methods, the helper its forward calls, and a function of another module that
  // takes the root type through a `use`.
  EXPECT_TRUE(names.count("encoder::Encoder::forward"));
  EXPECT_TRUE(names.count("encoder::Encoder::new"));
  EXPECT_TRUE(names.count("util::scale"));
  EXPECT_TRUE(names.count("train::encode_step"));
  // The other model in the crate is not shown, nor its operations or its numeric hazard.
  EXPECT_FALSE(names.count("tagger::Tagger::forward"));
  for (const auto& op : a.ir.operations)
    EXPECT_EQ(op.function.find("tagger"), std::string::npos) << op.id;
  EXPECT_EQ(count_rule(a.ir, "numeric-domain-violation"), 0u);
  // What was left out is said once. The other model's forward is not run at all under a root
  // (its 4 operations and its numeric hazard are never made), so only its 2 functions are dropped.
  ASSERT_EQ(count_rule(a.ir, "analysis-scope"), 1u);
  for (const auto& f : a.ir.findings) {
    if (f.rule != "analysis-scope") continue;
    EXPECT_NE(f.message.find("2 functions, 0 operations and 0 findings of"), std::string::npos)
        << f.message;
  }
  EXPECT_EQ(a.ir.coverage.functions, a.ir.functions.size());
}

TEST(Scope, AllKeepsTheWholeCrate) {
  auto a = run("tests/fixtures/crates/two_models", "encoder::Encoder", true);
  auto names = function_names(a.ir);
  EXPECT_TRUE(names.count("tagger::Tagger::forward"));
  EXPECT_EQ(count_rule(a.ir, "numeric-domain-violation"), 1u);
  EXPECT_EQ(count_rule(a.ir, "analysis-scope"), 0u);
}

TEST(Scope, SeveralComponentsWithoutARootAreNotScoped) {
  auto a = run("tests/fixtures/crates/two_models", "", false);
  EXPECT_EQ(a.ir.components.size(), 2u);
  EXPECT_TRUE(function_names(a.ir).count("tagger::Tagger::forward"));
  EXPECT_EQ(count_rule(a.ir, "analysis-scope"), 0u);
}

TEST(Scope, OneComponentFoundIsScopedAndKeepsItsTrainingStep) {
  auto a = run("examples/tiny-llama", "", false);
  ASSERT_EQ(a.ir.components.size(), 1u);
  auto names = function_names(a.ir);
  EXPECT_TRUE(names.count("train::train_step"));             // takes `&mut TinyLlama`
  EXPECT_TRUE(names.count("train::lm_loss"));                // called by it
  EXPECT_TRUE(names.count("rotary::RotaryEmbedding::new"));  // its type's `apply` is reached
  EXPECT_FALSE(names.count("config::Config::head_dim"));     // no forward reaches it
}

}  // namespace
