#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "rust/grammar.hpp"
#include "util/error.hpp"
#include "util/read_ledger.hpp"
#include "util/text.hpp"

namespace cg::cli {

namespace {

constexpr const char* kFooter =
    "Exit codes: 0 ok, 1 a gate failed (check's proven error, --strict/--deny, compare "
    "--fail-on-regression), 2 usage or input error, 70 internal "
    "error (a bug: please report it).\n"
    "Example: candle-graph audit out/ examples/tiny-llama --config "
    "examples/tiny-llama/config.json";

// Runs the parsed command; every error becomes a message on stderr and its exit code.
int run_command(const Command& command, Args& args) {
  ReadLedgerScope inputs;  // no output of the command may overwrite a file it read
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

// Help and version text goes to stdout too: a failed write (`--help > /dev/full`) is exit 2.
int after_printing(int code) {
  try {
    check_stdout();
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  return code;
}

// A first word that is no command: the closest command when it is a likely typo (`sumary`,
// `veiw`), as cargo and git suggest, else the list of commands.
std::string unknown_command_message(const std::string& word) {
  std::string best, names;
  std::size_t best_d = 3;  // at most two edits away
  for (const Command& c : commands()) {
    names += (names.empty() ? "" : ", ") + c.name;
    const std::size_t d = edit_distance(word, c.name);
    if (d < best_d) best_d = d, best = c.name;
  }
  return "unknown command `" + shown_text(word) + "`" +
         (best.empty() ? "" : "; did you mean `" + best + "`?") + " (commands: " + names +
         "; --help describes them)";
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
  if (!argv.empty() && !argv.front().empty() && argv.front()[0] != '-' &&
      std::none_of(commands().begin(), commands().end(),
                   [&](const Command& c) { return c.name == argv.front(); })) {
    std::cerr << "error: " << unknown_command_message(argv.front()) << "\n";
    return kExitUsage;
  }
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
  } catch (const CLI::ExtrasError& e) {
    // `query parameters self_attn CRATE`: every other command takes the crate as its last word,
    // query and mcp take it as --path. Say so rather than "was not expected".
    const bool takes_path = argv.front() == "query" || argv.front() == "mcp";
    std::error_code ec;
    if (takes_path && !argv.back().empty() && argv.back()[0] != '-' &&
        std::filesystem::exists(std::filesystem::path(argv.back()) / "Cargo.toml", ec)) {
      std::cerr << "error: `" << shown_text(argv.back(), 200)
                << "` looks like a crate: " << argv.front() << " takes it as --path "
                << shown_text(argv.back(), 200) << "\n";
      return kExitUsage;
    }
    return after_printing(app.exit(e) == 0 ? kExitOk : kExitUsage);
  } catch (const CLI::ParseError& e) {
    return after_printing(app.exit(e) == 0 ? kExitOk : kExitUsage);
  }
  for (const auto& [cmd, command] : parsed)
    if (cmd->parsed()) return run_command(*command, args);
  std::cout << app.help();
  return after_printing(kExitOk);
}

}  // namespace cg::cli
