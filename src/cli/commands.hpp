#pragma once
// The commands of `candle-graph`, as a table: each has its flags (spelled once in cli/options)
// and one short function that runs it. app.cpp builds the command line from this table.
#include <cstddef>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "compare/compare.hpp"
#include "query/request.hpp"

namespace CLI {
class App;
}

namespace cg::cli {

// `compare`'s flags (docs/compare.md).
struct CompareArgs {
  std::vector<std::string> base, candidate;
  compare::Options options;
  std::string format = "text";  // text | json | markdown
  std::size_t limit = 50;
  double fail_on_regression = -1;  // < 0: not set
};

// Everything any command's flags can set.
struct Args {
  CrateOptions crate;
  EvidenceOptions evidence;
  OutputOptions out;
  std::string audit_dir;
  std::string summary_dtype;
  int summary_depth = -1;
  bool summary_weights = false;      // summary --weights
  bool summary_all_columns = false;  // summary --all-columns
  std::size_t summary_width = 120;   // summary --width
  bool summary_stats = false;        // summary --stats
  std::string input_shape;           // summary --input-shape b=1,t=2048
  query::QueryRequest query;
  std::string chrome_out;
  std::string profile_sort = "self";    // profile: self | total
  std::string profile_format = "json";  // profile: json | table
  std::string profile_dep;              // instrument --profile-dep
  bool stats = false;                   // instrument --stats
  std::size_t profile_limit = 50;
  std::string memory_context, memory_batch = "1", memory_device;  // memory: validated by run
  bool memory_master_fp32 = false;        // memory: training keeps an fp32 copy of 16-bit weights
  std::string memory_gguf, memory_quant;  // memory: --gguf FILE, --quant TYPE
  CompareArgs compare;
};

struct Command {
  std::string name;
  std::string description;
  std::string example;  // the footer of `COMMAND --help`
  void (*add_options)(CLI::App& cmd, Args& args);
  int (*run)(Args& args);  // returns an exit code; throws cg::InputError for input errors
};

// In the order `--help` lists them.
const std::vector<Command>& commands();

inline constexpr const char* kVersion = "0.1.0";

}  // namespace cg::cli
