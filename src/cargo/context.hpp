#pragma once
// The Cargo context of one package, read offline from Cargo.toml, the workspace manifest and
// Cargo.lock (reference-static.md §6.1): no `cargo metadata`, no network, no dependency download.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cg::cargo {

// What the user selected on the command line (`--features`, `--all-features`, …).
struct Selection {
  std::vector<std::string> features;  // may hold "a,b" items; split on commas and spaces
  bool all_features = false;
  bool no_default_features = false;
  std::string target_triple;  // empty: host
  std::string cargo_target;   // empty: lib, else the first bin
};

struct Target {
  std::string name;
  std::string kind;      // lib | bin | example | test | bench
  std::string src_path;  // relative to the package directory
};

struct Dependency {
  std::string alias;    // the Rust identifier the code uses (`-` → `_`)
  std::string package;  // the package name (`candle-core`)
  std::string requirement;
  std::string path;  // absolute directory of a `path = ".."` dependency, else empty
  bool optional = false;
  bool active = true;  // false for an optional dependency no active feature enables
};

struct CandleVersion {
  std::string package;
  std::string version;
  bool exact = false;  // from Cargo.lock or a path dependency's manifest; false: a requirement
};

struct CargoContext {
  std::string package;
  std::string version;
  std::filesystem::path manifest_path;         // canonical
  std::filesystem::path package_dir;           // canonical
  std::filesystem::path workspace_root;        // canonical; the package dir when not in a workspace
  std::vector<std::string> features;           // active features, sorted (includes "default")
  std::vector<std::string> all_feature_names;  // every feature the manifest declares, sorted
  std::vector<Target> targets;                 // sorted by (name, kind, src_path)
  Target selected;                             // the analysed target
  std::filesystem::path root_file;             // canonical path of `selected.src_path`
  std::vector<Dependency> dependencies;        // sorted by alias
  std::vector<CandleVersion> candle_versions;  // sorted by package
  // A Cargo.lock that exists but could not be read ("Cargo.lock: line 3: …", the path relative to
  // the package directory); empty when fine or absent. Versions then come from requirements.
  std::string lock_problem;
  std::vector<std::string> cfgs;  // rustc cfg lines plus `feature="x"`, sorted, deduped
  bool cfgs_from_rustc = false;   // false: the documented host default (x86_64 linux)
  std::string build_id;
  std::string analysis_id;

  // The package a Rust identifier names: a dependency alias, else the identifier with `_` → `-`
  // when a dependency of that package exists; empty when it names no dependency.
  std::string package_for_alias(const std::string& ident) const;
  // The crate name the code of package `pkg` is imported by (`candle-core` → `candle_core`).
  static std::string crate_name(const std::string& pkg);
};

// `path` is a directory or a Cargo.toml. Throws cg::InputError("Cargo.toml:LINE", …) on a missing
// or malformed manifest, an unknown target or feature (listing the valid ones), or a virtual
// workspace (listing its members).
CargoContext load_cargo_context(const std::filesystem::path& path, const Selection& selection);

// Members of the workspace whose root manifest is `workspace_root/Cargo.toml`, globs expanded,
// relative to the root, sorted.
std::vector<std::string> workspace_members(const std::filesystem::path& workspace_root);

// §2.1: "candle-graph/build/1:" + 16 hex digits of FNV-1a-64 over the package identity.
std::string compute_build_id(const CargoContext& ctx);

// The cfg lines the documented host default stands for when rustc cannot be run: x86_64 Linux
// GNU, dev profile (so `debug_assertions` is set, as `cargo build` without `--release` would).
std::vector<std::string> host_default_cfgs();

// `rustc --print cfg [--target T]`, killed after `timeout_ms`; empty when rustc is absent or fails.
std::vector<std::string> rustc_cfgs(const std::string& target_triple, int timeout_ms = 5000);

}  // namespace cg::cargo
