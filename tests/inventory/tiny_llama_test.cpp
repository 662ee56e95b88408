// End to end on the bundled example: the inventory of examples/tiny-llama under its config.json,
// then `candle-graph verify` (the real binary) against synthetic safetensors files generated here —
// a complete one, one missing a key and carrying an extra, and one with a wrong shape.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <numeric>

#include "checkpoint/safetensors_writer.hpp"
#include "pipeline/pipeline.hpp"

namespace {

namespace fs = std::filesystem;

const std::string kCrate = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";
const std::string kConfig = kCrate + "/config.json";

cg::pipeline::Analysis analyze_example() {
  cg::pipeline::Options o;
  o.path = kCrate;
  o.config = kConfig;
  return cg::pipeline::analyze(o);
}

struct Run {
  int code = -1;
  std::string out;
};

Run run_verify(const fs::path& ckpt) {
  std::string cmd = std::string(CG_BINARY_DIR) + "/candle-graph verify " + kCrate + " --config " +
                    kConfig + " --checkpoint " + ckpt.string() + " 2>&1";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<cg::checkpoint::TensorSpec> expected_tensors(const cg::ir::ModelIr& ir) {
  std::vector<cg::checkpoint::TensorSpec> out;
  for (const auto& p : ir.parameters)
    out.push_back({p.key, "BF16", p.shape.value_or(std::vector<std::uint64_t>{})});
  return out;
}

TEST(TinyLlama, InventoryUnderConfigIsConcrete) {
  auto a = analyze_example();
  const auto& ir = a.ir;
  ASSERT_EQ(ir.components.size(), 1u);
  EXPECT_EQ(ir.components[0].qualified_name, "model::TinyLlama");
  // 4 layers x (4 attention + 3 mlp projections + 2 norms) + embedding + final norm; the
  // lm_head is tied (tie_word_embeddings = true), so it requests nothing.
  EXPECT_EQ(ir.parameters.size(), 4u * 9u + 2u);
  std::uint64_t total = 0;
  for (const auto& p : ir.parameters) {
    ASSERT_TRUE(p.shape) << p.key << " has no concrete shape";
    EXPECT_EQ(p.confidence, cg::ir::Confidence::proven) << p.key;
    EXPECT_EQ(p.key.find("lm_head"), std::string::npos);
    total +=
        std::accumulate(p.shape->begin(), p.shape->end(), std::uint64_t{1}, std::multiplies<>());
  }
  // embed 4096*256 + norm 256 + per layer: q 256*256, k,v 128*256, o 256*256, mlp 3*688*256,
  // two norms 2*256.
  const std::uint64_t layer = 256 * 256 * 2 + 128 * 256 * 2 + 3 * 688 * 256 + 2 * 256;
  EXPECT_EQ(total, 4096u * 256u + 256u + 4u * layer);
  bool kv = false;
  for (const auto& p : ir.parameters)
    if (p.key == "model.layers.3.self_attn.k_proj.weight") {
      EXPECT_EQ(*p.shape, (std::vector<std::uint64_t>{128, 256})) << "GQA: 4 kv heads of 32";
      kv = true;
    }
  EXPECT_TRUE(kv);
}

class Verify : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cg-tiny-verify-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    tensors_ = expected_tensors(analyze_example().ir);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::vector<cg::checkpoint::TensorSpec> tensors_;
};

TEST_F(Verify, CompleteCheckpointWillLoad) {
  cg::checkpoint::write_safetensors(dir_ / "ok.safetensors", tensors_);
  auto r = run_verify(dir_ / "ok.safetensors");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("this checkpoint will load"), std::string::npos) << r.out;
}

TEST_F(Verify, MissingKeyFailsAndExtraIsUnclaimed) {
  auto t = tensors_;
  const std::string dropped = "model.layers.2.mlp.up_proj.weight";
  std::erase_if(t, [&](const auto& s) { return s.name == dropped; });
  ASSERT_EQ(t.size(), tensors_.size() - 1);
  t.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {16}});
  cg::checkpoint::write_safetensors(dir_ / "bad.safetensors", t);
  auto r = run_verify(dir_ / "bad.safetensors");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("will fail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dropped), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.0.self_attn.rotary_emb.inv_freq"), std::string::npos) << r.out;
}

TEST_F(Verify, WrongShapeFailsNamingBothShapes) {
  auto t = tensors_;
  for (auto& s : t)
    if (s.name == "model.norm.weight") s.shape = {512};
  cg::checkpoint::write_safetensors(dir_ / "shape.safetensors", t);
  auto r = run_verify(dir_ / "shape.safetensors");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("model.norm.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("512"), std::string::npos) << r.out;
}

}  // namespace
