#include "analysis/op_catalog.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/numeric_domain.hpp"
#include "pipeline/pipeline.hpp"

namespace {

using namespace cg::analysis;

const OpCatalog& audited() {
  return OpCatalog::for_version("0.11.0");
}

TEST(OpCatalog, NoBackwardKernelsSeverGradients) {
  for (const char* op : {"candle_nn::ops::rms_norm", "candle_nn::ops::softmax_last_dim",
                         "candle_nn::rotary_emb::rope", "candle_nn::ops::sdpa", "layer_norm"}) {
    auto r = audited().lookup(op);
    EXPECT_EQ(r.grad, GradRule::severs) << op;
    EXPECT_NE(r.note.find("no_bwd"), std::string::npos) << op << ": " << r.note;
  }
  EXPECT_EQ(audited().lookup("rms_norm_slow").grad, GradRule::propagates);
}

TEST(OpCatalog, RmsNormForwardDependsOnLayoutButForwardDiffDoesNot) {
  EXPECT_EQ(audited().lookup_method("candle_nn::RmsNorm", "forward").grad,
            GradRule::layout_dependent);
  EXPECT_EQ(audited().lookup_method("RmsNorm", "forward_diff").grad, GradRule::propagates);
  EXPECT_EQ(audited().lookup_method("Linear", "forward").grad, GradRule::propagates);
  // A user type that is not a candle-nn layer falls back to the bare method, which is unknown.
  EXPECT_FALSE(audited().lookup_method("MyBlock", "forward").known());
}

TEST(OpCatalog, DtypeRules) {
  EXPECT_EQ(audited().lookup("broadcast_add").dtype, DtypeRule::same_as_inputs);
  EXPECT_EQ(audited().lookup("to_dtype").dtype, DtypeRule::explicit_arg);
  auto argmax = audited().lookup("argmax");
  EXPECT_EQ(argmax.dtype, DtypeRule::fixed);
  EXPECT_EQ(argmax.fixed_dtype, "U32");
  EXPECT_EQ(audited().lookup("exp").dtype, DtypeRule::preserve);
}

// MoE routing: the write-back keeps the receiver's shape and dtype and has a backward; the sort
// gives U32 indices with none (candle-core's sort.rs applies it with apply_op1_no_bwd).
TEST(OpCatalog, RoutingOps) {
  for (const char* op : {"index_add", "scatter_add"}) {
    auto r = audited().lookup(op);
    EXPECT_EQ(r.shape, ShapeRule::preserve) << op;
    EXPECT_EQ(r.dtype, DtypeRule::preserve) << op;
    EXPECT_EQ(r.grad, GradRule::propagates) << op;
  }
  auto sort = audited().lookup("arg_sort_last_dim");
  EXPECT_EQ(sort.dtype, DtypeRule::fixed);
  EXPECT_EQ(sort.fixed_dtype, "U32");
  EXPECT_EQ(sort.grad, GradRule::severs);
  EXPECT_EQ(sort.shape, ShapeRule::preserve);
  EXPECT_FALSE(OpCatalog::for_version("0.7.2").lookup("index_add").known());
}

// candle-nn's Dropout (ops.rs: `ops::dropout` when training, the input otherwise) keeps its
// input's shape and dtype; a layer type is known by its forward rules, a type it has none for is
// not (a crate's own `Linear`-named struct is resolved before the catalog is asked).
TEST(OpCatalog, DropoutAndLayerTypes) {
  for (const char* m : {"forward", "forward_t"}) {
    auto r = audited().lookup_method("candle_nn::Dropout", m);
    EXPECT_EQ(r.shape, ShapeRule::preserve) << m;
    EXPECT_EQ(r.dtype, DtypeRule::preserve) << m;
    EXPECT_EQ(r.grad, GradRule::propagates) << m;
  }
  EXPECT_TRUE(audited().knows_layer("Linear"));
  EXPECT_TRUE(audited().knows_layer("Dropout"));
  EXPECT_TRUE(audited().knows_layer("BatchNorm"));
  EXPECT_FALSE(audited().knows_layer("VarBuilder"));
  EXPECT_FALSE(OpCatalog::for_version("0.7.2").knows_layer("Linear"));
}

TEST(OpCatalog, DomainRequirements) {
  EXPECT_EQ(audited().lookup("log").requirement, Requirement::strictly_positive);
  EXPECT_EQ(audited().lookup("sqrt").requirement, Requirement::non_negative);
  auto div = audited().lookup("broadcast_div");
  EXPECT_EQ(div.requirement, Requirement::non_zero);
  EXPECT_EQ(div.checked_operand, 1) << "div checks its divisor";
  EXPECT_TRUE(audited().lookup("candle_nn::loss::cross_entropy").is_loss);
}

TEST(OpCatalog, UnauditedVersionKnowsNothing) {
  const auto& other = OpCatalog::for_version("0.7.2");
  EXPECT_FALSE(other.audited());
  auto r = other.lookup("matmul");
  EXPECT_FALSE(r.known());
  EXPECT_NE(r.note.find("not an audited version"), std::string::npos);
  EXPECT_TRUE(audited().lookup("matmul").known());
  EXPECT_FALSE(audited().lookup("frobnicate").known());
}

TEST(OpCatalog, EveryReleaseFromEightToElevenIsAudited) {
  for (const char* v :
       {"0.8.0", "0.8.3", "0.8.4", "0.9.0", "0.9.1", "0.10.0", "0.10.2", "0.11.0"}) {
    const auto& c = OpCatalog::for_version(v);
    EXPECT_TRUE(c.audited()) << v;
    EXPECT_EQ(c.lookup("matmul").shape, ShapeRule::matrix_product) << v;
    EXPECT_EQ(c.lookup("candle_nn::ops::rms_norm").grad, GradRule::severs) << v;
    EXPECT_EQ(c.lookup_method("RmsNorm", "forward").grad, GradRule::layout_dependent) << v;
  }
  // Pre-releases were not reviewed op by op; neither were releases outside the range, a git source
  // (maybe a fork), several versions at once, or a release that does not exist.
  for (const char* v : {"0.7.2", "0.9.0-alpha.1", "0.9.2-alpha.2", "0.11.1", "0.12.0", "0.8.5",
                        "0.9.1+git", "0.9.1,0.11.0", "", "0.9"}) {
    EXPECT_FALSE(OpCatalog::for_version(v).audited()) << v;
    EXPECT_FALSE(OpCatalog::for_version(v).lookup("matmul").known()) << v;
  }
  auto all = OpCatalog::audited_versions();
  EXPECT_EQ(all.front(), "0.8.0");
  EXPECT_EQ(all.back(), "0.11.0");
  EXPECT_EQ(std::count(all.begin(), all.end(), "0.9.1"), 1);
  EXPECT_EQ(OpCatalog::audited_range(), "0.8.0-0.11.0 releases");
}

TEST(OpCatalog, AnOpALaterReleaseAddedIsUnknownBeforeIt) {
  // candle-nn added loss::huber in 0.10.0 and the CPU varlen flash attention in 0.11.0: a crate on
  // an older release gets no rule borrowed from 0.11.0.
  auto huber_091 = OpCatalog::for_version("0.9.1").lookup("candle_nn::loss::huber");
  EXPECT_FALSE(huber_091.known());
  EXPECT_FALSE(huber_091.is_loss);
  EXPECT_EQ(huber_091.note, "`huber` is not in candle 0.9.1 (added in 0.10.0)");
  EXPECT_FALSE(OpCatalog::for_version("0.8.4").lookup("huber").known());
  EXPECT_TRUE(OpCatalog::for_version("0.10.0").lookup("huber").is_loss);
  EXPECT_TRUE(OpCatalog::for_version("0.11.0").lookup("huber").is_loss);
  EXPECT_FALSE(OpCatalog::for_version("0.9.1").lookup("run_flash_attn_cpu").known());
  EXPECT_EQ(OpCatalog::for_version("0.10.1").lookup("run_flash_attn_cpu").grad, GradRule::severs);
  EXPECT_FALSE(OpCatalog::for_version("0.10.2").lookup("flash_attn_varlen_cpu").known());
  EXPECT_TRUE(OpCatalog::for_version("0.11.0").lookup("flash_attn_varlen_cpu").known());
  // candle-flash-attn's flash_attn exists in every reviewed release.
  EXPECT_EQ(OpCatalog::for_version("0.8.0").lookup("flash_attn").grad, GradRule::severs);
}

TEST(OpCatalog, ReleaseDifferencesThatKeepTheRuleAreInTheNote) {
  auto sdpa_old = OpCatalog::for_version("0.9.1").lookup("sdpa");
  auto sdpa_new = OpCatalog::for_version("0.10.0").lookup("sdpa");
  EXPECT_EQ(sdpa_old.grad, GradRule::severs);
  EXPECT_EQ(sdpa_new.grad, GradRule::severs);
  EXPECT_NE(sdpa_old.note.find("no mask"), std::string::npos) << sdpa_old.note;
  EXPECT_NE(sdpa_new.note.find("mask, do_causal"), std::string::npos) << sdpa_new.note;
  auto rope_i_084 = OpCatalog::for_version("0.8.4").lookup("rope_i");
  EXPECT_NE(rope_i_084.note.find("sin's is not"), std::string::npos) << rope_i_084.note;
  EXPECT_EQ(OpCatalog::for_version("0.9.1").lookup("rope_i").note.find("sin's is not"),
            std::string::npos);
  EXPECT_NE(OpCatalog::for_version("0.8.4").lookup("from_vec").note.find("every dimension"),
            std::string::npos);
  EXPECT_NE(OpCatalog::for_version("0.9.0").lookup("from_vec").note.find("hole"),
            std::string::npos);
}

// A crate whose Cargo.lock pins candle-core and candle-nn to `version`, analysed end to end.
cg::pipeline::Analysis analyze_on(const std::string& version) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("cg-op-release-" + std::to_string(::getpid()) + "-" + version);
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  std::ofstream(dir / "Cargo.toml")
      << "[package]\nname = \"release-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
         "[dependencies]\ncandle-core = \"0.8\"\ncandle-nn = \"0.8\"\n";
  std::ofstream(dir / "Cargo.lock")
      << "version = 3\n\n[[package]]\nname = \"candle-core\"\n"
         "version = \""
      << version << "\"\n\n[[package]]\nname = \"candle-nn\"\nversion = \"" << version << "\"\n";
  std::ofstream(dir / "src/lib.rs") << R"(use candle_core::{Result, Tensor};
pub struct Head { w: Tensor }
impl Head {
    pub fn loss(&self, xs: &Tensor, target: &Tensor) -> Result<Tensor> {
        let y = xs.matmul(&self.w)?;
        candle_nn::loss::huber(&y, target, 1.0)
    }
}
)";
  cg::pipeline::Options opts;
  opts.path = dir.string();
  auto a = cg::pipeline::analyze(opts);
  fs::remove_all(dir);
  return a;
}

const cg::ir::Operation* op_named(const cg::ir::ModelIr& ir, const std::string& name) {
  for (const auto& o : ir.operations)
    if (o.name.find(name) != std::string::npos) return &o;
  return nullptr;
}

bool has_version_finding(const cg::ir::ModelIr& ir) {
  return std::any_of(ir.findings.begin(), ir.findings.end(),
                     [](const auto& f) { return f.rule == "candle-semantics-version"; });
}

TEST(OpCatalog, CrateOnAnOlderReleaseFollowsThatReleasesRules) {
  for (const char* v : {"0.8.4", "0.9.1"}) {
    auto a = analyze_on(v);
    EXPECT_FALSE(has_version_finding(a.ir)) << v;
    const auto* matmul = op_named(a.ir, "matmul");
    ASSERT_NE(matmul, nullptr) << v;
    EXPECT_EQ(matmul->gradient_rule, "propagates") << v;
    EXPECT_EQ(matmul->shape_rule, "matrix_product") << v;
    // huber only exists from 0.10.0: no rule borrowed from 0.11.0 (an unknown free function is
    // not recorded), so it is no loss and the function stays an inference graph.
    const auto* huber = op_named(a.ir, "huber");
    if (huber != nullptr) {
      EXPECT_EQ(huber->gradient_rule, "unknown") << v;
    }
    EXPECT_EQ(matmul->execution_phase, cg::ir::ExecutionPhase::infer) << v;
  }
  auto current = analyze_on("0.11.0");
  EXPECT_FALSE(has_version_finding(current.ir));
  ASSERT_NE(op_named(current.ir, "huber"), nullptr);
  EXPECT_EQ(op_named(current.ir, "huber")->gradient_rule, "propagates");
  ASSERT_NE(op_named(current.ir, "matmul"), nullptr);
  EXPECT_EQ(op_named(current.ir, "matmul")->execution_phase, cg::ir::ExecutionPhase::train)
      << "0.11.0's huber is a loss";

  auto old = analyze_on("0.7.2");
  EXPECT_TRUE(has_version_finding(old.ir));
  ASSERT_NE(op_named(old.ir, "matmul"), nullptr);
  EXPECT_EQ(op_named(old.ir, "matmul")->gradient_rule, "unknown");
}

TEST(NumericDomain, ProvenOnlyWhenEveryValueIsBad) {
  // log(0) fails on every execution; log(sigmoid(x)) only when x saturates, log(relu(x)) only when
  // x <= 0: those may fail, which is a warning, never a proven error.
  EXPECT_EQ(domain_violation(DomainRequirement::strictly_positive, NumericDomain::zero),
            Violation::proven);
  EXPECT_EQ(domain_violation(DomainRequirement::non_zero, NumericDomain::zero), Violation::proven);
  EXPECT_EQ(domain_violation(DomainRequirement::strictly_positive, NumericDomain::saturating_unit),
            Violation::possible);
  EXPECT_EQ(domain_violation(DomainRequirement::strictly_positive, NumericDomain::non_negative),
            Violation::possible);
  EXPECT_FALSE(
      domain_violation(DomainRequirement::strictly_positive, NumericDomain::strictly_positive));
  EXPECT_EQ(domain_violation(DomainRequirement::strictly_positive, NumericDomain::unknown),
            Violation::possible);
  EXPECT_FALSE(domain_violation(DomainRequirement::non_negative, NumericDomain::saturating_unit));
  EXPECT_FALSE(domain_violation(DomainRequirement::non_negative, NumericDomain::zero));
  EXPECT_EQ(domain_violation(DomainRequirement::non_negative, NumericDomain::real),
            Violation::possible);
}

TEST(NumericDomain, StrictlyPositiveTermKeepsASumPositive) {
  using D = NumericDomain;
  // softplus: 1 + exp(x), exp underflowing to 0 or not.
  EXPECT_EQ(add_domain(constant_domain(1.0), D::non_negative), D::strictly_positive);
  EXPECT_EQ(add_domain(D::non_negative, D::strictly_positive), D::strictly_positive);
  EXPECT_EQ(add_domain(D::saturating_unit, D::saturating_unit), D::non_negative);
  EXPECT_EQ(add_domain(D::zero, D::saturating_unit), D::saturating_unit);
  EXPECT_EQ(add_domain(D::real, D::strictly_positive), D::real);
  EXPECT_EQ(add_domain(D::unknown, D::strictly_positive), D::unknown);
  EXPECT_EQ(mul_domain(D::strictly_positive, D::strictly_positive), D::strictly_positive);
  EXPECT_EQ(mul_domain(D::zero, D::real), D::zero);
  EXPECT_EQ(mul_domain(D::strictly_positive, D::saturating_unit), D::non_negative);
  EXPECT_EQ(constant_domain(0.0), D::zero);
  EXPECT_EQ(constant_domain(-1.0), D::real);
  EXPECT_EQ(unary_domain("sqrt", D::strictly_positive, D::non_negative), D::strictly_positive);
  EXPECT_EQ(unary_domain("sqrt", D::saturating_unit, D::non_negative), D::non_negative);
  EXPECT_EQ(unary_domain("exp", D::zero, D::non_negative), D::non_negative);
}

// Rounding keeps only the sign of what it rounds: of an unknown operand unknown (a false
// warning on llama4's `log(floor((pos + 1) / s) + 1)` said "real"), of a non-negative one
// non-negative (floor(0.5) is 0), `ceil` of a positive value positive.
TEST(NumericDomain, RoundingKeepsTheOperandsSign) {
  using D = NumericDomain;
  EXPECT_EQ(unary_domain("floor", D::unknown, D::real), D::unknown);
  EXPECT_EQ(unary_domain("floor", D::strictly_positive, D::real), D::non_negative);
  EXPECT_EQ(unary_domain("ceil", D::strictly_positive, D::real), D::strictly_positive);
  EXPECT_EQ(unary_domain("round", D::saturating_unit, D::real), D::non_negative);
  EXPECT_EQ(unary_domain("floor", D::real, D::real), D::real);
  // + 1 of the floor of a non-negative value is positive: log of it is no hazard.
  EXPECT_EQ(affine_domain(unary_domain("floor", D::non_negative, D::real), 1.0, 1.0),
            D::strictly_positive);
}

TEST(NumericDomain, EpsilonGuardDischargesLogOfSigmoid) {
  // log(sigmoid(x) + 1e-7): affine(1, 1e-7) turns [0, 1] into (0, inf).
  EXPECT_EQ(affine_domain(NumericDomain::saturating_unit, 1.0, 1e-7),
            NumericDomain::strictly_positive);
  // 1 - p still attains 0.
  EXPECT_EQ(affine_domain(NumericDomain::saturating_unit, -1.0, 1.0),
            NumericDomain::saturating_unit);
  EXPECT_EQ(affine_domain(NumericDomain::non_negative, 2.0, 0.0), NumericDomain::non_negative);
  EXPECT_EQ(affine_domain(NumericDomain::non_negative, -2.0, 0.0), NumericDomain::real);
  EXPECT_EQ(join_domain(NumericDomain::saturating_unit, NumericDomain::strictly_positive),
            NumericDomain::non_negative);
  EXPECT_EQ(join_domain(NumericDomain::unknown, NumericDomain::real), NumericDomain::unknown);
  EXPECT_TRUE(domain_includes_zero(NumericDomain::saturating_unit));
  EXPECT_FALSE(domain_includes_zero(NumericDomain::strictly_positive));
}

}  // namespace
