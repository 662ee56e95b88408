#pragma once
// Resolves a module scope's VarBuilder path (runtime/4 `module`, "model.layers.3.mlp") to the IR
// module it times: the path less the caller's prefix (`--prefix`) must equal a module's prefix
// (an instance), or match a family's templated prefix (`layers.{i}.mlp`: digits for each `{…}`;
// the index is the instance). Only modules of one component are candidates: the one named by
// `--root`, or else the component that resolves the most paths (ties: smallest id). Paths that
// resolve to nothing there are unmatched and reported, never dropped.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/model.hpp"

namespace cg::runtime {

struct ModulePathMatch {
  std::string module;                     // IR module id (the family module for a member)
  std::optional<std::uint64_t> instance;  // family index, when the prefix has one
  bool family = false;                    // matched a `{i}` prefix
  std::string family_path;                // caller prefix + the family's prefix
};

struct ModulePathOptions {
  std::string prefix;  // caller prefix pushed before the root constructor ("" = none)
  std::string root;    // component root type (--root); "" = the best-matching component
};

class ModulePathResolver {
 public:
  ModulePathResolver(const ir::ModelIr& ir, ModulePathOptions options);
  // Resolves every path at once (the component choice depends on all of them).
  std::map<std::string, std::optional<ModulePathMatch>> resolve(
      const std::vector<std::string>& paths) const;
  // The component chosen by the last resolve ("" when none matched).
  const std::string& component() const { return component_; }
  // IR parameter ids whose VarBuilder key (a template's `{…}` matching digits) is `key` less the
  // caller's prefix; parameters of the chosen component when one was chosen, else of any.
  std::vector<std::string> parameters_for_key(const std::string& key) const;

 private:
  // `path` less the caller's prefix; nullopt when it does not start with it.
  std::optional<std::string_view> relative(const std::string& path) const;
  std::optional<ModulePathMatch> match(const std::string& component, const std::string& path) const;
  const ir::ModelIr& ir_;
  ModulePathOptions options_;
  mutable std::string component_;
};

// A prefix segment against a path segment: literal text equal, each `{…}` one or more digits (the
// last one's value in `index`).
bool match_segment(std::string_view pattern, std::string_view text,
                   std::optional<std::uint64_t>& index);

}  // namespace cg::runtime
