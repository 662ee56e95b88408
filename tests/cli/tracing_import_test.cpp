// tiny-llama creates `tracing` spans in its constructors and enters them in forward, as
// candle-transformers' models do. The analyzer finds which type creates which span, and a Chrome
// trace in tracing-chrome's format imports as per-layer module scopes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "pipeline/pipeline.hpp"
#include "runtime/tracing_chrome.hpp"
#include "rust/crate.hpp"
#include "rust/span_sites.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace cg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kCrate = fs::path(CG_SOURCE_DIR) / "examples/tiny-llama";
const fs::path kTrace =
    fs::path(CG_SOURCE_DIR) / "tests/runtime/fixtures/tiny_llama.tracing-chrome.json";

class Totals : public runtime::RecordSink {
 public:
  void module_scope(const runtime::ModuleScopeRecord& r) override {
    total[std::string(r.path)] += r.duration_ns;
  }
  std::map<std::string, std::uint64_t> total;
};

TEST(TracingImport, SpanSitesOfTinyLlamaAreItsConstructors) {
  auto loaded = rust::load_crate(kCrate, {});
  std::map<std::string, std::string> owner;
  for (const auto& s : rust::find_span_sites(loaded.crate)) {
    EXPECT_TRUE(s.in_constructor) << s.name << " in " << s.function;
    owner[s.name] = s.owner_type;
  }
  EXPECT_EQ(owner, (std::map<std::string, std::string>{{"attn", "model::Attention"},
                                                       {"block", "model::Block"},
                                                       {"mlp", "model::Mlp"},
                                                       {"model", "model::TinyLlama"}}));
}

TEST(TracingImport, TinyLlamaTraceGivesPerLayerTimes) {
  pipeline::Options o;
  o.path = kCrate.string();
  auto a = pipeline::analyze(o);
  auto loaded = rust::load_crate(kCrate, {});
  auto catalog = pipeline::span_catalog(loaded.crate, a.ir);
  Totals t;
  auto r = runtime::import_tracing_chrome(kTrace, catalog, t);
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
  // Layer n's block: 150+10n µs in the first pass, 150.5+10n µs in the second.
  for (int n = 0; n < 4; ++n) {
    std::string layer = "model.layers." + std::to_string(n);
    EXPECT_EQ(t.total[layer], static_cast<std::uint64_t>(300'500 + 20'000 * n)) << layer;
    EXPECT_EQ(t.total[layer + ".self_attn"], static_cast<std::uint64_t>(120'000 + 2'000 * n));
    EXPECT_EQ(t.total[layer + ".mlp"], 100'000u);
  }
  EXPECT_EQ(t.total[""], 1'800'000u);
}

TEST(TracingImport, ProfileAcceptsTheChromeTraceAndRefusesOtherText) {
  pipeline::Options o;
  o.path = kCrate.string();
  o.runtime_traces = {kTrace.string()};
  auto a = pipeline::analyze(o);
  ASSERT_EQ(a.traces.size(), 1u);
  EXPECT_EQ(a.traces[0].meta.entrypoint, "tracing-chrome");
  EXPECT_TRUE(a.rejected_traces.empty());
  // The spans reach the IR's per-module timings like profiler module scopes.
  ASSERT_TRUE(a.ir.runtime.has_value());
  std::map<std::string, std::uint64_t> total, self;
  for (const auto& m : a.ir.runtime->module_timings) {
    total[m.path] = m.total.total_ns;
    self[m.path] = m.self.total_ns;
  }
  EXPECT_EQ(total["model.layers.3"], 360'500u);
  EXPECT_EQ(self["model.layers.3"], 360'500u - 126'000u - 100'000u);  // less attention and MLP
  EXPECT_EQ(total["model.layers.0.mlp"], 100'000u);

  auto bad = cg_test::scratch_path("cg-tracing-import-bad.txt");
  { std::ofstream(bad) << "hello\n"; }
  o.runtime_traces = {bad.string()};
  try {
    (void)pipeline::analyze(o);
    FAIL() << "text that is neither format must be refused";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(bad.string() + ": neither a candle-graph runtime trace"));
    EXPECT_THAT(e.what(), HasSubstr("nor a tracing-chrome trace"));
  }
  fs::remove(bad);
}

}  // namespace
}  // namespace cg
