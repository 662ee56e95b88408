#pragma once
// After the inventory (issues #18 and #21): what a bound config.json gave the parameters, checked
// over the IR's parameter shapes, module repeat counts and the binding's records
// (analysis::ConfigValues::problems / read).
//
// Errors (cg::InputError naming the file and the config key, exit 2): a value serde would refuse
// for the field's Rust type (negative or fractional for an integer field, a name no variant of its
// enum has) that feeds a parameter shape or a family's count, or that is a field of the root's
// own config struct (serde refuses the whole file); a dimension that divides by a 0 the config
// gives (Rust panics) or that the config makes 0; a tensor over 2^40 elements; a parameter count
// (elements times the count of the families it repeats in) or a component's total that does not fit
// 64 bits.
//
// Warnings (`config-binding` findings, printed by `summary` and `verify`): a config field a
// constructor reads that the bound file leaves symbolic, named with the parameters it leaves
// without a shape; a refused value that feeds no parameter (`config-value`).
#include <cstddef>
#include <string>

#include "analysis/config_values.hpp"
#include "ir/model.hpp"

namespace cg::pipeline {

// Largest element count of one tensor that is not refused as absurd (2^40, ~1.1e12).
inline constexpr std::uint64_t kMaxTensorElements = std::uint64_t{1} << 40;

// `partial` (--partial-config): a refused value of a field no constructor reads is a warning, not
// an error (the file is knowingly another schema's).
void check_config(const analysis::ConfigValues& config, ir::ModelIr& ir, bool partial = false);

// The `config-binding` / `config-value` warnings as "warning: …" lines, at most `max` of them and
// then one line with the count left out; "" when there are none.
std::string config_warning_lines(const ir::ModelIr& ir, std::size_t max = 8);

}  // namespace cg::pipeline
