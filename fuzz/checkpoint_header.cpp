// Safetensors headers come from files users download: any bytes must give a header or a clear
// error, never a crash or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "checkpoint/safetensors_header.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    cg::checkpoint::parse_safetensors_header(
        std::string_view(reinterpret_cast<const char*>(data), size), size, "fuzz.safetensors");
  } catch (const cg::InputError&) {
  }
  return 0;
}
