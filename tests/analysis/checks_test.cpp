// Each dataflow check (src/analysis/checks/) alone: over hand-made facts, and over its positive
// and negative fixture crate in tests/fixtures/dataflow — the finding appears for the positive
// crate and not for the negative one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/checks/check.hpp"
#include "analysis/dataflow.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/crate.hpp"

namespace {
namespace fs = std::filesystem;
using cg::analysis::DtypeRule;
using cg::analysis::OpRule;
using cg::analysis::checks::OperationFact;
using cg::analysis::checks::Reporter;
using cg::analysis::checks::RunFacts;
using cg::analysis::tensor::Val;

Val tensor(const std::string& id, const std::string& dtype) {
  Val v;
  v.tensor = true;
  v.tid = id;
  v.dtype = dtype;
  return v;
}

std::vector<std::string> rules_of(const cg::ir::ModelIr& ir) {
  std::vector<std::string> out;
  for (const auto& f : ir.findings)
    out.push_back(f.rule);
  return out;
}

std::vector<std::string> dtype_findings(const std::string& a, const std::string& b) {
  cg::ir::ModelIr ir;
  Reporter out(ir);
  auto check = cg::analysis::checks::dtype_agreement_check();
  OpRule rule;
  rule.name = "broadcast_add";
  rule.dtype = DtypeRule::same_as_inputs;
  Val x = tensor("x", a), y = tensor("y", b), r = tensor("o", "Unknown");
  std::vector<const Val*> ins{&x, &y};
  std::string name = "broadcast_add", op = "op1", o = "o", src = "src/lib.rs:3";
  check->operation(OperationFact{name, name, rule, ins, r, op, o, src}, out);
  return rules_of(ir);
}

TEST(Checks, DtypeAgreementOverOperandFacts) {
  EXPECT_EQ(dtype_findings("F32", "BF16"), std::vector<std::string>{"dtype-conflict"});
  // An unknown operand is no evidence: no warning a user cannot act on.
  EXPECT_TRUE(dtype_findings("F32", "Unknown").empty());
  EXPECT_TRUE(dtype_findings("F32", "F32").empty());
  EXPECT_TRUE(dtype_findings("Unknown", "Unknown").empty());
}

std::vector<std::string> dead_gradient_findings(bool severed) {
  cg::ir::ModelIr ir;
  ir.functions.emplace_back();
  ir.functions[0].id = "fn";
  Reporter out(ir);
  out.add_tensor("w", "w", cg::ir::TensorRole::parameter, "fn");
  RunFacts run;
  run.train = true;
  run.trainable = {"w"};
  run.loss_tensors = {"loss"};
  run.succ["w"].push_back({"loss", severed});
  cg::analysis::checks::dead_gradient_check()->run_end(run, out);
  return rules_of(ir);
}

TEST(Checks, DeadGradientFollowsOnlyDifferentiableEdges) {
  EXPECT_EQ(dead_gradient_findings(true), std::vector<std::string>{"dead-gradient-path"});
  EXPECT_TRUE(dead_gradient_findings(false).empty());
}

cg::ir::ModelIr analyze(const std::string& fixture) {
  auto loaded = cg::rust::load_crate(fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow" / fixture,
                                     cg::cargo::Selection{});
  cg::ir::ModelIr ir;
  ir.functions = cg::pipeline::functions_of(loaded.crate);
  cg::analysis::DataflowOptions opts;
  opts.candle_version = "0.11.0";
  cg::analysis::build_dataflow(loaded.crate, opts, ir);
  return ir;
}

bool has(const cg::ir::ModelIr& ir, const std::string& rule) {
  for (const auto& f : ir.findings)
    if (f.rule == rule) return true;
  return false;
}

struct Pair {
  const char* rule;
  const char* pos;
  const char* neg;
};

TEST(Checks, EachRuleFiresOnItsPositiveFixtureOnly) {
  const Pair pairs[] = {
      {"dtype-conflict", "dtype_conflict_pos", "dtype_conflict_neg"},
      {"dtype-risk", "dtype_runtime_pos", "dtype_runtime_neg"},
      {"dead-gradient-path", "dead_grad_pos", "dead_grad_neg"},
      {"numeric-domain-violation", "numeric_pos", "numeric_neg"},
      {"zero-times-infinity", "zero_log_pos", "zero_log_neg"},
      {"unstable-library-loss", "bce_pos", "bce_neg"},
  };
  for (const Pair& p : pairs) {
    EXPECT_TRUE(has(analyze(p.pos), p.rule)) << p.rule << " on " << p.pos;
    EXPECT_FALSE(has(analyze(p.neg), p.rule)) << p.rule << " on " << p.neg;
  }
}

TEST(Checks, RecursionFixtureReportsTheBound) {
  EXPECT_TRUE(has(analyze("recursion"), "dataflow-bound"));
}

}  // namespace
