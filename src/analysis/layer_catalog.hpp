#pragma once
// What each candle-nn constructor asks its VarBuilder for: leaf names, shapes in terms of the
// constructor's arguments, and when a leaf is conditional. Audited per Candle release like the op
// catalog; unaudited versions have no constructor entries, so their leaves stay unknown.
//
// With candle-nn's own source on disk, its constructors are read from source
// (analysis/layer_source.hpp) into a catalogue of their own (`from_source`) that the pipeline
// hands to the analyses that need it (InventoryOptions::layer_catalog, the instrumentation): any
// candle-nn release or fork gets exact leaves, and this hand-written one is the audited fallback.
// Nothing is global: two analyses in one process (an MCP server, a bench) on different candle-nn
// sources never see each other's catalogue.
#include <map>
#include <memory>
#include <optional>
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

// A field's value in a candle-nn config's `Default::default()` (`Conv2dConfig { padding: 0, ..}`),
// read from source: the literal's tree-sitter kind ("integer_literal") and text.
struct ConfigDefault {
  std::string kind;
  std::string text;
};

class LayerCatalog {
 public:
  // The hand-written catalogue when that release is audited, else one with no constructors and
  // `audited()` false.
  static const LayerCatalog& for_version(std::string_view candle_nn_version);
  // What the parameter inventory walks with when no catalogue was read from source: the
  // hand-written 0.11.0 constructors (whose leaves the inventory marks unknown when
  // `for_version(v).audited()` is false).
  static const LayerCatalog& for_inventory(std::string_view candle_nn_version);
  // The hand-written catalogue alone (the audited fallback, and the check source-derived
  // constructors are compared with); the same as for_version.
  static const LayerCatalog& hand_written(std::string_view candle_nn_version);

  // A catalogue of constructors read from source (`origin`: where, for doctor and notes).
  // `config_defaults`: by field name, the literal value every config type of the source that has
  // the field gives it in its `Default::default()` (a field two types default differently is left
  // out).
  static std::shared_ptr<const LayerCatalog> from_source(
      std::vector<ConstructorSpec> c, std::string origin,
      std::map<std::string, ConfigDefault> config_defaults = {});
  // A config field's default read from source; null when the source does not give one (the
  // inventory then uses its hand-written defaults).
  const ConfigDefault* config_default(std::string_view field) const;

  bool audited() const { return audited_; }
  bool from_source() const { return !origin_.empty(); }
  const std::string& origin() const { return origin_; }
  // By last path segment: `candle_nn::linear_no_bias` and `nn::linear_no_bias` both match.
  const ConstructorSpec* find(std::string_view call_path) const;
  const std::vector<ConstructorSpec>& constructors() const { return constructors_; }

 private:
  LayerCatalog(bool audited, std::vector<ConstructorSpec> c, std::string origin = "");
  bool audited_;
  std::string origin_;  // empty for the hand-written catalogue
  std::vector<ConstructorSpec> constructors_;
  std::map<std::string, ConfigDefault, std::less<>> config_defaults_;
};

// The strings serde accepts for a unit variant of a candle-nn enum a config field may have
// (`candle_nn::Activation`: "silu", "gelu_pytorch_tanh", ...), for candle-nn 0.11; nullopt for
// any other type. `path` is the resolved external path (`candle_nn::Activation`).
std::optional<std::vector<std::string>> library_enum_names(std::string_view path);

// Substitutes `{arg}` placeholders with argument expression texts; an unknown placeholder is kept
// verbatim so the result stays readable and visibly symbolic.
std::string substitute_args(std::string_view templ, const std::vector<std::string>& params,
                            const std::vector<std::string>& args);

}  // namespace cg::analysis
