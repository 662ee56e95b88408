// Truth on real checkpoints: the key sets of published checkpoints in ../shared/data/weight-maps
// (with their config.json) against the matching candle-transformers model. Each must be predicted
// to load, every key the model requests must exist, and exactly the keys the model never reads
// must be unclaimed. Needs a candle checkout (CG_CANDLE_SRC, default /work/candle-src) and the
// shared data; the test says so and skips when either is absent (CI has neither checkout).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/ir_adapter.hpp"
#include "checkpoint/verify.hpp"
#include "pipeline/pipeline.hpp"

namespace {

namespace fs = std::filesystem;

fs::path candle_src() {
  const char* env = std::getenv("CG_CANDLE_SRC");
  return env != nullptr ? fs::path(env) : fs::path("/work/candle-src");
}

fs::path weight_maps() {
  return fs::path(CG_SOURCE_DIR) / "../shared/data/weight-maps";
}

struct Case {
  const char* file;
  const char* root;
  const char* config_key;  // "" for the whole config, else a nested object (text_config)
  const char* prefix;
  std::size_t unclaimed;
};

class WeightMaps : public ::testing::TestWithParam<Case> {};

TEST_P(WeightMaps, PredictsTheLoadAndLeavesUnclaimedOnlyUnreadKeys) {
  const Case& c = GetParam();
  fs::path crate = candle_src() / "candle-transformers";
  fs::path data = weight_maps() / c.file;
  if (!fs::exists(crate / "Cargo.toml")) GTEST_SKIP() << "no candle checkout at " << crate;
  if (!fs::exists(data)) GTEST_SKIP() << "no shared weight map at " << data;

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(data.string());
  fs::path dir = fs::temp_directory_path() / ("cg-weightmap-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream idx(dir / "model.safetensors.index.json");
    idx << "{\"metadata\":{},\"weight_map\":{";
    bool first = true;
    simdjson::dom::array keys = doc["keys"].get_array();
    for (auto k : keys) {
      idx << (first ? "" : ",") << '"' << std::string_view(k.get_string())
          << "\":\"shard.safetensors\"";
      first = false;
    }
    idx << "}}";
    simdjson::dom::element cfg = doc["config"];
    if (*c.config_key) cfg = cfg[c.config_key];
    std::ofstream(dir / "config.json") << simdjson::to_string(cfg);
  }
  cg::pipeline::Options o;
  o.path = crate.string();
  o.root = c.root;
  o.config = (dir / "config.json").string();
  // These config.json files are written for transformers, not for candle's structs: mixtral's
  // lacks `use_flash_attn` (candle-examples build that Config in code) and medgemma's text_config
  // lacks `sliding_window_pattern`, so candle's serde would refuse both (an input error without
  // --partial-config); the prediction binds what they have.
  o.partial_config = true;
  auto a = cg::pipeline::analyze(o);
  auto ckpt = cg::checkpoint::load_checkpoint(dir / "model.safetensors.index.json");
  cg::checkpoint::VerifyOptions vo;
  vo.prefix = c.prefix;
  auto rep = cg::checkpoint::verify(cg::checkpoint::inventory_from_ir(a.ir), ckpt, vo);
  fs::remove_all(dir);

  EXPECT_TRUE(rep.will_load) << cg::checkpoint::report_text(rep);
  EXPECT_EQ(rep.missing_count(cg::checkpoint::Certainty::proven), 0u);
  EXPECT_EQ(rep.missing_count(cg::checkpoint::Certainty::conditional), 0u)
      << "a bound config leaves no conditional leaf unresolved";
  EXPECT_EQ(rep.unclaimed.size(), c.unclaimed) << cg::checkpoint::report_text(rep);
  // Every parameter is concrete: families expanded to exactly the checkpoint's layer count.
  for (const auto& m : rep.matched) {
    EXPECT_FALSE(m.is_template) << m.key;
    EXPECT_EQ(m.count, 1u) << m.key;
  }
  EXPECT_EQ(rep.matched.size() + rep.unclaimed.size(), rep.checkpoint_tensors);
}

INSTANTIATE_TEST_SUITE_P(Published, WeightMaps,
                         ::testing::Values(Case{"qwen2__cogito-v1-preview-qwen-14B.json",
                                                "models::qwen2::ModelForCausalLM", "", "", 0},
                                           Case{"mixtral__dolphin-2.5-mixtral-8x7b.json",
                                                "models::mixtral::Model", "", "", 0},
                                           // A text-only Gemma-3 load under `language_model.`: the
                                           // vision tower and projector (439 keys) are never read.
                                           Case{"gemma3__medgemma-27b-it-multimodal.json",
                                                "models::gemma3::Model", "text_config",
                                                "language_model", 439}),
                         [](const auto& p) {
                           std::string n = p.param.file;
                           return n.substr(0, n.find("__"));
                         });

}  // namespace
