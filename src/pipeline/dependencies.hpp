#pragma once
// Dependency crates loaded into the analysis (issue #17): a layer crate of the workspace, a path
// or git dependency, a vendored fork or a registry crate whose source is on disk is loaded with
// the same loader as the analysed crate, so that `their_layers::linear(…, vb)` resolves to its
// items and the analysis walks its constructors like the crate's own.
//
// Which ones: a dependency whose source was found and usable, that reaches candle-core or
// candle-nn (directly or through another crate), that the code already loaded names (`name::…`,
// `use name`, `extern crate name`: lazily, from the analysed crate outward), and that is not one
// of Candle's own crates (their constructors and operations stay catalogued). Loading stops at a
// budget of files and bytes for all dependencies together; what was not loaded, and why, is a
// `dependency-source` note naming the dependency and its path, and the rest goes on.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/layer_catalog.hpp"
#include "cargo/context.hpp"
#include "cargo/sources.hpp"

namespace cg::rust {
class Crate;
}

namespace cg::pipeline {

struct DependencyBudget {
  std::size_t max_files = 1500;                   // source files over all loaded dependencies
  std::size_t max_bytes = std::size_t{24} << 20;  // source bytes over all loaded dependencies
};

// Candle's own crates: their items stay External and are read from the catalogues.
bool is_catalogued_package(std::string_view package);

// Loads the dependencies `sources` selects into `crate` (before it is analysed) and fills each
// source's `analysis` ("loaded: …" / "not loaded: …"). Returns the `dependency-source` notes:
// a dependency that could not be loaded or was loaded incompletely, with its path.
// A dependency its dependent does not rename is named by its `[lib] name` when it has one: the
// aliases in `ctx` (and in each loaded crate's externs) follow it.
std::vector<std::string> load_dependencies(rust::Crate& crate, cargo::CargoContext& ctx,
                                           std::vector<cargo::DependencySource>& sources,
                                           const DependencyBudget& budget = {});

// candle-nn's constructors read from its own source when it is on disk (analysis/layer_source.hpp):
// the candle-nn package the lock resolves (its exact version, else the one found), loaded with the
// crate loader under the target's cfg and candle-nn's default features, its public VarBuilder
// functions interpreted. `catalog` is that catalogue (null when the source was not used): the
// caller hands it to the inventory (InventoryOptions::layer_catalog); a function the
// interpretation does not understand keeps its hand-written entry when that release is audited.
// candle-nn's `analysis` (doctor) says which was used; `notes` (dependency-source) say why the
// source was not used, or not for every function.
struct CandleNnSource {
  std::shared_ptr<const analysis::LayerCatalog> catalog;
  std::string version;  // the resolved candle-nn version (may be empty)
  std::vector<std::string> notes;
};
CandleNnSource use_candle_nn_source(const cargo::CargoContext& ctx,
                                    std::vector<cargo::DependencySource>& sources);

}  // namespace cg::pipeline
