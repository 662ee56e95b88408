#pragma once
// The audited operation catalog: what each candle-core Tensor method and candle-nn function does to
// dtype, gradient, shape and numeric domain. Rules are claims about Candle releases, so the catalog
// is versioned: every release from 0.8.0 to 0.11.0 was reviewed (docs/dataflow.md, "Operation
// rules per candle release"); an op a release does not have is `unknown` there, and any other
// version (0.7, a pre-release, a git source `0.9.1+git`) gets the `unknown` rule for every
// operation (a finding then says why), never a guess.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/numeric_domain.hpp"

namespace cg::analysis {

enum class DtypeRule {
  preserve,        // output dtype = first tensor operand's
  same_as_inputs,  // every tensor operand must share one dtype; output has it
  explicit_arg,    // output dtype is an argument (`to_dtype(DType::F16)`)
  fixed,           // output dtype is fixed by the op (`argmax` → U32)
  unknown,
};

enum class GradRule {
  propagates,        // backward defined for every tensor operand
  severs,            // no backward: gradients stop here (a `*_no_bwd` kernel, `detach`, `round`)
  layout_dependent,  // severs or propagates depending on the input layout (RmsNorm::forward)
  unknown,
};

enum class ShapeRule {
  explicit_argument,   // reshape, broadcast_as, expand
  flatten,             // flatten_all/_to/_from
  remove_dimension,    // squeeze, reductions without keepdim
  insert_dimension,    // unsqueeze
  permute_dimensions,  // transpose, permute, t
  slice_dimension,     // narrow, chunk, i
  matrix_product,      // matmul
  concatenate,         // cat, stack
  keep_dimension,      // keepdim reductions
  preserve,            // elementwise
  operation_defined,   // conv, pooling, embedding, index ops
  inlined_call,        // a crate-local function or method run in place: its body's operations
                       // carry the shapes and multiply-adds; the call itself computes nothing
  unknown,
};

enum class Requirement { none, non_zero, non_negative, strictly_positive };

struct OpRule {
  std::string name;  // the catalog name, e.g. "broadcast_add", "RmsNorm::forward"
  DtypeRule dtype = DtypeRule::unknown;
  std::string fixed_dtype;  // with DtypeRule::fixed
  GradRule grad = GradRule::unknown;
  ShapeRule shape = ShapeRule::unknown;
  NumericDomain domain = NumericDomain::unknown;  // domain of the output
  Requirement requirement = Requirement::none;    // what the checked operand must satisfy
  int checked_operand = 0;  // 0 = receiver / first operand, 1 = divisor for div
  bool is_loss = false;
  std::string note;  // why, with the Candle source it was audited against

  bool known() const { return dtype != DtypeRule::unknown || grad != GradRule::unknown; }
};

class OpCatalog {
 public:
  // The catalog for a resolved Candle version ("0.11.0"). Unaudited versions return a catalog
  // whose every lookup is the unknown rule, with `audited() == false`.
  static const OpCatalog& for_version(std::string_view candle_version);
  // The reviewed releases, oldest first ("0.8.0" … "0.11.0"), and the same as one short range for
  // messages ("0.8.0-0.11.0 releases").
  static std::vector<std::string> audited_versions();
  static std::string audited_range();

  bool audited() const { return audited_; }
  const std::string& version() const { return version_; }

  // Looks an operation up by its last path segment (`candle_nn::ops::softmax_last_dim` →
  // `softmax_last_dim`). Unknown names give the unknown rule named after the op.
  OpRule lookup(std::string_view op) const;
  // Receiver-qualified rules first (`RmsNorm::forward`), then the bare method.
  OpRule lookup_method(std::string_view receiver_type, std::string_view method) const;

  // A candle-nn type whose `forward` or `forward_t` has a receiver-qualified rule (`Linear`).
  bool knows_layer(std::string_view type) const;

  const std::vector<OpRule>& rules() const { return rules_; }

 private:
  OpCatalog(std::string version, bool audited, std::vector<OpRule> rules,
            std::vector<std::pair<std::string, std::string>> later);
  const OpRule* find(std::string_view name) const;

  std::string version_;
  bool audited_;
  std::vector<OpRule> rules_;  // sorted by name
  // Catalog ops this release does not have yet, with the release that added them.
  std::vector<std::pair<std::string, std::string>> later_;
};

// The position of `version` among candle's release tags from 0.8.0 to 0.11.0 in release order
// (pre-releases `0.9.0-alpha.1` included), or -1 for anything else: another release, build
// metadata (`0.9.1+git`: a git source, maybe a fork), several versions (`0.9.1,0.11.0`), nonsense.
int candle_tag_index(std::string_view version);
// Whether that tag is a pre-release (`-alpha.N`).
bool candle_tag_is_prerelease(std::string_view version);

std::string_view to_string(DtypeRule r);
std::string_view to_string(GradRule r);
std::string_view to_string(ShapeRule r);
std::string_view to_string(Requirement r);

}  // namespace cg::analysis

namespace cg::analysis {

// ---- What an op's name means beyond its rule (src/analysis/op_catalog_traits.cpp) ------------
// The tensor domain asks these instead of spelling op names itself, so a new op with one of these
// behaviours is one row here.

// How an op's output numeric domain follows from its operands'.
enum class DomainCombine {
  catalog,    // unary_domain for one operand, the rule's domain otherwise
  product,    // mul_domain of the first two operands (mul, broadcast_mul)
  sum,        // add_domain of the first two operands (add, broadcast_add)
  reduction,  // the operand's domain; [0, 1] summed is only non-negative (sum, mean, max …)
  affine,     // affine_domain from the literal scale and shift arguments (affine)
};

// How a permute_dimensions op reorders its operand's dimensions.
enum class Permutation { unknown, swap_last_two, swap_literal_arguments };

enum class LayoutEffect { none, strided, contiguous };

struct OpTraits {
  DomainCombine combine = DomainCombine::catalog;
  Permutation permutation = Permutation::unknown;
  LayoutEffect layout = LayoutEffect::none;
  // The first of three operands is a U8 mask outside the dtype agreement (where_cond).
  bool mask_operand = false;
  // The output is a `log` whose -inf is not discharged while its operand may be 0 (log).
  bool log = false;
  // An operand whose known domain merely may hold a bad value (a saturating sigmoid) is reported
  // (log, recip): elsewhere (a divisor, sqrt) such domains are everywhere in real models and would
  // drown the proven findings.
  bool report_possible_violation = false;
  // A candle-nn loss whose expansion holds a sigmoid, a `log` and a multiply
  // (binary_cross_entropy_with_logit); `expansion` is where, as "crate-version/file:lines".
  bool expanded_log_loss = false;
  std::string_view expansion;
  // The output's last dimension and the multiply-adds come from the receiver's [out, in] weight
  // (Linear::forward).
  bool linear_weight = false;
  // The output is the ids' shape with the receiver's [vocab, hidden] weight's hidden appended
  // (Embedding::forward: a lookup, no multiply-adds).
  bool embedding_weight = false;
  // A candle-nn conv layer's forward over `conv_spatial` spatial dimensions (1 or 2): the output
  // shape and multiply-adds follow from the receiver's weight and its module's config attributes
  // (Conv1d/Conv2d::forward; `conv_transposed` for ConvTranspose1d/2d).
  int conv_spatial = 0;
  bool conv_transposed = false;
  // The output's device is the argument's (`to_device(&Device::Cpu)`), not the receiver's.
  bool device_argument = false;
};

// Traits of an op by its catalog name (`OpRule::name`, or the op name when the rule has none).
const OpTraits& op_traits(std::string_view name);

// The candle op a Rust binary operator on tensors is (`+` → add); nullopt for other operators.
std::optional<std::string_view> operator_op(std::string_view op);
// First path segments under which a free function call is a candle op (`candle_nn::ops::x`,
// `Tensor::zeros`, `loss::mse`); a bare name is looked up too.
bool candle_call_root(std::string_view first_segment);
// `Var::<leaf>` constructors, whose output is a trainable variable.
bool var_constructor(std::string_view leaf);
// Constructors whose dtype is the element type of their host-data argument (from_slice …).
bool reads_host_data(std::string_view leaf);
// Methods that return their receiver's value as far as tensors go (clone, unwrap, iter …).
bool passthrough_method(std::string_view method);
// Methods that return no tensor (dims, shape, dtype, to_vec1, len …).
bool non_tensor_method(std::string_view method);

}  // namespace cg::analysis
