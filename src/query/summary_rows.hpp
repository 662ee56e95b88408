#pragma once
// The torchinfo-style table's content from the IR: each component's module tree (modules nest by
// `parent`; candle-nn layers are modules too), the parameter leaves under each layer, subtree
// parameter counts, and totals. A count over a symbolic shape is unknown, never zero.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/model.hpp"
#include "pipeline/pipeline.hpp"
#include "query/summary_table.hpp"

namespace cg::query {

using pipeline::Analysis;

struct SummaryModel {
  std::vector<SummaryRow> rows;
  SummaryTotals totals;
};

// Bytes per element of a safetensors/Candle dtype name ("F32", "BF16", …); 0 if unknown.
std::uint64_t dtype_bytes(const std::string& dtype);
// "bfloat16" / "float32" / "float16" (config.json torch_dtype) -> "BF16" / "F32" / "F16".
std::string dtype_from_torch(const std::string& torch_dtype);

// Sizes of the input's symbolic dimensions (`--input-shape b=1,t=2048`): Mult-Adds written in
// them (`b*t*65536`) become numbers.
using InputDims = std::map<std::string, std::uint64_t>;
// Parses `b=1,t=2048`; throws cg::InputError naming `--input-shape` and what was expected.
InputDims parse_input_shape(const std::string& text);
// The `name=AxBxC` entries of the same flag: a tensor input's whole shape by parameter name, for
// the analysis (pipeline::Options::input_tensors).
std::map<std::string, std::vector<std::string>> parse_input_tensors(const std::string& text);

struct SummaryOptions {
  std::string dtype;   // "" → config.json's torch_dtype → F32
  int max_depth = -1;  // < 0 shows every level; otherwise deeper rows fold into their ancestor
  InputDims input_dims{};
  // What `summary` shows by default: no weight rows, no column unknown on every row, 120 columns.
  bool weights = false;      // a row per parameter under its layer (`--weights`)
  bool all_columns = false;  // Mult-Adds and Trainable even where unknown on every row
  std::size_t width = 120;   // wrap to fit; 0: no limit
  std::string weights_flag = "--weights";  // how the reader asks for what is hidden
  std::string columns_flag = "--all-columns";
  std::string config_hint = "pass --config config.json";  // how to bind shapes left symbolic
  bool stats = false;  // Abs max, RMS and Non-finite columns from runtime stats (`--stats`)
  // The root loads through candle-transformers' quantized VarBuilder: its weights take the GGUF
  // file's types, not a float dtype's bytes (no --dtype given: no Params size at one).
  bool quantized = false;
};

SummaryModel build_summary(const ir::ModelIr& ir, const std::string& dtype, int max_depth = -1,
                           const InputDims& dims = {});

// The dtype the figures are stated at: `requested`, else config.json's `torch_dtype`, else F32.
std::string summary_dtype(const std::string& requested, const std::string& config_path);

// A module row's figures (`query module`): the summary's row for that module, or nullptr when the
// summary shows no row for it (a module folded into its wrapper's row).
const SummaryRow* row_of(const SummaryModel& m, const std::string& module_id);

// The `summary` command's text. The size is stated at `dtype` when given, else at config.json's
// `torch_dtype` (what the checkpoint is stored in), else at F32 (a VarMap's default).
std::string render_model_summary(const Analysis& a, const std::string& config_path,
                                 const SummaryOptions& opts = {});

}  // namespace cg::query
