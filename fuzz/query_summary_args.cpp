// `summary`'s command-line values on a real model: any `--arg` list and `--input-shape` text must
// give a summary or a clear input error, never a crash, a hang or a message that drives the
// terminal. The input is lines: `arg name=value` and `shape text`; the model is the func_net
// fixture (an `Option<usize>` root argument, a tensor input, symbolic dimensions). Invariants: only
// cg::InputError escapes, and its text holds no control byte but newline and tab.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cg::pipeline::Options opts;
  opts.path = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/func_net";
  opts.root = "net";
  std::string shape;
  std::size_t pos = 0;
  while (pos < text.size() && opts.args.size() < 8) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.starts_with("arg ")) opts.args.emplace_back(line.substr(4));
    if (line.starts_with("shape ")) shape = std::string(line.substr(6));
  }
  try {
    const cg::query::InputDims dims = cg::query::parse_input_shape(shape);
    opts.input_tensors = cg::query::parse_input_tensors(shape);
    const auto a = cg::pipeline::analyze(opts);
    const auto m = cg::query::build_summary(a.ir, "F32", -1, dims);
    // A count is a number or unknown; a lower bound is marked: never a wrapped figure.
    if (m.totals.total && m.totals.overflow) __builtin_trap();
  } catch (const cg::InputError& e) {
    for (const char c : std::string_view(e.what()))
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        __builtin_trap();
  }
  return 0;
}
