// The Rust front end must survive any bytes: mutated model files, binary junk, deep nesting.
#include <cstddef>
#include <cstdint>
#include <string>

#include "rust/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = cg::rust::ParsedFile::parse("src/fuzz.rs", std::move(text));
  for (const auto& p : parsed.problems()) {
    if (p.line == 0 || p.column == 0) __builtin_trap();  // locations are 1-based, always
  }
  return 0;
}
