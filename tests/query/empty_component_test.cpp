// A component whose constructor takes a VarBuilder but registers no parameter the inventory can
// follow is reported, and the summary calls its total a lower bound instead of printing 0 as a
// fact. Fixture: tests/fixtures/crates/macro_built (layers built inside `vec![..]`, VGG's idiom;
// if the inventory learns to follow `vec!`, move the fixture to another idiom it cannot follow).
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
  auto a = run("Stacked");
  ASSERT_EQ(a.ir.components.size(), 1u);
  EXPECT_TRUE(a.ir.parameters.empty());
  EXPECT_EQ(empty_warnings(a.ir), 1u);
  std::string text = query::render_model_summary(a, "");
  EXPECT_NE(text.find("`Stacked` registers no parameter the inventory can follow"),
            std::string::npos)
      << text;
}

TEST(EmptyComponent, ComponentWithParametersSaysNothing) {
  auto a = run("Plain");
  EXPECT_EQ(a.ir.parameters.size(), 2u);
  EXPECT_EQ(empty_warnings(a.ir), 0u);
  EXPECT_EQ(query::render_model_summary(a, "").find("registers no parameter"), std::string::npos);
}

}  // namespace
