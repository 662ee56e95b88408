#pragma once
// IR (candle-graph/model/1) -> viewer payload (candle-graph/viewer/1), and the page around it.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/model.hpp"
#include "viewer/html.hpp"

namespace cg::viewer {

inline constexpr std::string_view kViewerSchema = "candle-graph/viewer/1";

// A checkpoint verification as the checkpoint view shows it (the CLI builds it from
// checkpoint::VerifyReport; the viewer does not depend on the checkpoint module). Status is one of
// matched, missing, unclaimed, shape_mismatch.
struct CheckpointEntry {
  std::string key, status;
  std::string parameter;  // IR parameter id when the entry belongs to one
  std::optional<std::vector<std::uint64_t>> expected, actual;
  std::string dtype, reason;
};
struct CheckpointView {
  std::string path;
  std::string verdict;  // e.g. "loads" / "will not load: 3 certain missing"
  std::vector<CheckpointEntry> entries;
};

// What the `summary` table says of one module row (the same fields as `query module`): one call's
// output shape in the forward pass, its Mult-Adds (a lower bound when an operation under it has
// no rule), its parameters and their size at `weights_dtype`. The CLI fills it from the summary;
// the viewer does not depend on the query module. Keyed by IR module id.
struct ModuleFigures {
  std::string output_shape;  // "" when not known
  std::string mult_adds;     // "" when not known
  bool mult_adds_lower_bound = false;
  std::optional<std::uint64_t> parameter_count, weights_bytes;
  std::string weights_dtype;
  bool shared_weights = false;
  // The row's place in the summary (execution order: the forward's calls as they start); the
  // Architecture tree lists siblings in it.
  std::optional<std::uint64_t> order{};
};
using ModuleFiguresById = std::unordered_map<std::string, ModuleFigures>;

// What `candle-graph memory` says at the config's context (the CLI fills it from the memory
// report; the viewer does not depend on the query module): the model's figures in bytes, each
// with its bound, and the state each layer keeps across calls. Absent when the report cannot be
// made (no context known, several models).
struct MemoryFigureView {
  std::string name;                    // "weights", "kv_cache", ...
  std::optional<std::uint64_t> bytes;  // nullopt: not known
  std::string bound;                   // exact, lower_bound, upper_bound, unknown
  std::string note;
};
struct MemoryStateView {
  std::string instance;  // module path; a family's index is `{i}`
  std::string place, source;
  std::optional<std::uint64_t> instances, per_instance_bytes, total_bytes;
  std::string bound;  // of the per-instance figure
  std::vector<std::string> shapes;
  bool grows = false;  // a KV cache (grows with the context) rather than constant state
  // A tensor the constructor computes and keeps (`memory`'s buffers): `place` is the type and
  // field (`models::mistral::RotaryEmbedding.sin`), `shapes` its shape and dtype.
  bool buffer = false;
};
struct MemoryView {
  std::string dtype, context_source;
  std::uint64_t batch = 1, context = 0;
  std::vector<MemoryFigureView> figures;
  std::vector<MemoryStateView> states;
  std::vector<std::string> notes;
};

// The payload JSON (compact). Fields are the viewer's names (docs/viewer.md); unknown stays null.
// With `checkpoint`, the checkpoint view shows that verification; without, it is derived from the
// parameters' checkpoint_shape (an IR read back from JSON) or omitted.
// With `figures`, each module record carries its summary figures (docs/viewer.md).
std::string project_payload(const cg::ir::ModelIr& ir, const CheckpointView* checkpoint = nullptr,
                            const ModuleFiguresById* figures = nullptr,
                            const MemoryView* memory = nullptr);

// The same document in the two parts the page embeds: `main` holds what the first (dataflow) view
// needs; `tree` holds modules, parameters and checkpoint, which the page parses after that view is
// on screen. Both are JSON objects with disjoint keys; project_payload() is their union.
struct PayloadParts {
  std::string main;
  std::string tree;
};
PayloadParts project_payload_parts(const cg::ir::ModelIr& ir,
                                   const CheckpointView* checkpoint = nullptr,
                                   const ModuleFiguresById* figures = nullptr,
                                   const MemoryView* memory = nullptr);

// The complete offline HTML page for `ir` (the CLI writes it atomically).
std::string render_viewer_html(const cg::ir::ModelIr& ir, const ViewerOptions& options,
                               const CheckpointView* checkpoint = nullptr,
                               const ModuleFiguresById* figures = nullptr,
                               const MemoryView* memory = nullptr);

}  // namespace cg::viewer
