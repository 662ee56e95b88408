#include "ir/stable_id.hpp"

#include <gtest/gtest.h>

namespace cg::ir {
namespace {

// Worked examples of spec §2.1 (the escaping rule is kept exactly).
TEST(StableId, SpecWorkedExamples) {
  EXPECT_EQ(function_id("model::Encoder::forward", {}),
            "function:model%3A%3AEncoder%3A%3Aforward:");
  EXPECT_EQ(function_id("model::Encoder::forward", {"feature = \"cuda\""}),
            "function:model%3A%3AEncoder%3A%3Aforward:feature%20=%20\"cuda\"");
  EXPECT_EQ(component_id("model::Encoder"), "component:model%3A%3AEncoder");
  EXPECT_EQ(parameter_id(component_id("model::Encoder"), "vb", "projection.weight"),
            "parameter:component%3Amodel%253A%253AEncoder:vb:projection.weight");
  const std::string f = function_id("model::Encoder::forward", {});
  EXPECT_EQ(contract_tensor_id(f, "input"),
            "tensor:function%3Amodel%253A%253AEncoder%253A%253Aforward%3A:input");
  EXPECT_EQ(finding_id("rule", "", "msg"), "finding:rule::msg");
  EXPECT_EQ(composition_edge_id("component:A", "component:B", "mlp"),
            "composition-edge:component%3AA:component%3AB:mlp");
}

TEST(StableId, CfgPredicatesJoined) {
  EXPECT_EQ(function_id("f", {"unix", "feature = \"x\""}),
            "function:f:unix%20&&%20feature%20=%20\"x\"");
}

TEST(StableId, EscapesEveryReservedByteAndOnlyThose) {
  EXPECT_EQ(escape_id_part("a%b:c/d\\e f"), "a%25b%3Ac%2Fd%5Ce%20f");
  EXPECT_EQ(escape_id_part("x.y_{i}#\"-\xc3\xa9"), "x.y_{i}#\"-\xc3\xa9");
  EXPECT_EQ(make_stable_id("k", {"", ""}), "k::");
}

TEST(StableId, NestedIdsAreEscapedAgain) {
  EXPECT_EQ(escape_id_part("%3A"), "%253A");
  const std::string inner = component_id("a::b");  // component:a%3A%3Ab
  EXPECT_EQ(parameter_id(inner, "vb", "w"), "parameter:component%3Aa%253A%253Ab:vb:w");
}

TEST(StableId, ModuleIdHasCfgAndOccurrenceNotArenaIndex) {
  const std::string c = component_id("m::Enc");
  EXPECT_EQ(module_id(c, "vb", "layers.{i}", "Block", {}, 0),
            "module:component%3Am%253A%253AEnc:vb:layers.{i}:Block::0");
  EXPECT_EQ(module_id(c, "vb", "", "Enc", {"unix"}, 1),
            "module:component%3Am%253A%253AEnc:vb::Enc:unix:1");
}

TEST(StableId, OperationAndDataflowTensorUseOccurrenceOfOpName) {
  const std::string f = function_id("f", {});
  EXPECT_EQ(operation_id(f, "matmul", 1), "operation:function%3Af%3A:matmul:1");
  EXPECT_EQ(dataflow_tensor_id(f, "matmul", 1), "tensor:function%3Af%3A:matmul#1");
}

// Assign ids the way an analysis does: walk ops in source order, count per (function, op name).
std::vector<std::string> op_ids(const std::vector<std::string>& ops) {
  OccurrenceCounter occ;
  std::vector<std::string> ids;
  const std::string f = function_id("f", {});
  for (const auto& op : ops)
    ids.push_back(operation_id(f, op, occ.next(f + '\0' + op)));
  return ids;
}

TEST(StableId, OperationIdsSurviveUnrelatedInsertions) {
  auto before = op_ids({"matmul", "relu", "matmul"});
  auto after = op_ids({"softmax", "matmul", "exp", "relu", "exp", "matmul"});
  EXPECT_EQ(before[0], after[1]);
  EXPECT_EQ(before[1], after[3]);
  EXPECT_EQ(before[2], after[5]);
  EXPECT_NE(before[0], before[2]);  // the 2nd matmul is occurrence 1
}

TEST(StableId, ModuleIdsSurviveUnrelatedInsertions) {
  const std::string c = component_id("m::Enc");
  auto ids = [&](const std::vector<std::pair<std::string, std::string>>& mods) {
    OccurrenceCounter occ;
    std::vector<std::string> out;
    for (const auto& [prefix, type] : mods) {
      out.push_back(module_id(c, "vb", prefix, type, {}, occ.next(prefix + '\0' + type)));
    }
    return out;
  };
  auto before = ids({{"attn", "Attention"}, {"mlp", "Mlp"}});
  auto after = ids({{"norm", "Norm"}, {"attn", "Attention"}, {"extra", "Mlp"}, {"mlp", "Mlp"}});
  EXPECT_EQ(before[0], after[1]);
  EXPECT_EQ(before[1], after[3]);
}

}  // namespace
}  // namespace cg::ir
