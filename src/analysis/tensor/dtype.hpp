#pragma once
// Dtype facts of the tensor domain: agreement of an op's operands, and the element type Rust
// host data names.
#include <optional>
#include <string>
#include <vector>

#include "analysis/tensor/value.hpp"

namespace cg::analysis::tensor {

struct OperandDtypes {
  std::vector<std::string> known;  // known dtypes of the checked tensor operands, in order
  bool any_unknown = false;
  bool conflict = false;  // two known ones differ
  // Run-time dtypes of the unknown operands that have one (Val::dtype_param), and how many
  // operands were checked.
  std::vector<std::string> params;
  std::size_t checked = 0;
};
// The dtypes that must agree for op `name` (a mask operand is left out).
OperandDtypes operand_dtypes(const std::string& name, const std::vector<const Val*>& ins);

// The element type of host data (`vec![1u32, 2]`, `&[0f32; 4]`, `1f64`, `Vec<f32>`, a chain
// naming `f32::NEG_INFINITY .. 0.`): every primitive type the text names (literal suffixes,
// `as f32`, `f32::MAX`) when they all agree; nullopt when none or several are named.
std::optional<std::string> named_dtype(const std::string& text);

}  // namespace cg::analysis::tensor
