#pragma once
// GGUF header reader (llama.cpp's and candle's quantized model files), written from the format's
// public description: the magic "GGUF", a version (1, 2 or 3), the tensor and metadata counts, the
// metadata key/value pairs, then one tensor info per tensor (name, dimensions, GGML type, offset
// into the aligned data section). Little endian only. Tensor data is never read: the header and
// the file size are enough to know every tensor's type, shape and exact bytes, and whether the
// file is well formed.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cg::checkpoint {

// A GGML tensor type: elements per block and bytes per block (F32: 1 and 4; Q4_0: 32 and 18).
struct GgmlType {
  std::uint32_t id = 0;
  std::string_view name;  // "Q4_K", as llama.cpp names it
  std::uint32_t block_elements = 1;
  std::uint32_t block_bytes = 4;
};

// Every type candle reads (candle-core quantized GgmlDType): F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q8_1, Q2_K .. Q8_K. nullopt for another id.
std::optional<GgmlType> ggml_type(std::uint32_t id);
// By name, case-insensitive, with or without the underscore before K ("q4_k", "Q4K", "q8_0").
std::optional<GgmlType> ggml_type_named(std::string_view name);
// "F32, F16, BF16, Q4_0, ..." for messages.
std::string ggml_type_names();
// Bytes of `elements` at `t` when the row length is a multiple of the block; nullopt when it is
// not (candle's QTensor refuses such a tensor) or on overflow.
std::optional<std::uint64_t> ggml_bytes(const GgmlType& t, std::uint64_t row_length,
                                        std::uint64_t elements);

// Bounds that keep a hostile header from costing memory or time. Counts and lengths are also held
// to what the rest of the file can hold.
struct GgufLimits {
  std::uint64_t max_tensors = 1'000'000;
  std::uint64_t max_metadata = 1'000'000;
  std::uint64_t max_string_bytes = std::uint64_t{1} << 30;  // a skipped string (chat templates)
  std::uint64_t max_name_bytes = 4096;                      // a tensor name or metadata key
  std::uint32_t max_dims = 4;                               // GGML_MAX_DIMS
  int max_array_nesting = 8;
};

struct GgufTensor {
  std::string name;
  // Outermost first, as candle's Shape and the model code write it ((out, in) for a linear): the
  // file stores them innermost first; the last here is the row length blocks are made of.
  std::vector<std::uint64_t> shape;
  GgmlType type;
  std::uint64_t offset = 0;  // into the data section
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
};

struct GgufHeader {
  std::string origin;  // file name used in messages
  std::uint32_t version = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // where the (aligned) tensor data begins
  // Scalar metadata as text (integers in decimal, booleans "true"/"false", strings of at most 256
  // bytes); arrays and longer strings are skipped. `general.architecture`,
  // `<arch>.context_length`, `<arch>.block_count`, `<arch>.attention.head_count` among them.
  std::map<std::string, std::string> metadata;
  std::vector<GgufTensor> tensors;  // in file order

  std::string architecture() const;
  std::optional<std::uint64_t> metadata_integer(const std::string& key) const;
  std::uint64_t tensor_bytes() const;  // the sum of every tensor's bytes
  const GgufTensor* find(std::string_view name) const;
};

// Parses and validates a header from `bytes` (the file's first bytes; the whole file in tests and
// fuzzing); `file_size` is the whole file's size. Throws cg::InputError(origin, "offset N: ...")
// on any violation. The fuzzing entry point: no input makes it crash, hang or over-allocate.
GgufHeader parse_gguf_header(std::string_view bytes, std::uint64_t file_size,
                             std::string_view origin, const GgufLimits& limits = {});

// Streams the header of `path` (never the tensor data) and validates it.
GgufHeader read_gguf_header(const std::filesystem::path& path, const GgufLimits& limits = {});

}  // namespace cg::checkpoint
