#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>

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

// A shard that is on disk but is not a safetensors file made `verify` say the checkpoint would
// load (it was taken for an absent shard). Each is an error naming the index and the shard.
const char* kOneShard = R"({"weight_map":{"a.weight":"model-00001-of-00001.safetensors"}})";

std::string shard_error(const std::filesystem::path& dir) {
  write_text(dir / "model.safetensors.index.json", kOneShard);
  // Run aside: a FIFO must fail at once, never block the reader.
  auto f = std::async(std::launch::async,
                      [dir] { return load_error(dir / "model.safetensors.index.json"); });
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the shard";
    std::_Exit(1);  // the reader thread is stuck in open(); nothing else can end the test
  }
  return f.get();
}

TEST(Source, ShardThatIsADirectoryIsAnError) {
  const auto dir = testing::scratch_dir();
  std::filesystem::create_directory(dir / "model-00001-of-00001.safetensors");
  const auto e = shard_error(dir);
  EXPECT_THAT(e, HasSubstr("model.safetensors.index.json: shard "
                           "\"model-00001-of-00001.safetensors\""));
  EXPECT_THAT(e, HasSubstr("is a directory, expected a safetensors file"));
}

TEST(Source, ShardThatIsAFifoIsAnErrorWithoutBlocking) {
  const auto dir = testing::scratch_dir();
  ASSERT_EQ(::mkfifo((dir / "model-00001-of-00001.safetensors").c_str(), 0600), 0);
  EXPECT_THAT(shard_error(dir), HasSubstr("\"model-00001-of-00001.safetensors\" ("));
  EXPECT_THAT(shard_error(dir), HasSubstr("is a FIFO, expected a safetensors file"));
}

TEST(Source, DanglingAndLoopingShardSymlinksAreErrors) {
  const auto dir = testing::scratch_dir();
  std::filesystem::create_symlink(dir / "gone.safetensors",
                                  dir / "model-00001-of-00001.safetensors");
  EXPECT_THAT(shard_error(dir), HasSubstr("is a dangling symlink"));
  std::filesystem::remove(dir / "model-00001-of-00001.safetensors");
  std::filesystem::create_symlink("model-00001-of-00001.safetensors",
                                  dir / "model-00001-of-00001.safetensors");
  EXPECT_THAT(shard_error(dir), HasSubstr("is a symlink loop"));
}

TEST(Source, ShardSymlinkToAFileLoads) {  // the Hugging Face cache links snapshots to blobs
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "blob", {{"a.weight", "F32", {2}}});
  std::filesystem::create_symlink("blob", dir / "model-00001-of-00001.safetensors");
  write_text(dir / "model.safetensors.index.json", kOneShard);
  const auto c = load_checkpoint(dir / "model.safetensors.index.json");
  ASSERT_EQ(c.shards.size(), 1u);
  EXPECT_TRUE(c.shards[0].present);
  EXPECT_EQ(c.name_only_tensors(), 0u);
}

TEST(Source, ShardNamesWithADirectoryPartAreRefused) {
  const auto dir = testing::scratch_dir();
  std::filesystem::create_directory(dir / "sub");
  write_safetensors(dir / "sub" / "x.safetensors", {{"a", "U8", {1}}});
  const auto p = dir / "model.safetensors.index.json";
  for (const char* name : {"sub/x.safetensors", ".", "./x.safetensors", "sub/"}) {
    write_text(p, std::string(R"({"weight_map":{"a":")") + name + "\"}}");
    const auto e = load_error(p);
    EXPECT_THAT(e, HasSubstr("model.safetensors.index.json: weight_map \"a\": shard \"" +
                             std::string(name) + "\" must be a file name beside the index"))
        << name;
  }
}

TEST(Source, SingleFileThatIsAFifoIsRefusedWithoutBlocking) {
  const auto dir = testing::scratch_dir();
  ASSERT_EQ(::mkfifo((dir / "m.safetensors").c_str(), 0600), 0);
  auto f = std::async(std::launch::async, [dir] { return load_error(dir / "m.safetensors"); });
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO";
    std::_Exit(1);
  }
  EXPECT_THAT(f.get(), HasSubstr("m.safetensors: is a FIFO, expected a safetensors file"));
}

// A 253 MB index took 6.85 GB and 40 s (issue 22): an index over kMaxIndexBytes is refused before
// a byte is read, and a weight_map over the tensor limit before it is walked.
TEST(Source, IndexOverTheSizeBoundIsRefusedUnread) {
  const auto dir = testing::scratch_dir();
  const auto p = dir / "model.safetensors.index.json";
  write_text(p, "{");
  std::filesystem::resize_file(p, kMaxIndexBytes + 1);  // sparse: costs no disk
  EXPECT_THAT(
      load_error(p),
      HasSubstr("model.safetensors.index.json: file is " + std::to_string(kMaxIndexBytes + 1) +
                " bytes, larger than the limit of " + std::to_string(kMaxIndexBytes) + " bytes"));
}

TEST(Source, WeightMapOverTheTensorLimitIsRefused) {
  const auto dir = testing::scratch_dir();
  const auto p = dir / "model.safetensors.index.json";
  write_text(p, R"({"weight_map":{"a":"s.safetensors","b":"s.safetensors","c":"t.safetensors"}})");
  HeaderLimits small;
  small.max_tensors = 2;
  try {
    load_checkpoint(p, small);
    ADD_FAILURE() << "expected the limit";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("weight_map has 3 entries, more than the limit of 2 tensors"));
  }
  small.max_tensors = 3;
  EXPECT_EQ(load_checkpoint(p, small).tensors.size(), 3u);
}

TEST(Source, UnlistedTensorInTwoShardsIsKeptOnceFromTheLaterShard) {
  const auto dir = testing::scratch_dir();
  write_safetensors(dir / "a.safetensors", {{"x", "F32", {1}}, {"extra", "F32", {1}}});
  write_safetensors(dir / "b.safetensors", {{"y", "F32", {2}}, {"extra", "BF16", {3}}});
  write_text(dir / "m.index.json", R"({"weight_map":{"y":"b.safetensors","x":"a.safetensors"}})");
  const auto c = load_checkpoint(dir / "m.index.json");
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].name, "extra");
  EXPECT_EQ(c.tensors[0].shard, "b.safetensors");
  EXPECT_EQ(c.tensors[1].name, "x");
  EXPECT_EQ(c.tensors[2].name, "y");
  ASSERT_EQ(c.shards.size(), 2u);
  EXPECT_EQ(c.shards[0].file, "a.safetensors");
}

TEST(Source, DirectoryWhoseModelSafetensorsIsNotAFileIsAnError) {
  const auto dir = testing::scratch_dir();
  write_text(dir / "model.safetensors.index.json", kOneShard);
  ASSERT_EQ(::mkfifo((dir / "model.safetensors").c_str(), 0600), 0);
  EXPECT_THAT(load_error(dir), HasSubstr("checkpoint \"model.safetensors\" ("));
  EXPECT_THAT(load_error(dir), HasSubstr("is a FIFO, expected a safetensors file"));
  std::filesystem::remove(dir / "model.safetensors");
  std::filesystem::create_symlink("nowhere", dir / "model.safetensors");
  EXPECT_THAT(load_error(dir), HasSubstr("is a dangling symlink"));
}

}  // namespace
}  // namespace cg::checkpoint
