#pragma once
// One model at a time (issue #18). With a component root chosen, or a crate whose inventory found
// exactly one component, the IR keeps what that component is about: the functions of the types it
// builds, its entrypoints, the crate functions that take one of those types (a `train_step(model:
// &Model, ..)`), and everything these call; the operations and tensors of those functions; and the
// findings that are not solely about dropped code. What was left out is said in one
// `analysis-scope` information finding. `--all` (Options::all) keeps the crate-wide view.
#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/model.hpp"

namespace cg::rust {
class Crate;
}

namespace cg::pipeline {

struct ScopeCounts {
  bool scoped = false;
  std::size_t functions = 0, operations = 0, tensors = 0, findings = 0;  // dropped
};

ScopeCounts scope_to_component(const rust::Crate& crate, ir::ModelIr& ir);

// Where scoping starts: the component's constructor and entrypoints, and the functions of the
// types it builds or that take one (ids). Empty unless the IR has exactly one component.
std::vector<std::string> scope_seeds(const rust::Crate& crate, const ir::ModelIr& ir);
// The ids of the functions scoping keeps: the seeds and what they call (as far as the dataflow
// has found calls), with every method of each type whose code is kept.
std::unordered_set<std::string> reached_functions(const ir::ModelIr& ir,
                                                  const std::vector<std::string>& seeds);

}  // namespace cg::pipeline
