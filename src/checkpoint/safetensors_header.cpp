#include "checkpoint/safetensors_header.hpp"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg::checkpoint {
namespace {

namespace dom = simdjson::dom;

// The format's dtype list (safetensors 0.5/0.6). F8_E8M0, F4 and F6_* arrived with the MX formats
// in safetensors 0.6; C64 is complex64. Rejecting them would call valid published files corrupt.
constexpr std::array<DtypeInfo, 20> kDtypes{{
    {"BOOL", 8},    {"U8", 8},   {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8},
    {"F8_E8M0", 8}, {"I16", 16}, {"U16", 16}, {"F16", 16},    {"BF16", 16},
    {"I32", 32},    {"U32", 32}, {"F32", 32}, {"F64", 64},    {"I64", 64},
    {"U64", 64},    {"C64", 64}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6},
}};

[[noreturn]] void fail(std::string_view origin, const std::string& msg) {
  throw InputError(std::string(origin), msg);
}

std::string tensor_label(std::string_view name) {
  std::string out = "tensor \"";
  out += name;
  out += '"';
  return out;
}

std::string json_error(simdjson::error_code e) {
  return std::string("header is not valid JSON (") + simdjson::error_message(e) + ")";
}

std::uint64_t read_le64(std::string_view bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) {
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  }
  return n;
}

// One entry of the header object, checked against the rules that concern it alone.
TensorEntry parse_entry(std::string_view origin, std::string_view name, dom::element value,
                        std::uint64_t data_bytes, const HeaderLimits& limits) {
  // Messages are built only on failure: the happy path allocates just the entry itself.
  const auto who = [name] { return tensor_label(name); };
  if (name.size() > limits.max_name_bytes) {
    fail(origin, "tensor name of " + std::to_string(name.size()) + " bytes exceeds the limit of " +
                     std::to_string(limits.max_name_bytes));
  }
  dom::object obj;
  if (value.get_object().get(obj)) fail(origin, who() + ": expected an object");
  TensorEntry t;
  t.name = std::string(name);
  bool have_dtype = false, have_shape = false, have_offsets = false;
  dom::array offsets;
  for (auto field : obj) {
    const std::string_view k = field.key;
    if (k == "dtype") {
      std::string_view d;
      if (field.value.get_string().get(d)) fail(origin, who() + ": dtype must be a string");
      if (!dtype_info(d)) fail(origin, who() + ": unknown dtype \"" + std::string(d) + "\"");
      t.dtype = std::string(d);
      have_dtype = true;
    } else if (k == "shape") {
      dom::array arr;
      if (field.value.get_array().get(arr)) fail(origin, who() + ": shape must be an array");
      for (auto dim : arr) {
        if (t.shape.size() == limits.max_dims) {
          fail(origin,
               who() + ": shape has more than " + std::to_string(limits.max_dims) + " dimensions");
        }
        std::uint64_t n = 0;
        if (dim.get_uint64().get(n)) {
          fail(origin, who() + ": shape entries must be non-negative integers");
        }
        t.shape.push_back(n);
      }
      have_shape = true;
    } else if (k == "data_offsets") {
      if (field.value.get_array().get(offsets)) {
        fail(origin, who() + ": data_offsets must be an array [begin, end]");
      }
      have_offsets = true;
    } else {
      fail(origin, who() + ": unexpected field \"" + std::string(k) + "\"");
    }
  }
  if (!have_dtype) fail(origin, who() + ": missing dtype");
  if (!have_shape) fail(origin, who() + ": missing shape");
  if (!have_offsets) fail(origin, who() + ": missing data_offsets");
  std::vector<std::uint64_t> off;
  for (auto o : offsets) {
    std::uint64_t n = 0;
    if (off.size() == 2 || o.get_uint64().get(n)) {
      fail(origin, who() + ": data_offsets must be two non-negative integers [begin, end]");
    }
    off.push_back(n);
  }
  if (off.size() != 2) {
    fail(origin, who() + ": data_offsets must be two non-negative integers [begin, end]");
  }
  t.begin = off[0];
  t.end = off[1];
  const auto span = [&t] {
    return "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
  };
  if (t.end < t.begin) fail(origin, who() + ": " + span() + " ends before it begins");
  if (t.end > data_bytes) {
    fail(origin, who() + ": " + span() + " exceeds the data section of " +
                     std::to_string(data_bytes) + " bytes");
  }
  // Size in bits with overflow checks: a shape whose product overflows cannot fit any file.
  std::uint64_t bits = dtype_info(t.dtype)->bits;
  bool overflow = false;
  for (std::uint64_t d : t.shape) {
    if (d != 0 && bits > std::numeric_limits<std::uint64_t>::max() / d) {
      overflow = true;
      break;
    }
    bits *= d;
  }
  for (std::uint64_t d : t.shape) {
    if (d == 0) overflow = false, bits = 0;  // any zero dimension makes the tensor empty
  }
  const auto need = [&t] { return "shape " + shape_text(t.shape) + " of " + t.dtype + " needs "; };
  if (overflow) fail(origin, who() + ": " + need() + "more bytes than any file holds");
  if (bits % 8 != 0) {
    fail(origin,
         who() + ": " + need() + std::to_string(bits) + " bits, not a whole number of bytes");
  }
  const std::uint64_t bytes = bits / 8;
  if (t.end - t.begin != bytes) {
    fail(origin, who() + ": " + span() + " hold " + std::to_string(t.end - t.begin) +
                     " bytes but " + need() + std::to_string(bytes));
  }
  return t;
}

}  // namespace

std::optional<DtypeInfo> dtype_info(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (d.name == name) return d;
  }
  return std::nullopt;
}

const TensorEntry* SafetensorsHeader::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorEntry& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsHeader parse_safetensors_header(std::string_view bytes, std::uint64_t file_size,
                                           std::string_view origin, const HeaderLimits& limits) {
  if (file_size < 8 || bytes.size() < 8) {
    fail(origin, "file of " + std::to_string(file_size) +
                     " bytes is too short for the 8-byte header length");
  }
  const std::uint64_t n = read_le64(bytes);
  if (n > limits.max_header_bytes) {
    fail(origin, "header length " + std::to_string(n) + " exceeds the limit of " +
                     std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (n > file_size - 8) {
    fail(origin, "header length " + std::to_string(n) + " runs past the end of the file (" +
                     std::to_string(file_size) + " bytes)");
  }
  if (bytes.size() - 8 < n) {
    fail(origin, "only " + std::to_string(bytes.size() - 8) + " of " + std::to_string(n) +
                     " header bytes were read");
  }
  const std::string_view json = bytes.substr(8, static_cast<std::size_t>(n));
  // The format requires the header to start with '{' (no leading padding); trailing spaces pad it
  // to an 8-byte boundary and are allowed.
  if (json.empty() || json.front() != '{') fail(origin, "header must begin with '{'");
  const std::uint64_t data_bytes = file_size - 8 - n;

  dom::parser parser;
  simdjson::padded_string padded(json);
  dom::element root;
  if (auto e = parser.parse(padded).get(root)) fail(origin, json_error(e));
  dom::object obj;
  if (root.get_object().get(obj)) fail(origin, "header must be a JSON object");

  SafetensorsHeader h;
  h.origin = std::string(origin);
  h.header_bytes = n;
  h.file_bytes = file_size;
  bool seen_metadata = false;
  for (auto field : obj) {
    const std::string_view k = field.key;
    if (k == "__metadata__") {
      if (seen_metadata) fail(origin, "__metadata__ appears twice");
      seen_metadata = true;
      dom::object meta;
      if (field.value.get_object().get(meta)) {
        fail(origin, "__metadata__ must be an object of strings");
      }
      for (auto m : meta) {
        std::string_view v;
        if (m.value.get_string().get(v)) {
          fail(origin, "__metadata__ \"" + std::string(m.key) + "\": values must be strings");
        }
        h.metadata[std::string(m.key)] = std::string(v);
      }
      continue;
    }
    if (h.tensors.size() == limits.max_tensors) {
      fail(origin, "more than " + std::to_string(limits.max_tensors) + " tensors");
    }
    h.tensors.push_back(parse_entry(origin, k, field.value, data_bytes, limits));
  }

  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < h.tensors.size(); ++i) {
    if (h.tensors[i].name == h.tensors[i - 1].name) {
      fail(origin, tensor_label(h.tensors[i].name) + " appears twice");
    }
  }
  // The format forbids holes and overlaps: sorted by offset, each tensor starts where the last one
  // ended and the last one ends at the end of the file. This is what the reference implementation
  // (safetensors `validate`) enforces, and it keeps polyglot files out.
  std::vector<const TensorEntry*> by_offset;
  by_offset.reserve(h.tensors.size());
  for (const auto& t : h.tensors)
    by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t cursor = 0;
  const TensorEntry* prev = nullptr;
  for (const TensorEntry* t : by_offset) {
    if (t->begin < cursor) {
      fail(origin, tensor_label(t->name) + ": data_offsets [" + std::to_string(t->begin) + ", " +
                       std::to_string(t->end) + ") overlap " + tensor_label(prev->name) + " [" +
                       std::to_string(prev->begin) + ", " + std::to_string(prev->end) + ")");
    }
    if (t->begin > cursor) {
      fail(origin, tensor_label(t->name) + ": data_offsets begin at " + std::to_string(t->begin) +
                       ", leaving bytes [" + std::to_string(cursor) + ", " +
                       std::to_string(t->begin) + ") of the data section unused");
    }
    cursor = t->end;
    prev = t;
  }
  if (cursor != data_bytes) {
    fail(origin, "tensors cover " + std::to_string(cursor) + " of the " +
                     std::to_string(data_bytes) +
                     " data bytes; the format allows no trailing bytes after the last tensor");
  }
  return h;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path,
                                          const HeaderLimits& limits) {
  const std::string origin = path.string();
  note_input(path);
  // O_NONBLOCK: a FIFO under a checkpoint's name must not block the open; it is refused below,
  // as is anything else that is not a regular file (a directory, a device).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(origin, std::string("cannot read file (") + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail(origin, std::string("cannot read file (") + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) {
    fail(origin, std::string("is ") +
                     (S_ISDIR(st.st_mode)    ? "a directory"
                      : S_ISFIFO(st.st_mode) ? "a FIFO"
                                             : "not a regular file") +
                     ", expected a safetensors file");
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  auto read_at = [&](char* to, std::uint64_t n, std::uint64_t at) {
    while (n > 0) {
      const ssize_t got = ::pread(fd, to, static_cast<std::size_t>(n), static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      to += got;
      at += static_cast<std::uint64_t>(got);
      n -= static_cast<std::uint64_t>(got);
    }
    return true;
  };
  std::string buf(8, '\0');
  if (size >= 8) {
    if (!read_at(buf.data(), 8, 0)) fail(origin, "cannot read the 8-byte header length");
    const std::uint64_t n = read_le64(buf);
    // Only read the header when it is within both the cap and the file; otherwise the parser
    // reports the rule without us allocating N bytes.
    if (n <= limits.max_header_bytes && n <= size - 8) {
      buf.resize(static_cast<std::size_t>(8 + n));
      if (!read_at(buf.data() + 8, n, 8)) {
        fail(origin, "cannot read " + std::to_string(n) + " header bytes");
      }
    }
  } else {
    buf.clear();
  }
  return parse_safetensors_header(buf, size, origin, limits);
}

}  // namespace cg::checkpoint
