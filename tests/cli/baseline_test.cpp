#include "cli/baseline.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace {

cg::ir::ModelIr sample() {
  cg::ir::ModelIr ir;
  cg::ir::Component c;
  c.id = "component:m%3A%3AModel";
  c.qualified_name = "m::Model";
  ir.components.push_back(c);
  cg::ir::Parameter p;
  p.builder_root = "vb";
  p.key = "head.weight";
  p.kind = "candle_nn::linear";
  p.shape = std::vector<std::uint64_t>{4, 8};
  ir.parameters.push_back(p);
  cg::ir::Finding f;
  f.rule = "numeric-domain-violation";
  f.severity = cg::ir::Severity::warning;
  f.message = "wording that may change";
  ir.findings.push_back(f);
  return ir;
}

TEST(Baseline, RoundTripsAndIgnoresMessages) {
  auto ir = sample();
  std::string text = cg::cli::write_baseline(cg::cli::baseline_of(ir));
  EXPECT_EQ(text.rfind("# candle-graph/model-baseline/1\n", 0), 0u);
  EXPECT_NE(text.find("parameter\tvb\thead.weight\tcandle_nn::linear\t[4,8]\n"), std::string::npos)
      << text;
  auto parsed = cg::cli::parse_baseline(text, "b.txt");
  ir.findings[0].message = "reworded";
  EXPECT_EQ(cg::cli::diff_baselines(parsed, cg::cli::baseline_of(ir)), "");
}

TEST(Baseline, DiffNamesTheSectionAndTheLines) {
  auto ir = sample();
  auto before = cg::cli::baseline_of(ir);
  (*ir.parameters[0].shape)[1] = 16;
  std::string d = cg::cli::diff_baselines(before, cg::cli::baseline_of(ir));
  EXPECT_NE(d.find("parameters: 1 removed, 1 added"), std::string::npos) << d;
  EXPECT_NE(d.find("- parameter\tvb\thead.weight\tcandle_nn::linear\t[4,8]"), std::string::npos);
  EXPECT_NE(d.find("+ parameter\tvb\thead.weight\tcandle_nn::linear\t[4,16]"), std::string::npos);
}

TEST(Baseline, BadFilesNameTheLine) {
  try {
    cg::cli::parse_baseline("# something else\n", "b.txt");
    FAIL();
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.txt:1"), std::string::npos) << e.what();
  }
  try {
    cg::cli::parse_baseline("# candle-graph/model-baseline/1\n\nmodule\tx\n", "b.txt");
    FAIL();
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.txt:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown record kind `module`"), std::string::npos);
  }
  EXPECT_THROW(cg::cli::parse_baseline("component\tx\ty\n", "b.txt"), cg::InputError);
  EXPECT_THROW(cg::cli::parse_baseline("", "b.txt"), cg::InputError);
}

}  // namespace
