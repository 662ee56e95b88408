// Loads real crates (default: candle-transformers and candle-nn from the candle checkout) and
// prints what the loader saw: files, items, unresolved internal imports and diagnostics by rule.
// Usage: bench_rust_corpus [CRATE_DIR…]   (bench protocol args BASELINES_FILE WORK_DIR also work)
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rust/crate.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const char* env = std::getenv("CG_CANDLE_SRC");
  fs::path candle = env != nullptr ? env : "";
  std::vector<fs::path> crates;
  for (int i = 1; i < argc; ++i)
    if (fs::is_regular_file(fs::path(argv[i]) / "Cargo.toml")) crates.emplace_back(argv[i]);
  if (crates.empty()) crates = {candle / "candle-transformers", candle / "candle-nn"};
  int rc = 0;
  for (const auto& dir : crates) {
    if (!fs::exists(dir)) {
      std::printf("ROW|corpus %s|SKIPPED (absent)|||||\n", dir.string().c_str());
      continue;
    }
    try {
      auto loaded = cg::rust::load_crate(dir, {});
      const auto& c = loaded.crate;
      std::map<std::string, std::size_t> rules;
      for (const auto& d : c.diagnostics())
        ++rules[d.rule];
      auto unresolved = c.unresolved_imports();
      std::size_t impl_unresolved = 0;
      for (const auto& im : c.impls()) {
        bool found = false;
        for (const auto& k : c.resolve(im.module, im.self_base))
          found |= k.kind == cg::rust::Candidate::Kind::Item;
        if (!found) {
          if (impl_unresolved++ < 10)
            std::printf("  impl for unresolved type %s in %s:%u\n", im.self_type.c_str(),
                        c.files()[im.file]->path().c_str(), im.line);
        }
      }
      std::printf("  impls whose self type is not a crate item: %zu\n", impl_unresolved);
      std::printf(
          "%s: files %zu, modules %zu, items %zu, impls %zu, uses %zu, unresolved imports %zu\n",
          dir.filename().string().c_str(), c.files().size(), c.modules().size(), c.items().size(),
          c.impls().size(), c.uses().size(), unresolved.size());
      for (const auto& [rule, n] : rules)
        std::printf("  diagnostics %s: %zu\n", rule.c_str(), n);
      std::size_t shown = 0;
      for (std::size_t u : unresolved) {
        if (shown++ == 20) break;
        const auto& b = c.uses()[u];
        std::string p;
        for (const auto& s : b.path)
          p += (p.empty() ? "" : "::") + s;
        std::printf("  unresolved %s:%u %s\n", c.files()[b.file]->path().c_str(), b.line,
                    p.c_str());
      }
      shown = 0;
      for (const auto& d : c.diagnostics()) {
        if (shown++ == 20) break;
        std::printf("  %s %s:%u %s\n", d.rule.c_str(), d.file.c_str(), d.line, d.message.c_str());
      }
    } catch (const std::exception& e) {
      std::printf("%s: error: %s\n", dir.string().c_str(), e.what());
      rc = 1;
    }
  }
  return rc;
}
