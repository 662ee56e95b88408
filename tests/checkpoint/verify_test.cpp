#include "checkpoint/verify.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint_test_util.hpp"
#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A checkpoint as the reader would produce it, from a fixture file written here.
Checkpoint fixture(const std::vector<TensorSpec>& tensors) {
  const auto path = testing::scratch_dir() / "model.safetensors";
  write_safetensors(path, tensors);
  return load_checkpoint(path);
}

ExpectedParameter param(std::string key, std::optional<std::vector<std::uint64_t>> shape = {},
                        Certainty c = Certainty::proven, std::string root = "vb") {
  ExpectedParameter p;
  p.id = "param:" + key;
  p.builder_root = std::move(root);
  p.key = std::move(key);
  p.shape = std::move(shape);
  p.certainty = c;
  if (c != Certainty::proven) p.reason = "if cfg.use_bias";
  return p;
}

TEST(Template, WholeSegmentsMatchOneSegment) {
  EXPECT_TRUE(match_template("model.layers.{i}.q.weight", "model.layers.12.q.weight"));
  EXPECT_FALSE(match_template("model.layers.{i}.q.weight", "model.layers.1.2.q.weight"));
  EXPECT_FALSE(match_template("model.layers.{i}.q.weight", "model.layers.q.weight"));
  EXPECT_FALSE(match_template("model.layers.{i}.q.weight", "model.layers.1.k.weight"));
}

TEST(Template, MixedSegmentsRespectLiteralFragments) {
  EXPECT_TRUE(match_template("pre_local_block_{index}.weight", "pre_local_block_12.weight"));
  EXPECT_FALSE(match_template("pre_local_block_{index}.weight", "unrelated_12.weight"));
  EXPECT_FALSE(match_template("pre_local_block_{index}.weight", "pre_local.weight"));
  EXPECT_FALSE(match_template("pre_local_block_{index}.weight", "pre_local_block_.weight"));
  EXPECT_TRUE(match_template("h{i}_x{j}.w", "h1_x22.w"));
  std::vector<std::pair<std::string, std::string>> caps;
  ASSERT_TRUE(match_template("h{i}_x{j}.w", "h1_x22.w", &caps));
  EXPECT_THAT(caps, ElementsAre(std::pair<std::string, std::string>{"i", "1"},
                                std::pair<std::string, std::string>{"j", "22"}));
  // A dotted expression inside braces is one segment.
  EXPECT_TRUE(match_template("blocks.{self.idx}.w", "blocks.3.w"));
}

TEST(Verify, AllPresentWillLoad) {
  auto c = fixture({{"embed.weight", "F32", {10, 4}},
                    {"layers.0.w", "F32", {4, 4}},
                    {"layers.1.w", "F32", {4, 4}}});
  auto p = param("layers.{i}.w", std::vector<std::uint64_t>{4, 4});
  p.bounds = {{"i", 2}};
  auto r = verify({param("embed.weight", std::vector<std::uint64_t>{10, 4}), p}, c);
  EXPECT_TRUE(r.will_load);
  EXPECT_TRUE(r.reasons.empty());
  ASSERT_EQ(r.matched.size(), 2u);
  EXPECT_EQ(r.matched[1].count, 2u);
  EXPECT_TRUE(r.unclaimed.empty());
  EXPECT_THAT(report_text(r), HasSubstr("this checkpoint will load"));
}

TEST(Verify, MissingCertainFailsMissingConditionalIsANote) {
  auto c = fixture({{"lin.weight", "F32", {2, 2}}, {"extra", "F32", {1}}});
  auto r = verify(
      {param("lin.weight"), param("lin.bias", {}, Certainty::conditional), param("norm.weight")},
      c);
  EXPECT_FALSE(r.will_load);
  EXPECT_EQ(r.missing_count(Certainty::proven), 1u);
  EXPECT_EQ(r.missing_count(Certainty::conditional), 1u);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_THAT(r.reasons[0], HasSubstr("\"norm.weight\""));
  EXPECT_THAT(r.unclaimed, ElementsAre("extra"));
  EXPECT_THAT(report_text(r), HasSubstr("it will fail, because 1 parameter(s)"));

  auto only_conditional =
      verify({param("lin.weight"), param("lin.bias", {}, Certainty::conditional)}, c);
  EXPECT_TRUE(only_conditional.will_load);
}

TEST(Verify, ShapeMismatchFailsDtypeDifferenceDoesNot) {
  auto c = fixture({{"a", "BF16", {3, 4}}, {"b", "BF16", {4}}});
  auto a = param("a", std::vector<std::uint64_t>{4, 3});
  a.symbolic_shape = "(cfg.out, cfg.in)";
  auto b = param("b", std::vector<std::uint64_t>{4});
  b.dtype = "F32";
  a.dtype = "F32";
  auto r = verify({a, b}, c);
  EXPECT_FALSE(r.will_load);
  ASSERT_EQ(r.shape_mismatches.size(), 1u);
  EXPECT_THAT(r.shape_mismatches[0].actual, ElementsAre(3u, 4u));
  EXPECT_THAT(r.reasons[0], HasSubstr("\"a\" is [3, 4], the model expects [4, 3]"));
  ASSERT_EQ(r.dtype_differences.size(), 1u);
  EXPECT_EQ(r.dtype_differences[0].count, 2u);
  EXPECT_EQ(r.dtype_differences[0].checkpoint_dtype, "BF16");

  b.shape = std::vector<std::uint64_t>{4};
  EXPECT_TRUE(verify({b}, c).will_load);  // dtype alone never fails a load
}

TEST(Verify, BoundFamilyCountMustMatchExactly) {
  auto c =
      fixture({{"layers.0.w", "U8", {1}}, {"layers.1.w", "U8", {1}}, {"layers.2.w", "U8", {1}}});
  auto p = param("layers.{i}.w");
  p.bounds = {{"i", 4}};  // config says 4 layers, checkpoint has 3
  auto r = verify({p}, c);
  EXPECT_FALSE(r.will_load);
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].key, "layers.3.w");
  ASSERT_EQ(r.family_mismatches.size(), 1u);
  EXPECT_EQ(r.family_mismatches[0].found, 3u);

  p.bounds = {{"i", 2}};  // config says 2: layers.2 is never read
  r = verify({p}, c);
  EXPECT_TRUE(r.will_load);
  EXPECT_THAT(r.unclaimed, ElementsAre("layers.2.w"));
  ASSERT_EQ(r.family_mismatches.size(), 1u);
  EXPECT_THAT(r.family_mismatches[0].detail, HasSubstr("1 outside 0..1, left unclaimed"));

  p.bounds.clear();  // no bound: any index matches
  r = verify({p}, c);
  EXPECT_TRUE(r.family_mismatches.empty());
  EXPECT_EQ(r.matched[0].count, 3u);
}

TEST(Verify, PrefixIsPrependedWithOneDot) {
  auto c = fixture({{"language_model.model.norm.weight", "F32", {4}}, {"vision.x", "F32", {1}}});
  for (const char* prefix : {"language_model", "language_model."}) {
    auto r = verify({param("model.norm.weight")}, c, {"", prefix});
    EXPECT_TRUE(r.will_load) << prefix;
    EXPECT_EQ(r.prefix, "language_model.");
    EXPECT_THAT(r.unclaimed, ElementsAre("vision.x"));
  }
  EXPECT_FALSE(verify({param("model.norm.weight")}, c).will_load);
}

TEST(Verify, RootsAreSeparateNamespaces) {
  auto c = fixture({{"head.weight", "F32", {1}}});
  std::vector<ExpectedParameter> inv = {param("head.weight", {}, Certainty::proven, "base_vb"),
                                        param("adapter.weight", {}, Certainty::proven, "train_vb")};
  try {
    verify(inv, c);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("builder roots base_vb, train_vb"));
  }
  auto r = verify(inv, c, {"base_vb", ""});
  EXPECT_TRUE(r.will_load);
  EXPECT_EQ(r.skipped_other_root, 1u);
  EXPECT_FALSE(verify(inv, c, {"train_vb", ""}).will_load);
}

TEST(Verify, NameOnlyCheckpointSaysSo) {
  const auto dir = testing::scratch_dir();
  const std::string index = R"({"weight_map":{"a":"absent-1.safetensors"}})";
  auto c = load_index(dir / "model.safetensors.index.json", index);
  auto r = verify({param("a", std::vector<std::uint64_t>{9})}, c);
  EXPECT_TRUE(r.will_load);  // no shape to contradict
  EXPECT_EQ(r.name_only_tensors, 1u);
  EXPECT_THAT(report_text(r), HasSubstr("verified by name only"));
}

TEST(Report, JsonIsDeterministicAndParses) {
  auto c = fixture({{"b", "F32", {1}}, {"a", "F32", {2}}, {"z", "F32", {1}}});
  std::vector<ExpectedParameter> inv = {param("b"), param("a", std::vector<std::uint64_t>{3}),
                                        param("m", {}, Certainty::unknown)};
  const std::string j1 = report_json(verify(inv, c));
  std::reverse(inv.begin(), inv.end());
  const std::string j2 = report_json(verify(inv, c));
  EXPECT_EQ(j1, j2);  // input order does not leak into the output
  simdjson::dom::parser parser;
  simdjson::padded_string padded(j1);
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(padded).get(doc));
  EXPECT_EQ(std::string_view(doc["schema"]), "candle-graph/checkpoint/1");
  EXPECT_FALSE(bool(doc["verdict"]["will_load"]));
  EXPECT_EQ(std::uint64_t(doc["counts"]["missing_unknown"]), 1u);
  EXPECT_EQ(std::uint64_t(doc["counts"]["shape_mismatches"]), 1u);
  EXPECT_EQ(std::string_view(doc["unclaimed"].at(0)), "z");
  EXPECT_EQ(std::string_view(doc["matched"].at(0)["key"]), "a");
}

}  // namespace
}  // namespace cg::checkpoint
