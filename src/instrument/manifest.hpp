#pragma once
// The Cargo.toml half of `candle-graph instrument`: an optional dependency on the profiler crate
// and the `candle-graph-profile` feature that enables it, added as text so the rest of the
// manifest (comments, order, formatting) is untouched.
#include <string>
#include <vector>

#include "instrument/unified_diff.hpp"

namespace cg::instrument {

inline constexpr const char* kFeature = "candle-graph-profile";
// `instrument --stats`: tensor statistics, on top of the scopes.
inline constexpr const char* kStatsFeature = "candle-graph-stats";

struct ManifestEdit {
  std::vector<Insertion> insertions;
  std::vector<std::string> notes;  // what was already there and left alone
};

// Throws cg::InputError naming `origin` for a manifest that is not TOML, or whose [features] or
// [dependencies] is written in a form the insertion cannot extend (an inline table).
// `source` is what the added dependency's inline table says before `optional = true`. `stats`
// also declares `candle-graph-stats = ["candle-graph-profile"]` (instrument --stats).
ManifestEdit manifest_insertions(const std::string& text, const std::string& origin,
                                 const std::string& source = "version = \"0.3\"",
                                 bool stats = false);

// `--profile-dep`: `path=DIR`, `git=URL` or `version=REQ` as that TOML text (`path = "DIR"`).
// Throws cg::InputError for anything else.
std::string dependency_source(const std::string& spec);

}  // namespace cg::instrument
