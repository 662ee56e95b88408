#pragma once
// What a checkpoint holds, from a single `.safetensors` file, a sharded `*.index.json`, or a
// directory containing either. Shards that are not on disk still contribute their tensor names
// (from the index's weight_map), without shape or dtype: such a checkpoint is verified by name.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/safetensors_header.hpp"

namespace cg::checkpoint {

struct CheckpointTensor {
  std::string name;
  std::string shard;                 // file name holding it
  std::optional<std::string> dtype;  // absent when the shard is absent
  std::optional<std::vector<std::uint64_t>> shape;
};

struct ShardInfo {
  std::string file;
  bool present = false;
  std::size_t tensors = 0;  // by the shard's header when present, by weight_map otherwise
};

struct Checkpoint {
  std::string path;                       // what the user named
  std::string format;                     // "safetensors" | "index"
  std::vector<ShardInfo> shards;          // sorted by file
  std::vector<CheckpointTensor> tensors;  // sorted by name, unique
  std::vector<std::string> notes;         // facts worth telling (tensors outside weight_map, …)

  std::size_t name_only_tensors() const;
  const CheckpointTensor* find(std::string_view name) const;
};

// The largest index file read (those of the largest open models are around 10 MiB): a bigger one is
// refused before it is read, so a hostile index cannot cost gigabytes of memory. Its weight_map
// holds at most HeaderLimits::max_tensors entries.
inline constexpr std::size_t kMaxIndexBytes = std::size_t{64} << 20;

// A file ending in `.json` is an index; a directory is searched for `model.safetensors`, then for
// exactly one `*.index.json` (or `model.safetensors.index.json` among several). Throws
// cg::InputError naming the file and the rule.
Checkpoint load_checkpoint(const std::filesystem::path& path, const HeaderLimits& limits = {});

// The index alone, from its text (shards are looked up beside `index_path`).
Checkpoint load_index(const std::filesystem::path& index_path, std::string_view text,
                      const HeaderLimits& limits = {});

}  // namespace cg::checkpoint
