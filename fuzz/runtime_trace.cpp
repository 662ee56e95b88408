// Trace files are written by users' programs and may be truncated, garbled or hostile. The reader
// is driven through a real file (it streams), in strict and lenient mode.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/cg-fuzz-trace-" + std::to_string(::getpid()) + ".jsonl";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (bool lenient : {false, true}) {
    try {
      cg::runtime::ReadOptions opts;
      opts.lenient = lenient;
      opts.max_line_bytes = 4096;
      (void)cg::runtime::read_traces({path}, opts);
    } catch (const cg::InputError&) {
    }
  }
  return 0;
}
