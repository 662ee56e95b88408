#pragma once
// The torchinfo-style model summary: module tree, type, parameter shape, #params, trainable,
// totals and size. Unknown counts stay visibly unknown ("?") rather than being summed as zero.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cg::query {

struct SummaryRow {
  int depth = 0;
  std::string name;   // module field / key segment, e.g. "self_attn" or "q_proj.weight"
  std::string type;   // "Attention", "Linear", "Embedding", "" for a parameter leaf
  std::string shape;  // "[256, 256]" or symbolic "[hidden_size, vocab_size]"
  std::optional<std::uint64_t> params;  // nullopt = not computable (symbolic shape) or overflow
  std::string trainable;                // "yes" | "no" | "?"
  std::string marker;                   // "", "conditional", "unknown"
  std::string mult_adds;                // per call, e.g. "b*t*65536"; "" when not known
  bool params_overflow = false;         // the count does not fit 64 bits (`params` is nullopt)
  // Module scope timings (--runtime-trace with runtime/4 `module` records); a folded family shows
  // the sum over its instances and, in `slowest`, its slowest instance ("#3 1.2 ms").
  std::optional<std::uint64_t> time_total_ns{}, time_self_ns{}, calls{};
  std::optional<double> self_share{};  // self / wall time
  std::string slowest{};
  std::string module_id{};  // the IR module a module row shows ("" for a parameter leaf)
  // One call's output in the main forward pass ("[b, t, 256]"); "" when not known or not reached.
  std::string output_shape{};
  bool mult_adds_lower_bound = false;  // `mult_adds` leaves out operations without a rule
  // Output statistics (`summary --stats`, runtime/4 `stats` records): the largest abs_max and RMS
  // over the recorded samples (finite elements) and the non-finite elements summed over them.
  std::optional<double> stats_abs_max{}, stats_rms{};
  std::optional<std::uint64_t> stats_non_finite{};
};

struct SummaryTotals {
  std::optional<std::uint64_t> total;
  bool overflow = false;    // the total does not fit 64 bits (then `total` is nullopt)
  std::string lower_bound;  // non-empty: `total` is a lower bound, for this reason
  std::optional<std::uint64_t> trainable;
  std::uint64_t unknown_leaves = 0;    // leaves whose count is symbolic
  std::optional<std::uint64_t> bytes;  // at the stated dtype
  bool bytes_overflow = false;
  std::string dtype;      // e.g. "F32"; empty if unknown
  std::string mult_adds;  // total per forward pass of the counted layers, or ""
  // Operations without a Mult-Adds rule in the forward pass ("matmul", "repeat_kv"): every figure
  // they are under is a lower bound (marked "≥").
  std::vector<std::string> mult_adds_missing;
  // Undecided `if`/`match` sites whose arms count differently: the least arm is added (a lower
  // bound); the same for the activations.
  std::vector<std::string> mult_adds_branches, activation_branches;
  bool mult_adds_from_instances = false;  // per module, rolled up along the instance calls
  // A root with no forward of its own: the children's runs the forward pass adds up
  // ("model.encoder.forward + model.decoder.forward"); empty when the root's own forward is it.
  std::string forward_runs;
  // One forward's activations: the elements its operations output (sum of their output sizes),
  // symbolic in the input's dimensions unless `--input-shape` binds them.
  std::string activations;                        // "b*t*20" elements; "" when no forward pass
  std::optional<std::uint64_t> activation_bytes;  // at `dtype`, when a number
  std::uint64_t activation_unknown_ops = 0;       // operations of unknown output shape (left out)
  // Modules that reuse weights another module registered (the same key): counted once.
  std::vector<std::string> shared;
  // `--input-shape` names that no Mult-Adds term is written in, and the names that are.
  std::vector<std::string> unused_dims;
  std::string dims_in_use;
  // Mutually exclusive alternatives the analysis cannot decide (a fallback load, a
  // `contains_tensor` guard, a branch the config does not decide): `total` is the smallest
  // choice, `total_max` (when set) the largest, and each line names one group of alternatives.
  std::optional<std::uint64_t> total_max;
  std::optional<std::uint64_t> bytes_max;
  std::vector<std::string> alternatives;
  // Timing columns: present when some row has a timing.
  std::optional<std::uint64_t> wall_ns{};
  bool host_side = true;
  std::uint64_t unmatched_module_paths = 0;
  // `summary --stats`: the stats records merged (nullopt: not asked for).
  std::optional<std::uint64_t> stats_records{};
};

// What the table shows. The defaults show everything at its natural width; `summary` hides
// weight rows and unknown columns and fits 120 columns (query::SummaryOptions).
struct TableLayout {
  bool weights = true;      // a row per parameter under its layer
  bool all_columns = true;  // Mult-Adds and Trainable even where every row is unknown ("?")
  std::size_t width = 0;    // wrap cells (shapes, formulas, names) to fit; 0: no limit
  // How the reader asks for what is hidden, said under the table ("--weights" on the command line).
  std::string weights_flag = "--weights";
  std::string columns_flag = "--all-columns";
};

std::string render_summary_table(const std::string& title, const std::vector<SummaryRow>& rows,
                                 const SummaryTotals& totals, const TableLayout& layout = {});

// Lines wider than `width` broken at spaces, each continuation indented two past its line's own
// indent (0: unchanged).
std::string wrap_text(const std::string& text, std::size_t width);

// 1234567 → "1,234,567".
std::string group_thousands(std::uint64_t n);
// ns as a short duration: "850 ns", "12.3 µs", "4.56 ms", "1.235 s".
std::string short_duration(std::uint64_t ns);

}  // namespace cg::query
