#pragma once
// A test-side GGUF writer: the bytes of a GGUF file (little endian) built field by field, so tests
// can write well-formed files and break any field on purpose. Tensor byte counts are given by the
// test (hand arithmetic), never computed here from the reader's table.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cg_test {

class GgufWriter {
 public:
  // Value types of the format.
  enum Type : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12
  };

  explicit GgufWriter(std::uint32_t version = 3, std::uint64_t alignment = 32)
      : version_(version), alignment_(alignment) {}

  static void put(std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  // A length or count: u32 in version 1, u64 after.
  void len(std::string& out, std::uint64_t n) const { put(out, n, version_ == 1 ? 4 : 8); }
  void str(std::string& out, std::string_view s) const {
    len(out, s.size());
    out += s;
  }

  // A metadata pair whose value bytes (after the type) the test writes itself.
  GgufWriter& kv_raw(std::string_view key, std::uint32_t type, const std::string& value) {
    str(kv_, key);
    put(kv_, type, 4);
    kv_ += value;
    ++n_kv_;
    return *this;
  }
  GgufWriter& kv_string(std::string_view key, std::string_view value) {
    std::string v;
    str(v, value);
    return kv_raw(key, STRING, v);
  }
  GgufWriter& kv_u32(std::string_view key, std::uint32_t value) {
    std::string v;
    put(v, value, 4);
    return kv_raw(key, U32, v);
  }
  GgufWriter& kv_u64(std::string_view key, std::uint64_t value) {
    std::string v;
    put(v, value, 8);
    return kv_raw(key, U64, v);
  }

  // A tensor of `shape` (outermost first, as candle writes it: the file stores it innermost
  // first) of GGML type `type`, holding `bytes` bytes (the test's arithmetic).
  GgufWriter& tensor(std::string_view name, const std::vector<std::uint64_t>& shape,
                     std::uint32_t type, std::uint64_t bytes) {
    str(infos_, name);
    put(infos_, shape.size(), 4);
    for (auto it = shape.rbegin(); it != shape.rend(); ++it)
      len(infos_, *it);
    put(infos_, type, 4);
    put(infos_, data_, 8);
    data_ += bytes;
    data_ += (alignment_ - data_ % alignment_) % alignment_;
    ++n_tensors_;
    return *this;
  }

  // The header alone (magic .. last tensor info), without padding or data.
  std::string header() const {
    std::string out = "GGUF";
    put(out, version_, 4);
    len(out, n_tensors_);
    len(out, n_kv_);
    return out + kv_ + infos_;
  }
  // The whole file: header, padding to the alignment, zeroed tensor data.
  std::string file() const {
    std::string out = header();
    out.append((alignment_ - out.size() % alignment_) % alignment_, '\0');
    out.append(data_, '\0');
    return out;
  }
  std::uint64_t data_bytes() const { return data_; }

 private:
  std::uint32_t version_;
  std::uint64_t alignment_;
  std::string kv_, infos_;
  std::uint64_t n_kv_ = 0, n_tensors_ = 0, data_ = 0;
};

}  // namespace cg_test
