// Load + resolve of candle-transformers/src/models against tree-sitter's raw parse of the same
// files, in the same run. Target: ≤ 1.5× raw parse; peak RSS < 300 MiB.
// Usage (bench protocol): bench_rust_load BASELINES_FILE WORK_DIR; env CG_CANDLE_SRC.
#include <sys/resource.h>
#include <tree_sitter/api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rust/crate.hpp"
#include "rust/grammar.hpp"
#include "util/atomic_file.hpp"

namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::size_t resolve_everything(const cg::rust::Crate& c) {
  std::size_t n = c.unresolved_imports().size();
  for (std::size_t i = 0; i < c.uses().size(); ++i) {
    const auto& u = c.uses()[i];
    if (u.glob || u.name.empty()) continue;
    n += c.resolve(u.module, u.name).size();
  }
  for (std::size_t i = 0; i < c.items().size(); ++i) {
    const auto& it = c.items()[i];
    for (const auto& p : it.params)
      n += c.resolve(it.module, p.type_text).size();
    if (it.kind == cg::rust::ItemKind::Struct)
      for (const auto& f : it.fields)
        n += c.resolve(it.module, f.base_type).size();
  }
  return n;
}

}  // namespace

int main() {
  const char* env = std::getenv("CG_CANDLE_SRC");
  fs::path crate_dir = fs::path(env != nullptr ? env : "") / "candle-transformers";
  fs::path root = crate_dir / "src/models/mod.rs";
  if (!fs::exists(root)) {
    std::printf("ROW|rust load+resolve models (s)|SKIPPED|||≤1.5x raw parse|\n");
    std::printf("ROW|rust load peak RSS (MiB)|SKIPPED|||<300|\n");
    return 0;
  }
  // The Cargo context (one rustc run) is outside the timed region: it is per crate, not per file.
  auto ctx = cg::cargo::load_cargo_context(crate_dir, {});
  cg::rust::CfgSet cfg(ctx.cfgs);

  double best_ours = 1e9;
  std::size_t files = 0, items = 0, resolved = 0;
  std::vector<std::string> texts;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_s();
    auto c = cg::rust::Crate::load(crate_dir, root, &ctx, cfg, 2);
    resolved = resolve_everything(c);
    best_ours = std::min(best_ours, now_s() - t0);
    files = c.files().size();
    items = c.items().size();
    if (texts.empty())
      for (const auto& f : c.files())
        texts.push_back(f->text());
  }
  double best_raw = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_s();
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, cg::rust::rust_language());
    for (const auto& t : texts) {
      TSTree* tree =
          ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
      ts_tree_delete(tree);
    }
    ts_parser_delete(parser);
    best_raw = std::min(best_raw, now_s() - t0);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  double rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  double ratio = best_ours / best_raw;
  std::fprintf(stderr, "rust_load: %zu files, %zu items, %zu resolution candidates\n", files, items,
               resolved);
  std::printf("ROW|rust load+resolve models (s)|%.3f|%.3f|%.2f|≤1.5x raw parse|%s\n", best_ours,
              best_raw, ratio, ratio <= 1.5 ? "yes" : "no");
  std::printf("ROW|rust load peak RSS (MiB)|%.1f|300|%.2f|<300|%s\n", rss_mib, rss_mib / 300.0,
              rss_mib < 300 ? "yes" : "no");
  return 0;
}
