// Reader bounds of config.json binding: the 16 MiB size cap and the 16-level nesting cap each end
// in something the user can read (an InputError naming the file, a symbolic value saying why),
// never a crash or an unbounded parse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/config_values.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

using ::testing::HasSubstr;

namespace {

TEST(ConfigBounds, ConfigOver16MiBIsRefusedNamingTheFile) {
  std::string big = "{\"pad\": \"" + std::string((16u << 20) + 1, 'x') + "\"}";
  try {
    (void)cg::analysis::parse_config_values(big, "big/config.json");
    FAIL() << "a config over 16 MiB was accepted";
  } catch (const cg::InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("big/config.json"));
    EXPECT_THAT(e.what(), HasSubstr("16 MiB"));
  }
  auto path = cg_test::scratch_path("cg-bounds-config.json");
  { std::ofstream(path, std::ios::binary) << big; }
  EXPECT_THROW((void)cg::analysis::read_config_values(path), cg::InputError);
  std::filesystem::remove(path);
}

TEST(ConfigBounds, NestingDeeperThan16LevelsStaysSymbolicWithAReason) {
  std::string json, close;
  for (int i = 0; i < 40; ++i) {
    json += "{\"a\": ";
    close += "}";
  }
  json += "1" + close;
  auto values = cg::analysis::parse_config_values(json, "deep/config.json");
  ASSERT_EQ(values.fields.size(), 1u);
  const auto& [key, value] = *values.fields.begin();
  EXPECT_EQ(key.size(), 16u * 2 - 1);  // "a.a.…" cut at 16 levels
  EXPECT_FALSE(value.concrete());
}

}  // namespace
