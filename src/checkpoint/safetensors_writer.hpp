#pragma once
// Safetensors writer for fixtures: tests and the demo generate their checkpoints instead of
// committing binaries. Data bytes are zeros; a `sparse` file seeks over them so a fixture claiming
// gigabytes of tensors costs almost no disk.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cg::checkpoint {

struct TensorSpec {
  std::string name;
  std::string dtype;  // one of the dtype_info() names
  std::vector<std::uint64_t> shape;
};

// The header bytes (8-byte length + JSON padded with spaces to 8 bytes); tensors are laid out in
// the given order. Throws std::invalid_argument for an unknown dtype or a sub-byte size.
std::string safetensors_header_bytes(const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata = {});

// Total data bytes the tensors occupy.
std::uint64_t safetensors_data_bytes(const std::vector<TensorSpec>& tensors);

// Writes a complete file: header then zero data (sparse: a hole of the right size).
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                       const std::map<std::string, std::string>& metadata = {}, bool sparse = true);

}  // namespace cg::checkpoint
