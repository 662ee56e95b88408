#pragma once
// What each candle-nn constructor asks its VarBuilder for: leaf names, shapes in terms of the
// constructor's arguments, and when a leaf is conditional. Audited per Candle release like the op
// catalog; unaudited versions have no constructor entries, so their leaves stay unknown.
#include <string>
#include <string_view>
#include <vector>

namespace cg::analysis {

struct LeafSpec {
  std::string name;  // key segment under the layer's prefix ("weight", "running_mean")
  // One entry per dimension: an expression over the constructor's argument names written as
  // `{arg}` placeholders, e.g. {"{out_dim}", "{in_dim}"} or {"{in_channels} / {cfg}.groups"}.
  std::vector<std::string> shape;
  // Empty when always requested; otherwise the condition over arguments, e.g. "{config}.affine".
  std::string condition;
  bool running_state = false;  // batch-norm running statistics: state, never optimized
};

struct ConstructorSpec {
  std::string name;                 // "linear_no_bias"
  std::string layer_type;           // "Linear"
  std::vector<std::string> params;  // argument names in order, the VarBuilder excluded
  std::vector<LeafSpec> leaves;
  std::string note;  // audited source, quirks
};

class LayerCatalog {
 public:
  static const LayerCatalog& for_version(std::string_view candle_nn_version);
  bool audited() const { return audited_; }
  // By last path segment: `candle_nn::linear_no_bias` and `nn::linear_no_bias` both match.
  const ConstructorSpec* find(std::string_view call_path) const;
  const std::vector<ConstructorSpec>& constructors() const { return constructors_; }

 private:
  LayerCatalog(bool audited, std::vector<ConstructorSpec> c);
  bool audited_;
  std::vector<ConstructorSpec> constructors_;
};

// Substitutes `{arg}` placeholders with argument expression texts; an unknown placeholder is kept
// verbatim so the result stays readable and visibly symbolic.
std::string substitute_args(std::string_view templ, const std::vector<std::string>& params,
                            const std::vector<std::string>& args);

}  // namespace cg::analysis
