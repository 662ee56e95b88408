// candle-graph and cargo-candle-graph: the same program. Cargo runs a subcommand binary as
// `cargo-candle-graph candle-graph <args>`, so that build drops the repeated name (a defect of the
// reference, which failed on it).
#include <string>
#include <vector>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
#ifdef CG_CARGO_SUBCOMMAND
  if (!args.empty() && args.front() == "candle-graph") args.erase(args.begin());
#endif
  return cg::cli::run(args);
}
