#pragma once
// Model fingerprint baselines (`candle-graph/model-baseline/1`, reference-static §7.1) for CI:
// `--update-baseline F` records what the analysis found; `--check F` fails (exit 1) with a
// readable per-section `-`/`+` diff when it changed. Recorded: components, parameters (root, key,
// acquisition kind, and the shape when a config made it concrete), entrypoints, and finding
// rule + severity — never messages or ids, so rewording a finding or moving code does not fail.
#include <string>
#include <string_view>
#include <vector>

#include "ir/model.hpp"

namespace cg::cli {

struct Baseline {
  // Section name -> sorted, deduplicated lines (tab-separated, escaped).
  std::vector<std::pair<std::string, std::vector<std::string>>> sections;
};

Baseline baseline_of(const ir::ModelIr& ir);
std::string write_baseline(const Baseline& b);
// Throws cg::InputError naming `origin` and the line for a bad header or an unknown record kind.
Baseline parse_baseline(std::string_view text, const std::string& origin);
// Empty when equal; otherwise the diff, section by section (`- ` removed, `+ ` added).
std::string diff_baselines(const Baseline& expected, const Baseline& actual);

}  // namespace cg::cli
