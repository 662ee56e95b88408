// Verification against real published checkpoints' key sets (../shared/data/weight-maps/), with
// hand-written inventories of the matching candle-transformers models under those configs. The
// key lists are test data from public repositories and are read in place, never copied here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>

#include "checkpoint/verify.hpp"
#include "checkpoint_test_util.hpp"
#include "util/atomic_file.hpp"
#include "util/json_writer.hpp"

namespace cg::checkpoint {
namespace {

using ::testing::Each;
using ::testing::StartsWith;

struct WeightMap {
  Checkpoint checkpoint;
  std::size_t keys = 0;
};

// Loads a key set as an index whose shards are absent: verification by name, as for a
// downloaded index.json without its multi-GB shards.
std::optional<WeightMap> weight_map(const std::string& file) {
  const auto path =
      std::filesystem::path(CG_SOURCE_DIR) / ".." / "shared" / "data" / "weight-maps" / file;
  if (!std::filesystem::exists(path)) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const auto text = simdjson::padded_string(read_file(path));
  if (parser.parse(text).get(doc)) return std::nullopt;
  JsonWriter w(0);
  w.begin_object().key("weight_map").begin_object();
  std::size_t n = 0;
  for (auto k : doc["keys"].get_array()) {
    w.field(std::string_view(k), "absent.safetensors");
    ++n;
  }
  w.end_object().end_object();
  WeightMap m;
  m.keys = n;
  m.checkpoint = load_index(testing::scratch_dir() / "model.safetensors.index.json", w.str());
  return m;
}

#define LOAD_OR_SKIP(var, file)                                                         \
  auto var##_opt = weight_map(file);                                                    \
  if (!var##_opt) GTEST_SKIP() << "../shared/data/weight-maps/" file " is absent here"; \
  auto& var = *var##_opt

ExpectedParameter p(std::string key, std::vector<std::uint64_t> shape,
                    std::vector<FamilyBound> bounds = {}, Certainty c = Certainty::proven) {
  ExpectedParameter e;
  e.id = "vb:" + key;
  e.builder_root = "vb";
  e.key = std::move(key);
  e.shape = std::move(shape);
  e.bounds = std::move(bounds);
  e.certainty = c;
  if (c != Certainty::proven) e.reason = "cfg.attention_bias";
  return e;
}

std::uint64_t claimed(const VerifyReport& r) {
  std::uint64_t n = 0;
  for (const auto& m : r.matched)
    n += m.count;
  return n;
}

// candle-transformers models/qwen2.rs ModelForCausalLM::new under cogito-v1-preview-qwen-14B's
// config: hidden 5120, 40 heads (head_dim 128), 8 kv heads, intermediate 13824, 48 layers, untied.
std::vector<ExpectedParameter> qwen2_inventory(std::uint64_t layers) {
  const std::vector<FamilyBound> L = {{"i", layers}};
  const std::string a = "model.layers.{i}.self_attn.", m = "model.layers.{i}.mlp.";
  return {
      p("model.embed_tokens.weight", {151665, 5120}),
      p(a + "q_proj.weight", {5120, 5120}, L),
      p(a + "q_proj.bias", {5120}, L),
      p(a + "k_proj.weight", {1024, 5120}, L),
      p(a + "k_proj.bias", {1024}, L),
      p(a + "v_proj.weight", {1024, 5120}, L),
      p(a + "v_proj.bias", {1024}, L),
      p(a + "o_proj.weight", {5120, 5120}, L),
      p(m + "gate_proj.weight", {13824, 5120}, L),
      p(m + "up_proj.weight", {13824, 5120}, L),
      p(m + "down_proj.weight", {5120, 13824}, L),
      p("model.layers.{i}.input_layernorm.weight", {5120}, L),
      p("model.layers.{i}.post_attention_layernorm.weight", {5120}, L),
      p("model.norm.weight", {5120}),
      p("lm_head.weight", {151665, 5120}),  // tie_word_embeddings = false
  };
}

TEST(WeightMaps, Qwen2ReadsEveryKey) {
  LOAD_OR_SKIP(m, "qwen2__cogito-v1-preview-qwen-14B.json");
  const auto r = verify(qwen2_inventory(48), m.checkpoint);
  EXPECT_TRUE(r.will_load) << report_text(r);
  EXPECT_EQ(r.matched.size(), 15u);
  EXPECT_EQ(claimed(r), m.keys);
  EXPECT_EQ(m.keys, 579u);
  EXPECT_TRUE(r.unclaimed.empty());
  EXPECT_TRUE(r.missing.empty());
  EXPECT_EQ(r.name_only_tensors, m.keys);
}

TEST(WeightMaps, Qwen2WithAWrongLayerCountFails) {
  LOAD_OR_SKIP(m, "qwen2__cogito-v1-preview-qwen-14B.json");
  auto r = verify(qwen2_inventory(49), m.checkpoint);
  EXPECT_FALSE(r.will_load);
  EXPECT_EQ(r.missing.size(), 12u);  // every layer-48 member of the 12 families
  EXPECT_THAT(r.missing[0].key, StartsWith("model.layers.48."));
  EXPECT_EQ(r.family_mismatches.size(), 12u);

  r = verify(qwen2_inventory(47), m.checkpoint);
  EXPECT_TRUE(r.will_load);            // extra layers are not read
  EXPECT_EQ(r.unclaimed.size(), 12u);  // layer 47's tensors
  EXPECT_THAT(r.unclaimed, Each(StartsWith("model.layers.47.")));
}

TEST(WeightMaps, Qwen2WithoutBiasesLeavesThemUnclaimed) {
  LOAD_OR_SKIP(m, "qwen2__cogito-v1-preview-qwen-14B.json");
  auto inv = qwen2_inventory(48);
  std::erase_if(inv, [](const ExpectedParameter& e) { return e.key.ends_with("_proj.bias"); });
  const auto r = verify(inv, m.checkpoint);
  EXPECT_TRUE(r.will_load);
  EXPECT_EQ(r.unclaimed.size(), 3u * 48u);
}

// models/mixtral.rs Model::new: 32 layers, 8 local experts each (w1, w2, w3), a router gate.
TEST(WeightMaps, MixtralReadsEveryKeyIncludingExperts) {
  LOAD_OR_SKIP(m, "mixtral__dolphin-2.5-mixtral-8x7b.json");
  const std::vector<FamilyBound> L = {{"i", 32}}, LE = {{"i", 32}, {"j", 8}};
  const std::string l = "model.layers.{i}.";
  std::vector<ExpectedParameter> inv = {
      p("model.embed_tokens.weight", {32002, 4096}),
      p(l + "self_attn.q_proj.weight", {4096, 4096}, L),
      p(l + "self_attn.k_proj.weight", {1024, 4096}, L),
      p(l + "self_attn.v_proj.weight", {1024, 4096}, L),
      p(l + "self_attn.o_proj.weight", {4096, 4096}, L),
      p(l + "block_sparse_moe.gate.weight", {8, 4096}, L),
      p(l + "block_sparse_moe.experts.{j}.w1.weight", {14336, 4096}, LE),
      p(l + "block_sparse_moe.experts.{j}.w2.weight", {4096, 14336}, LE),
      p(l + "block_sparse_moe.experts.{j}.w3.weight", {14336, 4096}, LE),
      p(l + "input_layernorm.weight", {4096}, L),
      p(l + "post_attention_layernorm.weight", {4096}, L),
      p("model.norm.weight", {4096}),
      p("lm_head.weight", {32002, 4096}),
  };
  auto r = verify(inv, m.checkpoint);
  EXPECT_TRUE(r.will_load) << report_text(r);
  EXPECT_EQ(claimed(r), m.keys);
  EXPECT_EQ(m.keys, 995u);
  EXPECT_TRUE(r.unclaimed.empty());

  inv[6].bounds = {{"i", 32}, {"j", 9}};  // a 9-expert config: one w1 per layer is missing
  r = verify(inv, m.checkpoint);
  EXPECT_FALSE(r.will_load);
  EXPECT_EQ(r.missing.size(), 32u);
  EXPECT_EQ(r.missing[0].key, "model.layers.0.block_sparse_moe.experts.8.w1.weight");
}

// models/gemma3.rs Model::new under vb.pp("language_model"): the text decoder only. Embeddings are
// tied (no lm_head), attention biases are conditional on cfg.attention_bias (false here).
TEST(WeightMaps, Gemma3TextModelUnderPrefixLeavesTheVisionTowerUnclaimed) {
  LOAD_OR_SKIP(m, "gemma3__medgemma-27b-it-multimodal.json");
  const std::vector<FamilyBound> L = {{"i", 62}};
  const std::string a = "model.layers.{i}.self_attn.", l = "model.layers.{i}.";
  std::vector<ExpectedParameter> inv = {
      p("model.embed_tokens.weight", {}),
      p(a + "q_proj.weight", {}, L),
      p(a + "k_proj.weight", {}, L),
      p(a + "v_proj.weight", {}, L),
      p(a + "o_proj.weight", {}, L),
      p(a + "q_proj.bias", {}, L, Certainty::conditional),
      p(a + "q_norm.weight", {}, L),
      p(a + "k_norm.weight", {}, L),
      p(l + "mlp.gate_proj.weight", {}, L),
      p(l + "mlp.up_proj.weight", {}, L),
      p(l + "mlp.down_proj.weight", {}, L),
      p(l + "input_layernorm.weight", {}, L),
      p(l + "post_attention_layernorm.weight", {}, L),
      p(l + "pre_feedforward_layernorm.weight", {}, L),
      p(l + "post_feedforward_layernorm.weight", {}, L),
      p("model.norm.weight", {}),
  };
  for (auto& e : inv)
    e.shape.reset();
  auto r = verify(inv, m.checkpoint, {"", "language_model"});
  EXPECT_TRUE(r.will_load) << report_text(r);
  EXPECT_EQ(m.keys, 1247u);
  EXPECT_EQ(r.unclaimed.size(), 439u);
  for (const auto& u : r.unclaimed) {
    EXPECT_TRUE(u.starts_with("vision_tower.") || u.starts_with("multi_modal_projector.")) << u;
  }
  EXPECT_EQ(r.missing_count(Certainty::conditional), 62u);  // q_proj.bias, expected absent
  EXPECT_EQ(r.missing_count(Certainty::proven), 0u);

  // Without the prefix nothing matches: the verdict says why.
  r = verify(inv, m.checkpoint);
  EXPECT_FALSE(r.will_load);
  EXPECT_EQ(r.unclaimed.size(), m.keys);
}

}  // namespace
}  // namespace cg::checkpoint
