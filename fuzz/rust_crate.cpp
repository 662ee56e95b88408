// The Rust loader fed mutated real model files: a copy of examples/tiny-llama/src (lib.rs and its
// modules, no Cargo.toml, so no path dependency has to resolve) whose src/model.rs is replaced by
// the input, loaded through rust::load_crate (mod resolution, cfg, symbols, use bindings). Bad
// source must end as diagnostics or cg::InputError; never a crash, hang or leak. Seeds: the
// example's own files (fuzz/rust_crate.seeds).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "rust/crate.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path src = fs::path(CG_SOURCE_DIR) / "examples" / "tiny-llama" / "src";
    fs::path d = fs::temp_directory_path() / ("cg-fuzz-crate-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(d, ec);
    fs::create_directories(d);
    fs::copy(src, d / "src", fs::copy_options::recursive);
    return d;
  }();
  FILE* f = std::fopen((dir / "src" / "model.rs").c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    (void)cg::rust::load_crate(dir, cg::cargo::Selection{});
  } catch (const cg::InputError&) {
  }
  return 0;
}
