#pragma once
// Quantized weights for `candle-graph memory` (issue #38): a GGUF file's tensors at their GGML
// block formats' exact bytes (`--gguf FILE`), or a model's parameters at one GGML type
// (`--quant TYPE`: rank >= 2 at the type, rank-1 tensors at F32, as llama.cpp's quantize keeps
// norms and biases). See docs/memory.md.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/gguf_header.hpp"
#include "ir/model.hpp"
#include "pipeline/pipeline.hpp"

namespace cg::query {

// One GGML type's share of the weights.
struct QuantTypeBytes {
  std::string type;  // "Q4_K"
  std::uint64_t tensors = 0, elements = 0, bytes = 0;
  bool dequantized = false;  // held at F32 after load (the code dequantizes what it loads)
};

struct QuantWeights {
  std::string source;  // "--gguf model.gguf" or "--quant Q4_0"
  std::optional<std::uint64_t> bytes;
  bool exact = true;  // false: `bytes` is a lower bound (see note)
  std::string note;
  std::optional<std::uint64_t> elements;
  std::optional<std::uint64_t>
      file_bytes;                       // --gguf: the file's tensor bytes, before any dequantize
  std::vector<QuantTypeBytes> by_type;  // largest first
  // --gguf against the model's parameters (quantized VarBuilder keys are the GGUF names): the
  // tensors the model asks for that the file lacks, the file's tensors the model does not ask
  // for, and element counts that differ. Each list holds its first few names; the counts all.
  bool checked = false;
  std::size_t matched = 0, missing_count = 0, unclaimed_count = 0, mismatch_count = 0;
  std::vector<std::string> missing, unclaimed, mismatches;
};

// Whether the model's parameters are loaded through candle-transformers' quantized VarBuilder
// (its `vb.get` returns a QTensor in the GGUF file's type): the root constructor's builder
// parameter's type resolves to `quantized_var_builder::VarBuilder`, read from `root_source_text`
// (the text of the file that declares the root's constructor) and the IR's function signature.
bool uses_quantized_builder(const ir::ModelIr& ir, const std::string& root_source_text);

// Parameters the code dequantizes where it loads them (candle-transformers' quantized
// `Embedding`, `RmsNorm`, biases: `vb.get(..)?.dequantize(..)`): held at F32 after load, whatever
// the file's type. By parameter id (`always`).
// candle's QMatMul (`QMatMul::from_arc`) also turns an F16, BF16 or F32 tensor into an F32 one:
// the parameters a module of type QMatMul holds (`floats`) are at F32 when stored at a float type.
struct Dequantized {
  std::set<std::string> always, floats;  // parameter ids
  bool held_at_f32(const std::string& id, const checkpoint::GgmlType& stored) const {
    return always.count(id) > 0 ||
           (floats.count(id) > 0 && (stored.id == 1 || stored.id == 30));  // F16, BF16
  }
};

// The file's tensors, exactly; checked against `ir`'s parameters when given. A tensor a
// `dequantized` parameter loads is counted at F32 (elements x 4), its own row; `file_bytes` keeps
// the file's sum.
QuantWeights weights_from_gguf(const checkpoint::GgufHeader& h, const ir::ModelIr* ir,
                               const Dequantized& dequantized = {});

// `--quant TYPE`: where each parameter goes. Rank >= 2 at TYPE (one of unknown rank too: its
// count is unknown anyway); rank 1 at F32; a matrix whose row is not a whole number of TYPE's
// blocks is refused (candle's QTensor will not quantize it).
// A matrix the code dequantizes at load is held at F32 (`dequantized`).
enum class QuantPart { quantized, refused, f32, dequantized };
QuantPart quant_part(const ir::Parameter& p, const checkpoint::GgmlType& type,
                     const Dequantized& dequantized = {});
// The IR with only the parameters of one part: summary counts each part with its own rules
// (shared weights once, families multiplied).
ir::ModelIr with_parameters(const ir::ModelIr& ir, const checkpoint::GgmlType& type, QuantPart part,
                            const Dequantized& dequantized = {});

// The parts' element counts (summary's) and what they leave out.
struct QuantCounts {
  std::optional<std::uint64_t> quantized, f32, dequantized = 0;
  std::vector<std::string> refused;  // "key [rows, cols]" of each refused parameter
  bool lower = false;                // a count is a lower bound (lower_note says why)
  std::string lower_note;
};
QuantWeights weights_at_quant(const checkpoint::GgmlType& type, const QuantCounts& counts);

// What the code says, read from the crate's files (`crate_path`: the crate directory or its
// Cargo.toml; sources as the IR gives them, "src/models/x.rs:12").
// The text of one file, at most 4 MiB; "" when it cannot be read.
std::string crate_file_text(const std::string& crate_path, const std::string& source);
// Whether the analysed root loads through candle-transformers' quantized VarBuilder.
bool quantized_root(const pipeline::Analysis& a, const std::string& crate_path);
// Parameters whose acquisition line dequantizes what it loads (`vb.get((d1, d2),
// "weight")?.dequantize(vb.device())?` in candle-transformers' quantized Embedding, RmsNorm and
// biases): the QTensor is dropped and an F32 tensor kept (`always`); and those a QMatMul holds
// (`floats`).
Dequantized dequantized_parameters(const pipeline::Analysis& a, const std::string& crate_path);

}  // namespace cg::query
