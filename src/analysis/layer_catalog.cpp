#include "analysis/layer_catalog.hpp"

#include <algorithm>
#include <map>

#include "analysis/op_catalog.hpp"

namespace cg::analysis {

namespace {

// Audited against candle-nn 0.11.0: linear.rs, embedding.rs, layer_norm.rs, conv.rs,
// batch_norm.rs, group_norm.rs, activation.rs, rnn.rs.
std::vector<ConstructorSpec> constructors_0_11_0() {
  const std::string linear_note = "candle-nn linear.rs: weight is (out_dim, in_dim)";
  std::vector<ConstructorSpec> c = {
      {"linear",
       "Linear",
       {"in_dim", "out_dim"},
       {{"weight", {"{out_dim}", "{in_dim}"}, "", false}, {"bias", {"{out_dim}"}, "", false}},
       linear_note},
      {"linear_no_bias",
       "Linear",
       {"in_dim", "out_dim"},
       {{"weight", {"{out_dim}", "{in_dim}"}, "", false}},
       linear_note},
      {"linear_b",
       "Linear",
       {"in_dim", "out_dim", "bias"},
       {{"weight", {"{out_dim}", "{in_dim}"}, "", false}, {"bias", {"{out_dim}"}, "{bias}", false}},
       linear_note + "; bias only when `bias` is true"},
      {"embedding",
       "Embedding",
       {"in_size", "out_size"},
       {{"weight", {"{in_size}", "{out_size}"}, "", false}},
       "candle-nn embedding.rs"},
      {"layer_norm",
       "LayerNorm",
       {"size", "config"},
       {{"weight", {"{size}"}, "", false}, {"bias", {"{size}"}, "{config}.affine", false}},
       "an f64 eps converts to LayerNormConfig with affine = true (bias requested)"},
      {"layer_norm_no_bias",
       "LayerNorm",
       {"size", "eps"},
       {{"weight", {"{size}"}, "", false}},
       "candle-nn layer_norm.rs"},
      {"rms_norm",
       "RmsNorm",
       {"size", "eps"},
       {{"weight", {"{size}"}, "", false}},
       "candle-nn layer_norm.rs: LayerNormConfig with affine = false"},
      {"group_norm",
       "GroupNorm",
       {"num_groups", "num_channels", "eps"},
       {{"weight", {"{num_channels}"}, "", false}, {"bias", {"{num_channels}"}, "", false}},
       "candle-nn group_norm.rs"},
      {"batch_norm",
       "BatchNorm",
       {"num_features", "config"},
       {{"running_mean", {"{num_features}"}, "", true},
        {"running_var", {"{num_features}"}, "", true},
        {"weight", {"{num_features}"}, "{config}.affine", false},
        {"bias", {"{num_features}"}, "{config}.affine", false}},
       "candle-nn batch_norm.rs: running statistics are state, not optimized"},
      {"prelu",
       "PReLU",
       {"num_channels"},
       {{"weight", {"{num_channels}.unwrap_or(1)"}, "", false}},
       "candle-nn activation.rs"},
      {"conv1d",
       "Conv1d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight", {"{out_channels}", "{in_channels} / {cfg}.groups", "{kernel_size}"}, "", false},
        {"bias", {"{out_channels}"}, "", false}},
       "candle-nn conv.rs"},
      {"conv1d_no_bias",
       "Conv1d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight", {"{out_channels}", "{in_channels} / {cfg}.groups", "{kernel_size}"}, "", false}},
       "candle-nn conv.rs"},
      {"conv_transpose1d",
       "ConvTranspose1d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight", {"{in_channels}", "{out_channels} / {cfg}.groups", "{kernel_size}"}, "", false},
        {"bias", {"{out_channels}"}, "", false}},
       "candle-nn conv.rs"},
      {"conv_transpose1d_no_bias",
       "ConvTranspose1d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight", {"{in_channels}", "{out_channels} / {cfg}.groups", "{kernel_size}"}, "", false}},
       "candle-nn conv.rs"},
      {"conv2d",
       "Conv2d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight",
         {"{out_channels}", "{in_channels} / {cfg}.groups", "{kernel_size}", "{kernel_size}"},
         "",
         false},
        {"bias", {"{out_channels}"}, "", false}},
       "candle-nn conv.rs"},
      {"conv2d_no_bias",
       "Conv2d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight",
         {"{out_channels}", "{in_channels} / {cfg}.groups", "{kernel_size}", "{kernel_size}"},
         "",
         false}},
       "candle-nn conv.rs"},
      {"conv_transpose2d",
       "ConvTranspose2d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight",
         {"{in_channels}", "{out_channels}", "{kernel_size}", "{kernel_size}"},
         "",
         false},
        {"bias", {"{out_channels}"}, "", false}},
       "candle-nn conv.rs: transposed 2d weights ignore groups in the shape"},
      {"conv_transpose2d_no_bias",
       "ConvTranspose2d",
       {"in_channels", "out_channels", "kernel_size", "cfg"},
       {{"weight",
         {"{in_channels}", "{out_channels}", "{kernel_size}", "{kernel_size}"},
         "",
         false}},
       "candle-nn conv.rs"},
      {"lstm",
       "LSTM",
       {"in_dim", "hidden_dim", "config"},
       {{"weight_ih_l{{config}.layer_idx}", {"4 * {hidden_dim}", "{in_dim}"}, "", false},
        {"weight_hh_l{{config}.layer_idx}", {"4 * {hidden_dim}", "{hidden_dim}"}, "", false},
        {"bias_ih_l{{config}.layer_idx}",
         {"4 * {hidden_dim}"},
         "{config}.b_ih_init.is_some()",
         false},
        {"bias_hh_l{{config}.layer_idx}",
         {"4 * {hidden_dim}"},
         "{config}.b_hh_init.is_some()",
         false}},
       "candle-nn rnn.rs: names follow PyTorch (`_reverse` suffix for the backward direction)"},
      {"gru",
       "GRU",
       {"in_dim", "hidden_dim", "config"},
       {{"weight_ih_l0", {"3 * {hidden_dim}", "{in_dim}"}, "", false},
        {"weight_hh_l0", {"3 * {hidden_dim}", "{hidden_dim}"}, "", false},
        {"bias_ih_l0", {"3 * {hidden_dim}"}, "{config}.b_ih_init.is_some()", false},
        {"bias_hh_l0", {"3 * {hidden_dim}"}, "{config}.b_hh_init.is_some()", false}},
       "candle-nn rnn.rs: a single layer is supported"},
  };
  std::sort(c.begin(), c.end(),
            [](const ConstructorSpec& a, const ConstructorSpec& b) { return a.name < b.name; });
  return c;
}

}  // namespace

LayerCatalog::LayerCatalog(bool audited, std::vector<ConstructorSpec> c, std::string origin)
    : audited_(audited), origin_(std::move(origin)), constructors_(std::move(c)) {
  std::sort(constructors_.begin(), constructors_.end(),
            [](const ConstructorSpec& a, const ConstructorSpec& b) { return a.name < b.name; });
}

std::shared_ptr<const LayerCatalog> LayerCatalog::from_source(
    std::vector<ConstructorSpec> c, std::string origin,
    std::map<std::string, ConfigDefault> config_defaults) {
  auto* cat = new LayerCatalog(true, std::move(c), origin.empty() ? "source" : std::move(origin));
  for (auto& [field, value] : config_defaults)
    cat->config_defaults_.emplace(field, std::move(value));
  return std::shared_ptr<const LayerCatalog>(cat);
}

const ConfigDefault* LayerCatalog::config_default(std::string_view field) const {
  auto it = config_defaults_.find(field);
  return it == config_defaults_.end() ? nullptr : &it->second;
}

// Releases whose constructors ask their VarBuilder for exactly what 0.11.0's do: reviewed in
// candle-nn's linear.rs, embedding.rs, conv.rs, layer_norm.rs, batch_norm.rs, group_norm.rs,
// rnn.rs and activation.rs at every tag from 0.8.0 to 0.11.0 (pre-releases included): the
// `vb.get*` calls and shapes are identical; later releases only add accessors (`eps()`,
// `weight()`), and `layer_norm_no_bias` exists from 0.8.3 (code calling it does not build
// against an older release). Exactly those tags are audited (candle_tag_index, shared with the op
// catalog): a version with build metadata (`0.9.1+git`: a git source, maybe a fork), several
// versions at once, or a release outside the reviewed tags is not.
const LayerCatalog& LayerCatalog::hand_written(std::string_view candle_nn_version) {
  static const LayerCatalog audited(true, constructors_0_11_0());
  static const LayerCatalog unaudited(false, {});
  return candle_tag_index(candle_nn_version) >= 0 ? audited : unaudited;
}

const LayerCatalog& LayerCatalog::for_version(std::string_view candle_nn_version) {
  return hand_written(candle_nn_version);
}

const LayerCatalog& LayerCatalog::for_inventory(std::string_view /*candle_nn_version*/) {
  return hand_written("0.11.0");
}

const ConstructorSpec* LayerCatalog::find(std::string_view call_path) const {
  auto sep = call_path.rfind("::");
  std::string_view leaf = sep == std::string_view::npos ? call_path : call_path.substr(sep + 2);
  auto it =
      std::lower_bound(constructors_.begin(), constructors_.end(), leaf,
                       [](const ConstructorSpec& c, std::string_view n) { return c.name < n; });
  return it != constructors_.end() && it->name == leaf ? &*it : nullptr;
}

std::string substitute_args(std::string_view templ, const std::vector<std::string>& params,
                            const std::vector<std::string>& args) {
  std::string out;
  std::size_t i = 0;
  while (i < templ.size()) {
    if (templ[i] == '{') {
      auto close = templ.find('}', i + 1);
      if (close != std::string_view::npos) {
        std::string_view name = templ.substr(i + 1, close - i - 1);
        auto it = std::find(params.begin(), params.end(), name);
        if (it != params.end()) {
          auto idx = static_cast<std::size_t>(it - params.begin());
          if (idx < args.size()) {
            out += args[idx];
            i = close + 1;
            continue;
          }
        }
      }
    }
    out.push_back(templ[i]);
    ++i;
  }
  return out;
}

std::optional<std::vector<std::string>> library_enum_names(std::string_view path) {
  // candle-nn-0.11.0/src/activation.rs: `#[serde(rename_all = "lowercase")]`, three aliases;
  // `Elu(f64)` and `LeakyRelu(f64)` carry a value, so no bare string names them.
  const bool activation = path == "candle_nn::Activation" ||
                          path == "candle_nn::activation::Activation" ||
                          path == "candle_nn::ops::Activation";
  if (!activation) return std::nullopt;
  return std::vector<std::string>{"gelu",
                                  "newgelu",
                                  "relu",
                                  "relu2",
                                  "relu6",
                                  "silu",
                                  "sigmoid",
                                  "hardsigmoid",
                                  "swiglu",
                                  "swish",
                                  "mish",
                                  "hardswish",
                                  "gelupytorchtanh",
                                  "gelu_new",
                                  "gelu_pytorch_tanh"};
}

}  // namespace cg::analysis
