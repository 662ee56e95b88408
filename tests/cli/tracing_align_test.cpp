// Positional mapping by nesting (tracing import): a run with fewer spans than its module's longest
// run is aligned with that run only where it has fewer spans of a name than instances to put them
// on. Instances of one type that hold different numbers of children (a conv net's stages of 3
// and 2 blocks) run them all and are read in call order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/tracing_chrome.hpp"
#include "tracing_trace.hpp"

namespace cg {
namespace {

using tracing_test::Records;
using tracing_test::Span;
using tracing_test::TraceWriter;

// Net → stages.0 (3 blocks), stages.1 (2 blocks); `Stage` creates "stage", `Block` "block".
runtime::SpanCatalog stages_catalog() {
  runtime::SpanCatalog c;
  auto add = [&](const std::string& type, const std::string& prefix,
                 std::optional<std::size_t> parent, const std::string& source) {
    runtime::SpanCatalog::Module m;
    m.type = type;
    m.prefix = prefix;
    m.parent = parent;
    m.source = source;
    c.modules.push_back(m);
    return c.modules.size() - 1;
  };
  std::size_t net = add("net::Net", "", std::nullopt, "src/net.rs:40");
  for (int s = 0; s < 2; ++s) {
    std::string stage = "stages." + std::to_string(s);
    std::size_t st = add("net::Stage", stage, net, "src/net.rs:30");
    for (int b = 0; b < 3 - s; ++b)
      add("net::Block", stage + ".blocks." + std::to_string(b), st, "src/net.rs:20");
  }
  c.types_by_span["stage"] = {{"net::Stage", "src/net.rs:31"}};
  c.types_by_span["block"] = {{"net::Block", "src/net.rs:21"}};
  return c;
}

TEST(TracingAlign, StagesOfDifferentDepthRunInCallOrder) {
  TraceWriter w;
  auto block = [](const std::string& p) { return Span{"block", p, {}}; };
  for (int step = 0; step < 2; ++step) {
    w.add({"stage",
           "stages.0",
           {block("stages.0.blocks.0"), block("stages.0.blocks.1"), block("stages.0.blocks.2")}});
    w.add({"stage", "stages.1", {block("stages.1.blocks.0"), block("stages.1.blocks.1")}});
  }
  Records r;
  auto imp =
      runtime::import_tracing_chrome(w.write("cg-align-stages.tracing.json"), stages_catalog(), r);
  for (const auto& f : imp.findings)
    ADD_FAILURE() << f.rule << ": " << f.message;  // nothing skipped, nothing unplaced
  for (const auto& [start, path] : w.expected())
    EXPECT_EQ(r.path_at[start], path) << "span at " << start / 1000 << " µs";
  EXPECT_EQ(imp.module_scopes, w.expected().size());
}

}  // namespace
}  // namespace cg
