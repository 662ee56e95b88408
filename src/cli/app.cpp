#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "rust/grammar.hpp"
#include "util/error.hpp"

namespace cg::cli {

namespace {
constexpr const char* kVersion = "candle-graph 0.1.0";
}

int run(const std::vector<std::string>& args) {
  if (auto problem = rust::grammar_abi_problem(rust::linked_grammar_abi())) {
    std::cerr << "error: " << *problem << "\n";
    return kExitUsage;
  }
  CLI::App app{"candle-graph: static analysis and profiling for Candle model crates",
               "candle-graph"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(0, 1);
  app.footer("Exit codes: 0 ok, 1 a --strict/--deny gate failed, 2 usage or input error.");
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return kExitOk;
    }
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace cg::cli
