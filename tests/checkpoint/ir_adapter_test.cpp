#include "checkpoint/ir_adapter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checkpoint/verify.hpp"

namespace cg::checkpoint {
namespace {

ir::Parameter ir_param(std::string key, ir::Confidence c) {
  ir::Parameter p;
  p.id = "parameter:" + key;
  p.builder_root = "vb";
  p.key = std::move(key);
  p.confidence = c;
  return p;
}

TEST(IrAdapter, ConfidenceDecidesWhetherAMissingKeyFails) {
  ir::ModelIr model;
  auto w = ir_param("lin.weight", ir::Confidence::proven);
  w.shape = std::vector<std::uint64_t>{2, 3};
  w.symbolic_shape = std::vector<std::string>{"cfg.out", "cfg.in"};
  model.parameters = {w, ir_param("lin.bias", ir::Confidence::conditional),
                      ir_param("aux.weight", ir::Confidence::heuristic)};
  model.parameters[1].reason = "cfg.bias";
  const auto inv = inventory_from_ir(model);
  ASSERT_EQ(inv.size(), 3u);
  EXPECT_EQ(inv[0].certainty, Certainty::proven);
  EXPECT_EQ(inv[0].symbolic_shape, "(cfg.out, cfg.in)");
  EXPECT_EQ(inv[1].certainty, Certainty::conditional);
  EXPECT_EQ(inv[1].reason, "cfg.bias");
  EXPECT_EQ(inv[2].certainty, Certainty::unknown);

  Checkpoint c;
  c.tensors = {{"lin.weight", "model.safetensors", "F32", std::vector<std::uint64_t>{2, 3}}};
  EXPECT_TRUE(verify(inv, c).will_load);  // bias conditional, aux unknown: notes only
  model.parameters[0].key = "other.weight";
  EXPECT_FALSE(verify(inventory_from_ir(model), c).will_load);
}

}  // namespace
}  // namespace cg::checkpoint
