// A model whose fields a multimodal config.json nests under one object (`text_config`): without
// `--config-key` every field is missing and the warnings say where they are; with it the model
// binds as if the object were the file. Fixture: tests/fixtures/crates/config_values.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline/config_check.hpp"
#include "pipeline/pipeline.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace {

using namespace cg;
namespace fs = std::filesystem;

const char* kFields =
    R"({"vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2, "proj_size": "4"})";

std::string write_config(const std::string& name, const std::string& json) {
  fs::path dir = cg_test::scratch_path("cg-config-key-test");
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << json;
  return p.string();
}

// {"architectures": [..], "text_config": {fields}, "vision_config": {"patch_size": 14}}
std::string nested_config() {
  return write_config("nested.json", std::string(R"({"architectures": ["X"], "text_config": )") +
                                         kFields + R"(, "vision_config": {"patch_size": 14}})");
}

pipeline::Analysis run(const std::string& config, const std::string& key, bool partial = false) {
  pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/config_values";
  o.config = config;
  o.config_key = key;
  o.partial_config = partial;
  return pipeline::analyze(o);
}

std::uint64_t concrete_params(const ir::ModelIr& ir) {
  std::uint64_t n = 0;
  for (const auto& p : ir.parameters) {
    if (!p.shape) continue;
    std::uint64_t e = 1;
    for (auto d : *p.shape)
      e *= d;
    n += e;
  }
  return n;
}

std::string input_error(const std::string& config, const std::string& key) {
  try {
    run(config, key);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Bound at its top level, the file lacks every field the model requires: serde would refuse it,
// so it is an input error naming the fields and the object that holds them.
TEST(ConfigKey, ANestedConfigBoundAtTheTopIsRefusedNamingTheKey) {
  const std::string e = input_error(nested_config(), "");
  EXPECT_NE(e.find("lacks 4 field(s) the model's config type requires"), std::string::npos) << e;
  EXPECT_NE(e.find("`hidden_size`, `num_hidden_layers`, `proj_size`, `vocab_size`"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("bind it with --config-key text_config"), std::string::npos) << e;
}

// With --partial-config the same file binds what it can, and the warnings say where the rest is.
TEST(ConfigKey, NestedFieldsAreNamedFirstAmongTheWarnings) {
  auto a = run(nested_config(), "", true);
  std::string text = pipeline::config_warning_lines(a.ir);
  // The suggestion leads, before each missing field's own warning.
  EXPECT_EQ(text.find("warning: "), text.find("warning: " + nested_config()));
  auto hint = text.find("in its `text_config` object: bind it with --config-key text_config");
  ASSERT_NE(hint, std::string::npos) << text;
  EXPECT_LT(hint, text.find("has no field `hidden_size`")) << text;
  EXPECT_EQ(concrete_params(a.ir), 0u);
}

TEST(ConfigKey, SelectedObjectBindsLikeATopLevelConfig) {
  auto flat = run(write_config("flat.json", kFields), "");
  auto nested = run(nested_config(), "text_config");
  // embed 16x8 + 2 blocks of 8x8+8 + proj 8x4+4: the same count either way.
  EXPECT_EQ(concrete_params(nested.ir), concrete_params(flat.ir));
  EXPECT_GE(concrete_params(nested.ir), 16u * 8 + 2 * (8 * 8 + 8));
  std::string text = pipeline::config_warning_lines(nested.ir);
  EXPECT_EQ(text.find("--config-key"), std::string::npos) << text;
  EXPECT_EQ(text.find("has no field `hidden_size`"), std::string::npos) << text;
}

TEST(ConfigKey, ObjectThatIsNotThereNamesTheFileAndItsObjects) {
  std::string path = nested_config();
  std::string e = input_error(path, "vision");
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("--config-key vision"), std::string::npos) << e;
  EXPECT_NE(e.find("`text_config`, `vision_config`"), std::string::npos) << e;
  // A scalar is not an object either.
  EXPECT_NE(input_error(path, "architectures").find("non-empty JSON object"), std::string::npos);
}

// serde's derived Deserialize refuses a field written twice: which value was meant is not a guess.
TEST(ConfigKey, AFieldWrittenTwiceIsRefused) {
  const std::string twice = write_config(
      "twice.json",
      R"({"vocab_size": 16, "hidden_size": 8, "hidden_size": 32, "num_hidden_layers": 2, "proj_size": "4"})");
  const std::string e = input_error(twice, "");
  EXPECT_NE(e.find(twice), std::string::npos) << e;
  EXPECT_NE(e.find("`hidden_size` is written twice"), std::string::npos) << e;
  // Unread keys written twice are none of the model's business.
  const std::string unread = write_config(
      "unread.json",
      R"({"vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2, "proj_size": "4", "note": 1, "note": 2})");
  EXPECT_EQ(input_error(unread, ""), "");
}

TEST(ConfigKey, KeyWithoutConfigIsAUsageError) {
  std::string e = input_error("", "text_config");
  EXPECT_NE(e.find("expected --config FILE"), std::string::npos) << e;
}

}  // namespace
