#pragma once
// The short text `make demo` prints and `audit` writes as summary.txt: crate, target, features,
// sources, functions, components with parameter certainty, findings, entrypoints, traces.
#include <string>

#include "pipeline/pipeline.hpp"

namespace cg::cli {

std::string render_summary(const pipeline::Analysis& a);

}  // namespace cg::cli
