#include "runtime/merge_ir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// A hand-built IR: Block::forward owns operations f:0 and f:1; a parameter vb/a.weight.
ir::ModelIr tiny_ir(std::string analysis_id) {
  ir::ModelIr m;
  m.analysis_id = std::move(analysis_id);
  ir::Function f;
  f.id = "function:model::Block::forward:";
  f.name = "forward";
  f.qualified_name = "model::Block::forward";
  f.owner_type = "model::Block";
  m.functions.push_back(f);
  for (const char* id : {"operation:train:f:0", "operation:train:f:1"}) {
    ir::Operation op;
    op.id = id;
    op.function = f.id;
    op.name = "matmul";
    m.operations.push_back(op);
  }
  ir::Tensor t;
  t.id = "tensor:infer:f:1";
  m.tensors.push_back(t);
  ir::Parameter p;
  p.id = "parameter:a.weight";
  p.builder_root = "vb";
  p.key = "a.weight";
  m.parameters.push_back(p);
  return m;
}

std::vector<std::string> messages(const ir::ModelIr& m, const std::string& rule) {
  std::vector<std::string> out;
  for (const auto& f : m.findings) {
    if (f.rule == rule) out.push_back(f.message);
  }
  return out;
}

TEST(MergeIr, TimingsTensorsGradientsAndSummaryLandInTheIr) {
  auto m = tiny_ir("");
  auto traces =
      read_traces({testing::fixture("v3_seed.jsonl"), testing::fixture("tensors_conflict.jsonl"),
                   testing::fixture("gradients_series.jsonl")});
  merge_runtime(m, traces);
  ASSERT_TRUE(m.operations[0].timing.has_value());
  EXPECT_EQ(m.operations[0].timing->stats.total_ns, 400u);
  EXPECT_EQ(m.operations[0].timing->stats.p95_ns, 300u);
  EXPECT_EQ(m.operations[0].timing->by_phase.at("train").samples, 2u);
  EXPECT_EQ(m.tensors[0].dtype, "BF16");
  EXPECT_EQ(m.tensors[0].device.kind, ir::DeviceKind::cuda);
  EXPECT_EQ(m.tensors[0].device.ordinal, 0u);
  EXPECT_EQ(m.tensors[0].layout.kind, ir::LayoutKind::non_contiguous);
  ASSERT_EQ(m.parameters[0].evidence.size(), 1u);
  EXPECT_THAT(m.parameters[0].evidence[0].detail, HasSubstr("gradient non_finite"));
  EXPECT_THAT(messages(m, "runtime-unmapped"), Contains(HasSubstr("tensor tensor:infer:f:0")));
  ASSERT_TRUE(m.runtime.has_value());
  EXPECT_EQ(m.runtime->operation_observations, 4u);
  EXPECT_EQ(m.runtime->non_finite_gradients, 1u);
  EXPECT_EQ(m.runtime->edge_timings.size(), 1u);
  auto report = profile_report(m);
  ASSERT_EQ(report.modules.size(), 1u);
  EXPECT_EQ(report.modules[0].id, "model::Block");
  EXPECT_EQ(report.modules[0].timing.total_ns, 500u);
}

TEST(MergeIr, IdentityMismatchMergesNothing) {
  auto m = tiny_ir("analysis:other");
  auto p = testing::write_temp(
      "ir_mismatch.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"analysis:mine"})"
      "\n" +
          testing::op_line("train-op-0-1", "operation:train:f:0", 10));
  merge_runtime(m, read_traces({p}));
  EXPECT_FALSE(m.operations[0].timing.has_value());
  EXPECT_THAT(messages(m, "runtime-identity"), Contains(HasSubstr("trace was not merged")));
  EXPECT_EQ(m.runtime->identity_mismatches, 1u);
}

}  // namespace
}  // namespace cg::runtime
