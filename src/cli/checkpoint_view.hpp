#pragma once
// A checkpoint verification (checkpoint::VerifyReport) as the viewer's checkpoint view shows it:
// one row per matched parameter, missing key, unclaimed tensor and shape mismatch.
#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/verify.hpp"
#include "ir/model.hpp"
#include "viewer/payload.hpp"

namespace cg::cli {

viewer::CheckpointView checkpoint_view(const checkpoint::VerifyReport& report,
                                       const checkpoint::Checkpoint& checkpoint,
                                       const ir::ModelIr& ir);

}  // namespace cg::cli
