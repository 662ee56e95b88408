#pragma once
// The enums of candle-graph/model/1 and their snake_case spellings. Every stage that prints or
// parses an enum goes through to_string/enum_from_string so the JSON spelling lives in one place.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cg::ir {

enum class Confidence : std::uint8_t { proven, conditional, heuristic, unknown };
enum class EvidenceKind : std::uint8_t { source, cargo, checkpoint, runtime, inferred };
enum class Severity : std::uint8_t { error, warning, information };
enum class BuilderRole : std::uint8_t { trainable, frozen, state, conditional, unknown };
enum class ParameterRole : std::uint8_t {
  optimized,
  frozen,
  running_state,
  excluded,
  conditional,
  unknown
};
enum class Visibility : std::uint8_t { public_, crate, restricted, private_, unknown };
enum class TensorRole : std::uint8_t {
  input,
  output,
  parameter,
  activation,
  target,
  mask,
  loss,
  cache,
  state,
  unknown
};
enum class ExecutionPhase : std::uint8_t { train, infer };
// Tag of DeviceFact / LayoutFact (the payload lives in the record).
enum class DeviceKind : std::uint8_t { cpu, cuda, metal, same_as, unknown };
enum class LayoutKind : std::uint8_t { contiguous, non_contiguous, strided, same_as, unknown };

// Spellings indexed by the enum value. Specialized for every enum above.
template <typename E>
struct EnumNames;

template <>
struct EnumNames<Confidence> {
  static constexpr std::array<std::string_view, 4> names{"proven", "conditional", "heuristic",
                                                         "unknown"};
};
template <>
struct EnumNames<EvidenceKind> {
  static constexpr std::array<std::string_view, 5> names{"source", "cargo", "checkpoint", "runtime",
                                                         "inferred"};
};
template <>
struct EnumNames<Severity> {
  static constexpr std::array<std::string_view, 3> names{"error", "warning", "information"};
};
template <>
struct EnumNames<BuilderRole> {
  static constexpr std::array<std::string_view, 5> names{"trainable", "frozen", "state",
                                                         "conditional", "unknown"};
};
template <>
struct EnumNames<ParameterRole> {
  static constexpr std::array<std::string_view, 6> names{
      "optimized", "frozen", "running_state", "excluded", "conditional", "unknown"};
};
template <>
struct EnumNames<Visibility> {
  static constexpr std::array<std::string_view, 5> names{"public", "crate", "restricted", "private",
                                                         "unknown"};
};
template <>
struct EnumNames<TensorRole> {
  static constexpr std::array<std::string_view, 10> names{
      "input", "output", "parameter", "activation", "target",
      "mask",  "loss",   "cache",     "state",      "unknown"};
};
template <>
struct EnumNames<ExecutionPhase> {
  static constexpr std::array<std::string_view, 2> names{"train", "infer"};
};
template <>
struct EnumNames<DeviceKind> {
  static constexpr std::array<std::string_view, 5> names{"cpu", "cuda", "metal", "same_as",
                                                         "unknown"};
};
template <>
struct EnumNames<LayoutKind> {
  static constexpr std::array<std::string_view, 5> names{"contiguous", "non_contiguous", "strided",
                                                         "same_as", "unknown"};
};

template <typename E>
constexpr std::string_view to_string(E e) {
  return EnumNames<E>::names[static_cast<std::size_t>(e)];
}

// nullopt when `s` is not one of E's spellings (the reader turns that into an InputError).
template <typename E>
constexpr std::optional<E> enum_from_string(std::string_view s) {
  for (std::size_t i = 0; i < EnumNames<E>::names.size(); ++i) {
    if (EnumNames<E>::names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace cg::ir
