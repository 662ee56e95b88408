#pragma once
// Numeric-domain algebra for NaN-hazard findings: what range of values an expression can take, and
// whether an operation's requirement on its operand (`log` needs > 0) is discharged.
#include <optional>
#include <string_view>

namespace cg::analysis {

enum class NumericDomain {
  real,               // any finite value, 0 included
  non_negative,       // >= 0
  saturating_unit,    // [0, 1], and attains both ends in f32 (sigmoid(x) == 0 for x < -88.72)
  strictly_positive,  // > 0
  unknown,
};

enum class DomainRequirement { non_zero, non_negative, strictly_positive };

enum class Violation { proven, possible };

std::string_view to_string(NumericDomain d);

// Whether `producer` can violate `requirement`: proven when the domain certainly includes a bad
// value, possible when the domain is unknown, nothing when it is discharged.
std::optional<Violation> domain_violation(DomainRequirement requirement, NumericDomain producer);

// Domain of a + b or a * b given both operand domains (unknown is absorbing).
NumericDomain join_domain(NumericDomain a, NumericDomain b);

// Domain of `x.affine(mul, add)`: a positive scale with a positive shift is the epsilon guard
// that turns [0, 1] or [0, inf) into (0, inf); anything else keeps 0 reachable.
NumericDomain affine_domain(NumericDomain x, double mul, double add);

bool domain_includes_zero(NumericDomain d);

}  // namespace cg::analysis
