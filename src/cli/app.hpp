#pragma once
#include <string>
#include <vector>

namespace cg::cli {

// Exit codes (documented in --help and README): 0 ok, 1 a gate failed, 2 usage or input error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitGate = 1;
inline constexpr int kExitUsage = 2;

// Runs the command line (argv without the program name). Never throws.
int run(const std::vector<std::string>& args);

}  // namespace cg::cli
