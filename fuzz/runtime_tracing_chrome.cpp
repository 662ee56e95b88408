// Chrome traces come from users' programs (tracing-chrome) and may be cut, garbled or hostile.
// The importer reads one through a real file, strict and lenient, against tiny-llama's module
// tree: it must end in records or a cg::InputError, never a crash or hang, and every scope it
// hands on must lie inside the trace (start + duration does not wrap).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/tracing_chrome.hpp"
#include "util/error.hpp"

namespace {

class Check : public cg::runtime::RecordSink {
 public:
  void module_scope(const cg::runtime::ModuleScopeRecord& r) override {
    if (r.start_ns + r.duration_ns < r.start_ns || r.event_id.empty()) std::abort();
  }
};

cg::runtime::SpanCatalog catalog() {
  cg::runtime::SpanCatalog c;
  // type, prefix, parent, declared type, constructor call site, forward rank
  c.modules = {{"m::Model", "", std::nullopt, "", "src/lib.rs:1", std::nullopt},
               {"m::Block", "model.layers.{i}", 0, "", "src/lib.rs:2", 0},
               {"m::Attn", "model.layers.{i}.self_attn", 1, "", "src/lib.rs:3", 0},
               {"nn::Norm", "model.layers.{i}.norm", 1, "w::Norm", "src/lib.rs:4", 1},
               {"nn::Norm", "model.norm", 0, "", "src/lib.rs:5", 1}};
  c.types_by_span["model"]["m::Model"] = "";
  c.types_by_span["block"]["m::Block"] = "";
  c.types_by_span["attn"]["m::Attn"] = "";
  c.types_by_span["norm"]["nn::Norm"] = "";
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/cg-fuzz-chrome-" + std::to_string(::getpid()) + ".json";
  static const cg::runtime::SpanCatalog cat = catalog();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (bool lenient : {false, true}) {
    cg::runtime::ReadOptions opts;
    opts.lenient = lenient;
    opts.max_records = 1 << 16;
    Check sink;
    try {
      (void)cg::runtime::import_tracing_chrome(path, cat, sink, opts);
    } catch (const cg::InputError&) {
    }
  }
  return 0;
}
