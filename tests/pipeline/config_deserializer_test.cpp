// A config field built by `#[serde(deserialize_with = "f")]` from a string, T5's idiom
// (`feed_forward_proj: "gated-gelu"`): the arm of `f`'s match that the config's value selects
// gives the struct's fields, so the branch it decides loads exactly one feed-forward variant.
// Fixture: tests/fixtures/crates/config_deserializer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "pipeline/config_check.hpp"
#include "pipeline/pipeline.hpp"
#include "scratch.hpp"

namespace {

using namespace cg;
namespace fs = std::filesystem;

pipeline::Analysis run_with(const std::string& proj_json) {
  fs::path dir = cg_test::scratch_path("cg-config-deserializer-test");
  fs::create_directories(dir);
  fs::path p = dir / ("c" + std::to_string(std::hash<std::string>{}(proj_json)) + ".json");
  std::ofstream(p) << R"({"d_model": 4, "d_ff": 8, "feed_forward_proj": )" << proj_json << "}";
  pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/config_deserializer";
  o.config = p.string();
  return pipeline::analyze(o);
}

std::set<std::string> keys(const ir::ModelIr& ir) {
  std::set<std::string> out;
  for (const auto& p : ir.parameters)
    out.insert(p.key);
  return out;
}

TEST(ConfigDeserializer, GatedNameLoadsBothGateProjections) {
  auto a = run_with(R"("gated-gelu")");
  EXPECT_EQ(keys(a.ir), (std::set<std::string>{"wi_0.weight", "wi_1.weight", "wo.weight"}));
  std::string text = pipeline::config_warning_lines(a.ir);
  EXPECT_EQ(text.find("not evaluated"), std::string::npos) << text;
}

TEST(ConfigDeserializer, OrPatternAndFallbackArmAreFollowed) {
  EXPECT_EQ(keys(run_with(R"("gated-gelu-new")").ir),
            (std::set<std::string>{"wi_0.weight", "wi_1.weight", "wo.weight"}));
  // Neither gated name: the `_` arm builds an ungated struct.
  EXPECT_EQ(keys(run_with(R"("relu")").ir), (std::set<std::string>{"wi.weight", "wo.weight"}));
}

TEST(ConfigDeserializer, ValueTheDeserializerCannotReadStaysUndecidedAndSaysSo) {
  // A number is not the string the deserializer reads: no arm is chosen by us, both variants
  // stay as alternatives and the warning names the deserializer.
  auto a = run_with("3");
  EXPECT_EQ(keys(a.ir).count("wi_0.weight"), 1u);
  EXPECT_EQ(keys(a.ir).count("wi.weight"), 1u);
  std::string text = pipeline::config_warning_lines(a.ir);
  EXPECT_NE(text.find("deserialize_with = \"gating_from_name\""), std::string::npos) << text;
}

}  // namespace
