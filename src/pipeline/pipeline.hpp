#pragma once
// "Crate → IR": load (Cargo context, sources, symbols) → list functions and entrypoints → analyze
// (inventory, dataflow) → merge runtime traces → normalize. Data flows one way; every stage
// reports what it could not do as findings. The CLI, the tests and the benches call this one
// pipeline; it knows nothing of command-line flags.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cargo/sources.hpp"
#include "ir/model.hpp"
#include "runtime/reader.hpp"
#include "runtime/tracing_chrome.hpp"

namespace cg::rust {
class Crate;
struct LoadedCrate;
}  // namespace cg::rust

namespace cg::pipeline {

// What to analyze: the crate, the Cargo selection, the component root, a config to bind, and
// runtime traces to merge.
struct Options {
  std::string path = ".";  // crate directory or a Cargo.toml
  std::vector<std::string> features;
  bool all_features = false;
  bool no_default_features = false;
  std::string target;        // target triple for cfg
  std::string cargo_target;  // lib / bin / example / test target name
  std::string root;          // component root type
  // Keep the crate-wide view: without it, a crate analyzed as one component (a root chosen, or
  // one found) is scoped to that component (pipeline/scope.hpp).
  bool all = false;
  std::string config;  // config.json to bind
  // The object of `config` holding the model's fields (`text_config` of a multimodal
  // config.json); empty: the top level.
  std::string config_key;
  // Bind a config.json that lacks fields the model's serde requires (`--partial-config`): the
  // fields it has are bound, the others stay symbolic. Without it such a file is an input error,
  // as serde would refuse it (another model's config.json).
  bool partial_config = false;
  std::vector<std::string>
      args;  // `--arg name=value`: root constructor arguments (num_labels=1000)
  // `--input-shape xs=1x3x224x224`: the shape of an entrypoint's tensor input, by parameter name
  // (each dimension a number or a name), for forwards that never state their input's size.
  std::map<std::string, std::vector<std::string>> input_tensors;
  std::vector<std::string> runtime_traces;
  bool lenient = false;  // skip bad trace lines and count them
  // Prefix the traced program pushes before the root constructor (`--prefix`): module scope
  // paths resolve to IR modules under it.
  std::string module_prefix;
  // runtime-activation-growth: output RMS growth per layer that raises it (`--activation-growth`).
  double activation_growth = 2.0;
};

struct Analysis {
  ir::ModelIr ir;
  std::string package_id;     // "tiny-llama 0.1.0", or the directory name without Cargo.toml
  std::string manifest_path;  // crate-relative
  std::size_t files = 0;
  std::size_t files_with_syntax_errors = 0;
  std::size_t items = 0;
  // Loaded dependency crates (pipeline/dependencies.hpp): their files and items, beyond the above.
  std::size_t dependency_files = 0;
  std::size_t dependency_items = 0;
  std::vector<runtime::TraceInfo> traces;    // runtime traces read, in the order given
  std::vector<std::string> rejected_traces;  // paths of traces not merged (identity mismatch)
  // Where each dependency's source is on this machine (doctor lists them); not part of the IR,
  // which stays the same on every machine.
  std::vector<cargo::DependencySource> dependencies;
};

// Throws cg::InputError for a path that is not a crate, a malformed manifest or config, a bad
// trace. Traces are read (streaming), validated and merged into the IR.
Analysis analyze(const Options& opts);
// The same, with `visit` given the loaded crate (its Cargo context, its dependencies joined) and
// the finished analysis before the crate is released: `instrument` edits the sources the IR was
// built from, under the same features, root, config and arguments.
Analysis analyze(const Options& opts,
                 const std::function<void(const rust::LoadedCrate&, const Analysis&)>& visit);

// The crate's functions and methods (cfg-false items skipped) as IR records, with the entrypoint
// rule applied: `Module(WithArgs)::forward`, `ModuleT(WithArgs)::forward_t`, or a public function
// with `Tensor`/`Var` in its signature.
std::vector<ir::Function> functions_of(const rust::Crate& crate);

// What the tracing-chrome importer needs from the analysis: the IR's module instances and, per
// `tracing` span name, the types whose code creates it (rust::find_span_sites).
runtime::SpanCatalog span_catalog(const rust::Crate& crate, const ir::ModelIr& ir);

}  // namespace cg::pipeline
