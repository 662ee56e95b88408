#pragma once
// `candle-graph compare`: two groups of traces (base, candidate), compared per module instance path
// (runtime/4 `module` records) and per operation static id (`operation` records). Each row holds
// the median per-step time on each side, the ratio candidate / base with a bootstrap confidence
// interval, and a verdict (docs/compare.md says what the numbers mean and why). Where both sides
// recorded tensor statistics (`stats` records), their drift gets rows of its own: a module
// output's RMS and a gradient's norm, compared the same way, and a tensor that holds NaN/Inf in
// the candidate but never did in the base is its own verdict.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cg::compare {

// The seed of the bootstrap when none is given: output is byte-stable run to run.
inline constexpr std::uint64_t kDefaultSeed = 20261206;
// Fewer bootstrap units (steps, or runs with several runs a side) than this on either side: no
// verdict, the interval of a median of 4 values says little.
inline constexpr std::size_t kMinUnits = 5;

struct Options {
  double confidence = 0.95;  // two-sided, in (0, 1)
  std::uint64_t resamples = 2000;
  std::uint64_t seed = kDefaultSeed;
  double min_change_pct = 1.0;  // a significant change smaller than this is "no change"
  bool lenient = false;         // read damaged or truncated traces (stated in the report)
  bool allow_mismatch = false;  // compare traces of different models or analyses anyway
};

enum class RowKind : std::uint8_t { module, operation, rms, grad_norm };
enum class Verdict : std::uint8_t {
  slower,
  faster,
  no_change,
  too_few_samples,
  only_in_base,
  only_in_candidate,
  higher,             // statistics rows: the candidate's figure is higher
  lower,              // … lower
  became_non_finite,  // … holds NaN/Inf in the candidate, never in the base
};
inline constexpr int kVerdicts = 9;
const char* verdict_name(Verdict v);   // "slower", "no_change", "only_in_base", …
const char* row_kind_name(RowKind k);  // "module", "operation", "rms", "grad_norm"
inline bool is_stats(RowKind k) {
  return k == RowKind::rms || k == RowKind::grad_norm;
}

// One side of a row.
struct SideFigures {
  // The side's estimate (docs/compare.md: median of steps or runs): ns for time rows, the
  // statistic itself for `rms` and `grad_norm` rows (over the samples with a finite value).
  double median_ns = 0;
  std::uint64_t non_finite_samples = 0;  // statistics rows: samples holding a NaN or Inf
  std::uint64_t units = 0;               // values the bootstrap resamples (steps, or runs)
  std::uint64_t observations = 0;        // per-step sums over every run of the side
  std::uint64_t runs = 0;                // runs (files) of the side in which the row appears
};

struct Row {
  RowKind kind = RowKind::module;
  std::string id;  // module path or operation static id
  std::string op;  // operation rows: the op name first seen (empty for modules)
  std::optional<SideFigures> base, candidate;
  // Both sides present: candidate median / base median and its interval (null in JSON when the
  // base median is 0 and the candidate's is not).
  std::optional<double> ratio, ci_low, ci_high;
  Verdict verdict = Verdict::no_change;
  double change_pct() const { return ratio ? (*ratio - 1.0) * 100.0 : 0.0; }
};

// What one trace file contributed, for the header and the JSON.
struct RunInfo {
  std::string path;
  std::string schema;  // "candle-graph/runtime/4", …
  std::string entrypoint;
  std::optional<std::string> analysis_id, phase;
  std::uint64_t operations = 0, modules = 0, stats = 0;
  std::uint64_t untimed_operations = 0;  // operation records without duration_ns or static_id
  std::uint64_t skipped_lines = 0;       // --lenient
  bool truncated = false;                // --lenient: no `end` record
};

// A meta field that differs between two traces (only with allow_mismatch; otherwise refused).
struct Mismatch {
  std::string field;  // "analysis_id", "entrypoint", "phase", "schema"
  std::string first_path, first_value;
  std::string other_path, other_value;
};

struct Report {
  Options options;
  std::vector<RunInfo> base_runs, candidate_runs;
  std::vector<Mismatch> mismatches;
  std::vector<Row> rows;  // in report order: compared rows by size of change, then only-in rows
};

// Reads every trace (throws cg::InputError naming the file and line for bad input, a missing `end`
// without lenient, and a meta mismatch without allow_mismatch) and compares them.
Report compare_traces(const std::vector<std::filesystem::path>& base,
                      const std::vector<std::filesystem::path>& candidate, const Options& options);

// The core, for callers that have the values already: per-unit values of each side (any order).
// Fills ratio, interval and verdict of `row` from them; `salt` selects the row's random stream.
void compare_values(const std::vector<double>& base, const std::vector<double>& candidate,
                    const Options& options, std::uint64_t salt, Row& row);

// The rows "slower" by more than `pct` percent, and every row that became non-finite
// (--fail-on-regression).
std::vector<const Row*> regressions(const Report& report, double pct);

// Renderings. `limit` bounds the rows listed (0 = all); every format says how many were left out.
std::string render_text(const Report& report, std::size_t limit);
std::string render_markdown(const Report& report, std::size_t limit);
std::string render_json(const Report& report, std::size_t limit);  // candle-graph/compare/1

}  // namespace cg::compare
