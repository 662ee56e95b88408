#pragma once
// The flags every command shares, spelled once. Commands add only what is theirs.
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace CLI {
class App;
}

namespace cg::cli {

// The crate, the Cargo selection, --root, --config, and the runtime traces to merge: what the
// pipeline analyzes.
using CrateOptions = pipeline::Options;

// Evidence checked against the analysis after it ran.
struct EvidenceOptions {
  std::string checkpoint;
  std::string prefix;
};

struct OutputOptions {
  std::string output;                    // file (or directory for audit); empty = stdout
  std::string format = "json";           // json | tree
  std::string message_format = "human";  // human | json | sarif
  bool strict = false;
  std::vector<std::string> deny;
  std::string update_baseline;  // write the model fingerprint here
  std::string check_baseline;   // compare with this fingerprint; a change fails (exit 1)
};

void add_crate_options(CLI::App& cmd, CrateOptions& o, bool positional_path = true);
// --runtime-trace and --lenient fill `crate`; --checkpoint and --prefix fill `o`.
void add_evidence_options(CLI::App& cmd, CrateOptions& crate, EvidenceOptions& o);
void add_output_options(CLI::App& cmd, OutputOptions& o, bool with_format);

}  // namespace cg::cli
