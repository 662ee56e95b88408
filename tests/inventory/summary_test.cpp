// `candle-graph summary` on the bundled example: the torchinfo-style table a user reads.
#include <gtest/gtest.h>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"

namespace {

const std::string kCrate = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";

cg::pipeline::Analysis analyze(bool with_config) {
  cg::pipeline::Options o;
  o.path = kCrate;
  if (with_config) o.config = kCrate + "/config.json";
  return cg::pipeline::analyze(o);
}

TEST(Summary, BoundConfigGivesCountsPerModuleAndTotals) {
  auto a = analyze(true);
  auto m = cg::query::build_summary(a.ir, "F32");
  ASSERT_FALSE(m.rows.empty());
  EXPECT_EQ(m.rows[0].name, "TinyLlama");
  EXPECT_EQ(m.rows[0].params, std::optional<std::uint64_t>(3950848));
  bool block3 = false, k_proj = false;
  for (const auto& r : m.rows) {
    if (r.name == "model.layers.3" && r.type == "Block") {
      block3 = true;
      EXPECT_EQ(r.params, std::optional<std::uint64_t>(725504));
    }
    if (r.name == "k_proj" && r.type == "Linear") {
      k_proj = true;
      EXPECT_EQ(r.params, std::optional<std::uint64_t>(128 * 256));
    }
  }
  EXPECT_TRUE(block3);
  EXPECT_TRUE(k_proj);
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(3950848));
  EXPECT_EQ(m.totals.bytes, std::optional<std::uint64_t>(3950848ull * 4));

  std::string text = cg::query::render_model_summary(a, kCrate + "/config.json", "BF16");
  EXPECT_NE(text.find("Total params: 3,950,848"), std::string::npos) << text;
  EXPECT_NE(text.find("Params size (MB): 7.54 at BF16"), std::string::npos) << text;
  // Mult-adds per call from the dataflow (batch and sequence stay symbolic): 4 layers of
  // q,o (256x256), k,v (128x256) and three 688x256 projections.
  EXPECT_NE(text.find("b*t*65536"), std::string::npos) << text;
  EXPECT_NE(text.find("Mult-adds per forward pass (counted layers): b*t*2,899,968"),
            std::string::npos)
      << text;
  // Construction order, as torchinfo lists registration order: attention before the MLP.
  EXPECT_LT(text.find("self_attn (Attention)"), text.find("mlp (Mlp)")) << text;
}

TEST(Summary, WithoutConfigCountsAreUnknownNotZero) {
  auto a = analyze(false);
  std::string text = cg::query::render_model_summary(a, "", "");
  EXPECT_NE(text.find("Total params: unknown (+ 12 parameters of symbolic shape)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[cfg.vocab_size, cfg.hidden_size]"), std::string::npos) << text;
  EXPECT_NE(text.find("lm_head (Linear) [conditional]"), std::string::npos) << text;
  EXPECT_NE(text.find("pass --config"), std::string::npos);
}

TEST(Summary, DepthFoldsDeeperRowsIntoTheirAncestor) {
  auto a = analyze(true);
  auto all = cg::query::build_summary(a.ir, "F32");
  auto top = cg::query::build_summary(a.ir, "F32", 1);
  EXPECT_LT(top.rows.size(), all.rows.size());
  for (const auto& r : top.rows)
    EXPECT_LE(r.depth, 2);
  EXPECT_EQ(top.totals.total, all.totals.total);
}

TEST(Summary, TorchDtypeNames) {
  EXPECT_EQ(cg::query::dtype_from_torch("bfloat16"), "BF16");
  EXPECT_EQ(cg::query::dtype_from_torch("float32"), "F32");
  EXPECT_EQ(cg::query::dtype_bytes("BF16"), 2u);
  EXPECT_EQ(cg::query::dtype_bytes("nonsense"), 0u);
}

}  // namespace
