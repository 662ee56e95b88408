// GGUF headers come from files users download: any bytes must give a header or a clear error,
// never a crash, a hang or an allocation the bytes do not pay for.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "checkpoint/gguf_header.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    cg::checkpoint::parse_gguf_header(std::string_view(reinterpret_cast<const char*>(data), size),
                                      size, "fuzz.gguf");
  } catch (const cg::InputError&) {
  }
  return 0;
}
