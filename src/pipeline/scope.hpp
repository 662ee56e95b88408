#pragma once
// One model at a time (issue #18). With a component root chosen, or a crate whose inventory found
// exactly one component, the IR keeps what that component is about: the functions of the types it
// builds, its entrypoints, the crate functions that take one of those types (a `train_step(model:
// &Model, ..)`), and everything these call; the operations and tensors of those functions; and the
// findings that are not solely about dropped code. What was left out is said in one
// `analysis-scope` information finding. `--all` (Options::all) keeps the crate-wide view.
#include <cstddef>

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

}  // namespace cg::pipeline
