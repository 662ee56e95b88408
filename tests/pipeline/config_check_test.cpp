// Config values checked after the inventory (issues #18, #21): refused values are input errors
// naming the key, the file and the parameters they feed; fields the config cannot bind are
// warnings. Fixture: tests/fixtures/crates/config_values (and config_not_deserialize).
#include "pipeline/config_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline/pipeline.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace {

using namespace cg;
namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/" + name;
}

// config_values' config.json with one field's value replaced, written to a temp file.
std::string config_with(const std::string& field, const std::string& value) {
  std::string json =
      "{\"vocab_size\": 16, \"hidden_size\": 8, \"num_hidden_layers\": 2, "
      "\"proj_size\": \"4\"}";
  auto at = json.find("\"" + field + "\": ");
  auto start = at + field.size() + 4;
  json.replace(start, json.find_first_of(",}", start) - start, value);
  fs::path dir = cg_test::scratch_path("cg-config-check-test");
  fs::create_directories(dir);
  fs::path p = dir / (field + "_" + std::to_string(value.size()) + ".json");
  std::ofstream(p) << json;
  return p.string();
}

pipeline::Analysis run(const std::string& crate, const std::string& config) {
  pipeline::Options o;
  o.path = fixture(crate);
  o.config = config;
  return pipeline::analyze(o);
}

std::string error_of(const std::string& config) {
  try {
    run("config_values", config);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::uint64_t known_total(const ir::ModelIr& ir, bool* templates) {
  std::uint64_t n = 0;
  for (const auto& p : ir.parameters)
    if (p.shape) {
      std::uint64_t e = 1;
      for (auto d : *p.shape)
        e *= d;
      n += e;
    }
  for (const auto& m : ir.modules)
    if (m.repeat && m.repeat->find("not expanded") != std::string::npos) *templates = true;
  return n;
}

TEST(ConfigCheck, HugeLayerCountIsATemplateNotAnError) {
  // 1e9 layers: the family is kept as a template (the summary multiplies it; e2e checks that).
  auto a = run("config_values", config_with("num_hidden_layers", "1000000000"));
  bool templates = false;
  known_total(a.ir, &templates);
  EXPECT_TRUE(templates);
}

TEST(ConfigCheck, NegativeDimensionNamesKeyFileAndParameter) {
  std::string path = config_with("hidden_size", "-5");
  std::string e = error_of(path);
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("`hidden_size` is -5: a negative value"), std::string::npos) << e;
  EXPECT_NE(e.find("`embed.weight`"), std::string::npos) << e;
  EXPECT_NE(e.find("src/lib.rs:"), std::string::npos) << e;
}

TEST(ConfigCheck, FractionalDimensionIsAnError) {
  std::string e = error_of(config_with("hidden_size", "2.5"));
  EXPECT_NE(e.find("`hidden_size` is 2.5: a number with a fraction"), std::string::npos) << e;
}

TEST(ConfigCheck, NegativeLayerCountNamesTheFamily) {
  std::string e = error_of(config_with("num_hidden_layers", "-3"));
  EXPECT_NE(e.find("`num_hidden_layers` is -3"), std::string::npos) << e;
  EXPECT_NE(e.find("the count of family `layers.{i}`"), std::string::npos) << e;
}

TEST(ConfigCheck, AbsurdTensorAndOverflowingCountAreErrors) {
  std::string e = error_of(config_with("vocab_size", "1000000000000"));
  EXPECT_NE(e.find("`embed.weight` gets shape [1000000000000, 8]"), std::string::npos) << e;
  EXPECT_NE(e.find("over 2^40"), std::string::npos) << e;
  EXPECT_NE(e.find("`vocab_size` = 1000000000000"), std::string::npos) << e;
  e = error_of(config_with("num_hidden_layers", "1000000000000000000"));
  EXPECT_NE(e.find("`num_hidden_layers` = 1000000000000000000"), std::string::npos) << e;
  EXPECT_NE(e.find("past 2^64"), std::string::npos) << e;
}

TEST(ConfigCheck, UnboundFieldsAreWarnings) {
  auto a = run("config_values", fixture("config_values") + "/config.json");
  std::string text = pipeline::config_warning_lines(a.ir);
  // A `#[serde(skip)]` sub-config's field, and one read through a custom deserializer.
  EXPECT_NE(text.find("reads `cfg.vision.patch` but"), std::string::npos) << text;
  EXPECT_NE(text.find("`patch.weight`"), std::string::npos) << text;
  EXPECT_NE(text.find("deserialize_with = \"dim_from_string\""), std::string::npos) << text;
  // The fields it binds say nothing.
  EXPECT_EQ(text.find("hidden_size"), std::string::npos) << text;
}

TEST(ConfigCheck, ConfigThatIsNotDeserializeSaysSo) {
  auto a = run("config_not_deserialize", fixture("config_not_deserialize") + "/config.json");
  std::string text = pipeline::config_warning_lines(a.ir);
  EXPECT_NE(text.find("is not bound to `Config`"), std::string::npos) << text;
  EXPECT_NE(text.find("binds none of the 1 config fields"), std::string::npos) << text;
  EXPECT_NE(text.find("`cfg.hidden_size`"), std::string::npos) << text;
}

TEST(ConfigCheck, WithoutConfigNothingIsChecked) {
  auto a = run("config_values", "");
  EXPECT_EQ(pipeline::config_warning_lines(a.ir), "");
}

// config_refusals' config.json with `field` set to `value` (JSON text).
std::string refusal_error(const std::string& field, const std::string& value) {
  std::string json =
      "{\"vocab_size\": 100, \"pad_multiple\": 64, \"hidden_size\": 32, \"num_heads\": 4, "
      "\"num_layers\": 2, \"hidden_act\": \"gelu_pytorch_tanh\", \"norm\": \"rms_norm\", "
      "\"pooling\": \"mean\"}";
  auto at = json.find("\"" + field + "\": ");
  auto start = at + field.size() + 4;
  json.replace(start, json.find_first_of(",}", start) - start, value);
  fs::path dir = cg_test::scratch_path("cg-config-refusals-test");
  fs::create_directories(dir);
  fs::path p = dir / (field + ".json");
  std::ofstream(p) << json;
  try {
    run("config_refusals", p.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigCheck, TheBundledRefusalsConfigIsAccepted) {
  auto a = run("config_refusals", fixture("config_refusals") + "/config.json");
  std::size_t shaped = 0;
  for (const auto& p : a.ir.parameters)
    shaped += p.shape ? 1u : 0u;
  EXPECT_EQ(shaped, 3u) << "embed and two q_proj weights, all concrete";
}

TEST(ConfigCheck, ZeroDivisorIsAnErrorNamingTheKeyAndLine) {
  // `hidden_size / num_heads` with num_heads 0: Rust panics in the constructor.
  std::string e = refusal_error("num_heads", "0");
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
  EXPECT_NE(e.find("`num_heads` = 0"), std::string::npos) << e;
  EXPECT_NE(e.find("layers.0.q_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("src/lib.rs:"), std::string::npos) << e;
  // `vocab_size.div_ceil(pad_multiple)` with pad_multiple 0.
  e = refusal_error("pad_multiple", "0");
  EXPECT_NE(e.find("`embed.weight`"), std::string::npos) << e;
  EXPECT_NE(e.find("`pad_multiple` = 0"), std::string::npos) << e;
}

TEST(ConfigCheck, ZeroDimensionFromTheConfigIsAnError) {
  std::string e = refusal_error("hidden_size", "0");
  EXPECT_NE(e.find("an empty dimension, from `hidden_size` = 0"), std::string::npos) << e;
  // A count of 0 is a model with no layers, not a refusal.
  EXPECT_EQ(refusal_error("num_layers", "0"), "");
}

TEST(ConfigCheck, EnumNameSerdeDoesNotKnowIsAnError) {
  // candle-nn's Activation (lowercase names and three aliases).
  std::string e = refusal_error("hidden_act", "\"gelu_fast\"");
  EXPECT_NE(e.find("`hidden_act` is \"gelu_fast\": not a variant serde accepts"), std::string::npos)
      << e;
  EXPECT_NE(e.find("\"gelu_pytorch_tanh\""), std::string::npos) << e;
  EXPECT_EQ(refusal_error("hidden_act", "\"silu\""), "");
  EXPECT_NE(refusal_error("hidden_act", "\"Silu\""), "") << "rename_all = lowercase";
  // A crate-local enum: snake_case names, a rename, an alias; a variant with a value takes no
  // bare string.
  e = refusal_error("norm", "\"RmsNorm\"");
  EXPECT_NE(e.find("(one of \"rms_norm\", \"layer_norm\", \"ln\", \"none\")"), std::string::npos)
      << e;
  EXPECT_NE(e.find("Config.norm"), std::string::npos) << e;
  EXPECT_EQ(refusal_error("norm", "\"ln\""), "");
  EXPECT_EQ(refusal_error("norm", "\"none\""), "");
  EXPECT_NE(refusal_error("norm", "\"scaled\""), "");
  // `#[serde(other)]` takes any name.
  EXPECT_EQ(refusal_error("pooling", "\"max\""), "");
}

}  // namespace
