#pragma once
// The analysis pipeline as the commands run it: load (Cargo context, sources, symbols) → analyze →
// IR → normalize. Data flows one way; every stage reports what it could not do as findings.
#include <string>
#include <vector>

#include "cli/diagnostics.hpp"
#include "cli/options.hpp"
#include "ir/model.hpp"
#include "runtime/reader.hpp"

namespace cg::cli {

struct Analysis {
  ir::ModelIr ir;
  std::string package_id;     // "tiny-llama 0.1.0", or the directory name without Cargo.toml
  std::string manifest_path;  // crate-relative
  std::size_t files = 0;
  std::size_t files_with_syntax_errors = 0;
  std::size_t items = 0;
  std::vector<runtime::TraceInfo> traces;  // merged runtime traces, in command-line order
};

// Throws cg::InputError for a path that is not a crate, a malformed manifest, bad flags.
// Traces in `evidence` are read (streaming), validated and merged into the IR.
Analysis analyze(const CrateOptions& crate, const EvidenceOptions& evidence = {});

std::vector<Diagnostic> diagnostics_of(const ir::ModelIr& ir);

// The short text `make demo` prints and `audit` writes as summary.txt.
std::string render_summary(const Analysis& a);

}  // namespace cg::cli
