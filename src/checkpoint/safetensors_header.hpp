#pragma once
// Safetensors header reader: the 8-byte little-endian length, the JSON header, and every rule the
// format states (huggingface/safetensors docs, "Format"), checked strictly. Tensor data is never
// read; a header plus the file size is enough to know names, dtypes, shapes and whether the file is
// well formed.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cg::checkpoint {

// Bounds that keep a hostile header from costing memory or time. Each has a test.
struct HeaderLimits {
  std::uint64_t max_header_bytes =
      100'000'000;  // the format's own cap (safetensors MAX_HEADER_SIZE)
  std::size_t max_tensors = 1'000'000;
  std::size_t max_dims = 64;
  std::size_t max_name_bytes = 4096;
};

struct DtypeInfo {
  std::string_view name;
  std::uint32_t bits;  // F4/F6 are sub-byte: sizes are counted in bits and must end on a byte
};

// The dtype table, or nullopt for a name the format does not define.
std::optional<DtypeInfo> dtype_info(std::string_view name);

struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the start of the data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::string origin;              // file name used in messages
  std::uint64_t header_bytes = 0;  // N, the JSON length
  std::uint64_t file_bytes = 0;
  std::vector<TensorEntry> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;

  const TensorEntry* find(std::string_view name) const;
};

// Parses and validates a header. `bytes` holds at least the first 8 + N bytes of the file (more is
// ignored); `file_size` is the whole file's size. Throws cg::InputError(origin, "<rule>") on any
// violation. This is also the fuzzing entry point: no input makes it crash, hang or over-allocate.
SafetensorsHeader parse_safetensors_header(std::string_view bytes, std::uint64_t file_size,
                                           std::string_view origin,
                                           const HeaderLimits& limits = {});

// Reads only the header bytes of `path` (never the tensor data) and validates them.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path,
                                          const HeaderLimits& limits = {});

// "[4, 4]"
std::string shape_text(const std::vector<std::uint64_t>& shape);

}  // namespace cg::checkpoint
