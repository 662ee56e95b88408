#pragma once
// Type text peeled to the type a field or local really holds: `Option<Arc<Linear>>` → `Linear`,
// so receiver and parameter analyses see the module type behind the wrappers.
#include <string>
#include <string_view>

#include "rust/crate.hpp"

namespace cg::rust {

struct PeeledType {
  std::string base;                       // path without generic arguments: `candle_nn::Linear`
  Container container = Container::None;  // the outermost wrapper removed
};

PeeledType peel_type(std::string_view text);

}  // namespace cg::rust
