#include <gtest/gtest.h>

#include <algorithm>

#include "ir/model.hpp"
#include "ir/sample_model.hpp"

namespace cg::ir {
namespace {

template <typename T>
bool sorted_by_id(const std::vector<T>& v) {
  return std::is_sorted(v.begin(), v.end(), [](const T& a, const T& b) { return a.id < b.id; });
}

TEST(Normalize, SortsEverySectionAndIsIdempotent) {
  ModelIr ir = testing::sample_model();
  ModelIr shuffled = ir;
  std::reverse(shuffled.components.begin(), shuffled.components.end());
  std::reverse(shuffled.modules.begin(), shuffled.modules.end());
  std::reverse(shuffled.parameters.begin(), shuffled.parameters.end());
  std::reverse(shuffled.functions.begin(), shuffled.functions.end());
  std::reverse(shuffled.tensors.begin(), shuffled.tensors.end());
  std::reverse(shuffled.operations.begin(), shuffled.operations.end());
  std::reverse(shuffled.findings.begin(), shuffled.findings.end());
  normalize(shuffled);
  EXPECT_EQ(shuffled, ir);
  EXPECT_TRUE(sorted_by_id(ir.tensors));
  EXPECT_TRUE(sorted_by_id(ir.parameters));
  ModelIr again = ir;
  normalize(again);
  EXPECT_EQ(write_model_ir(again), write_model_ir(ir));
}

TEST(Normalize, DedupsByIdAndNestedIdLists) {
  ModelIr ir;
  Function f;
  f.id = "function:f:";
  f.calls = {"function:b:", "function:a:", "function:b:"};
  f.execution_phases = {ExecutionPhase::infer, ExecutionPhase::train, ExecutionPhase::infer};
  ir.functions = {f, f};
  ir.functions[1].name = "second copy";
  normalize(ir);
  ASSERT_EQ(ir.functions.size(), 1u);
  EXPECT_EQ(ir.functions[0].name, "");  // the first emitted wins
  EXPECT_EQ(ir.functions[0].calls, (std::vector<std::string>{"function:a:", "function:b:"}));
  EXPECT_EQ(ir.functions[0].execution_phases,
            (std::vector<ExecutionPhase>{ExecutionPhase::train, ExecutionPhase::infer}));
}

TEST(Normalize, FindingsWithSameIdMergeRelatedAndEvidence) {
  ModelIr ir;
  Finding a;
  a.id = "finding:r:src/a.rs%3A1:m";
  a.related = {"operation:y", "operation:x"};
  a.evidence = {{EvidenceKind::source, Confidence::proven, "src/a.rs:1", "first"}};
  Finding b = a;
  b.related = {"operation:z", "operation:x"};
  b.evidence.push_back({EvidenceKind::runtime, Confidence::conditional, std::nullopt, "second"});
  ir.findings = {a, b};
  normalize(ir);
  ASSERT_EQ(ir.findings.size(), 1u);
  EXPECT_EQ(ir.findings[0].related,
            (std::vector<std::string>{"operation:x", "operation:y", "operation:z"}));
  ASSERT_EQ(ir.findings[0].evidence.size(), 2u);
  EXPECT_EQ(ir.findings[0].evidence[1].detail, "second");
  EXPECT_EQ(ir.coverage.diagnostics, 1u);
}

TEST(Normalize, RecomputesCoverage) {
  ModelIr ir = testing::sample_model();
  const Coverage& c = ir.coverage;
  EXPECT_EQ(c.components, 2u);
  EXPECT_EQ(c.architecture_edges, 1u);
  EXPECT_EQ(c.composition_edges, 1u);
  EXPECT_EQ(c.modules, 2u);
  EXPECT_EQ(c.parameters, 6u);
  EXPECT_EQ(c.functions, 5u);
  EXPECT_EQ(c.entrypoints, 1u);
  EXPECT_EQ(c.component_entrypoints, 1u);  // owner_type is the component's qualified name
  EXPECT_EQ(c.tensors, 10u);
  EXPECT_EQ(c.operations, 3u);
  EXPECT_EQ(c.linked_parameter_uses, 6u);
  EXPECT_EQ(c.tensors_with_shape, 5u);   // even indexes
  EXPECT_EQ(c.tensors_with_dtype, 6u);   // i % 3 != 0
  EXPECT_EQ(c.tensors_with_device, 8u);  // device kind unknown at i = 4, 9
  EXPECT_EQ(c.runtime_observations, 11u + 12u + 13u + 8u);
  EXPECT_EQ(c.diagnostics, 3u);

  ir.coverage = {};
  ir.functions[0].owner_type = "Unrelated";
  ir.runtime.reset();
  normalize(ir);
  EXPECT_EQ(ir.coverage.component_entrypoints, 0u);
  EXPECT_EQ(ir.coverage.runtime_observations, 0u);
  EXPECT_EQ(ir.coverage.tensors, 10u);
}

}  // namespace
}  // namespace cg::ir
