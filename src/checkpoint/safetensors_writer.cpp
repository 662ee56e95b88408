#include "checkpoint/safetensors_writer.hpp"

#include <fstream>
#include <stdexcept>

#include "checkpoint/safetensors_header.hpp"
#include "util/json_writer.hpp"

namespace cg::checkpoint {
namespace {

std::uint64_t byte_size(const TensorSpec& t) {
  auto info = dtype_info(t.dtype);
  if (!info) throw std::invalid_argument("unknown dtype " + t.dtype);
  std::uint64_t bits = info->bits;
  for (auto d : t.shape)
    bits *= d;
  if (bits % 8) throw std::invalid_argument(t.name + ": not a whole number of bytes");
  return bits / 8;
}

}  // namespace

std::uint64_t safetensors_data_bytes(const std::vector<TensorSpec>& tensors) {
  std::uint64_t total = 0;
  for (const auto& t : tensors)
    total += byte_size(t);
  return total;
}

std::string safetensors_header_bytes(const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  JsonWriter w(0);
  w.begin_object();
  if (!metadata.empty()) {
    w.key("__metadata__").begin_object();
    for (const auto& [k, v] : metadata)
      w.field(k, v);
    w.end_object();
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::uint64_t size = byte_size(t);
    w.key(t.name).begin_object();
    w.field("dtype", t.dtype);
    w.key("shape").begin_array();
    for (auto d : t.shape)
      w.value(d);
    w.end_array();
    w.key("data_offsets").begin_array().value(offset).value(offset + size).end_array();
    w.end_object();
    offset += size;
  }
  w.end_object();
  std::string json = w.take();
  while (json.size() % 8)
    json += ' ';
  std::string out(8, '\0');
  std::uint64_t n = json.size();
  for (std::size_t i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                       const std::map<std::string, std::string>& metadata, bool sparse) {
  const std::string header = safetensors_header_bytes(tensors, metadata);
  const std::uint64_t data = safetensors_data_bytes(tensors);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (sparse) {
    out.close();
    std::filesystem::resize_file(path, header.size() + data);
    return;
  }
  const std::string zeros(1 << 16, '\0');
  for (std::uint64_t left = data; left > 0;) {
    const std::uint64_t chunk = left < zeros.size() ? left : zeros.size();
    out.write(zeros.data(), static_cast<std::streamsize>(chunk));
    left -= chunk;
  }
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace cg::checkpoint
