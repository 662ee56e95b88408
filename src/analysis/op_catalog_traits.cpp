#include <map>
#include <set>
#include <string>

#include "analysis/op_catalog.hpp"

namespace cg::analysis {

const OpTraits& op_traits(std::string_view name) {
  static const std::map<std::string, OpTraits, std::less<>> traits = [] {
    std::map<std::string, OpTraits, std::less<>> m;
    for (const char* n : {"mul", "broadcast_mul"})
      m[n].combine = DomainCombine::product;
    for (const char* n : {"add", "broadcast_add"})
      m[n].combine = DomainCombine::sum;
    for (const char* n : {"sum", "sum_keepdim", "mean", "mean_keepdim", "max", "max_keepdim",
                          "sum_all", "mean_all"})
      m[n].combine = DomainCombine::reduction;
    m["affine"].combine = DomainCombine::affine;
    m["t"].permutation = Permutation::swap_last_two;
    m["transpose"].permutation = Permutation::swap_literal_arguments;
    for (const char* n : {"transpose", "permute", "narrow", "t"})
      m[n].layout = LayoutEffect::strided;
    m["contiguous"].layout = LayoutEffect::contiguous;
    m["where_cond"].mask_operand = true;
    m["log"].log = true;
    m["log"].report_possible_violation = true;
    m["recip"].report_possible_violation = true;
    auto& bce = m["binary_cross_entropy_with_logit"];
    bce.expanded_log_loss = true;
    bce.expansion = "candle-nn-0.11.0/src/loss.rs:64-74";
    m["Linear::forward"].linear_weight = true;
    m["Embedding::forward"].embedding_weight = true;
    m["Conv1d::forward"].conv_spatial = 1;
    m["Conv2d::forward"].conv_spatial = 2;
    m["ConvTranspose1d::forward"].conv_spatial = 1;
    m["ConvTranspose2d::forward"].conv_spatial = 2;
    m["ConvTranspose1d::forward"].conv_transposed = true;
    m["ConvTranspose2d::forward"].conv_transposed = true;
    m["to_device"].device_argument = true;
    return m;
  }();
  static const OpTraits none;
  auto it = traits.find(name);
  return it == traits.end() ? none : it->second;
}

std::optional<std::string_view> operator_op(std::string_view op) {
  if (op == "+") return "add";
  if (op == "-") return "sub";
  if (op == "*") return "mul";
  if (op == "/") return "div";
  return std::nullopt;
}

bool candle_call_root(std::string_view first_segment) {
  static const std::set<std::string, std::less<>> roots{
      "candle", "candle_core", "candle_nn", "candle_transformers", "nn",         "ops",
      "loss",   "Tensor",      "Var",       "activation",          "rotary_emb", "kv_cache"};
  return roots.count(first_segment) > 0;
}

bool var_constructor(std::string_view leaf) {
  return leaf == "new" || leaf == "from_tensor" || leaf == "randn" || leaf == "zeros" ||
         leaf == "ones" || leaf == "rand";
}

bool reads_host_data(std::string_view leaf) {
  return leaf == "from_slice" || leaf == "from_vec" || leaf == "new";
}

bool passthrough_method(std::string_view method) {
  static const std::set<std::string, std::less<>> s{
      "clone",    "unwrap",         "expect",    "as_ref",     "borrow",
      "iter",     "iter_mut",       "into_iter", "enumerate",  "rev",
      "to_owned", "deref",          "as_mut",    "borrow_mut", "skip",
      "take",     "unwrap_or_else", "context",   "map_err"};
  return s.count(method) > 0;
}

bool non_tensor_method(std::string_view method) {
  static const std::set<std::string, std::less<>> s{"dims",          "dims0",
                                                    "dims1",         "dims2",
                                                    "dims3",         "dims4",
                                                    "dims5",         "dim",
                                                    "shape",         "dtype",
                                                    "device",        "rank",
                                                    "elem_count",    "to_scalar",
                                                    "to_vec0",       "to_vec1",
                                                    "to_vec2",       "to_vec3",
                                                    "is_contiguous", "stride",
                                                    "layout",        "id",
                                                    "len",           "is_empty",
                                                    "to_string",     "is_some",
                                                    "is_none",       "get",
                                                    "push",          "insert",
                                                    "collect",       "map",
                                                    "zip",           "sum_keepdim_scalar"};
  return s.count(method) > 0;
}

}  // namespace cg::analysis
