#pragma once
// `candle-graph memory` (issue #38): what a model needs in memory, read from its code. Weights at
// the dtype (shared weights once), the state a forward keeps across calls (KV caches and
// recurrent states: ir::StateStore, found in the dataflow) at a context length and batch, an
// the peak of one forward's live activations, the AdamW training footprint, and whether it fits a
// device. Each figure is exact, a lower bound, an upper bound, or unknown, and says which.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/gguf_header.hpp"
#include "pipeline/pipeline.hpp"
#include "query/memory_quant.hpp"
#include "query/summary_instances.hpp"

namespace cg::query {

struct MemoryOptions {
  std::string dtype;                     // "" → config.json's torch_dtype → F32
  std::optional<std::uint64_t> context;  // positions (default: config max_position_embeddings)
  std::uint64_t batch = 1;
  std::optional<std::uint64_t> device_bytes;  // --device-memory
  InputDims dims;                             // --input-shape, for other dimensions
  bool master_fp32 = false;                   // training: an fp32 master copy of 16-bit weights
  // Quantized weights (docs/memory.md): a GGUF file's tensors (--gguf), or the parameters at one
  // GGML type (--quant); and whether the root loads through candle-transformers' quantized
  // VarBuilder (then, without either, its weights are not known).
  std::optional<checkpoint::GgufHeader> gguf;
  std::optional<checkpoint::GgmlType> quant;
  bool quantized_builder = false;
  Dequantized dequantized;  // parameters the code dequantizes where it loads them (F32 after)
};

// How far a figure can be trusted.
enum class Bound { exact, lower, upper, unknown };
const char* to_string(Bound b);

struct MemoryFigure {
  std::optional<std::uint64_t> bytes;  // nullopt: not known (or over 2^64)
  Bound bound = Bound::unknown;
  std::string note;  // why it is a bound, or what is left out
};

// One state store of the main forward (one source line, every instance of its module).
struct MemoryState {
  std::string instance;  // `model.layers.{i}.self_attn`
  std::string place;     // `self.kv_cache`
  std::string source;    // file:line
  std::string library;   // candle-nn cache type, or ""
  std::optional<std::uint64_t> instances;
  std::vector<std::string>
      shapes;          // each stored tensor at the context and batch ("[1, 8, 4096, 128]")
  bool grows = false;  // depends on the context (a KV cache) rather than constant
  // Its bytes are proportional to the context (false for a candle-nn `KvCache` allocating in
  // steps, or a `RotatingKvCache`'s window): only then is a largest context computed.
  bool linear = true;
  // The array slots it fills over calls (`state.prev_xs[li][pos % D_CONV]`: 4): held at once.
  std::uint64_t slots = 1;
  MemoryFigure per_instance, total;
};

// A tensor the constructor computes and keeps in a field (ir::Buffer): a rotary table, a mask.
struct MemoryBuffer {
  std::string instance;  // the VarBuilder prefix of the constructor that made it ("" the root's)
  std::string owner;     // `models::mistral::RotaryEmbedding.sin`
  std::string source;    // file:line of the field's initializer
  std::string reached;   // "constructor" or "forward argument `cache`"
  std::optional<std::uint64_t> instances;
  std::string shape;  // "[32768, 64]"
  std::string dtype;  // the dtype counted ("BF16"), "?" when not known
  MemoryFigure per_instance, total;
};

struct MemoryReport {
  std::string model;  // the root's Rust path
  std::string dtype;
  std::uint64_t batch = 1, context = 0;
  std::string context_source;            // "--context" or "max_position_embeddings"
  std::string batch_name, context_name;  // the root forward's dimension names they bind
  std::optional<std::uint64_t> parameters;
  // Quantized weights: "--gguf FILE" or "--quant TYPE" ("" for weights at `dtype`), each GGML
  // type's share, and (--gguf) the file checked against the model's parameters.
  std::string weights_format;
  std::optional<QuantWeights> quant;
  bool file_only = false;  // memory_from_gguf: no model analysed, the file alone
  MemoryFigure weights, kv_cache, state, activations, inference, training;
  // Tensors the constructor computes and keeps (rotary tables, masks): allocated for the model's
  // life, whatever the context.
  MemoryFigure buffers;
  std::vector<MemoryBuffer> buffer_rows;
  // Where the activations peak ("model.layers.{i}.self_attn softmax_last_dim (src/model.rs:98)"),
  // every allocation of the forward, and what autograd keeps of them for backward (bytes).
  std::string activations_at;
  std::uint64_t activations_sum = 0, activations_kept = 0;
  bool activations_kept_exact = false;
  std::vector<MemoryState> states;
  // --device-memory: does it fit, and the largest context (at the batch) and batch (at the
  // context) that can; each an upper bound when activations are not known.
  std::optional<std::uint64_t> device_bytes;
  std::string fits;  // "yes", "no", "unknown"
  std::optional<std::uint64_t> max_context, max_batch;
  std::vector<std::string> notes;
};

// Parses `24GiB`, `80GB`, `16000MiB`, `1.5T`, or a number of bytes; throws cg::InputError naming
// `--device-memory` and the forms it takes.
std::uint64_t parse_memory_size(const std::string& text);

// `--quant q4_k`: the GGML type; throws cg::InputError naming `--quant` and the types.
checkpoint::GgmlType parse_quant_type(const std::string& text);

// `memory --gguf FILE` for a root the analysis cannot build (one made from `gguf_file::Content`,
// as `quantized_llama::ModelWeights::from_gguf`): the file's weights, exact; the state and
// activations unknown, said in `why`.
MemoryReport memory_from_gguf(const std::string& root, const MemoryOptions& opts,
                              const std::string& why);

MemoryReport build_memory(const pipeline::Analysis& a, const std::string& config_path,
                          const MemoryOptions& opts);
std::string render_memory_text(const MemoryReport& r);
std::string render_memory_json(const MemoryReport& r);

}  // namespace cg::query
