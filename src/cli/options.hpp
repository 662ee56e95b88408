#pragma once
// The flags every command shares, spelled once. Commands add only what is theirs.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace cg::cli {

struct CrateOptions {
  std::string path = ".";  // crate directory or a Cargo.toml
  std::vector<std::string> features;
  bool all_features = false;
  bool no_default_features = false;
  std::string target;        // target triple for cfg
  std::string cargo_target;  // lib / bin / example / test target name
  std::string root;          // component root type
  std::string config;        // config.json to bind
};

struct EvidenceOptions {
  std::vector<std::string> runtime_traces;
  bool lenient = false;
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
void add_evidence_options(CLI::App& cmd, EvidenceOptions& o);
void add_output_options(CLI::App& cmd, OutputOptions& o, bool with_format);

}  // namespace cg::cli
