// The Rust loader fed mutated real model files: a copy of examples/tiny-llama/src (lib.rs and its
// modules, no Cargo.toml, so no path dependency has to resolve) whose src/model.rs is replaced by
// the input, loaded through rust::load_crate (mod resolution, cfg, symbols, use bindings), then
// every item's body lowered (rust/body.hpp) and walked. Bad source must end as diagnostics or
// cg::InputError; never a crash, hang or leak, and every lowered node's links and span stay
// inside the body and the file. Seeds: the example's own files (fuzz/rust_crate.seeds).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
    auto loaded = cg::rust::load_crate(dir, cg::cargo::Selection{});
    const cg::rust::Crate& c = loaded.crate;
    for (std::size_t i = 0; i < c.items().size(); ++i) {
      const cg::rust::Body& b = c.lowered(i);
      const std::size_t text_size = c.files()[b.file]->text().size();
      for (cg::rust::NodeId id = 0; id < b.size(); ++id) {
        const cg::rust::Node& n = b[id];
        for (cg::rust::NodeId link : {n.a, n.b, n.c})
          if (link != cg::rust::kNone && link >= b.size()) std::abort();
        for (cg::rust::NodeId k : b.kids(id))
          if (k >= b.size()) std::abort();
        if (n.start > n.end || n.end > text_size) std::abort();
        (void)b.source(id);
      }
    }
  } catch (const cg::InputError&) {
  }
  return 0;
}
