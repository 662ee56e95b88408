// A component whose constructor takes a VarBuilder but registers no parameter the inventory can
// follow is reported, and the summary calls its total a lower bound instead of printing 0 as a
// fact. Fixture: tests/fixtures/crates/macro_built (`MacroRules` builds its layer in a crate-local
// `macro_rules!` macro, which the inventory does not expand; `Stacked` builds its layers inside
// `vec![..]`, VGG's idiom, which it follows since `vec!` lowers to the array it spells).
#include <gtest/gtest.h>

#include <string>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"

namespace {

using namespace cg;

pipeline::Analysis run(const std::string& root) {
  pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/macro_built";
  o.root = root;
  return pipeline::analyze(o);
}

std::size_t empty_warnings(const ir::ModelIr& ir) {
  std::size_t n = 0;
  for (const auto& f : ir.findings)
    if (f.rule == "structure-unresolved" &&
        f.message.find("its total of 0 is a lower bound") != std::string::npos)
      ++n;
  return n;
}

TEST(EmptyComponent, LayersTheInventoryCannotFollowAreALowerBound) {
  auto a = run("MacroRules");
  ASSERT_EQ(a.ir.components.size(), 1u);
  EXPECT_TRUE(a.ir.parameters.empty());
  EXPECT_EQ(empty_warnings(a.ir), 1u);
  std::string text = query::render_model_summary(a, "");
  EXPECT_NE(text.find("`MacroRules` registers no parameter the inventory can follow"),
            std::string::npos)
      << text;
}

// Layers built inside `vec![..]` are followed: features.0 (16->32) and classifier (32->10),
// 512 + 32 + 320 + 10 = 874 parameters, and no lower-bound warning.
TEST(EmptyComponent, LayersBuiltInsideVecMacroAreCounted) {
  auto a = run("Stacked");
  EXPECT_EQ(a.ir.parameters.size(), 4u);
  EXPECT_EQ(empty_warnings(a.ir), 0u);
  std::string text = query::render_model_summary(a, "");
  EXPECT_NE(text.find("Total params: 874"), std::string::npos) << text;
  EXPECT_NE(text.find("features.0 (Linear)"), std::string::npos) << text;
}

TEST(EmptyComponent, ComponentWithParametersSaysNothing) {
  auto a = run("Plain");
  EXPECT_EQ(a.ir.parameters.size(), 2u);
  EXPECT_EQ(empty_warnings(a.ir), 0u);
  EXPECT_EQ(query::render_model_summary(a, "").find("registers no parameter"), std::string::npos);
}

}  // namespace
