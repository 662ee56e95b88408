#pragma once
// The expected side of verification: which parameters a model asks its VarBuilder for. Kept as a
// plain struct so the checkpoint stage does not depend on the analyzer; the IR adapter fills it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/enums.hpp"

namespace cg::checkpoint {

// How sure the model is to ask for a parameter: the IR's one certainty type. The checkpoint stage
// uses proven (always asked for), conditional and unknown; the IR adapter folds heuristic into
// unknown.
using Certainty = ir::Confidence;
// The report's word for it: "certain" (proven), "conditional", "unknown".
const char* certainty_name(Certainty c);

// A known count for a repeated family: `{i}` in `layers.{i}` ranges over exactly 0..count-1
// (from a bound config), so the checkpoint must hold that many, no more, no fewer.
struct FamilyBound {
  std::string var;  // the text between braces, e.g. "i"
  std::uint64_t count = 0;
};

struct ExpectedParameter {
  std::string id;            // stable parameter id (for drill-down)
  std::string builder_root;  // "vb", "train_vb": two roots are two namespaces
  // Concrete key ("model.norm.weight") or a template with `{var}` segments, whole
  // ("layers.{i}.weight") or mixed ("block_{i}.weight").
  std::string key;
  std::optional<std::vector<std::uint64_t>> shape;  // concrete, when known
  std::string symbolic_shape;                       // e.g. "(cfg.hidden_size, cfg.vocab_size)"
  std::optional<std::string> dtype;                 // the dtype the model loads it as, if known
  Certainty certainty = Certainty::proven;
  std::string reason;  // why conditional/unknown
  std::vector<FamilyBound> bounds;
};

}  // namespace cg::checkpoint
