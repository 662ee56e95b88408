#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint_test_util.hpp"
#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void write_text(const std::filesystem::path& p, const std::string& s) {
  std::ofstream(p) << s;
}

const char* kIndex = R"({"metadata":{"total_size":48},"weight_map":{
  "a.weight":"model-00001-of-00002.safetensors",
  "b.weight":"model-00001-of-00002.safetensors",
  "c.weight":"model-00002-of-00002.safetensors"}})";

std::string load_error(const std::filesystem::path& p) {
  try {
    load_checkpoint(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Source, IndexWithAllShardsPresentHasShapes) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"a.weight", "F32", {2, 2}}, {"b.weight", "F32", {2}}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c.weight", "BF16", {3}}});
  write_text(dir / "model.safetensors.index.json", kIndex);
  const auto c = load_checkpoint(dir / "model.safetensors.index.json");
  EXPECT_EQ(c.format, "index");
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.name_only_tensors(), 0u);
  EXPECT_EQ(c.find("c.weight")->dtype, "BF16");
  EXPECT_THAT(*c.find("a.weight")->shape, ElementsAre(2u, 2u));
  EXPECT_EQ(c.find("c.weight")->shard, "model-00002-of-00002.safetensors");
}

TEST(Source, AbsentShardsGiveNamesOnly) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"a.weight", "F32", {2, 2}}, {"b.weight", "F32", {2}}});
  write_text(dir / "model.safetensors.index.json", kIndex);
  const auto c = load_checkpoint(dir);  // a directory finds the index
  ASSERT_EQ(c.shards.size(), 2u);
  EXPECT_TRUE(c.shards[0].present);
  EXPECT_FALSE(c.shards[1].present);
  EXPECT_EQ(c.shards[1].tensors, 1u);
  EXPECT_EQ(c.name_only_tensors(), 1u);
  EXPECT_FALSE(c.find("c.weight")->shape.has_value());
  EXPECT_TRUE(c.find("a.weight")->shape.has_value());
}

TEST(Source, DirectoryPrefersModelSafetensors) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "model.safetensors", {{"x", "U8", {1}}});
  write_text(dir / "other.index.json", kIndex);
  const auto c = load_checkpoint(dir);
  EXPECT_EQ(c.format, "safetensors");
  EXPECT_EQ(c.tensors.size(), 1u);
}

TEST(Source, DirectoryWithoutCheckpointOrWithSeveralIndexes) {
  const auto dir = testing::scratch_dir();
  EXPECT_THAT(load_error(dir), HasSubstr("no model.safetensors and no *.index.json"));
  write_text(dir / "a.index.json", kIndex);
  write_text(dir / "b.index.json", kIndex);
  EXPECT_THAT(load_error(dir), HasSubstr("several index files (a.index.json, b.index.json)"));
}

TEST(Source, ShardLackingAListedTensorIsAnError) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "model-00001-of-00002.safetensors", {{"a.weight", "F32", {2, 2}}});
  write_text(dir / "model.safetensors.index.json", kIndex);
  EXPECT_THAT(load_error(dir / "model.safetensors.index.json"),
              HasSubstr("weight_map \"b.weight\" names shard "
                        "\"model-00001-of-00002.safetensors\", whose header has no such tensor"));
}

TEST(Source, UnlistedShardTensorsAreKeptWithANote) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"a.weight", "F32", {2, 2}}, {"b.weight", "F32", {2}}, {"extra", "U8", {1}}});
  write_text(dir / "model.safetensors.index.json", kIndex);
  const auto c = load_checkpoint(dir / "model.safetensors.index.json");
  EXPECT_NE(c.find("extra"), nullptr);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_THAT(c.notes[0], HasSubstr("1 tensors are not listed in weight_map"));
}

TEST(Source, CorruptShardErrorNamesTheShard) {
  const auto dir = testing::scratch_dir();
  write_text(dir / "model-00001-of-00002.safetensors", "xyz");
  write_text(dir / "model.safetensors.index.json", kIndex);
  EXPECT_THAT(load_error(dir / "model.safetensors.index.json"),
              HasSubstr("model-00001-of-00002.safetensors: file of 3 bytes is too short"));
}

TEST(Source, BadIndexes) {
  const auto dir = testing::scratch_dir();
  const auto p = dir / "model.safetensors.index.json";
  write_text(p, "{");
  EXPECT_THAT(load_error(p), HasSubstr("model.safetensors.index.json: not valid JSON"));
  write_text(p, R"({"metadata":{}})");
  EXPECT_THAT(load_error(p), HasSubstr("expected an object with a \"weight_map\" object"));
  write_text(p, R"({"weight_map":{"a":3}})");
  EXPECT_THAT(load_error(p), HasSubstr("weight_map \"a\": expected a shard file name"));
  write_text(p, R"({"weight_map":{"a":"../../etc/x.safetensors"}})");
  EXPECT_THAT(load_error(p), HasSubstr("must be a file name beside the index"));
  write_text(p, R"({"weight_map":{"a":"/abs.safetensors"}})");
  EXPECT_THAT(load_error(p), HasSubstr("must be a file name beside the index"));
  write_text(p, R"({"weight_map":{"a":"s.safetensors","a":"t.safetensors"}})");
  EXPECT_THAT(load_error(p), HasSubstr("weight_map \"a\" appears twice"));
}

}  // namespace
}  // namespace cg::checkpoint
