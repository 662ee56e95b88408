#pragma once
// The Cargo.toml half of `candle-graph instrument`: an optional dependency on the profiler crate
// and the `candle-graph-profile` feature that enables it, added as text so the rest of the
// manifest (comments, order, formatting) is untouched.
#include <string>
#include <vector>

#include "instrument/unified_diff.hpp"

namespace cg::instrument {

inline constexpr const char* kFeature = "candle-graph-profile";

struct ManifestEdit {
  std::vector<Insertion> insertions;
  std::vector<std::string> notes;  // what was already there and left alone
};

// Throws cg::InputError naming `origin` for a manifest that is not TOML, or whose [features] or
// [dependencies] is written in a form the insertion cannot extend (an inline table).
ManifestEdit manifest_insertions(const std::string& text, const std::string& origin);

}  // namespace cg::instrument
