#pragma once
// JSON text pieces for the trace writer. The profiler library links nothing but the C++ runtime
// (it is compiled standalone by the Rust crate's build.rs), so it cannot use cg_util's JsonWriter;
// and runtime/3 must match serde_json byte for byte, which escapes exactly `"`, `\`, and control
// characters (as \b \f \n \r \t or lowercase \u00XX) and nothing else (no U+2028 escaping).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace candle_graph::detail {

// Appends `s` quoted. Bytes that are not valid UTF-8 become U+FFFD, as Rust's
// String::from_utf8_lossy would, so the line is always valid JSON.
void append_json_string(std::string& out, std::string_view s);

inline void append_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace candle_graph::detail
