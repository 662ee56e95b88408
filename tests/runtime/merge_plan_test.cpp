#include "runtime/merge_plan.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using testing::fixture;
using ::testing::HasSubstr;
using testing::write_temp;

// A hand-built static side: two operations in module `model::Block`, one tensor, one parameter.
class FakeModel : public StaticModel {
 public:
  bool has_operation(std::string_view id) const override { return ops.count(std::string(id)); }
  bool has_tensor(std::string_view id) const override { return tensors.count(std::string(id)); }
  std::vector<std::string> parameters_for(std::string_view root,
                                          std::string_view key) const override {
    if (root == "vb" && key == "a.weight") return {"parameter:a.weight"};
    return {};
  }
  std::optional<std::string> module_of_operation(std::string_view id) const override {
    if (id == "operation:train:f:0") return "model::Block";
    if (id == "operation:train:f:1") return "model::Block";
    return std::nullopt;
  }
  std::set<std::string> ops{"operation:train:f:0", "operation:train:f:1"};
  std::set<std::string> tensors{"tensor:infer:f:1"};
};

std::vector<std::string> messages(const MergePlan& p, const std::string& rule) {
  std::vector<std::string> out;
  for (const auto& f : p.findings) {
    if (f.rule == rule) out.push_back(f.message);
  }
  return out;
}

TEST(MergePlan, TimingsOfKnownOperationsAndEveryUnknownIdReported) {
  auto extra =
      write_temp("unknown_op.jsonl", std::string(testing::kMetaV3) +
                                         testing::op_line("infer-op-0-1", "operation:gone", 5) +
                                         testing::op_line("infer-op-0-2", "operation:gone", 6));
  auto traces = read_traces({fixture("v3_seed.jsonl"), extra});
  FakeModel model;
  auto plan = plan_merge(traces, Identity{}, model);
  ASSERT_EQ(plan.operations.size(), 2u);
  EXPECT_EQ(plan.operations[0].static_id, "operation:train:f:0");
  EXPECT_EQ(plan.operations[0].timing.samples, 2u);
  EXPECT_EQ(plan.operations[0].timing.mean_ns, 200u);
  EXPECT_EQ(plan.operations[0].timing.p95_ns, 300u);
  EXPECT_EQ(plan.operations[0].by_phase.at("train").samples, 2u);
  EXPECT_THAT(messages(plan, "runtime-unmapped"),
              Contains(HasSubstr("operation operation:gone (2 observations)")));
  EXPECT_EQ(plan.operation_observations, 6u);
  EXPECT_EQ(plan.steps, 2u);
}

TEST(MergePlan, IdentityMismatchKeepsATraceOutButMergesTheOthers) {
  auto good = write_temp(
      "id_good.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"A"})"
      "\n" +
          testing::op_line("train-op-0-1", "operation:train:f:0", 10));
  auto bad = write_temp(
      "id_bad.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"B"})"
      "\n" +
          testing::op_line("train-op-0-1", "operation:train:f:0", 99));
  FakeModel model;
  auto plan = plan_merge(read_traces({good, bad}), Identity{"A", std::nullopt}, model);
  ASSERT_EQ(plan.traces.size(), 2u);
  EXPECT_TRUE(plan.traces[0].merged);
  EXPECT_FALSE(plan.traces[1].merged);
  ASSERT_EQ(plan.operations.size(), 1u);
  EXPECT_EQ(plan.operations[0].timing.total_ns, 10u);
  EXPECT_THAT(messages(plan, "runtime-identity"),
              ElementsAre(HasSubstr("expected A, observed B; trace was not merged")));
}

TEST(MergePlan, GradientFindingsFromTheLatestStepAndConflicts) {
  FakeModel model;
  auto plan = plan_merge(read_traces({fixture("gradients_series.jsonl")}), Identity{}, model);
  // a.weight is bound to a parameter: non_finite at its latest step is a proven error.
  auto grads = messages(plan, "runtime-gradient");
  EXPECT_THAT(grads, Contains("vb:a.weight runtime gradient is non_finite at step 2"));
  ASSERT_EQ(plan.gradients.size(), 1u);
  EXPECT_THAT(plan.gradients[0].parameter_ids, ElementsAre("parameter:a.weight"));
  EXPECT_THAT(messages(plan, "runtime-gradient-conflict"),
              Contains(HasSubstr("vb:c.weight has contradictory gradient observations at step 3")));
  // Parameters the model does not have are reported, not dropped (the reference ignored them).
  EXPECT_THAT(messages(plan, "runtime-unmapped"),
              Contains(HasSubstr("gradient vb:e.weight (2 observations)")));
}

TEST(MergePlan, TensorRefinementOnlyFromAgreement) {
  FakeModel model;
  model.tensors.insert("tensor:infer:f:0");
  auto plan = plan_merge(read_traces({fixture("tensors_conflict.jsonl")}), Identity{}, model);
  ASSERT_EQ(plan.tensors.size(), 1u);
  EXPECT_EQ(plan.tensors[0].static_id, "tensor:infer:f:1");
  EXPECT_THAT(plan.tensors[0].shape, ElementsAre(8u));
  EXPECT_EQ(plan.tensors[0].device, "cuda:0");
  EXPECT_THAT(messages(plan, "runtime-tensor-conflict"),
              ElementsAre("tensor:infer:f:0 has conflicting runtime shape: [2, 3], [2, 4]"));
}

TEST(MergePlan, ProfileReportSortsByTotalAndRollsUpModules) {
  FakeModel model;
  auto traces = read_traces({fixture("v3_seed.jsonl")});
  auto plan = plan_merge(traces, Identity{}, model);
  auto report = profile_report(plan.operations, plan.top_level_ns, plan.steps, model);
  ASSERT_EQ(report.operations.size(), 2u);
  EXPECT_EQ(report.operations[0].id, "operation:train:f:0");  // 400 ns before 100 ns
  EXPECT_DOUBLE_EQ(report.operations[0].share_of_step, 400.0 / 500.0);
  ASSERT_EQ(report.modules.size(), 1u);
  EXPECT_EQ(report.modules[0].id, "model::Block");
  EXPECT_EQ(report.modules[0].timing.total_ns, 500u);
  EXPECT_EQ(report.modules[0].timing.samples, 4u);
}

TEST(MergePlan, NestedV4OperationsDoNotInflateStepTime) {
  FakeModel model;
  auto plan = plan_merge(read_traces({fixture("v4_two_threads.jsonl")}), Identity{}, model);
  // Top level: the block (3000 ns) on thread 0 and the matmul (2001 ns) on thread 1.
  EXPECT_EQ(plan.top_level_ns, 5001u);
}

TEST(MergePlan, LenientReadSkipsRepeatedIdsInsteadOfAggregatingThem) {
  auto p = write_temp("lenient_dup.jsonl", std::string(testing::kMetaV3) +
                                               testing::op_line("infer-op-0-1", "s", 10) +
                                               testing::op_line("infer-op-0-2", "s", 20) +
                                               testing::op_line("infer-op-0-1", "s", 1000));
  ReadOptions lenient;
  lenient.lenient = true;
  auto traces = read_traces({p}, lenient);
  EXPECT_EQ(traces[0].info.skipped_lines, 1u);
  ASSERT_EQ(traces[0].info.skipped_examples.size(), 1u);
  EXPECT_EQ(traces[0].info.skipped_examples[0].line, 4u);
  EXPECT_EQ(traces[0].info.skipped_examples[0].reason,
            "duplicate event_id `infer-op-0-1` (first on line 2)");
  EXPECT_EQ(traces[0].aggregate.operations.at("s").timing.total_ns(), 30u);
  EXPECT_EQ(traces[0].info.duplicate_event_ids, 0u);
}

}  // namespace
}  // namespace cg::runtime
