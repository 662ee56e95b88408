#pragma once
// candle-nn's constructors read from candle-nn's own source (issue #17): with the source on disk
// (vendored, in the registry cache, a git checkout, a path or workspace member), each public free
// function taking a VarBuilder is interpreted once over its lowered body (rust/body.hpp) to the
// same description the hand-written catalogue gives (layer_catalog.hpp): the leaves it asks its
// VarBuilder for, keys relative to the prefix, shapes as expressions of its arguments, and the
// condition under which each is requested. So any candle-nn release, and a fork, gets exact
// leaves; the catalogue stays the audited fallback and a check (tests compare both on 0.11.0).
//
// What the interpretation understands: `vb.get*(shape, name, ..)` and `vb.pp(..)`, locals, config
// struct literals (`LayerNormConfig { affine: false, .. }`) and `.into()`, `if`/`match` over the
// arguments (a leaf both branches request is unconditional; `match x { Some(..) => .. }` is
// `x.is_some()`), calls to the crate's own functions receiving the VarBuilder (inlined),
// `format!` names, and `Var::from_tensor(&leaf)` (the layer keeps its own copy: running state).
// A function using anything else is left out with the reason, never guessed.
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/layer_catalog.hpp"

namespace cg::rust {
class Crate;
class CfgSet;
}  // namespace cg::rust

namespace cg::analysis {

struct LayerSource {
  std::vector<ConstructorSpec> constructors;  // sorted by name
  // Public functions taking a VarBuilder that were not understood: "name (file:line): reason".
  std::vector<std::string> skipped;
  // What the loader could not read where a constructor may be: a `pub fn` taking a VarBuilder
  // that a syntax error kept out of the item list, an unreadable module. (A syntax error inside
  // a constructor puts it among `skipped`; errors elsewhere are ignored.)
  std::vector<std::string> problems;
  // Set when the source as a whole is not used (no library root, no constructor understood):
  // the catalogue is then the fallback.
  std::string error;
  std::size_t files = 0;
  // Config fields' defaults from each `impl Default for …Config` whose `default()` is a struct
  // literal: by field, the literal all such configs with the field agree on.
  std::map<std::string, ConfigDefault> config_defaults;
};

// Derives the constructors of a loaded candle-nn crate (its unit 0).
LayerSource derive_layer_constructors(const rust::Crate& crate);

// Loads the candle-nn package at `package_dir` (library root `root_file`) with the crate loader
// under the cfg `cfg_lines` (rustc's `--print cfg` lines plus `feature="x"`) and derives its
// constructors. The result is cached per (directory, root, cfg set) and reused while none of the
// files it read changed (size and modification time), so an MCP server or a bench analysing many
// crates reads each candle-nn once per target and feature set.
std::shared_ptr<const LayerSource> read_layer_source(const std::filesystem::path& package_dir,
                                                     const std::filesystem::path& root_file,
                                                     std::vector<std::string> cfg_lines);

}  // namespace cg::analysis
