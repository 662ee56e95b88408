// The whole analysis (inventory and per-entrypoint dataflow) must survive any model file: deep
// tensor code, mutated forwards, recursion, absurd shapes. The input is the crate's src/lib.rs with
// candle 0.11.0 locked, so the audited op rules run. Invariants: every operation belongs to a known
// function, and every tensor an operation names exists.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "pipeline/pipeline.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("cg-fuzz-dataflow-" + std::to_string(::getpid()));
    fs::create_directories(d / "src");
    std::ofstream(d / "Cargo.toml") << "[package]\nname = \"f\"\nversion = \"0.1.0\"\n"
                                       "edition = \"2021\"\n[dependencies]\n"
                                       "candle-core = \"0.11.0\"\ncandle-nn = \"0.11.0\"\n";
    std::ofstream(d / "Cargo.lock") << "version = 3\n[[package]]\nname = \"candle-core\"\n"
                                       "version = \"0.11.0\"\n[[package]]\nname = \"candle-nn\"\n"
                                       "version = \"0.11.0\"\n";
    return d;
  }();
  {
    std::ofstream out(dir / "src/lib.rs", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    cg::pipeline::Options opts;
    opts.path = dir.string();
    auto a = cg::pipeline::analyze(opts);
    std::set<std::string> functions, tensors;
    for (const auto& f : a.ir.functions)
      functions.insert(f.id);
    for (const auto& t : a.ir.tensors)
      tensors.insert(t.id);
    for (const auto& op : a.ir.operations) {
      if (!functions.count(op.function)) __builtin_trap();
      for (const auto& t : op.inputs)
        if (!tensors.count(t)) __builtin_trap();
      if (!op.output.empty() && !tensors.count(op.output)) __builtin_trap();
    }
  } catch (const cg::InputError&) {
    // A clear input error is an acceptable answer.
  }
  return 0;
}
