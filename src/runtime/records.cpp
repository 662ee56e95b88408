#include "runtime/records.hpp"

#include <array>

namespace cg::runtime {
namespace {
constexpr std::array<std::string_view, 4> kSchemas = {
    "candle-graph/runtime/1", "candle-graph/runtime/2", "candle-graph/runtime/3",
    "candle-graph/runtime/4"};
constexpr std::array<std::string_view, 4> kStates = {"present", "missing", "zero", "non_finite"};
}  // namespace

std::optional<Schema> parse_schema(std::string_view text) {
  for (std::size_t i = 0; i < kSchemas.size(); ++i) {
    if (kSchemas[i] == text) return static_cast<Schema>(i + 1);
  }
  return std::nullopt;
}

std::string_view schema_name(Schema schema) {
  return kSchemas[static_cast<std::size_t>(schema) - 1];
}

std::optional<GradientState> parse_gradient_state(std::string_view text) {
  for (std::size_t i = 0; i < kStates.size(); ++i) {
    if (kStates[i] == text) return static_cast<GradientState>(i);
  }
  return std::nullopt;
}

std::string_view gradient_state_name(GradientState state) {
  return kStates[static_cast<std::size_t>(state)];
}

}  // namespace cg::runtime
