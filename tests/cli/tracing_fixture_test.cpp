// The tracing import on a crate of our own, so CI (no candle checkout) checks the mapping:
// tests/fixtures/crates/traced_decoder, a llama-shaped decoder timed as candle-transformers does
// (with_tracing-style wrappers creating `linear`/`rms-norm`/`embedding` spans, `block`, `attn`
// with its own `attn-rot` inside, `mlp`), plus a `mem-attn` per block that computes its key and
// value on the first call only. Hand-written traces in candle-examples' `--tracing` format; the
// instance of every span below is worked out from the fixture's source, not from the importer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "pipeline/pipeline.hpp"
#include "scratch.hpp"
#include "tracing_trace.hpp"

namespace cg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tracing_test::Span;
using tracing_test::TraceWriter;

const std::string kCrate =
    (fs::path(CG_SOURCE_DIR) / "tests/fixtures/crates/traced_decoder").string();
const std::string kConfig = kCrate + "/config.json";
const std::string kRoot = "model::TracedDecoder";

Span leaf(const std::string& name, const std::string& path) {
  return {name, path, {}};
}

// One decoding step. `TracedDecoder::forward` has no span: `embedding` (model.embed_tokens), a
// `block` per layer, then `rms-norm` (model.norm) and `linear` (lm_head, built at the root).
// Block::forward runs input_layernorm inside the call of self_attn (an argument completes first),
// then memory_attn, then post_attention_layernorm inside the call of mlp. Attention::forward:
// q_proj, k_proj, v_proj, then `rotate` (its own `attn-rot` span, no record) for q and k, then
// o_proj. MemoryAttention::forward: q_proj, then k_proj and v_proj only while its kv_cache is
// empty (`cached`), then o_proj. Mlp::forward: gate_proj, up_proj, down_proj.
void step(TraceWriter& w, int layers, bool cached) {
  w.add(leaf("embedding", "model.embed_tokens"));
  for (int i = 0; i < layers; ++i) {
    std::string l = "model.layers." + std::to_string(i);
    Span mem{"mem-attn", l + ".memory_attn", {leaf("linear", l + ".memory_attn.q_proj")}};
    if (!cached) {
      mem.kids.push_back(leaf("linear", l + ".memory_attn.k_proj"));
      mem.kids.push_back(leaf("linear", l + ".memory_attn.v_proj"));
    }
    mem.kids.push_back(leaf("linear", l + ".memory_attn.o_proj"));
    w.add({"block",
           l,
           {leaf("rms-norm", l + ".input_layernorm"),
            {"attn",
             l + ".self_attn",
             {leaf("linear", l + ".self_attn.q_proj"), leaf("linear", l + ".self_attn.k_proj"),
              leaf("linear", l + ".self_attn.v_proj"), leaf("attn-rot", ""), leaf("attn-rot", ""),
              leaf("linear", l + ".self_attn.o_proj")}},
            mem,
            leaf("rms-norm", l + ".post_attention_layernorm"),
            {"mlp",
             l + ".mlp",
             {leaf("linear", l + ".mlp.gate_proj"), leaf("linear", l + ".mlp.up_proj"),
              leaf("linear", l + ".mlp.down_proj")}}}});
  }
  w.add(leaf("rms-norm", "model.norm"));
  w.add(leaf("linear", "lm_head"));
}

// A prompt step, then two steps with the memory attention's key/value cached.
TraceWriter decode_trace() {
  TraceWriter w;
  for (int s = 0; s < 3; ++s)
    step(w, 2, s > 0);
  return w;
}

const runtime::ImportFinding* note(const runtime::TracingChromeImport& imp,
                                   const std::string& rule) {
  for (const auto& f : imp.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

TEST(TracingFixture, EverySpanOnItsInstance) {
  auto [imp, r] =
      tracing_test::check(kCrate, kRoot, "", decode_trace(), "cg-traced-decoder.tracing.json");
  // Records per step: embedding, per layer 17 (block, 2 norms, attn and its 4 linears, mem-attn
  // and its 4 linears, mlp and its 3), norm, lm_head: 37; a cached step has 2 linears less per
  // layer: 33. The 12 `attn-rot` spans have none.
  EXPECT_EQ(imp.module_scopes, 37u + 33 + 33);
}

TEST(TracingFixture, WithConfigEverySpanOnItsInstance) {
  tracing_test::check(kCrate, kRoot, kConfig, decode_trace(), "cg-traced-decoder-cfg.tracing.json");
}

// The cached steps run 2 of the memory attention's 4 linears: they are q_proj and o_proj (checked
// span by span above), and a note counts the 4 runs (2 steps × 2 layers) placed by alignment.
TEST(TracingFixture, CachedMemoryAttentionMapsByPosition) {
  for (const std::string& config : {std::string(), kConfig}) {
    auto [imp, r] = tracing_test::check(kCrate, kRoot, config, decode_trace(),
                                        "cg-traced-decoder-cache.tracing.json");
    const auto* skipped = note(imp, "runtime-span-skipped");
    ASSERT_NE(skipped, nullptr) << config;
    EXPECT_FALSE(skipped->warning);
    EXPECT_EQ(skipped->count, 4u);
    EXPECT_THAT(skipped->message, HasSubstr("`mem-attn`"));
    // Each span lasts 1 µs per span inside it, twice, plus 1: k_proj ran once per layer.
    EXPECT_EQ(r.total["model.layers.1.memory_attn.k_proj"], 1'000u);
    EXPECT_EQ(r.total["model.layers.1.memory_attn.o_proj"], 3'000u);
  }
}

// Tracing began after the first step: every run of the memory attention has 2 linears of 4 and
// none ran them all. The last goes on o_proj (the skipped calls lie between the first and the
// last), and a warning says the placement is assumed, not aligned with a full run.
TEST(TracingFixture, CachedFromTheStartIsPlacedAndSaidSo) {
  for (const std::string& config : {std::string(), kConfig}) {
    TraceWriter w;
    step(w, 2, true);
    step(w, 2, true);
    tracing_test::check(kCrate, kRoot, config, w, "cg-traced-decoder-cached.tracing.json",
                        {"4 `mem-attn` span(s) ran fewer spans inside them than they hold "
                         "instances, and no run of theirs in the trace ran them all"});
  }
}

// Tracing began after a first clip's prompt, then a second clip flushed the cache: its first
// step runs all four linears, later in the trace. The cached steps before it align with it.
TEST(TracingFixture, CachedRunsBeforeAFullOneAlignWithIt) {
  TraceWriter w;
  step(w, 2, true);
  step(w, 2, false);
  step(w, 2, true);
  auto [imp, r] =
      tracing_test::check(kCrate, kRoot, kConfig, w, "cg-traced-decoder-late.tracing.json");
  const auto* skipped = note(imp, "runtime-span-skipped");
  ASSERT_NE(skipped, nullptr);
  EXPECT_FALSE(skipped->warning);
  EXPECT_EQ(skipped->count, 4u);
}

// `attn-rot` is the attention's own span, entered inside `attn`: time inside self_attn, never a
// second record of it. What `profile` shows: self_attn's total is its 3 `attn` spans (13 µs each:
// 6 spans inside), its self time that less its 4 linears (1 µs each).
TEST(TracingFixture, NestedSpanOfTheSameModuleIsNotCountedTwice) {
  auto trace = decode_trace().write("cg-traced-decoder-inner.tracing.json");
  pipeline::Options o;
  o.path = kCrate;
  o.root = kRoot;
  o.config = kConfig;
  o.runtime_traces = {trace.string()};
  auto a = pipeline::analyze(o);
  ASSERT_TRUE(a.ir.runtime.has_value());
  std::map<std::string, std::uint64_t> total, self;
  for (const auto& m : a.ir.runtime->module_timings) {
    total[m.path] = m.total.total_ns;
    self[m.path] = m.self.total_ns;
  }
  for (const std::string l : {"model.layers.0", "model.layers.1"}) {
    EXPECT_EQ(total[l + ".self_attn"], 3u * 13'000) << l;
    EXPECT_EQ(self[l + ".self_attn"], 3u * (13'000 - 4'000)) << l;
  }
  EXPECT_EQ(total.count("model.layers.0.self_attn.attn-rot"), 0u);

  auto [imp, r] = tracing_test::check(kCrate, kRoot, kConfig, decode_trace(),
                                      "cg-traced-decoder-inner2.tracing.json");
  const auto* inner = note(imp, "runtime-span-inner");
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->count, 12u);  // 2 per attention, 2 layers, 3 steps
  EXPECT_THAT(inner->message, HasSubstr("`attn-rot` span(s) opened inside a `attn` span"));
}

// What a user reads: `candle-graph profile --format table` on the trace, one row per instance.
// The memory attention's k_proj ran on the first step only (1 call), its o_proj on all three;
// self_attn is 3 × 13 µs with 3 × 9 µs of it its own (attn-rot is inside, not a row).
TEST(TracingFixture, ProfileTableHasARowPerInstance) {
  auto trace = decode_trace().write("cg-traced-decoder-cli.tracing.json");
  auto out = cg_test::scratch_path("cg-traced-decoder-profile.txt");
  ASSERT_EQ(
      cg::cli::run({"profile", kCrate, "--root", kRoot, "--config", kConfig, "--runtime-trace",
                    trace.string(), "--format", "table", "--limit", "0", "-o", out.string()}),
      0);
  std::ifstream in(out);
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto row = [&](const std::string& path) {
    auto at = t.find("\n" + path + " ");
    return at == std::string::npos ? std::string()
                                   : t.substr(at + 1, t.find('\n', at + 1) - at - 1);
  };
  EXPECT_THAT(row("model.layers.1.memory_attn.k_proj"), ::testing::MatchesRegex(".* 1 +1 µs +1 µs"))
      << t;
  EXPECT_THAT(row("model.layers.1.memory_attn.o_proj"), ::testing::MatchesRegex(".* 3 +1 µs +1 µs"))
      << t;
  EXPECT_THAT(
      row("model.layers.0.self_attn"),
      ::testing::MatchesRegex("model.layers.0.self_attn +27 µs .* 39 µs .* 3 +13 µs +13 µs"))
      << t;
  EXPECT_EQ(t.find("attn-rot"), std::string::npos) << t;
  // 2 layers × 17 instances (block, 2 norms, 3 modules, 11 linears) + embed_tokens, norm,
  // lm_head: every one has its row.
  std::size_t rows = 0;
  for (std::size_t at = t.find("\nmodel."); at != std::string::npos;
       at = t.find("\nmodel.", at + 1))
    ++rows;
  EXPECT_EQ(rows + (row("lm_head").empty() ? 0 : 1), 2u * 17 + 3) << t;
}

// Spans that cannot be placed get no record and a warning per name with the reason: a name no
// function of the crate creates, a span of a type that is no module (`Sampler`'s `sample`), a
// `linear` inside `embedding` (no Linear lies below the embedding), and a third `rms-norm` in
// one block (it has two).
TEST(TracingFixture, UnmappedSpansAreReportedWithTheReason) {
  for (const std::string& config : {std::string(), kConfig}) {
    TraceWriter w;
    w.add({"embedding", "model.embed_tokens", {leaf("linear", "")}});
    w.add({"block",
           "model.layers.0",
           {leaf("rms-norm", "model.layers.0.input_layernorm"),
            leaf("rms-norm", "model.layers.0.post_attention_layernorm"), leaf("rms-norm", "")}});
    w.add(leaf("tokenize", ""));
    w.add(leaf("sample", ""));
    tracing_test::check(
        kCrate, kRoot, config, w, "cg-traced-decoder-unmapped.tracing.json",
        {"1 span(s) named `tokenize`: no function of the crate creates a span of that name",
         "1 `sample` span(s) not attributed to a module: created by `model::Sampler`",
         "1 `linear` span(s) not attributed to a module: no instance of its types lies below "
         "`model.embed_tokens`",
         "1 `rms-norm` span(s) not attributed to a module: more of them inside one `block` span "
         "(model.layers.0) than instances of their types below it"});
  }
}

}  // namespace
}  // namespace cg
