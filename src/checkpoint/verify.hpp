#pragma once
// Checkpoint verification: does this checkpoint satisfy every parameter the model requests under
// one builder root? The answer is a verdict with its reasons, plus the detail behind it.
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/inventory.hpp"

namespace cg::checkpoint {

struct VerifyOptions {
  std::string root;    // builder root to verify; empty = the inventory's only root
  std::string prefix;  // pushed before the root constructor ("language_model"); '.' added
};

struct MatchedParameter {
  std::string id, key;  // key with the prefix applied
  bool is_template = false;
  std::size_t count = 0;  // tensors matched
  std::string sample;     // first matched tensor name
};

struct MissingParameter {
  std::string id, key;  // for a family with a bound, `key` is one concrete missing member
  Certainty certainty = Certainty::proven;
  std::string reason;
};

struct ShapeMismatch {
  std::string id, tensor;
  std::vector<std::uint64_t> expected, actual;
  std::string symbolic_shape;
};

struct DtypeDifference {
  std::string checkpoint_dtype, expected_dtype;
  std::size_t count = 0;
  std::string sample;
};

struct FamilyMismatch {
  std::string id, key, var;
  std::uint64_t expected = 0;
  std::uint64_t found = 0;  // distinct members in the checkpoint
  std::string detail;
};

struct VerifyReport {
  std::string checkpoint_path, format, root, prefix;
  std::vector<ShardInfo> shards;
  std::size_t checkpoint_tensors = 0, name_only_tensors = 0, expected_parameters = 0,
              skipped_other_root = 0;
  std::vector<MatchedParameter> matched;
  std::vector<MissingParameter> missing;  // all certainties; certain ones fail the load
  std::vector<std::string> unclaimed;
  std::vector<ShapeMismatch> shape_mismatches;
  std::vector<DtypeDifference> dtype_differences;
  std::vector<FamilyMismatch> family_mismatches;
  std::vector<std::string> notes;
  bool will_load = false;
  std::vector<std::string> reasons;  // why it fails (empty when it loads)

  std::size_t missing_count(Certainty c) const;
};

// Throws cg::InputError when the root is ambiguous or a template is malformed.
VerifyReport verify(const std::vector<ExpectedParameter>& expected, const Checkpoint& checkpoint,
                    const VerifyOptions& options = {});

// True when `name` (dot-separated) is an instance of `key_template`; `{x}` segments capture into
// `captures` (var → text) in order. Exposed for tests.
bool match_template(std::string_view key_template, std::string_view name,
                    std::vector<std::pair<std::string, std::string>>* captures = nullptr);

// `candle-graph/checkpoint/1` (docs/checkpoint.md).
std::string report_json(const VerifyReport& report);
// People's rendering: verdict first, then up to `per_list` lines per category.
std::string report_text(const VerifyReport& report, std::size_t per_list = 20);

}  // namespace cg::checkpoint
