// More merge cases: what a user sees when a crashed run's trace, or traces of both phases, are
// merged into the model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "runtime/merge_plan.hpp"
#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

using ::testing::Contains;
using testing::fixture;
using ::testing::HasSubstr;
using testing::write_temp;

class OpsModel : public StaticModel {
 public:
  explicit OpsModel(std::set<std::string> ids) : ops(std::move(ids)) {}
  bool has_operation(std::string_view id) const override { return ops.count(std::string(id)); }
  bool has_tensor(std::string_view) const override { return false; }
  std::vector<std::string> parameters_for(std::string_view, std::string_view) const override {
    return {};
  }
  std::optional<std::string> module_of_operation(std::string_view) const override {
    return std::nullopt;
  }
  std::set<std::string> ops;
};

const OperationTiming* find_op(const MergePlan& plan, const std::string& id) {
  for (const auto& o : plan.operations) {
    if (o.static_id == id) return &o;
  }
  return nullptr;
}

std::vector<std::string> messages(const MergePlan& p, const std::string& rule) {
  std::vector<std::string> out;
  for (const auto& f : p.findings) {
    if (f.rule == rule) out.push_back(f.message);
  }
  return out;
}

TEST(MergeMore, CrashedRunStillMergesWhatWasWrittenAndSaysSo) {
  ReadOptions lenient;
  lenient.lenient = true;
  OpsModel model({"operation:infer:f:0", "operation:infer:f:1", "operation:infer:f:2"});
  auto plan = plan_merge(read_traces({fixture("v4_truncated.jsonl")}, lenient), Identity{}, model);
  ASSERT_EQ(plan.traces.size(), 1u);
  EXPECT_TRUE(plan.traces[0].merged);
  EXPECT_TRUE(plan.traces[0].truncated);
  const OperationTiming* matmul = find_op(plan, "operation:infer:f:1");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->timing.samples, 2u);  // one per thread
  EXPECT_EQ(matmul->timing.total_ns, 1500u + 2001u);
  EXPECT_EQ(matmul->timing.max_ns, 2001u);
  EXPECT_THAT(
      messages(plan, "runtime-truncated"),
      Contains(HasSubstr("trace is truncated (no end record); timings cover what was written")));
}

TEST(MergeMore, TrainAndInferTracesOfOneOperationSplitByPhase) {
  const std::string sid = "operation:f:0";
  auto train = write_temp(
      "phase_train.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train"})"
      "\n" +
          testing::op_line("train-op-0-1", sid, 100) + testing::op_line("train-op-0-2", sid, 300));
  auto infer = write_temp(
      "phase_infer.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"infer"})"
      "\n" +
          testing::op_line("infer-op-0-1", sid, 1000));
  OpsModel model({sid});
  auto plan = plan_merge(read_traces({train, infer}), Identity{}, model);
  const OperationTiming* op = find_op(plan, sid);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->timing.samples, 3u);
  EXPECT_EQ(op->timing.total_ns, 1400u);
  ASSERT_EQ(op->by_phase.count("train"), 1u);
  ASSERT_EQ(op->by_phase.count("infer"), 1u);
  EXPECT_EQ(op->by_phase.at("train").samples, 2u);
  EXPECT_EQ(op->by_phase.at("train").mean_ns, 200u);
  EXPECT_EQ(op->by_phase.at("infer").samples, 1u);
  EXPECT_EQ(op->by_phase.at("infer").mean_ns, 1000u);
  EXPECT_TRUE(messages(plan, "runtime-unmapped").empty());
}

TEST(MergeMore, OperationsTheModelDoesNotHaveAreReportedNotTimed) {
  OpsModel model({"operation:infer:f:0"});  // f:1 and f:2 are not in this IR
  auto plan = plan_merge(read_traces({fixture("v4_two_threads.jsonl")}), Identity{}, model);
  ASSERT_EQ(plan.operations.size(), 1u);
  EXPECT_EQ(plan.operations[0].static_id, "operation:infer:f:0");
  EXPECT_THAT(messages(plan, "runtime-unmapped"),
              Contains(HasSubstr("operation operation:infer:f:1 (2 observations)")));
}

}  // namespace
}  // namespace cg::runtime
