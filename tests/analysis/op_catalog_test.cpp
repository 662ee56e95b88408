#include "analysis/op_catalog.hpp"

#include <gtest/gtest.h>

#include "analysis/numeric_domain.hpp"

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

TEST(OpCatalog, DomainRequirements) {
  EXPECT_EQ(audited().lookup("log").requirement, Requirement::strictly_positive);
  EXPECT_EQ(audited().lookup("sqrt").requirement, Requirement::non_negative);
  auto div = audited().lookup("broadcast_div");
  EXPECT_EQ(div.requirement, Requirement::non_zero);
  EXPECT_EQ(div.checked_operand, 1) << "div checks its divisor";
  EXPECT_TRUE(audited().lookup("candle_nn::loss::cross_entropy").is_loss);
}

TEST(OpCatalog, UnauditedVersionKnowsNothing) {
  const auto& other = OpCatalog::for_version("0.9.1");
  EXPECT_FALSE(other.audited());
  auto r = other.lookup("matmul");
  EXPECT_FALSE(r.known());
  EXPECT_NE(r.note.find("not an audited version"), std::string::npos);
  EXPECT_TRUE(audited().lookup("matmul").known());
  EXPECT_FALSE(audited().lookup("frobnicate").known());
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
