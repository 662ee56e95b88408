#pragma once
// `candle-graph instrument`: a unified diff that gives every module type of the analyzed
// component(s) a module path (`cg_path`, filled from the constructor's `vb.prefix()`) and opens a
// profiler module scope at the top of each of its forwards, all behind the Cargo feature
// `candle-graph-profile` (the crate builds unchanged without it). What it cannot instrument
// safely it skips and says why; the diff itself is checked to parse before it is returned.
#include <cstddef>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace cg::instrument {

inline constexpr const char* kFieldName = "cg_path";
inline constexpr const char* kScopeName = "_cg_scope";

struct Skip {
  std::string where;  // "src/model.rs:12"
  std::string what;   // "struct `model::Foo`", "forward `model::Foo::forward`"
  std::string why;
};

struct Report {
  std::string diff;                       // `git apply` / `patch -p1` input, paths a/ b/
  std::vector<std::string> instrumented;  // qualified module types, in file/line order
  std::vector<Skip> skipped;              // in file/line order
  std::vector<std::string> notes;         // what was already there (Cargo.toml)
  std::vector<std::string> files;         // changed files, crate-relative, sorted
  std::size_t fields = 0, literals = 0, scopes = 0, captures = 0;
  std::size_t children = 0;  // calls of a library layer timed as the caller's child
  // --stats: forwards whose output is recorded, and child calls whose output is.
  std::size_t stats_outputs = 0, stats_children = 0;
  // Nothing was instrumented and some module type already has its `cg_path` field: the crate
  // was instrumented before (the others are skipped for their own reasons).
  bool already_instrumented = false;
};

// Uses the crate, Cargo selection and --root of `opts` (config and traces are ignored). Throws
// cg::InputError for a crate without Cargo.toml, a source file that does not parse, no module to
// instrument, or a bad --root.
// `profile_dep` is the `--profile-dep` flag (`path=DIR`, `git=URL`, `version=REQ`): the source of
// the added `candle-graph-profile` dependency; empty: `version = "0.3"`. `stats` (`--stats`)
// also records the statistics of each instrumented forward's and child call's output behind the
// feature `candle-graph-stats` (docs/instrument.md, "Numeric health"); it throws cg::InputError
// for a crate without a candle-core dependency (the statistics are computed with it).
Report instrument_crate(const pipeline::Options& opts, const std::string& profile_dep = {},
                        bool stats = false);

// The `--profile-dep` to use when the flag is absent: `path=` the Rust binding of the
// candle-graph checkout this executable was built in or installed from
// (`bindings/rust/candle-graph-profile` in a directory above the executable), when there is one;
// else empty.
std::string default_profile_dep();

}  // namespace cg::instrument
