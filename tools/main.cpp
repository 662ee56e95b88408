// candle-graph and cargo-candle-graph: the same program. Cargo runs a subcommand binary as
// `cargo-candle-graph candle-graph <args>`, so that build drops the repeated name (a defect of the
// reference, which failed on it).
#include <csignal>
#include <string>
#include <vector>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  // A reader that goes away (`candle-graph check . | head -c10`) makes the next write fail with
  // EPIPE, which check_stdout reports as exit 2 as documented, instead of killing the process
  // with SIGPIPE (exit 141).
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
#ifdef CG_CARGO_SUBCOMMAND
  if (!args.empty() && args.front() == "candle-graph") args.erase(args.begin());
#endif
  return cg::cli::run(args);
}
