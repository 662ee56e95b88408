// Cargo.toml and Cargo.lock are read from users' checkouts and may be malformed. The input is
// split at the first line "%%LOCK%%": what precedes it is the Cargo.toml, what follows (if any)
// the Cargo.lock of a one-package directory with a src/lib.rs. The loader must throw
// cg::InputError or succeed; never crash, hang or leak.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "cargo/context.hpp"
#include "util/error.hpp"

namespace {

void put(const std::filesystem::path& p, std::string_view text) {
  FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("cg-fuzz-cargo-" + std::to_string(::getpid()));
    fs::create_directories(d / "src");
    put(d / "src" / "lib.rs", "pub fn f() {}\n");
    return d;
  }();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSplit = "\n%%LOCK%%\n";
  auto cut = in.find(kSplit);
  put(dir / "Cargo.toml", in.substr(0, cut));
  std::error_code ec;
  if (cut == std::string_view::npos) {
    fs::remove(dir / "Cargo.lock", ec);
  } else {
    put(dir / "Cargo.lock", in.substr(cut + kSplit.size()));
  }
  try {
    (void)cg::cargo::load_cargo_context(dir, cg::cargo::Selection{});
  } catch (const cg::InputError&) {
  }
  return 0;
}
