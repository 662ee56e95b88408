// config.json binding reads whatever file a user points --config at.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/config_values.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto c = cg::analysis::parse_config_values(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    for (const auto& [k, v] : c.fields)
      (void)v.display();
  } catch (const cg::InputError&) {
  }
  return 0;
}
