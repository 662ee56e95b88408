#include "checkpoint/gguf_header.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <limits>
#include <system_error>

#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

// Block layouts from the GGML block structs: Q4_0 is an f16 scale and 16 bytes of 4-bit values
// for 32 elements (18 bytes); the K types hold 256 elements (QK_K) per super-block.
constexpr std::array<GgmlType, 15> kTypes{{
    {0, "F32", 1, 4},
    {1, "F16", 1, 2},
    {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},
    {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},
    {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},
    {12, "Q4_K", 256, 144},
    {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},
    {15, "Q8_K", 256, 292},
    {30, "BF16", 1, 2},
}};

// Metadata value types of the format.
enum : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// Fixed size of a scalar value type, 0 for string and array, nullopt for an unknown type.
std::optional<std::uint64_t> scalar_size(std::uint32_t t) {
  switch (t) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kU64:
    case kI64:
    case kF64:
      return 8;
    case kString:
    case kArray:
      return 0;
    default:
      return std::nullopt;
  }
}

// Where the bytes come from: the file (streamed) or memory (tests, fuzzing).
class Source {
 public:
  virtual ~Source() = default;
  virtual bool read(char* dst, std::size_t n) = 0;
  virtual bool skip(std::uint64_t n) = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view b) : b_(b) {}
  bool read(char* dst, std::size_t n) override {
    if (n > b_.size() - pos_) return false;
    std::copy_n(b_.data() + pos_, n, dst);
    pos_ += n;
    return true;
  }
  bool skip(std::uint64_t n) override {
    if (n > b_.size() - pos_) return false;
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
};

class FileSource : public Source {
 public:
  explicit FileSource(std::ifstream& in) : in_(in) {}
  bool read(char* dst, std::size_t n) override {
    in_.read(dst, static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in_.gcount()) == n;
  }
  bool skip(std::uint64_t n) override {
    // The caller has checked n against the file size: a seek, never a read of the skipped bytes.
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    return static_cast<bool>(in_);
  }

 private:
  std::ifstream& in_;
};

class Reader {
 public:
  Reader(Source& src, std::uint64_t file_size, std::string_view origin, const GgufLimits& limits)
      : src_(src), size_(file_size), origin_(origin), limits_(limits) {}

  [[noreturn]] void fail(std::uint64_t at, const std::string& msg) const {
    throw InputError(std::string(origin_), "offset " + std::to_string(at) + ": " + msg);
  }
  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return size_ - pos_; }
  const GgufLimits& limits() const { return limits_; }
  bool v1 = false;  // version 1 writes lengths and counts as u32

  void bytes(char* dst, std::size_t n, const char* what) {
    if (n > left() || !src_.read(dst, n))
      fail(pos_, std::string("the file ends inside ") + what + " (" + std::to_string(n) +
                     " bytes expected, " + std::to_string(left()) + " left)");
    pos_ += n;
  }
  template <class T>
  T le(const char* what) {
    std::array<char, sizeof(T)> b{};
    bytes(b.data(), b.size(), what);
    std::uint64_t v = 0;
    for (std::size_t i = sizeof(T); i-- > 0;)
      v = (v << 8) | static_cast<unsigned char>(b[i]);
    return static_cast<T>(v);
  }
  std::uint32_t u32(const char* what) { return le<std::uint32_t>(what); }
  std::uint64_t u64(const char* what) { return le<std::uint64_t>(what); }
  // A length or count: u32 in version 1, u64 after.
  std::uint64_t length(const char* what) { return v1 ? u32(what) : u64(what); }

  void skip(std::uint64_t n, const char* what) {
    if (n > left() || !src_.skip(n))
      fail(pos_, std::string("the file ends inside ") + what + " (" + std::to_string(n) +
                     " bytes expected, " + std::to_string(left()) + " left)");
    pos_ += n;
  }

  // A string kept in memory, at most `max` bytes.
  std::string string(const char* what, std::uint64_t max) {
    const std::uint64_t at = pos_;
    const std::uint64_t n = length(what);
    if (n > max)
      fail(at, std::string(what) + " of " + std::to_string(n) + " bytes exceeds the limit of " +
                   std::to_string(max));
    if (n > left())
      fail(at, std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the " +
                   "file (" + std::to_string(left()) + " bytes left)");
    std::string s(static_cast<std::size_t>(n), '\0');
    bytes(s.data(), s.size(), what);
    return s;
  }

 private:
  Source& src_;
  std::uint64_t size_;
  std::string_view origin_;
  const GgufLimits& limits_;
  std::uint64_t pos_ = 0;
};

std::string type_name(std::uint32_t t) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return t < 13 ? names[t] : "type " + std::to_string(t);
}

// Reads one value of type `t` (an array's elements, nested arrays too); a scalar's text, or a
// short string's, goes to `keep` when given.
void read_value(Reader& r, std::uint32_t t, std::uint64_t at, int depth, std::string* keep) {
  const auto size = scalar_size(t);
  if (!size) r.fail(at, "unknown metadata value type " + std::to_string(t) + " (expected 0 to 12)");
  if (t == kString) {
    const std::uint64_t sat = r.pos();
    const std::uint64_t n = r.length("a string's length");
    if (n > r.limits().max_string_bytes)
      r.fail(sat, "string of " + std::to_string(n) + " bytes exceeds the limit of " +
                      std::to_string(r.limits().max_string_bytes));
    if (n > r.left())
      r.fail(sat, "string of " + std::to_string(n) + " bytes runs past the end of the file (" +
                      std::to_string(r.left()) + " bytes left)");
    if (keep && n <= 256) {
      keep->assign(static_cast<std::size_t>(n), '\0');
      r.bytes(keep->data(), keep->size(), "a string");
    } else {
      r.skip(n, "a string");
    }
    return;
  }
  if (t == kArray) {
    if (depth >= r.limits().max_array_nesting)
      r.fail(at,
             "arrays nested more than " + std::to_string(r.limits().max_array_nesting) + " deep");
    const std::uint64_t tat = r.pos();
    const std::uint32_t et = r.u32("an array's element type");
    const auto esize = scalar_size(et);
    if (!esize)
      r.fail(tat, "unknown array element type " + std::to_string(et) + " (expected 0 to 12)");
    const std::uint64_t nat = r.pos();
    const std::uint64_t n = r.length("an array's length");
    // Every element takes bytes (a string or an array at least its length): a count the rest of
    // the file cannot hold is refused before any element is read.
    const std::uint64_t least =
        *esize ? *esize : std::uint64_t{r.v1 ? 4u : 8u} + (et == kArray ? 4u : 0u);
    if (n > r.left() / least)
      r.fail(nat, "array of " + std::to_string(n) + " " + type_name(et) +
                      " values cannot fit in the " + std::to_string(r.left()) +
                      " bytes left in the file");
    if (*esize) {
      r.skip(n * *esize, "an array");
    } else {
      for (std::uint64_t i = 0; i < n; ++i)
        read_value(r, et, r.pos(), depth + 1, nullptr);
    }
    if (keep) *keep = "array";
    return;
  }
  const std::uint64_t vat = r.pos();
  std::uint64_t v = 0;
  if (*size == 1)
    v = r.le<std::uint8_t>("a value");
  else if (*size == 2)
    v = r.le<std::uint16_t>("a value");
  else if (*size == 4)
    v = r.le<std::uint32_t>("a value");
  else
    v = r.le<std::uint64_t>("a value");
  if (t == kBool && v > 1)
    r.fail(vat, "a bool of value " + std::to_string(v) + " (expected 0 or 1)");
  if (!keep) return;
  switch (t) {
    case kI8:
      *keep = std::to_string(static_cast<std::int8_t>(v));
      break;
    case kI16:
      *keep = std::to_string(static_cast<std::int16_t>(v));
      break;
    case kI32:
      *keep = std::to_string(static_cast<std::int32_t>(v));
      break;
    case kI64:
      *keep = std::to_string(static_cast<std::int64_t>(v));
      break;
    case kBool:
      *keep = v ? "true" : "false";
      break;
    case kF32:
    case kF64:  // floats are not needed: kept as their type's name
      *keep = type_name(t);
      break;
    default:
      *keep = std::to_string(v);
      break;
  }
}

std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

GgufHeader parse(Source& src, std::uint64_t file_size, std::string_view origin,
                 const GgufLimits& limits) {
  Reader r(src, file_size, origin, limits);
  GgufHeader h;
  h.origin = std::string(origin);
  h.file_bytes = file_size;
  if (file_size < 4)
    r.fail(0, "not a GGUF file: " + std::to_string(file_size) +
                  " bytes, too short for the magic \"GGUF\"");
  std::array<char, 4> magic{};
  r.bytes(magic.data(), magic.size(), "the magic");
  if (std::string_view(magic.data(), magic.size()) != "GGUF")
    r.fail(0, "not a GGUF file (expected the magic \"GGUF\")");
  h.version = r.u32("the version");
  if (h.version == 0x02000000u || h.version == 0x03000000u)
    r.fail(4, "a big-endian GGUF file (version " + std::to_string(h.version >> 24) +
                  "): only little-endian files are read");
  if (h.version < 1 || h.version > 3)
    r.fail(4, "GGUF version " + std::to_string(h.version) + " (expected 1, 2 or 3)");
  r.v1 = h.version == 1;

  const std::uint64_t tat = r.pos();
  const std::uint64_t n_tensors = r.length("the tensor count");
  const std::uint64_t kat = r.pos();
  const std::uint64_t n_kv = r.length("the metadata count");
  const std::uint64_t len = r.v1 ? 4 : 8;
  // Each tensor info takes at least a name length, a dimension count, a type and an offset; each
  // metadata pair a key length and a value type and one byte.
  if (n_tensors > limits.max_tensors)
    r.fail(tat, std::to_string(n_tensors) + " tensors exceed the limit of " +
                    std::to_string(limits.max_tensors));
  if (n_tensors > r.left() / (len + 4 + 4 + 8))
    r.fail(tat, std::to_string(n_tensors) + " tensors cannot fit in a file of " +
                    std::to_string(file_size) + " bytes");
  if (n_kv > limits.max_metadata)
    r.fail(kat, std::to_string(n_kv) + " metadata entries exceed the limit of " +
                    std::to_string(limits.max_metadata));
  if (n_kv > r.left() / (len + 4 + 1))
    r.fail(kat, std::to_string(n_kv) + " metadata entries cannot fit in a file of " +
                    std::to_string(file_size) + " bytes");

  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("a metadata key", limits.max_name_bytes);
    const std::uint64_t at = r.pos();
    const std::uint32_t t = r.u32("a metadata value type");
    std::string text;
    read_value(r, t, at, 0, &text);
    if (key == "general.alignment") {
      if (t != kU32) r.fail(at, "general.alignment is a " + type_name(t) + " (expected u32)");
      h.alignment = std::stoull(text);
      if (h.alignment == 0 || (h.alignment & (h.alignment - 1)) != 0)
        r.fail(at, "general.alignment " + text + " (expected a power of two)");
    }
    // Arrays and long strings (a tokenizer's vocabulary, a chat template) are not kept.
    if (t != kArray && !(t == kString && text.empty())) h.metadata[key] = std::move(text);
  }

  // Grown as tensors are read, never reserved from the count: a hostile count costs nothing.
  std::vector<std::uint64_t> info_at;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    const std::uint64_t at = r.pos();
    GgufTensor t;
    t.name = r.string("a tensor name", limits.max_name_bytes);
    const auto who = [&] { return "tensor \"" + t.name + "\""; };
    const std::uint64_t dat = r.pos();
    const std::uint32_t n_dims = r.u32("a tensor's dimension count");
    if (n_dims == 0 || n_dims > limits.max_dims)
      r.fail(dat, who() + " has " + std::to_string(n_dims) + " dimensions (expected 1 to " +
                      std::to_string(limits.max_dims) + ")");
    t.shape.resize(n_dims);
    std::optional<std::uint64_t> elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      // Stored innermost first: the first is the row length.
      const std::uint64_t v = r.length("a tensor dimension");
      t.shape[n_dims - 1 - d] = v;
      if (elements) elements = checked_mul(*elements, v);
    }
    const std::uint64_t yat = r.pos();
    const std::uint32_t type = r.u32("a tensor's GGML type");
    const auto gt = ggml_type(type);
    if (!gt)
      r.fail(yat, who() + " has GGML type " + std::to_string(type) + ", not one candle reads (" +
                      ggml_type_names() + ")");
    t.type = *gt;
    const std::uint64_t oat = r.pos();
    t.offset = r.u64("a tensor's offset");
    if (!elements)
      r.fail(dat, who() + ": shape " + shape_text(t.shape) + " has more elements than any file");
    t.elements = *elements;
    const auto bytes = ggml_bytes(t.type, t.shape.back(), t.elements);
    if (!bytes)
      r.fail(dat, who() + ": row length " + std::to_string(t.shape.back()) +
                      " is not a multiple of " + std::string(t.type.name) + "'s block of " +
                      std::to_string(t.type.block_elements) + " elements");
    t.bytes = *bytes;
    if (t.offset % h.alignment != 0)
      r.fail(oat, who() + ": offset " + std::to_string(t.offset) + " is not a multiple of the " +
                      "alignment " + std::to_string(h.alignment));
    h.tensors.push_back(std::move(t));
    info_at.push_back(at);
  }
  std::vector<std::size_t> by_name(h.tensors.size());
  for (std::size_t i = 0; i < by_name.size(); ++i)
    by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(), [&](std::size_t a, std::size_t b) {
    return h.tensors[a].name != h.tensors[b].name ? h.tensors[a].name < h.tensors[b].name : a < b;
  });
  for (std::size_t i = 1; i < by_name.size(); ++i)
    if (h.tensors[by_name[i]].name == h.tensors[by_name[i - 1]].name)
      r.fail(info_at[by_name[i]], "tensor \"" + h.tensors[by_name[i]].name + "\" appears twice");
  // The data section starts at the next multiple of the alignment; every tensor lies inside it,
  // and no two overlap.
  const std::uint64_t end = r.pos();
  const std::uint64_t pad = (h.alignment - end % h.alignment) % h.alignment;
  h.data_offset = end + pad;
  if (!h.tensors.empty() && h.data_offset > file_size)
    r.fail(end, "the tensor data would start at " + std::to_string(h.data_offset) +
                    ", past the end of the file (" + std::to_string(file_size) + " bytes)");
  const std::uint64_t data = h.tensors.empty() ? 0 : file_size - h.data_offset;
  std::vector<const GgufTensor*> by_offset;
  for (const auto& t : h.tensors)
    by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (std::size_t i = 0; i < by_offset.size(); ++i) {
    const GgufTensor& t = *by_offset[i];
    if (t.offset > data || t.bytes > data - t.offset)
      r.fail(end, "tensor \"" + t.name + "\": " + std::to_string(t.bytes) + " bytes of " +
                      std::string(t.type.name) + " at offset " + std::to_string(t.offset) +
                      " run past the data section of " + std::to_string(data) + " bytes");
    if (i + 1 < by_offset.size() && t.offset + t.bytes > by_offset[i + 1]->offset)
      r.fail(end, "tensor \"" + t.name + "\" overlaps tensor \"" + by_offset[i + 1]->name + "\"");
  }
  return h;
}

}  // namespace

std::optional<GgmlType> ggml_type(std::uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return t;
  return std::nullopt;
}

std::optional<GgmlType> ggml_type_named(std::string_view name) {
  std::string want;
  for (char c : name)
    if (c != '_') want += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& t : kTypes) {
    std::string have;
    for (char c : t.name)
      if (c != '_') have += c;
    if (have == want) return t;
  }
  return std::nullopt;
}

std::string ggml_type_names() {
  std::string s;
  for (const auto& t : kTypes)
    s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

std::optional<std::uint64_t> ggml_bytes(const GgmlType& t, std::uint64_t row_length,
                                        std::uint64_t elements) {
  if (row_length % t.block_elements != 0 || elements % t.block_elements != 0) return std::nullopt;
  return checked_mul(elements / t.block_elements, t.block_bytes);
}

std::string GgufHeader::architecture() const {
  auto it = metadata.find("general.architecture");
  return it == metadata.end() ? std::string() : it->second;
}

std::optional<std::uint64_t> GgufHeader::metadata_integer(const std::string& key) const {
  auto it = metadata.find(key);
  if (it == metadata.end() || it->second.empty() || it->second.size() > 19 ||
      it->second.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(it->second);
}

std::uint64_t GgufHeader::tensor_bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors)
    n += t.bytes;  // each lies in the file, without overlap: the sum fits the file size
  return n;
}

const GgufTensor* GgufHeader::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

GgufHeader parse_gguf_header(std::string_view bytes, std::uint64_t file_size,
                             std::string_view origin, const GgufLimits& limits) {
  MemorySource src(bytes);
  return parse(src, file_size, origin, limits);
}

GgufHeader read_gguf_header(const std::filesystem::path& path, const GgufLimits& limits) {
  const std::string origin = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(origin, "a directory, not a GGUF file");
  // A FIFO or a device would block or never end: only a regular file is read.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw InputError(origin, "not a regular file (a FIFO, a device, ...): expected a GGUF file");
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(origin, "cannot read the file (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(origin, "cannot open the file");
  FileSource src(in);
  return parse(src, size, origin, limits);
}

}  // namespace cg::checkpoint
