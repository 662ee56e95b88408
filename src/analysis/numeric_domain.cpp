#include "analysis/numeric_domain.hpp"

namespace cg::analysis {

std::string_view to_string(NumericDomain d) {
  switch (d) {
    case NumericDomain::real:
      return "real";
    case NumericDomain::non_negative:
      return "non_negative";
    case NumericDomain::saturating_unit:
      return "saturating_unit(f32_upper=16.6355,f32_lower=-88.7228)";
    case NumericDomain::strictly_positive:
      return "strictly_positive";
    case NumericDomain::unknown:
      return "unknown";
    case NumericDomain::zero:
      return "zero";
  }
  return "unknown";
}

std::optional<Violation> domain_violation(DomainRequirement requirement, NumericDomain producer) {
  using D = NumericDomain;
  if (producer == D::unknown) return Violation::possible;
  switch (requirement) {
    case DomainRequirement::non_zero:
    case DomainRequirement::strictly_positive:
      if (producer == D::strictly_positive) return std::nullopt;
      if (producer == D::zero) return Violation::proven;
      return Violation::possible;
    case DomainRequirement::non_negative:
      if (producer == D::real) return Violation::possible;
      return std::nullopt;
  }
  return Violation::possible;
}

namespace {

bool non_negative_family(NumericDomain d) {
  using D = NumericDomain;
  return d == D::non_negative || d == D::strictly_positive || d == D::saturating_unit ||
         d == D::zero;
}

}  // namespace

NumericDomain join_domain(NumericDomain a, NumericDomain b) {
  using D = NumericDomain;
  if (a == D::unknown || b == D::unknown) return D::unknown;
  if (a == b) return a;
  if (non_negative_family(a) && non_negative_family(b)) return D::non_negative;
  return D::real;
}

NumericDomain add_domain(NumericDomain a, NumericDomain b) {
  using D = NumericDomain;
  if (a == D::unknown || b == D::unknown) return D::unknown;
  if (a == D::zero) return b;
  if (b == D::zero) return a;
  if (!non_negative_family(a) || !non_negative_family(b)) return D::real;
  if (a == D::strictly_positive || b == D::strictly_positive) return D::strictly_positive;
  return D::non_negative;  // [0, 1] + [0, 1] leaves the unit interval
}

NumericDomain mul_domain(NumericDomain a, NumericDomain b) {
  using D = NumericDomain;
  if (a == D::unknown || b == D::unknown) return D::unknown;
  if (a == D::zero || b == D::zero) return D::zero;
  if (!non_negative_family(a) || !non_negative_family(b)) return D::real;
  if (a == D::strictly_positive && b == D::strictly_positive) return D::strictly_positive;
  return D::non_negative;  // a product can underflow to 0
}

NumericDomain unary_domain(std::string_view op, NumericDomain in, NumericDomain otherwise) {
  using D = NumericDomain;
  if ((op == "sqrt" || op == "abs" || op == "relu") &&
      (in == D::strictly_positive || in == D::zero))
    return in;
  // Rounding keeps what is known of its operand's sign and nothing else: of an unknown operand
  // it is unknown (llama4's `log(floor((pos + 1) / s) + 1)` of positions is no finding); of a
  // non-negative one non-negative (`floor(0.5)` is 0, `ceil` of a positive value is positive).
  if (op == "floor" || op == "round" || op == "ceil" || op == "sign") {
    if (in == D::unknown || in == D::zero) return in;
    if (in == D::strictly_positive && (op == "ceil" || op == "sign")) return in;
    if (non_negative_family(in)) return D::non_negative;
    return D::real;
  }
  return otherwise;
}

NumericDomain constant_domain(double v) {
  if (v > 0.0) return NumericDomain::strictly_positive;
  if (v == 0.0) return NumericDomain::zero;
  return NumericDomain::real;
}

NumericDomain affine_domain(NumericDomain x, double mul, double add) {
  using D = NumericDomain;
  if (x == D::unknown) return x;
  if (mul == 0.0 || x == D::zero) return constant_domain(add);
  if (x == D::real) return D::real;
  // x >= 0 below (SU, NN, SP).
  if (mul > 0.0) {
    if (add > 0.0) return D::strictly_positive;  // the epsilon guard
    if (add < 0.0) return D::real;
    if (x == D::saturating_unit) return mul == 1.0 ? D::saturating_unit : D::non_negative;
    return x;  // positive scaling keeps SP and NN
  }
  // Negative scale: only 1 - p over [0, 1] stays in a known non-negative range, and it still
  // attains 0.
  if (x == D::saturating_unit && mul == -1.0 && add == 1.0) return D::saturating_unit;
  return D::real;
}

bool domain_includes_zero(NumericDomain d) {
  return d == NumericDomain::non_negative || d == NumericDomain::saturating_unit ||
         d == NumericDomain::real || d == NumericDomain::zero;
}

}  // namespace cg::analysis
