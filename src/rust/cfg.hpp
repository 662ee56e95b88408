#pragma once
// Three-valued `#[cfg(...)]` evaluation (reference-static.md §6.2): a predicate is true, false, or
// unknown when its form is not understood; unknown items are kept with both alternatives.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace cg::rust {

enum class Tri { False, True, Unknown };

// The active cfg set, normalized (whitespace outside quotes removed): `unix`,
// `target_os="linux"`, `feature="cuda"`. `test` is never active: we analyse the library as
// built, not its test harness. `debug_assertions` is active when rustc printed it (dev profile).
class CfgSet {
 public:
  CfgSet() = default;
  explicit CfgSet(const std::vector<std::string>& lines);
  Tri eval(std::string_view predicate) const;
  // Every predicate is true (empty list: true); any false wins over unknown.
  Tri eval_all(const std::vector<std::string>& predicates) const;

 private:
  std::unordered_set<std::string> active_;
};

std::string normalize_cfg(std::string_view text);

}  // namespace cg::rust
