#pragma once
// Where each dependency's source is on this machine, found offline the way Cargo itself would find
// it: workspace members and path dependencies, a `vendor/` directory (`cargo vendor`, with the
// `.cargo/config.toml` source replacement), the registry cache `$CARGO_HOME/registry/src/*/NAME-
// VERSION`, and git checkouts `$CARGO_HOME/git/checkouts/*/REV`. Nothing is downloaded; a
// dependency not on disk says where it was looked for.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cargo/context.hpp"

namespace cg::cargo {

enum class SourceOrigin { workspace, path, vendor, registry, git, missing };
std::string_view to_string(SourceOrigin o);

struct DependencySource {
  std::string package;
  std::string version;  // from Cargo.lock; without a lock, the version found on disk
  std::string source;   // Cargo.lock's `source` (`registry+…`, `git+…#rev`); empty for paths
  SourceOrigin origin = SourceOrigin::missing;
  std::filesystem::path dir;  // the package directory (holds its Cargo.toml); empty if missing
  std::string shown_dir;      // `dir` as notes show it: `$CARGO_HOME/…` or workspace-relative
  std::vector<std::string> searched;    // where it was looked for, in order (for the note)
  std::vector<std::string> depends_on;  // package names, from Cargo.lock
  bool reaches_candle = false;  // is, or depends (transitively) on, candle-core or candle-nn
  std::string problem;          // why a found directory was not usable (a broken Cargo.toml, …)
  // The `dependency-source` note, empty when the source was found and usable: names the
  // dependency and where it was looked for (not on disk, a broken manifest, a cycle of path
  // dependencies, several candle versions in one lock). Paths are `$CARGO_HOME/…` or relative to
  // the workspace root, so the IR finding built from it is the same on every machine.
  std::string note;
  // Whether its items were loaded into the analysis, filled by the pipeline (doctor shows it):
  // "loaded: 3 files, 41 items", "not loaded: …" with the reason; empty when not considered.
  std::string analysis;
};

// What the analysis needs from a dependency's own Cargo.toml to load it like the analysed crate:
// its library root, its features, and the names its code imports its own dependencies by.
struct PackageManifest {
  std::string name, version;
  std::string lib_path = "src/lib.rs";  // `[lib] path`, relative to the package directory
  // The crate name its dependents' code uses when they do not rename it: `[lib] name`, else the
  // package name with `-` → `_`.
  std::string lib_name;
  std::map<std::string, std::vector<std::string>> features;  // the `[features]` table
  struct Dep {
    std::string alias;    // the identifier its code uses (`-` → `_`)
    std::string package;  // `package = ".."` when renamed
    std::vector<std::string> features;
    bool default_features = true;
  };
  std::vector<Dep> dependencies;  // [dependencies] and every [target.*.dependencies], by alias
  std::string error;              // set when unreadable: "malformed Cargo.toml (line 3): …"
};
PackageManifest read_package_manifest(const std::filesystem::path& package_dir);

// The features active for a package: `requested` (plus "default" when `with_default`), expanded
// through its `[features]` table; `dep:x` and `x/y` entries enable no feature of the package.
std::vector<std::string> expand_features(const PackageManifest& m,
                                         const std::vector<std::string>& requested,
                                         bool with_default);

struct SourceOptions {
  // `$CARGO_HOME`; empty: the environment's CARGO_HOME, else $HOME/.cargo.
  std::filesystem::path cargo_home;
  // Directory entries looked at per listing (git checkouts, workspace globs): a huge cache costs
  // this much, never a walk of everything.
  std::size_t max_entries = 20000;
  // When set, receives how many directory entries were listed in all (tests and benches check
  // that a huge registry is listed at most once).
  std::size_t* entries_read = nullptr;
};

// Every package in the context's Cargo.lock other than the analysed one (or, without a lock, every
// dependency its manifest names), sorted by (package, version), each with where its source is.
std::vector<DependencySource> locate_dependency_sources(const CargoContext& ctx,
                                                        const SourceOptions& opts = {});

// The `dependency-source` notes for a located set, one message each (the analysis records them
// as findings): every dependency with a note that reaches candle or is not a plain registry
// dependency, by name; registry dependencies that do not reach candle and are merely not on disk
// (a lock lists hundreds of them on a machine that never built the crate) as one summary note
// naming the first few and where they were looked for.
std::vector<std::string> dependency_notes(const std::vector<DependencySource>& sources);

}  // namespace cg::cargo
