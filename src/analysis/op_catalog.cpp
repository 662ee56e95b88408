#include "analysis/op_catalog.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>

namespace cg::analysis {

namespace {

using D = DtypeRule;
using G = GradRule;
using S = ShapeRule;
using N = NumericDomain;
using R = Requirement;

struct Row {
  std::vector<std::string_view> names;
  D dtype;
  G grad;
  S shape;
  N domain = N::unknown;
  R requirement = R::none;
  std::string_view note = {};
  std::string_view fixed = {};
  bool loss = false;
  int checked = 0;
};

// Candle's release tags from 0.8.0 to 0.11.0 in release (semver) order, pre-releases included.
constexpr std::string_view kTags[] = {
    "0.8.0",         "0.8.1",         "0.8.2",         "0.8.3",  "0.8.4", "0.9.0-alpha.1",
    "0.9.0-alpha.2", "0.9.0-alpha.3", "0.9.0-alpha.4", "0.9.0",  "0.9.1", "0.9.2-alpha.1",
    "0.9.2-alpha.2", "0.10.0",        "0.10.1",        "0.10.2", "0.11.0"};

int tag_index(std::string_view v) {
  for (std::size_t i = 0; i < std::size(kTags); ++i)
    if (kTags[i] == v) return static_cast<int>(i);
  return -1;
}

// Catalog ops a release before this one does not have (every other op exists in every reviewed
// release): a crate on an older release calling it does not build, so its rule there is unknown.
struct Added {
  std::string_view op, release;
};
constexpr Added kAdded[] = {
    {"huber", "0.10.0"},                      // candle-nn loss.rs, #3252
    {"run_flash_attn_cpu", "0.10.0"},         // candle-nn cpu_flash_attention.rs
    {"flash_attn_varlen_cpu", "0.11.0"},      // candle-nn attention/cpu_flash/varlen.rs
    {"flash_attn_varlen_unfused", "0.11.0"},  // candle-nn attention/varlen.rs
};

// What differs between releases for an op whose rule (dtype, gradient, shape, domain) does not:
// appended to the rule's note for releases in [from, until) ("" = open end).
struct ReleaseNote {
  std::string_view op, from, until, text;
};
constexpr ReleaseNote kReleaseNotes[] = {
    {"from_vec", "0.9.0", "", "from 0.9.0 the shape may hold one `()` hole (#2905)"},
    {"from_vec", "", "0.9.0", "before 0.9.0 the shape must name every dimension"},
    {"from_slice", "0.9.0", "", "from 0.9.0 the shape may hold one `()` hole (#2905)"},
    {"from_slice", "", "0.9.0", "before 0.9.0 the shape must name every dimension"},
    {"to_dtype", "0.10.0", "", "F8E4M3 and the F6E2M3/F6E3M2/F4/F8E8M0 dtypes exist from 0.10.0"},
    {"to_dtype", "", "0.10.0", "no F8E4M3/F6/F4 dtypes before 0.10.0"},
    {"gelu_erf", "0.10.0", "", "erf from libm from 0.10.0 (precision only)"},
    {"erf", "0.10.0", "", "erf from libm from 0.10.0 (precision only)"},
    {"rope", "0.9.1", "", "cos/sin are (seq, d/2) or, from 0.9.1, (batch, seq, d/2)"},
    {"rope", "", "0.9.1", "cos/sin must be (seq, d/2) before 0.9.1"},
    {"rope_thd", "0.9.1", "", "cos/sin are (seq, d/2) or, from 0.9.1, (batch, seq, d/2)"},
    {"rope_thd", "", "0.9.1", "cos/sin must be (seq, d/2) before 0.9.1"},
    {"rope_i", "0.9.1", "", "cos/sin are (seq, d/2) or, from 0.9.1, (batch, seq, d/2)"},
    {"rope_i", "", "0.9.1",
     "cos/sin must be (seq, d/2) before 0.9.1, and only cos's shape is checked (sin's is not)"},
    {"sdpa", "0.10.0", "", "sdpa(q, k, v, mask, do_causal, scale, softcapping) from 0.10.0"},
    {"sdpa", "", "0.10.0", "sdpa(q, k, v, scale, softcapping) before 0.10.0: no mask"},
    {"PReLU::forward", "0.9.0", "", "from 0.9.0 a weight of the input's shape is elementwise"},
};

// Reviewed against candle-core and candle-nn sources at every release tag from 0.8.0 to 0.11.0
// (tensor.rs, tensor_cat.rs, backprop.rs, op.rs, shape.rs, candle-nn ops.rs, rotary_emb.rs,
// layer_norm.rs, loss.rs, activation.rs; docs/dataflow.md has the op-by-op review). The rows are
// 0.11.0's rules; kAdded and kReleaseNotes say where an older release differs. A `*_no_bwd`
// kernel registers no backward, so gradients stop there although the maths is differentiable.
std::vector<OpRule> rules_0_11_0() {
  const std::vector<Row> rows = {
      {{"to_dtype"}, D::explicit_arg, G::propagates, S::preserve},
      {{"add", "sub", "mul", "maximum", "minimum"}, D::same_as_inputs, G::propagates, S::preserve},
      {{"div"},
       D::same_as_inputs,
       G::propagates,
       S::preserve,
       N::unknown,
       R::non_zero,
       {},
       {},
       false,
       1},
      {{"broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum", "broadcast_minimum",
        "broadcast_pow"},
       D::same_as_inputs,
       G::propagates,
       S::preserve},
      {{"broadcast_div"},
       D::same_as_inputs,
       G::propagates,
       S::preserve,
       N::unknown,
       R::non_zero,
       {},
       {},
       false,
       1},
      {{"matmul", "broadcast_matmul"}, D::same_as_inputs, G::propagates, S::matrix_product},
      {{"cat", "stack"}, D::same_as_inputs, G::propagates, S::concatenate},
      // Constructors (tensor.rs): a fresh constant with no tensor operand, so nothing to
      // propagate; zeros/ones take the dtype as an argument, the *_like forms copy it.
      // Each constant carries its value's domain: 0 everywhere, or 1 everywhere.
      {{"zeros"},
       D::explicit_arg,
       G::propagates,
       S::explicit_argument,
       N::zero,
       R::none,
       "Tensor::zeros/ones(shape, dtype, device): constant, no operand"},
      {{"ones"},
       D::explicit_arg,
       G::propagates,
       S::explicit_argument,
       N::strictly_positive,
       R::none,
       "Tensor::zeros/ones(shape, dtype, device): constant, no operand"},
      {{"zeros_like"},
       D::preserve,
       G::severs,
       S::preserve,
       N::zero,
       R::none,
       "zeros_like/ones_like read only the operand's shape and dtype: no gradient flows"},
      {{"ones_like"},
       D::preserve,
       G::severs,
       S::preserve,
       N::strictly_positive,
       R::none,
       "zeros_like/ones_like read only the operand's shape and dtype: no gradient flows"},
      {{"from_slice", "from_vec", "arange", "arange_step"},
       D::unknown,
       G::propagates,
       S::operation_defined,
       N::unknown,
       R::none,
       "constant from host data; the dtype is the Rust element type"},
      {{"where_cond"},
       D::same_as_inputs,
       G::propagates,
       S::preserve,
       N::unknown,
       R::none,
       "on_true and on_false must share a dtype; the mask is U8"},
      {{"conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"},
       D::same_as_inputs,
       G::propagates,
       S::operation_defined,
       N::real},
      {{"neg", "sin", "cos", "tanh", "gelu", "gelu_erf", "silu", "erf"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::real},
      {{"abs", "sqr", "relu"}, D::preserve, G::propagates, S::preserve, N::non_negative},
      {{"exp"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::non_negative,
       R::none,
       "exp underflows to 0 in f32 for inputs below about -103"},
      {{"sqrt"}, D::preserve, G::propagates, S::preserve, N::non_negative, R::non_negative},
      {{"log"}, D::preserve, G::propagates, S::preserve, N::real, R::strictly_positive},
      {{"recip"}, D::preserve, G::propagates, S::preserve, N::real, R::non_zero},
      {{"floor", "round", "sign", "ceil"},
       D::preserve,
       G::severs,
       S::preserve,
       N::real,
       R::none,
       "piecewise-constant: candle-core backprop gives no gradient"},
      {{"cmp", "eq", "ne", "lt", "gt", "ge", "le"},
       D::fixed,
       G::severs,
       S::preserve,
       N::non_negative,
       R::none,
       "comparison masks are U8 and carry no gradient",
       "U8"},
      {{"argmin", "argmax"},
       D::fixed,
       G::severs,
       S::remove_dimension,
       N::non_negative,
       R::none,
       "indices are U32 and carry no gradient",
       "U32"},
      {{"argmin_keepdim", "argmax_keepdim"},
       D::fixed,
       G::severs,
       S::keep_dimension,
       N::non_negative,
       R::none,
       "indices are U32 and carry no gradient",
       "U32"},
      {{"sum", "mean", "max", "min", "sum_all", "mean_all"},
       D::preserve,
       G::propagates,
       S::remove_dimension,
       N::real},
      {{"sum_keepdim", "mean_keepdim", "max_keepdim", "min_keepdim", "log_sum_exp"},
       D::preserve,
       G::propagates,
       S::keep_dimension,
       N::real},
      {{"powf", "elu", "clamp", "leaky_relu"}, D::preserve, G::propagates, S::preserve, N::real},
      {{"affine"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::real,
       R::none,
       "domain computed from the literal mul/add (affine_domain)"},
      {{"reshape", "broadcast_as", "expand", "broadcast_left"},
       D::preserve,
       G::propagates,
       S::explicit_argument},
      {{"flatten_all", "flatten_to", "flatten_from", "flatten"},
       D::preserve,
       G::propagates,
       S::flatten},
      {{"squeeze"}, D::preserve, G::propagates, S::remove_dimension},
      {{"unsqueeze"}, D::preserve, G::propagates, S::insert_dimension},
      {{"transpose", "permute", "t"}, D::preserve, G::propagates, S::permute_dimensions},
      {{"narrow", "chunk", "i", "get", "index_select", "gather"},
       D::preserve,
       G::propagates,
       S::slice_dimension},
      {{"contiguous", "clone", "to_device", "copy"}, D::preserve, G::propagates, S::preserve},
      // `ys.index_add(&rows, &src, 0)` / `scatter_add`: `ys` with `src` added at the indexed
      // positions (MoE routing writes each expert's output back this way); a backward for both
      // operands in every audited release.
      {{"index_add", "scatter_add"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::real,
       R::none,
       "the receiver's shape and dtype; source rows added at the indexed positions"},
      {{"arg_sort_last_dim"},
       D::fixed,
       G::severs,
       S::preserve,
       N::non_negative,
       R::none,
       "indices are U32 and carry no gradient (apply_op1_no_bwd)",
       "U32"},
      {{"pad_with_zeros", "pad_with_same", "repeat", "embedding"},
       D::preserve,
       G::propagates,
       S::operation_defined},
      // Pooling: no multiply-accumulate; the output's spatial size from the kernel and stride
      // (tensor/shape.cpp).
      {{"max_pool2d", "max_pool2d_with_stride", "avg_pool2d", "avg_pool2d_with_stride"},
       D::preserve,
       G::propagates,
       S::operation_defined},
      {{"detach", "as_detached_tensor"},
       D::preserve,
       G::severs,
       S::preserve,
       N::unknown,
       R::none,
       "detach returns a tensor without a backprop op"},
      {{"mse", "nll", "cross_entropy", "huber", "binary_cross_entropy_with_logit"},
       D::preserve,
       G::propagates,
       S::remove_dimension,
       N::unknown,
       R::none,
       "candle_nn::loss",
       {},
       true},
      {{"softmax_last_dim"},
       D::preserve,
       G::severs,
       S::preserve,
       N::saturating_unit,
       R::none,
       "candle_nn::ops::softmax_last_dim uses apply_op1_no_bwd"},
      {{"rms_norm"},
       D::preserve,
       G::severs,
       S::preserve,
       N::real,
       R::none,
       "candle_nn::ops::rms_norm uses apply_op2_no_bwd"},
      {{"layer_norm"},
       D::preserve,
       G::severs,
       S::preserve,
       N::real,
       R::none,
       "candle_nn::ops::layer_norm uses apply_op3_no_bwd"},
      {{"sdpa"},
       D::preserve,
       G::severs,
       S::operation_defined,
       N::real,
       R::none,
       "candle_nn::ops::sdpa uses apply_op3_no_bwd"},
      {{"rope", "rope_i", "rope_thd"},
       D::preserve,
       G::severs,
       S::preserve,
       N::real,
       R::none,
       "candle_nn::rotary_emb kernels use apply_op3_no_bwd"},
      {{"flash_attn", "flash_attn_varlen_cpu", "flash_attn_varlen_unfused", "run_flash_attn_cpu"},
       D::preserve,
       G::severs,
       S::operation_defined,
       N::real,
       R::none,
       "flash-attention kernels have no backward"},
      {{"rms_norm_slow", "layer_norm_slow", "rope_slow", "rope_i_slow"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::real,
       R::none,
       "composed from differentiable tensor ops"},
      {{"sigmoid"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::saturating_unit,
       R::none,
       "f32 sigmoid reaches 1.0 above 16.6355 and 0.0 below -88.7228"},
      {{"softmax"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::saturating_unit,
       R::none,
       "composed softmax (exp / sum) is differentiable and saturates like sigmoid"},
      {{"log_softmax"},
       D::preserve,
       G::propagates,
       S::preserve,
       N::real,
       R::none,
       "log-softmax is <= 0 and never needs a positive guard"},
      {{"dropout"}, D::preserve, G::propagates, S::preserve, N::real},
  };
  std::vector<OpRule> out;
  for (const Row& row : rows) {
    for (std::string_view name : row.names) {
      OpRule r;
      r.name = std::string(name);
      r.dtype = row.dtype;
      r.fixed_dtype = std::string(row.fixed);
      r.grad = row.grad;
      r.shape = row.shape;
      r.domain = row.domain;
      r.requirement = row.requirement;
      r.checked_operand = row.checked;
      r.is_loss = row.loss;
      r.note = std::string(row.note);
      out.push_back(std::move(r));
    }
  }
  // Receiver-qualified rules: layers whose forward is defined by candle-nn.
  auto method = [&](std::string name, G grad, std::string note, S shape = S::operation_defined) {
    OpRule r;
    r.name = std::move(name);
    r.dtype = D::preserve;
    r.grad = grad;
    r.shape = shape;
    r.domain = N::real;
    r.note = std::move(note);
    out.push_back(std::move(r));
  };
  method(
      "RmsNorm::forward", G::layout_dependent,
      "candle-nn RmsNorm::forward takes the no-backward ops::rms_norm kernel for contiguous input "
      "and the differentiable LayerNorm path otherwise",
      S::preserve);
  method("RmsNorm::forward_diff", G::propagates, "differentiable LayerNorm path", S::preserve);
  method("LayerNorm::forward", G::propagates, "composed from differentiable tensor ops",
         S::preserve);
  for (const char* layer :
       {"Linear", "Embedding", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "PReLU"}) {
    method(std::string(layer) + "::forward", G::propagates, "candle-nn layer forward");
    method(std::string(layer) + "::forward_t", G::propagates, "candle-nn layer forward");
  }
  // candle-nn ops.rs: `Dropout::forward(xs, train)` is `ops::dropout` in training, `xs.clone()`
  // otherwise; `forward_t` (ModuleT) calls it.
  method("Dropout::forward", G::propagates, "candle-nn Dropout: ops::dropout when training",
         S::preserve);
  method("Dropout::forward_t", G::propagates, "candle-nn Dropout: ops::dropout when training",
         S::preserve);
  // An embedding's output has its table's dtype, not its (integer) ids' (candle-nn
  // embedding.rs: `self.embeddings.index_select(..)`): the table's dtype is not known here.
  for (auto& r : out)
    if (r.name == "Embedding::forward" || r.name == "Embedding::forward_t") r.dtype = D::unknown;
  // Normalizations keep their input's shape (candle-nn batch_norm.rs, group_norm.rs).
  for (const char* layer : {"GroupNorm", "BatchNorm"}) {
    method(std::string(layer) + "::forward", G::propagates, "candle-nn layer forward", S::preserve);
    method(std::string(layer) + "::forward_t", G::propagates, "candle-nn layer forward",
           S::preserve);
  }
  return out;
}

}  // namespace

int candle_tag_index(std::string_view version) {
  return tag_index(version);
}

bool candle_tag_is_prerelease(std::string_view version) {
  return tag_index(version) >= 0 && version.find('-') != std::string_view::npos;
}

namespace {

// The rules for release tag `v` (an index into kTags): 0.11.0's rows less the ops added after
// `v`, with the notes that hold at `v`.
std::vector<OpRule> rules_for(int v, std::vector<std::pair<std::string, std::string>>& later) {
  auto in_range = [&](std::string_view from, std::string_view until) {
    return (from.empty() || tag_index(from) <= v) && (until.empty() || v < tag_index(until));
  };
  std::vector<OpRule> out;
  for (OpRule& r : rules_0_11_0()) {
    auto added = std::find_if(std::begin(kAdded), std::end(kAdded),
                              [&](const Added& a) { return a.op == r.name; });
    if (added != std::end(kAdded) && v < tag_index(added->release)) {
      later.emplace_back(r.name, std::string(added->release));
      continue;
    }
    for (const ReleaseNote& n : kReleaseNotes) {
      if (n.op != r.name || !in_range(n.from, n.until)) continue;
      r.note += (r.note.empty() ? "" : "; ") + std::string(n.text);
    }
    out.push_back(std::move(r));
  }
  std::sort(later.begin(), later.end());
  return out;
}

}  // namespace

OpCatalog::OpCatalog(std::string version, bool audited, std::vector<OpRule> rules,
                     std::vector<std::pair<std::string, std::string>> later)
    : version_(std::move(version)),
      audited_(audited),
      rules_(std::move(rules)),
      later_(std::move(later)) {
  std::sort(rules_.begin(), rules_.end(),
            [](const OpRule& a, const OpRule& b) { return a.name < b.name; });
}

const OpCatalog& OpCatalog::for_version(std::string_view candle_version) {
  static std::mutex mu;
  static std::map<std::string, OpCatalog, std::less<>> catalogs;
  std::lock_guard lock(mu);
  auto it = catalogs.find(candle_version);
  if (it != catalogs.end()) return it->second;
  // Releases only: the pre-releases between them were not reviewed op by op.
  int v = tag_index(candle_version);
  bool audited = v >= 0 && !candle_tag_is_prerelease(candle_version);
  std::vector<std::pair<std::string, std::string>> later;
  std::vector<OpRule> rules = audited ? rules_for(v, later) : std::vector<OpRule>{};
  OpCatalog catalog(std::string(candle_version), audited, std::move(rules), std::move(later));
  return catalogs.emplace(std::string(candle_version), std::move(catalog)).first->second;
}

std::vector<std::string> OpCatalog::audited_versions() {
  std::vector<std::string> out;
  for (std::string_view t : kTags)
    if (t.find('-') == std::string_view::npos) out.emplace_back(t);
  return out;
}

std::string OpCatalog::audited_range() {
  auto v = audited_versions();
  return v.front() + "-" + v.back() + " releases";
}

const OpRule* OpCatalog::find(std::string_view name) const {
  auto it = std::lower_bound(rules_.begin(), rules_.end(), name,
                             [](const OpRule& r, std::string_view n) { return r.name < n; });
  return it != rules_.end() && it->name == name ? &*it : nullptr;
}

OpRule OpCatalog::lookup(std::string_view op) const {
  auto sep = op.rfind("::");
  std::string_view leaf = sep == std::string_view::npos ? op : op.substr(sep + 2);
  if (const OpRule* r = find(leaf)) return *r;
  OpRule unknown;
  unknown.name = std::string(leaf);
  unknown.note = audited_ ? "not in the audited catalog for candle " + version_
                          : "candle " + version_ + " is not an audited version";
  for (const auto& [name, release] : later_)
    if (name == leaf)
      unknown.note = "`" + name + "` is not in candle " + version_ + " (added in " + release + ")";
  return unknown;
}

bool OpCatalog::knows_layer(std::string_view type) const {
  const std::string t(type);
  return find(t + "::forward") || find(t + "::forward_t");
}

OpRule OpCatalog::lookup_method(std::string_view receiver_type, std::string_view method) const {
  // `candle_nn::RmsNorm<B>` → `RmsNorm`.
  std::string_view type = receiver_type.substr(0, receiver_type.find('<'));
  auto sep = type.rfind("::");
  if (sep != std::string_view::npos) type = type.substr(sep + 2);
  std::string qualified = std::string(type) + "::" + std::string(method);
  if (const OpRule* r = find(qualified)) return *r;
  return lookup(method);
}

std::string_view to_string(DtypeRule r) {
  switch (r) {
    case DtypeRule::preserve:
      return "preserve";
    case DtypeRule::same_as_inputs:
      return "same_as_inputs";
    case DtypeRule::explicit_arg:
      return "explicit";
    case DtypeRule::fixed:
      return "fixed";
    case DtypeRule::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(GradRule r) {
  switch (r) {
    case GradRule::propagates:
      return "propagates";
    case GradRule::severs:
      return "severs";
    case GradRule::layout_dependent:
      return "layout_dependent";
    case GradRule::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(ShapeRule r) {
  switch (r) {
    case ShapeRule::explicit_argument:
      return "explicit_argument";
    case ShapeRule::flatten:
      return "flatten";
    case ShapeRule::remove_dimension:
      return "remove_dimension";
    case ShapeRule::insert_dimension:
      return "insert_dimension";
    case ShapeRule::permute_dimensions:
      return "permute_dimensions";
    case ShapeRule::slice_dimension:
      return "slice_dimension";
    case ShapeRule::matrix_product:
      return "matrix_product";
    case ShapeRule::concatenate:
      return "concatenate";
    case ShapeRule::keep_dimension:
      return "keep_dimension";
    case ShapeRule::preserve:
      return "preserve";
    case ShapeRule::operation_defined:
      return "operation_defined";
    case ShapeRule::inlined_call:
      return "inlined_call";
    case ShapeRule::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(Requirement r) {
  switch (r) {
    case Requirement::none:
      return "none";
    case Requirement::non_zero:
      return "non_zero";
    case Requirement::non_negative:
      return "non_negative";
    case Requirement::strictly_positive:
      return "strictly_positive";
  }
  return "none";
}

}  // namespace cg::analysis
