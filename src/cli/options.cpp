#include "cli/options.hpp"

#include <CLI/CLI.hpp>

namespace cg::cli {

void add_crate_options(CLI::App& cmd, CrateOptions& o, bool positional_path) {
  if (positional_path) {
    cmd.add_option("path", o.path, "Crate directory or Cargo.toml (default: .)");
  }
  cmd.add_option("--features", o.features, "Cargo features to activate (comma separated)")
      ->delimiter(',');
  cmd.add_flag("--all-features", o.all_features, "Activate every feature of the crate");
  cmd.add_flag("--no-default-features", o.no_default_features,
               "Do not activate the `default` feature");
  cmd.add_option("--target", o.target, "Target triple used to evaluate cfg (default: host)");
  cmd.add_option("--cargo-target", o.cargo_target,
                 "Cargo target to analyze: lib (default), a bin, example, test or bench name");
  cmd.add_option(
      "--root", o.root,
      "Analyze this type, or function taking a VarBuilder (resnet18), as the component root");
  cmd.add_flag("--all", o.all,
               "Keep the whole crate's functions, operations and findings (default: one "
               "component's, when there is one)");
  cmd.add_option("--config", o.config, "config.json to bind (concrete shapes and counts)");
  cmd.add_flag("--partial-config", o.partial_config,
               "Bind a config.json that lacks fields the model requires (the rest stay symbolic); "
               "without it such a file is an error");
  cmd.add_option("--config-key", o.config_key,
                 "Bind this object of the config (e.g. text_config of a multimodal config.json)");
  cmd.add_option("--arg", o.args,
                 "name=value for a root constructor argument (e.g. num_labels=1000); repeatable");
}

void add_evidence_options(CLI::App& cmd, CrateOptions& crate, EvidenceOptions& o) {
  cmd.add_option("--runtime-trace", crate.runtime_traces,
                 "Runtime trace to merge (runtime/1-4; repeat for several runs or ranks)");
  cmd.add_flag("--lenient", crate.lenient, "Skip bad trace lines and report how many were skipped");
  cmd.add_option("--activation-growth", crate.activation_growth,
                 "Output RMS growth per layer, sustained over 3 layers of a family, that raises "
                 "runtime-activation-growth (runtime/4 stats records; default 2)")
      ->check(CLI::Range(1.0, 1.0e6));
  cmd.add_option("--checkpoint", o.checkpoint,
                 "safetensors file, *.index.json or checkpoint directory to verify");
  cmd.add_option("--prefix", o.prefix,
                 "Prefix a caller pushes before the root constructor (e.g. language_model)");
}

void add_output_options(CLI::App& cmd, OutputOptions& o, bool with_format) {
  cmd.add_option("--output,-o", o.output, "Write the result here (atomically) instead of stdout");
  if (with_format) {
    cmd.add_option("--format", o.format, "Output format")->check(CLI::IsMember({"json", "tree"}));
  }
  cmd.add_option("--message-format", o.message_format, "Diagnostics format on stderr")
      ->check(CLI::IsMember({"human", "json", "sarif"}));
  cmd.add_flag("--strict", o.strict, "Fail (exit 1) on proven error findings");
  cmd.add_option("--deny", o.deny, "Fail (exit 1) if any finding of these rules is present")
      ->delimiter(',');
  cmd.add_option("--update-baseline", o.update_baseline,
                 "Write the model fingerprint (candle-graph/model-baseline/1) to this file");
  cmd.add_option("--check", o.check_baseline,
                 "Compare with a model fingerprint; any change fails (exit 1) with a +/- diff");
}

}  // namespace cg::cli
