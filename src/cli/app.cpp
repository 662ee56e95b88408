#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "cli/commands.hpp"
#include "rust/grammar.hpp"
#include "util/error.hpp"

namespace cg::cli {

namespace {

constexpr const char* kFooter =
    "Exit codes: 0 ok, 1 a --strict/--deny gate failed, 2 usage or input error, 70 internal "
    "error (a bug: please report it).\n"
    "Example: candle-graph audit out/ examples/tiny-llama --config "
    "examples/tiny-llama/config.json";

// Runs the parsed command; every error becomes a message on stderr and its exit code.
int run_command(const Command& command, Args& args) {
  try {
    int code = command.run(args);
    check_stdout();
    return code;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace

int run(const std::vector<std::string>& argv) {
  if (auto problem = rust::grammar_abi_problem(rust::linked_grammar_abi())) {
    std::cerr << "error: " << *problem << "\n";
    return kExitUsage;
  }
  CLI::App app{"candle-graph: static analysis and profiling for Candle model crates",
               "candle-graph"};
  app.set_version_flag("--version", std::string("candle-graph ") + kVersion);
  app.require_subcommand(0, 1);
  app.footer(kFooter);
  Args args;
  std::vector<std::pair<CLI::App*, const Command*>> parsed;
  for (const Command& c : commands()) {
    CLI::App* cmd = app.add_subcommand(c.name, c.description);
    c.add_options(*cmd, args);
    cmd->footer("Example: " + c.example);
    parsed.emplace_back(cmd, &c);
  }
  try {
    std::vector<std::string> rev(argv.rbegin(), argv.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  for (const auto& [cmd, command] : parsed)
    if (cmd->parsed()) return run_command(*command, args);
  std::cout << app.help();
  return kExitOk;
}

}  // namespace cg::cli
