// The parameter inventory must survive any model file: mutated constructors, absurd loop bounds
// under a bound config, deep nesting, recursion. The input is the crate's src/lib.rs; the config
// binds small numbers so loops expand. Invariants: every parameter points at an existing module of
// its component, and every finding names a source.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "analysis/config_values.hpp"
#include "analysis/inventory.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("cg-fuzz-inventory-" + std::to_string(::getpid()));
    fs::create_directories(d / "src");
    return d;
  }();
  static const cg::analysis::ConfigValues config = cg::analysis::parse_config_values(
      R"({"vocab_size": 64, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 3,
          "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
          "tie_word_embeddings": false, "n_layer": 2, "d": 8, "bias": true})",
      "config.json");
  {
    std::ofstream out(dir / "src/lib.rs", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    auto crate = cg::rust::Crate::load(dir, dir / "src/lib.rs", nullptr, cg::rust::CfgSet{}, 1);
    for (const cg::analysis::ConfigValues* cfg :
         {static_cast<const cg::analysis::ConfigValues*>(nullptr), &config}) {
      cg::ir::ModelIr ir;
      cg::analysis::InventoryOptions opts;
      opts.candle_nn_version = "0.11.0";
      opts.config = cfg;
      cg::analysis::build_inventory(crate, opts, ir);
      std::set<std::string> modules;
      for (const auto& m : ir.modules)
        modules.insert(m.id);
      for (const auto& p : ir.parameters)
        if (!p.module || !modules.count(*p.module)) __builtin_trap();
      for (const auto& f : ir.findings)
        if (f.rule == "structure-unresolved" && (!f.source || f.source->empty())) __builtin_trap();
    }
  } catch (const cg::InputError&) {
    // A clear input error is an acceptable answer.
  }
  return 0;
}
