#include "analysis/config_values.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace {

using cg::analysis::SymValue;

TEST(ConfigValues, FlattensTheExampleConfig) {
  auto c = cg::analysis::read_config_values(std::string(CG_SOURCE_DIR) +
                                            "/examples/tiny-llama/config.json");
  ASSERT_NE(c.find("hidden_size"), nullptr);
  EXPECT_EQ(c.find("hidden_size")->integer, 256);
  EXPECT_DOUBLE_EQ(c.find("rms_norm_eps")->real, 1e-5);
  EXPECT_TRUE(c.find("tie_word_embeddings")->boolean);
  EXPECT_EQ(c.find("rope_theta"), nullptr) << "absent fields are absent, not zero";
}

TEST(ConfigValues, NestedNullsAndArrays) {
  auto c = cg::analysis::parse_config_values(
      R"({"rope_scaling":{"factor":8.0,"type":"llama3"},"head_dim":null,"eos":[1,2]})", "c.json");
  EXPECT_DOUBLE_EQ(c.find("rope_scaling.factor")->real, 8.0);
  EXPECT_EQ(c.find("rope_scaling.type")->text, "llama3");
  EXPECT_EQ(c.find("head_dim")->kind, SymValue::Kind::none);
  EXPECT_EQ(c.find("eos")->kind, SymValue::Kind::symbolic);
  EXPECT_EQ(c.find("eos")->reason, "array of 2 elements");
}

TEST(ConfigValues, BadInputNamesTheFile) {
  try {
    cg::analysis::parse_config_values("{\"a\": ", "bad.json");
    FAIL() << "expected an error";
  } catch (const cg::InputError& e) {
    EXPECT_EQ(e.where(), "bad.json");
    EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos);
  }
  EXPECT_THROW(cg::analysis::parse_config_values("[1,2]", "arr.json"), cg::InputError);
  EXPECT_THROW(cg::analysis::read_config_values("/nonexistent/config.json"), cg::InputError);
}

}  // namespace
