#pragma once
// The Rust that `candle-graph instrument --stats` writes (docs/instrument.md, "Numeric health"):
// the `cg_stats` module appended to the crate root, which computes a tensor's statistics with
// the crate's own candle-core on the tensor's device and hands them to the profiler, and the
// statement that records a module's output after its forward.
#include <optional>
#include <string>

namespace cg::instrument {

inline constexpr const char* kStatsAttr = "#[cfg(feature = \"candle-graph-stats\")]";

// The module's source. `candle` is the name the crate uses for candle-core (`candle`,
// `candle_core`); `candle_nn` the one for candle-nn, empty when the crate does not depend on it
// (then there is no `grads` function: it reads a `VarMap`). `eol` is the file's line ending.
std::string stats_module_source(const std::string& candle, const std::string& candle_nn,
                                const std::string& eol);

// A block recording `cg_out` (what the forward or the child call returned) under the path
// `parent` (a `&str` expression) joined with `child` (a `&str` expression; `""` for the module
// itself), after closing the scope `guard` (so the statistics' work is not the module's time).
// Whatever `cg_out`'s type, it compiles: a type that holds no tensor records nothing.
std::string stats_record_call(const std::string& guard, const std::string& parent,
                              const std::string& child);

// Why the output of a forward returning `return_type` (as written) cannot be passed through the
// closure `--stats` wraps the body in, or nullopt when it can: the closure is annotated with the
// type, so it must be nameable there and own its value.
std::optional<std::string> stats_return_problem(const std::string& return_type);

}  // namespace cg::instrument
