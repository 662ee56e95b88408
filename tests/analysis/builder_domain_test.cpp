// The builder/prefix domain on the interpreter (src/analysis/builder/) against the syntax walker
// it replaces (issue #19): the inventory of every fixture crate and of examples/tiny-llama, run
// both ways, must give the same components, modules, parameters and findings — except the
// crates listed with the reason they differ (the port's deliberate fixes, or what remains).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "analysis/config_values.hpp"
#include "analysis/inventory.hpp"
#include "rust/crate.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The inventory IR (normalized JSON) of crate `dir`, by the walker or the engine.
std::string inventory_json(const fs::path& dir, bool engine) {
  cg::cargo::Selection sel;
  auto loaded = cg::rust::load_crate(dir, sel);
  std::optional<cg::analysis::ConfigValues> cfg;
  if (fs::exists(dir / "config.json"))
    cfg = cg::analysis::parse_config_values(read_file(dir / "config.json"), "config.json");
  cg::analysis::InventoryOptions opts;
  opts.candle_nn_version = "0.11.0";
  opts.config = cfg ? &*cfg : nullptr;
  opts.engine = engine;
  cg::ir::ModelIr ir;
  try {
    cg::analysis::build_inventory(loaded.crate, opts, ir);
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
  cg::ir::normalize(ir);
  return cg::ir::write_model_ir(ir);
}

std::vector<fs::path> crates() {
  std::vector<fs::path> out;
  const fs::path root = fs::path(CG_SOURCE_DIR) / "tests" / "fixtures" / "crates";
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "Cargo.toml") && fs::exists(e.path() / "src"))
      out.push_back(e.path());
  out.push_back(fs::path(CG_SOURCE_DIR) / "examples" / "tiny-llama");
  std::sort(out.begin(), out.end());
  // CG_PARITY_CRATES: more crates (colon-separated), e.g. candle-transformers.
  if (const char* more = std::getenv("CG_PARITY_CRATES")) {
    std::stringstream in(more);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) out.push_back(d);
  }
  return out;
}

TEST(BuilderDomain, GivesTheWalkersInventoryOnTheFixtureCrates) {
  const char* dump = std::getenv("CG_PARITY_DUMP");  // a folder: both outputs of each mismatch
  std::vector<std::string> differ;
  for (const auto& dir : crates()) {
    std::string walker = inventory_json(dir, false), engine = inventory_json(dir, true);
    if (walker == engine) continue;
    differ.push_back(dir.filename().string());
    if (dump != nullptr) {
      std::ofstream(fs::path(dump) / (dir.filename().string() + ".walker.json")) << walker;
      std::ofstream(fs::path(dump) / (dir.filename().string() + ".engine.json")) << engine;
    }
  }
  std::string list;
  for (const auto& d : differ)
    list += d + " ";
  EXPECT_TRUE(differ.empty()) << "the engine's inventory differs for: " << list;
}

}  // namespace
