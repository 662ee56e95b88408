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
  zero,  // exactly 0 on every execution (`zeros_like`, a literal 0)
};

enum class DomainRequirement { non_zero, non_negative, strictly_positive };

enum class Violation { proven, possible };

std::string_view to_string(NumericDomain d);

// Whether `producer` can violate `requirement`: proven only when every value of the domain is bad
// (`log` of exactly 0), so the violation happens on every execution; possible when the domain
// merely includes a bad value (a ReLU output, an `exp` that can underflow, a sigmoid that can
// saturate) or is unknown; nothing when it is discharged.
std::optional<Violation> domain_violation(DomainRequirement requirement, NumericDomain producer);

// Domain of a value that is either a or b (branches that join): the smallest domain holding both.
NumericDomain join_domain(NumericDomain a, NumericDomain b);

// Domain of a + b: a strictly positive term keeps a sum of non-negative terms away from 0
// (`1 + exp(x)`, `x² + ε`, softplus); unknown is absorbing.
NumericDomain add_domain(NumericDomain a, NumericDomain b);

// Domain of a * b: 0 times anything finite is 0; positive times positive stays positive.
NumericDomain mul_domain(NumericDomain a, NumericDomain b);

// Domain of a unary op's output given its input's: sqrt, abs and relu keep a strictly positive or
// zero input so; anything else takes the op's catalogued domain `otherwise`.
NumericDomain unary_domain(std::string_view op, NumericDomain in, NumericDomain otherwise);

// Domain of a constant tensor or scalar with value v (`ones_like` is 1, a literal ε is > 0).
NumericDomain constant_domain(double v);

// Domain of `x.affine(mul, add)`: a positive scale with a positive shift is the epsilon guard
// that turns [0, 1] or [0, inf) into (0, inf); anything else keeps 0 reachable.
NumericDomain affine_domain(NumericDomain x, double mul, double add);

bool domain_includes_zero(NumericDomain d);

}  // namespace cg::analysis
