#include "checkpoint/checkpoint_source.hpp"

#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_map>

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

// weight_map values name files beside the index (docs/checkpoint.md): a plain file name. Anything
// with a directory part — `..`, an absolute path, `sub/x.safetensors`, `.` — is refused rather
// than followed: an index is data, not a licence to read arbitrary paths.
void check_shard_name(const std::string& origin, const std::string& key, const std::string& file) {
  const bool bad = file.empty() || file == "." || file == ".." ||
                   file.find('/') != std::string::npos || file.find('\0') != std::string::npos;
  if (bad) {
    throw InputError(origin, "weight_map \"" + key + "\": shard \"" + file +
                                 "\" must be a file name beside the index (no directory part)");
  }
}

enum class ShardState : std::uint8_t { absent, present };

// What is on disk under a shard's name, without opening it (a FIFO would block): absent (the
// name-only case), a regular file (or a symlink to one, as the Hugging Face cache makes), or an
// error naming the index and the shard for anything else — a directory, a FIFO, a device, a
// dangling or looping symlink. Such a checkpoint will not load, so it is never "absent".
ShardState shard_state(const std::string& origin, const std::string& file, const fs::path& shard,
                       const char* role = "shard") {
  struct stat st {};
  if (::lstat(shard.c_str(), &st) != 0) {
    if (errno == ENOENT) return ShardState::absent;
    throw InputError(origin, std::string(role) + " \"" + file + "\" (" + shard.string() +
                                 ") cannot be examined: " + std::strerror(errno));
  }
  const bool link = S_ISLNK(st.st_mode);
  if (link && ::stat(shard.c_str(), &st) != 0) {
    const int err = errno;
    const std::string what =
        err == ELOOP ? "is a symlink loop"
        : err == ENOENT
            ? "is a dangling symlink (its target does not exist)"
            : std::string("is a symlink that cannot be followed (") + std::strerror(err) + ")";
    throw InputError(origin, std::string(role) + " \"" + file + "\" (" + shard.string() + ") " +
                                 what + "; expected a safetensors file");
  }
  if (S_ISREG(st.st_mode)) return ShardState::present;
  const char* kind = S_ISDIR(st.st_mode)                          ? "a directory"
                     : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                     : S_ISSOCK(st.st_mode)                       ? "a socket"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "not a regular file";
  throw InputError(origin, std::string(role) + " \"" + file + "\" (" + shard.string() + ") is " +
                               (link ? std::string("a symlink to ") : std::string()) + kind +
                               ", expected a safetensors file");
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

namespace {

// The index from its JSON text, already padded for simdjson. Memory: the text, simdjson's DOM
// and one (key, shard number) pair of views into the DOM per entry, then the result itself — a
// 62 MB index of 850,000 entries took 940 MB through string maps and now takes about 0.4 GB.
Checkpoint load_index_padded(const fs::path& index_path, const simdjson::padded_string_view text,
                             const HeaderLimits& limits) {
  const std::string origin = index_path.string();
  dom::parser parser;
  dom::element root;
  if (auto e = parser.parse(text).get(root)) {
    throw InputError(origin, std::string("not valid JSON (") + simdjson::error_message(e) + ")");
  }
  dom::object weight_map;
  if (root["weight_map"].get_object().get(weight_map)) {
    throw InputError(origin, "expected an object with a \"weight_map\" object");
  }
  if (weight_map.size() > limits.max_tensors) {
    throw InputError(origin, "weight_map has " + std::to_string(weight_map.size()) +
                                 " entries, more than the limit of " +
                                 std::to_string(limits.max_tensors) + " tensors");
  }
  // Views into the DOM, which lives to the end of this function.
  struct Entry {
    std::string_view key;
    std::uint32_t shard;
  };
  std::vector<Entry> entries;
  entries.reserve(weight_map.size());
  std::vector<std::string_view> shard_names;
  std::unordered_map<std::string_view, std::uint32_t> shard_number;
  for (auto field : weight_map) {
    std::string_view file;
    if (field.value.get_string().get(file)) {
      throw InputError(origin,
                       "weight_map \"" + std::string(field.key) + "\": expected a shard file name");
    }
    auto [it, fresh] = shard_number.emplace(file, static_cast<std::uint32_t>(shard_names.size()));
    if (fresh) {
      check_shard_name(origin, std::string(field.key), std::string(file));
      shard_names.push_back(file);
    }
    entries.push_back({field.key, it->second});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].key == entries[i - 1].key) {
      throw InputError(origin, "weight_map \"" + std::string(entries[i].key) + "\" appears twice");
    }
  }
  auto listed_shard = [&](std::string_view key) -> const std::string_view* {
    auto it = std::lower_bound(entries.begin(), entries.end(), key,
                               [](const Entry& e, std::string_view k) { return e.key < k; });
    return it != entries.end() && it->key == key ? &shard_names[it->shard] : nullptr;
  };
  // Shards in name order, each with its keys in key order (a stable sort keeps the key order).
  std::vector<std::uint32_t> shard_order(shard_names.size());
  for (std::uint32_t i = 0; i < shard_order.size(); ++i)
    shard_order[i] = i;
  std::sort(shard_order.begin(), shard_order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return shard_names[a] < shard_names[b]; });
  std::vector<std::uint32_t> rank(shard_names.size());
  for (std::uint32_t r = 0; r < shard_order.size(); ++r)
    rank[shard_order[r]] = r;
  std::vector<Entry> by_shard(entries);
  std::stable_sort(by_shard.begin(), by_shard.end(),
                   [&](const Entry& a, const Entry& b) { return rank[a.shard] < rank[b.shard]; });

  Checkpoint c;
  c.path = origin;
  c.format = "index";
  c.tensors.reserve(entries.size());
  const fs::path dir = index_path.parent_path();
  for (std::size_t begin = 0; begin < by_shard.size();) {
    std::size_t end = begin;
    while (end < by_shard.size() && by_shard[end].shard == by_shard[begin].shard)
      ++end;
    const std::string file(shard_names[by_shard[begin].shard]);
    const fs::path shard = dir / file;
    const std::size_t keys = end - begin;
    if (shard_state(origin, file, shard) == ShardState::absent) {
      c.shards.push_back({file, false, keys});
      for (std::size_t i = begin; i < end; ++i)
        c.tensors.push_back({std::string(by_shard[i].key), file, std::nullopt, std::nullopt});
      begin = end;
      continue;
    }
    const SafetensorsHeader h = read_safetensors_header(shard, limits);
    c.shards.push_back({file, true, h.tensors.size()});
    for (std::size_t i = begin; i < end; ++i) {
      const std::string_view k = by_shard[i].key;
      const TensorEntry* t = h.find(k);
      if (!t) {
        throw InputError(origin, "weight_map \"" + std::string(k) + "\" names shard \"" + file +
                                     "\", whose header has no such tensor");
      }
      c.tensors.push_back({t->name, file, t->dtype, t->shape});
    }
    // Candle's VarBuilder over the shard files serves every tensor in them, listed or not.
    std::size_t unlisted = 0;
    for (const auto& t : h.tensors) {
      const std::string_view* listed = listed_shard(t.name);
      if (!listed) {
        ++unlisted;
        c.tensors.push_back({t.name, file, t.dtype, t.shape});
      } else if (*listed != file) {
        throw InputError(shard.string(), "tensor \"" + t.name + "\" is also in shard \"" +
                                             std::string(*listed) + "\" according to the index");
      }
    }
    if (unlisted) {
      c.notes.push_back(file + ": " + std::to_string(unlisted) +
                        " tensors are not listed in weight_map (still loadable)");
    }
    begin = end;
  }
  // Names are unique: listed keys once each, and an unlisted tensor is in no other shard's list.
  // An unlisted name in two shards' headers is kept once, from the later shard by name (as the
  // map this replaced did).
  std::stable_sort(
      c.tensors.begin(), c.tensors.end(),
      [](const CheckpointTensor& a, const CheckpointTensor& b) { return a.name < b.name; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    if (kept > 0 && c.tensors[kept - 1].name == c.tensors[i].name) {
      c.tensors[kept - 1] = std::move(c.tensors[i]);
    } else {
      if (kept != i) c.tensors[kept] = std::move(c.tensors[i]);
      ++kept;
    }
  }
  c.tensors.erase(c.tensors.begin() + static_cast<std::ptrdiff_t>(kept), c.tensors.end());
  return c;
}

}  // namespace

Checkpoint load_index(const fs::path& index_path, std::string_view text,
                      const HeaderLimits& limits) {
  simdjson::padded_string padded(text);
  return load_index_padded(index_path, padded, limits);
}

Checkpoint load_checkpoint(const fs::path& path, const HeaderLimits& limits) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    // A model.safetensors that is there but is not a file (a directory, a FIFO, a broken link)
    // is an error, not a reason to look for an index instead.
    if (shard_state(path.string(), "model.safetensors", path / "model.safetensors", "checkpoint") ==
        ShardState::present) {
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
    // Read straight into simdjson's padded buffer (one copy of the text, not two).
    std::string text = read_file(path, kMaxIndexBytes);
    const std::size_t size = text.size();
    text.resize(size + simdjson::SIMDJSON_PADDING);
    return load_index_padded(path, simdjson::padded_string_view(text.data(), size, text.size()),
                             limits);
  }
  return from_header(path, read_safetensors_header(path, limits));
}

}  // namespace cg::checkpoint
