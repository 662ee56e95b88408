#include "analysis/layer_catalog.hpp"

#include <gtest/gtest.h>

namespace {

using cg::analysis::LayerCatalog;

const LayerCatalog& audited() {
  return LayerCatalog::for_version("0.11.0");
}

TEST(LayerCatalog, LinearNoBiasRegistersOnlyTheWeight) {
  const auto* spec = audited().find("candle_nn::linear_no_bias");
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->leaves.size(), 1u);
  EXPECT_EQ(spec->leaves[0].name, "weight");
  const auto* with_bias = audited().find("nn::linear");
  ASSERT_NE(with_bias, nullptr);
  EXPECT_EQ(with_bias->leaves.size(), 2u);
}

TEST(LayerCatalog, WeightShapesFollowCandleNotPytorchIntuition) {
  // Linear stores (out, in); conv weights divide input channels by groups.
  const auto* linear = audited().find("linear");
  EXPECT_EQ(cg::analysis::substitute_args(linear->leaves[0].shape[0], linear->params,
                                          {"cfg.hidden_size", "cfg.vocab_size"}),
            "cfg.vocab_size");
  const auto* conv = audited().find("conv2d");
  EXPECT_EQ(cg::analysis::substitute_args(conv->leaves[0].shape[1], conv->params,
                                          {"3", "64", "7", "conv_cfg"}),
            "3 / conv_cfg.groups");
}

TEST(LayerCatalog, ConditionalLeavesNameTheirCondition) {
  const auto* bn = audited().find("batch_norm");
  ASSERT_NE(bn, nullptr);
  int running = 0, conditional = 0;
  for (const auto& leaf : bn->leaves) {
    running += leaf.running_state ? 1 : 0;
    conditional += leaf.condition.empty() ? 0 : 1;
  }
  EXPECT_EQ(running, 2);
  EXPECT_EQ(conditional, 2);
  const auto* lb = audited().find("linear_b");
  EXPECT_EQ(cg::analysis::substitute_args(lb->leaves[1].condition, lb->params,
                                          {"h", "o", "cfg.attention_bias"}),
            "cfg.attention_bias");
}

TEST(LayerCatalog, UnauditedVersionHasNoConstructors) {
  EXPECT_FALSE(LayerCatalog::for_version("0.7.2").audited());
  EXPECT_EQ(LayerCatalog::for_version("0.7.2").find("linear"), nullptr);
  EXPECT_EQ(audited().find("frobnicate"), nullptr);
}

TEST(LayerCatalog, ConstructorsAuditedFromEightToEleven) {
  // Reviewed at every tag 0.8.0-0.11.0: the same VarBuilder requests.
  for (const char* v : {"0.8.0", "0.8.4", "0.9.0-alpha.1", "0.9.1", "0.10.2", "0.11.0"}) {
    EXPECT_TRUE(LayerCatalog::for_version(v).audited()) << v;
    EXPECT_NE(LayerCatalog::for_version(v).find("linear"), nullptr) << v;
  }
  // Outside the range, a git source (maybe a fork), several versions at once, or nonsense.
  for (const char* v : {"0.7.2", "0.11.1", "0.12.0", "1.0.0", "0.11.0-alpha.1", "0.9.1+git",
                        "0.9.1,0.11.0", "", "0.9", "x.y.z", "0.9.1junk"})
    EXPECT_FALSE(LayerCatalog::for_version(v).audited()) << v;
}

TEST(LayerCatalog, SubstitutionKeepsUnknownPlaceholdersVisible) {
  EXPECT_EQ(cg::analysis::substitute_args("{a} * {zz}", {"a"}, {"4"}), "4 * {zz}");
}

}  // namespace
