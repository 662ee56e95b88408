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
  }
  return "unknown";
}

std::optional<Violation> domain_violation(DomainRequirement requirement, NumericDomain producer) {
  if (producer == NumericDomain::unknown) return Violation::possible;
  switch (requirement) {
    case DomainRequirement::non_zero:
    case DomainRequirement::strictly_positive:
      if (producer == NumericDomain::strictly_positive) return std::nullopt;
      return Violation::proven;
    case DomainRequirement::non_negative:
      if (producer == NumericDomain::real) return Violation::proven;
      return std::nullopt;
  }
  return Violation::possible;
}

NumericDomain join_domain(NumericDomain a, NumericDomain b) {
  using D = NumericDomain;
  if (a == D::unknown || b == D::unknown) return D::unknown;
  if (a == b) return a;
  auto nonneg_family = [](D d) {
    return d == D::non_negative || d == D::strictly_positive || d == D::saturating_unit;
  };
  if (nonneg_family(a) && nonneg_family(b)) return D::non_negative;
  return D::real;
}

NumericDomain affine_domain(NumericDomain x, double mul, double add) {
  using D = NumericDomain;
  if (x == D::unknown) return x;
  if (mul == 0.0) return add > 0.0 ? D::strictly_positive : add == 0.0 ? D::non_negative : D::real;
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
         d == NumericDomain::real;
}

}  // namespace cg::analysis
