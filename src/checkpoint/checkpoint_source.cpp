#include "checkpoint/checkpoint_source.hpp"

#include <simdjson.h>

#include <algorithm>
#include <map>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

namespace fs = std::filesystem;
namespace dom = simdjson::dom;

Checkpoint from_header(const fs::path& path, const SafetensorsHeader& h) {
  Checkpoint c;
  c.path = path.string();
  c.format = "safetensors";
  c.shards.push_back({path.filename().string(), true, h.tensors.size()});
  for (const auto& t : h.tensors) {
    c.tensors.push_back({t.name, path.filename().string(), t.dtype, t.shape});
  }
  return c;
}

// weight_map values name files beside the index. Anything that climbs out of that directory is
// refused rather than followed: an index is data, not a licence to read arbitrary paths.
void check_shard_name(const std::string& origin, const std::string& key, const std::string& file) {
  const fs::path p(file);
  bool bad = file.empty() || p.is_absolute() || p.has_root_path();
  for (const auto& part : p)
    bad = bad || part == "..";
  if (bad) {
    throw InputError(origin, "weight_map \"" + key + "\": shard \"" + file +
                                 "\" must be a file name beside the index");
  }
}

}  // namespace

std::size_t Checkpoint::name_only_tensors() const {
  return static_cast<std::size_t>(std::count_if(
      tensors.begin(), tensors.end(), [](const CheckpointTensor& t) { return !t.shape; }));
}

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  auto it =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const CheckpointTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Checkpoint load_index(const fs::path& index_path, std::string_view text,
                      const HeaderLimits& limits) {
  const std::string origin = index_path.string();
  dom::parser parser;
  simdjson::padded_string padded(text);
  dom::element root;
  if (auto e = parser.parse(padded).get(root)) {
    throw InputError(origin, std::string("not valid JSON (") + simdjson::error_message(e) + ")");
  }
  dom::object weight_map;
  if (root["weight_map"].get_object().get(weight_map)) {
    throw InputError(origin, "expected an object with a \"weight_map\" object");
  }
  std::map<std::string, std::string> key_to_shard;
  for (auto field : weight_map) {
    std::string_view file;
    const std::string key(field.key);
    if (field.value.get_string().get(file)) {
      throw InputError(origin, "weight_map \"" + key + "\": expected a shard file name");
    }
    check_shard_name(origin, key, std::string(file));
    if (!key_to_shard.emplace(key, std::string(file)).second) {
      throw InputError(origin, "weight_map \"" + key + "\" appears twice");
    }
  }
  std::map<std::string, std::vector<std::string>> shard_keys;
  for (const auto& [k, f] : key_to_shard)
    shard_keys[f].push_back(k);

  Checkpoint c;
  c.path = origin;
  c.format = "index";
  const fs::path dir = index_path.parent_path();
  std::map<std::string, CheckpointTensor> tensors;
  for (const auto& [file, keys] : shard_keys) {
    const fs::path shard = dir / file;
    std::error_code ec;
    if (!fs::is_regular_file(shard, ec)) {
      c.shards.push_back({file, false, keys.size()});
      for (const auto& k : keys)
        tensors[k] = {k, file, std::nullopt, std::nullopt};
      continue;
    }
    const SafetensorsHeader h = read_safetensors_header(shard, limits);
    c.shards.push_back({file, true, h.tensors.size()});
    for (const auto& k : keys) {
      const TensorEntry* t = h.find(k);
      if (!t) {
        throw InputError(origin, "weight_map \"" + k + "\" names shard \"" + file +
                                     "\", whose header has no such tensor");
      }
      tensors[k] = {k, file, t->dtype, t->shape};
    }
    // Candle's VarBuilder over the shard files serves every tensor in them, listed or not.
    std::size_t unlisted = 0;
    for (const auto& t : h.tensors) {
      auto it = key_to_shard.find(t.name);
      if (it == key_to_shard.end()) {
        ++unlisted;
        tensors[t.name] = {t.name, file, t.dtype, t.shape};
      } else if (it->second != file) {
        throw InputError(shard.string(), "tensor \"" + t.name + "\" is also in shard \"" +
                                             it->second + "\" according to the index");
      }
    }
    if (unlisted) {
      c.notes.push_back(file + ": " + std::to_string(unlisted) +
                        " tensors are not listed in weight_map (still loadable)");
    }
  }
  for (auto& [k, t] : tensors)
    c.tensors.push_back(std::move(t));
  return c;
}

Checkpoint load_checkpoint(const fs::path& path, const HeaderLimits& limits) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / "model.safetensors", ec)) {
      return load_checkpoint(path / "model.safetensors", limits);
    }
    std::vector<fs::path> indexes;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 11 && name.ends_with(".index.json")) indexes.push_back(e.path());
    }
    std::sort(indexes.begin(), indexes.end());
    if (indexes.empty()) {
      throw InputError(path.string(), "no model.safetensors and no *.index.json in this directory");
    }
    if (indexes.size() > 1) {
      const fs::path preferred = path / "model.safetensors.index.json";
      if (std::find(indexes.begin(), indexes.end(), preferred) != indexes.end()) {
        return load_checkpoint(preferred, limits);
      }
      std::string names;
      for (const auto& p : indexes)
        names += (names.empty() ? "" : ", ") + p.filename().string();
      throw InputError(path.string(), "several index files (" + names + "); name one");
    }
    return load_checkpoint(indexes.front(), limits);
  }
  if (path.extension() == ".json") {
    return load_index(path, read_file(path, 256u << 20), limits);
  }
  return from_header(path, read_safetensors_header(path, limits));
}

}  // namespace cg::checkpoint
