#pragma once
#include <string>
#include <vector>

#include "cli/output.hpp"

namespace cg::cli {

// Runs the command line (argv without the program name). Never throws; returns an exit code of
// cli/output.hpp (0 ok, 1 a gate failed, 2 usage or input error, 70 internal error).
int run(const std::vector<std::string>& args);

}  // namespace cg::cli
