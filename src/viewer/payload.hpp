#pragma once
// IR (candle-graph/model/1) -> viewer payload (candle-graph/viewer/1), and the page around it.
#include <string>

#include "ir/model.hpp"
#include "viewer/html.hpp"

namespace cg::viewer {

inline constexpr std::string_view kViewerSchema = "candle-graph/viewer/1";

// The payload JSON (compact). Fields are the viewer's names (docs/viewer.md); unknown stays null.
std::string project_payload(const cg::ir::ModelIr& ir);

// The same document in the two parts the page embeds: `main` holds what the first (dataflow) view
// needs; `tree` holds modules, parameters and checkpoint, which the page parses after that view is
// on screen. Both are JSON objects with disjoint keys; project_payload() is their union.
struct PayloadParts {
  std::string main;
  std::string tree;
};
PayloadParts project_payload_parts(const cg::ir::ModelIr& ir);

// The complete offline HTML page for `ir` (the CLI writes it atomically).
std::string render_viewer_html(const cg::ir::ModelIr& ir, const ViewerOptions& options);

}  // namespace cg::viewer
