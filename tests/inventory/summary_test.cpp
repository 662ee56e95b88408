// `candle-graph summary` on the bundled example: the torchinfo-style table a user reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"

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

  std::string text = cg::query::render_model_summary(a, kCrate + "/config.json", {.dtype = "BF16"});
  EXPECT_NE(text.find("Total params: 3,950,848"), std::string::npos) << text;
  EXPECT_NE(text.find("Params size (MB): 7.90 at BF16"), std::string::npos) << text;
  // Mult-adds per call from the dataflow (batch and sequence stay symbolic): 4 layers of
  // q,o (256x256), k,v (128x256) and three 688x256 projections.
  EXPECT_NE(text.find("b*seq_len*65,536"), std::string::npos) << text;
  // Every operation counted, the attention's matmuls in the input's names (first call).
  EXPECT_NE(text.find("Mult-adds per forward pass: b*1,048,576 + b*seq_len*2,899,968 + "
                      "b*seq_len*seq_len*2,048"),
            std::string::npos)
      << text;
  // Construction order, as torchinfo lists registration order: attention before the MLP.
  EXPECT_LT(text.find("self_attn (Attention)"), text.find("mlp (Mlp)")) << text;
  // Training memory as `accelerate estimate-memory` gives it for Adam: four times the weights.
  EXPECT_NE(text.find("Training with AdamW (MB): 31.61 (weights + gradients + 2 moments"),
            std::string::npos)
      << text;
}

TEST(Summary, InputShapeMakesMultAddsNumbers) {
  auto a = analyze(true);
  cg::query::SummaryOptions opts;
  opts.input_dims = cg::query::parse_input_shape("b=2,seq_len=1024");
  std::string text = cg::query::render_model_summary(a, kCrate + "/config.json", opts);
  // q_proj: 2 * 1024 * 65536; the projections and MLPs: 2 * 1024 * 2,899,968 = 5,939,134,464;
  // the tied lm_head on the last position: 2 * 4096 * 256 = 2,097,152; the attention's two
  // matmuls on the first call (empty cache): 4 layers * 2 * 8 heads * 1024 * 1024 * 32 * 2 =
  // 4,294,967,296. In all 10,236,198,912, and no "at least": every operation is counted.
  EXPECT_NE(text.find("134,217,728"), std::string::npos) << text;
  EXPECT_NE(text.find("Mult-adds per forward pass: 10,236,198,912\n"), std::string::npos) << text;
  // Only one dimension given: the other stays a symbol (1024 * 2,899,968 + 1,048,576 +
  // 2,147,483,648 per sequence).
  opts.input_dims = cg::query::parse_input_shape("seq_len=1024");
  text = cg::query::render_model_summary(a, kCrate + "/config.json", opts);
  EXPECT_NE(text.find("b*5,118,099,456"), std::string::npos) << text;
  // A name the forward pass is not written in is refused, not silently ignored.
  opts.input_dims = cg::query::parse_input_shape("T=1024");
  EXPECT_THROW(cg::query::render_model_summary(a, kCrate + "/config.json", opts), cg::InputError);
}

TEST(Summary, BadInputShapeIsRefusedWithAnExample) {
  for (const char* bad : {"b", "b=", "b=0", "b=-1", "b=1.5", "=3", "1x=2", "b=1,,t=2"}) {
    try {
      cg::query::parse_input_shape(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const cg::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("e.g. b=1,t=2048"), std::string::npos) << e.what();
    }
  }
}

TEST(Summary, WithoutConfigCountsAreUnknownNotZero) {
  auto a = analyze(false);
  std::string text =
      cg::query::render_model_summary(a, "", {.dtype = "", .weights = true, .width = 0});
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

// tiny-llama's config.json with `num_hidden_layers` replaced, in a file of its own.
std::string config_with_layers(const std::string& layers) {
  std::ifstream in(kCrate + "/config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text = std::regex_replace(text, std::regex("\"num_hidden_layers\": 4,"),
                            "\"num_hidden_layers\": " + layers + ",");
  auto path = std::filesystem::temp_directory_path() /
              ("cg-summary-layers-" + layers + "-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

cg::pipeline::Analysis analyze_with(const std::string& config) {
  cg::pipeline::Options o;
  o.path = kCrate;
  o.config = config;
  return cg::pipeline::analyze(o);
}

// One layer holds 725,504 parameters; embedding (tied head) and final norm 1,048,832.
constexpr std::uint64_t kLayer = 725504, kRest = 1048832;

// Over the expansion bound the family stays one template row, but every total counts all of it and
// the row says it was not expanded (it used to count one layer: 1,774,336).
TEST(Summary, FamilyOverTheExpansionBoundMultipliesInTotals) {
  std::string cfg = config_with_layers("1000000000");
  auto a = analyze_with(cfg);
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(kRest + 1000000000ull * kLayer));
  EXPECT_TRUE(m.totals.lower_bound.empty()) << m.totals.lower_bound;
  EXPECT_EQ(m.rows[0].params, m.totals.total);
  std::string text = cg::query::render_model_summary(a, cfg, {.dtype = "", .width = 0});
  EXPECT_NE(text.find("Total params: 725,504,001,048,832\n"), std::string::npos) << text;
  EXPECT_NE(text.find("model.layers.{layer_idx} × 1,000,000,000 (Block) [not expanded: over the "
                      "expansion bound]"),
            std::string::npos)
      << text;
  std::filesystem::remove(cfg);
}

// 4,096 layers fit the loop bound but not the 20,000-instance bound: the family is kept whole as a
// counted template instead of being cut after layer 1,666 (which gave 1,209,869,568).
TEST(Summary, FamilyOverTheInstanceBoundIsNotCutSilently) {
  std::string cfg = config_with_layers("4096");
  auto a = analyze_with(cfg);
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(2972713216ull));
  EXPECT_EQ(kRest + 4096 * kLayer, 2972713216ull);
  EXPECT_TRUE(m.totals.lower_bound.empty()) << m.totals.lower_bound;
  std::string text = cg::query::render_model_summary(a, cfg, {.dtype = "", .width = 0});
  EXPECT_NE(text.find("× 4,096 (Block) [not expanded: over the instance bound]"), std::string::npos)
      << text;
  // Nothing half-expanded: no layer instance of the family is listed.
  EXPECT_EQ(text.find("model.layers.0 (Block)"), std::string::npos) << text;
  std::filesystem::remove(cfg);
}

// A total past 64 bits is shown as an overflow, never a wrapped number.
// A count past 2^64 is no model: the config check refuses it (exit 2) naming the key, instead of
// a summary total "over 2^64" (pipeline/config_check.hpp, #18).
TEST(Summary, TotalPast64BitsIsAnInputError) {
  std::string cfg = config_with_layers("1000000000000000");
  try {
    analyze_with(cfg);
    ADD_FAILURE() << "expected an input error";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("`num_hidden_layers` = 1000000000000000"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(cfg);
}

// A crate RmsNorm wrapping candle_nn's under the same prefix is one row, not itself nested in
// itself with its full path.
TEST(Summary, WrapperUnderTheSamePrefixFoldsIntoItsRow) {
  const std::string crate = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/wrapped_norm";
  cg::pipeline::Options o;
  o.path = crate;
  o.config = crate + "/config.json";
  auto a = cg::pipeline::analyze(o);
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(3 * (64 + 64 * 64 + 16) + 64 + 4));
  for (std::size_t i = 0; i < m.rows.size(); ++i) {
    EXPECT_EQ(m.rows[i].name.find("layers.0.norm"), std::string::npos) << m.rows[i].name;
    if (m.rows[i].type == "RmsNorm") {
      ASSERT_LT(i + 1, m.rows.size());
      EXPECT_EQ(m.rows[i + 1].name, "weight");  // the leaf directly, no inner RmsNorm row
      EXPECT_EQ(m.rows[i + 1].depth, m.rows[i].depth + 1);
      EXPECT_EQ(m.rows[i].params, std::optional<std::uint64_t>(64));
    }
  }
}

TEST(Summary, TorchDtypeNames) {
  EXPECT_EQ(cg::query::dtype_from_torch("bfloat16"), "BF16");
  EXPECT_EQ(cg::query::dtype_from_torch("float32"), "F32");
  EXPECT_EQ(cg::query::dtype_bytes("BF16"), 2u);
  EXPECT_EQ(cg::query::dtype_bytes("nonsense"), 0u);
}

}  // namespace
