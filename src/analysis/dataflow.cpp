#include "analysis/dataflow.hpp"

namespace cg::analysis {

// Placeholder until the dataflow issue (#5) lands: no operations are claimed.
void build_dataflow(const rust::Crate&, const DataflowOptions&, ir::ModelIr&) {}

}  // namespace cg::analysis
