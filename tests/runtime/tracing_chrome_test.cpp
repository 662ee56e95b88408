// The tracing-chrome importer: spans in the Chrome trace tracing-chrome writes become module
// scopes keyed by VarBuilder path, the instance chosen by structure (the n-th `block` inside one
// `model` span is `model.layers.n`), with findings for what structure does not decide and for bad
// input.
#include "runtime/tracing_chrome.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "trace_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using testing::fixture;
using ::testing::HasSubstr;
using testing::write_temp;

struct Scope {
  std::string path;
  std::uint64_t start_ns, duration_ns, thread;
  std::string event_id, parent;
};

class Scopes : public RecordSink {
 public:
  void module_scope(const ModuleScopeRecord& r) override {
    all.push_back({std::string(r.path), r.start_ns, r.duration_ns, r.thread,
                   std::string(r.event_id), std::string(r.parent.value_or(""))});
    total[std::string(r.path)] += r.duration_ns;
    ++calls[std::string(r.path)];
  }
  std::vector<Scope> all;
  std::map<std::string, std::uint64_t> total, calls;
};

// tiny-llama's module tree (the IR's module prefixes) and its span calls.
SpanCatalog tiny_llama() {
  SpanCatalog c;
  c.modules = {
      {"model::TinyLlama", "", std::nullopt, {}, {}, {}},                                 // 0
      {"model::Block", "model.layers.{layer_idx}", 0, {}, {}, {}},                        // 1
      {"model::Attention", "model.layers.{layer_idx}.self_attn", 1, {}, {}, {}},          // 2
      {"model::Mlp", "model.layers.{layer_idx}.mlp", 1, {}, {}, {}},                      // 3
      {"candle_nn::RmsNorm", "model.layers.{layer_idx}.input_layernorm", 1, {}, {}, {}},  // 4
      {"candle_nn::RmsNorm", "model.norm", 0, {}, {}, {}},                                // 5
      {"candle_nn::RmsNorm",
       "model.layers.{layer_idx}.post_attention_layernorm",
       1,
       {},
       {},
       {}},  // 6
  };
  c.types_by_span["model"]["model::TinyLlama"] = "src/model.rs:201";
  c.types_by_span["block"]["model::Block"] = "src/model.rs:153";
  c.types_by_span["attn"]["model::Attention"] = "src/model.rs:23";
  c.types_by_span["mlp"]["model::Mlp"] = "src/model.rs:120";
  c.types_by_span["rms-norm"]["candle_nn::RmsNorm"] = "src/with_tracing.rs:9";
  return c;
}

const ImportFinding* finding(const TracingChromeImport& r, const std::string& rule,
                             const std::string& text = "") {
  for (const auto& f : r.findings)
    if (f.rule == rule && f.message.find(text) != std::string::npos) return &f;
  return nullptr;
}

// The fixture is two forward passes of 4 layers. Layer n's block runs 150+10n µs in the first
// pass and 150.5+10n µs in the second; its attention 60+n µs, its MLP 50 µs, each pass.
TEST(TracingChrome, PerLayerTimesComeFromStructure) {
  Scopes s;
  auto r = import_tracing_chrome(fixture("tiny_llama.tracing-chrome.json"), tiny_llama(), s);
  EXPECT_EQ(r.spans, 2u * (1 + 4 * 3));
  EXPECT_EQ(r.module_scopes, r.spans);
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
  EXPECT_EQ(s.calls[""], 2u);
  EXPECT_EQ(s.total[""], 1'800'000u);  // two 900 µs passes
  for (int n = 0; n < 4; ++n) {
    std::string layer = "model.layers." + std::to_string(n);
    EXPECT_EQ(s.calls[layer], 2u) << layer;
    EXPECT_EQ(s.total[layer], static_cast<std::uint64_t>(300'500 + 20'000 * n)) << layer;
    EXPECT_EQ(s.total[layer + ".self_attn"], static_cast<std::uint64_t>(2 * (60'000 + 1'000 * n)));
    EXPECT_EQ(s.total[layer + ".mlp"], 100'000u);
  }
  EXPECT_EQ(s.total.size(), 1u + 4 * 3);  // nothing attributed elsewhere
  // Parents link the scopes as the spans nested: an attention's parent is its layer's block.
  std::map<std::string, std::string> path_of;
  for (const auto& x : s.all)
    path_of[x.event_id] = x.path;
  for (const auto& x : s.all) {
    if (x.path == "model.layers.2.self_attn") {
      EXPECT_EQ(path_of[x.parent], "model.layers.2");
    }
    if (x.path == "model.layers.2") {
      EXPECT_EQ(path_of[x.parent], "");
      EXPECT_FALSE(x.parent.empty());
    }
    if (x.path.empty()) {
      EXPECT_EQ(x.parent, "");
    }
  }
  EXPECT_EQ(s.all.front().start_ns, 115'000u);  // first closed: layer 0's attention at 115 µs
}

TEST(TracingChrome, WithoutAnEnclosingSpanTheNthBlockOfAStepIsLayerN) {
  // Two `block` spans and no `model` span (candle's llama.rs: `Llama` has no span): the n-th
  // block at the top of the thread is layer n; a block after the step's final norm starts over.
  auto p = write_temp("blocks_only.json", R"([{"ph":"B","pid":1,"tid":0,"ts":1,"name":"block"},)"
                                          R"({"ph":"B","pid":1,"tid":0,"ts":2,"name":"attn"},)"
                                          R"({"ph":"E","pid":1,"tid":0,"ts":3,"name":"attn"},)"
                                          R"({"ph":"E","pid":1,"tid":0,"ts":4,"name":"block"},)"
                                          R"({"ph":"B","pid":1,"tid":0,"ts":5,"name":"block"},)"
                                          R"({"ph":"E","pid":1,"tid":0,"ts":9,"name":"block"},)"
                                          R"({"ph":"X","pid":1,"tid":0,"ts":10,"dur":1,)"
                                          R"("name":"rms-norm"},)"
                                          R"({"ph":"X","pid":1,"tid":0,"ts":12,"dur":2,)"
                                          R"("name":"block"}])");
  Scopes s;
  auto r = import_tracing_chrome(p, tiny_llama(), s);
  EXPECT_EQ(s.total["model.layers.0"], 3'000u + 2'000u);
  EXPECT_EQ(s.total["model.layers.0.self_attn"], 1'000u);
  EXPECT_EQ(s.total["model.layers.1"], 4'000u);
  EXPECT_EQ(s.total["model.norm"], 1'000u);
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
}

TEST(TracingChrome, SiblingInstancesOfOneSpanNameAreTakenInConstructorOrder) {
  // A block has two RmsNorm instances that create `rms-norm`: the first inside one block span is
  // the first constructed (input_layernorm), the second post_attention_layernorm. The model's own
  // RmsNorm (`model.norm`) is the only candidate directly inside the `model` span.
  auto p =
      write_temp("norms.json", R"([{"ph":"B","pid":1,"tid":0,"ts":0,"name":"model"},)"
                               R"({"ph":"B","pid":1,"tid":0,"ts":1,"name":"block"},)"
                               R"({"ph":"X","pid":1,"tid":0,"ts":1,"dur":1,"name":"rms-norm"},)"
                               R"({"ph":"X","pid":1,"tid":0,"ts":2,"dur":1,"name":"rms-norm"},)"
                               R"({"ph":"X","pid":1,"tid":0,"ts":3,"dur":1,"name":"rms-norm"},)"
                               R"({"ph":"E","pid":1,"tid":0,"ts":4,"name":"block"},)"
                               R"({"ph":"X","pid":1,"tid":0,"ts":5,"dur":3,"name":"rms-norm"},)"
                               R"({"ph":"E","pid":1,"tid":0,"ts":10,"name":"model"}])");
  Scopes s;
  auto r = import_tracing_chrome(p, tiny_llama(), s);
  EXPECT_EQ(s.total["model.layers.0.input_layernorm"], 1'000u);
  EXPECT_EQ(s.total["model.layers.0.post_attention_layernorm"], 1'000u);
  EXPECT_EQ(s.total["model.norm"], 3'000u);
  EXPECT_EQ(s.total["model.layers.0"], 3'000u);
  EXPECT_EQ(s.total[""], 10'000u);
  // A third `rms-norm` in one block has no instance left: said, not guessed.
  const ImportFinding* f = finding(r, "runtime-span-unmatched", "`rms-norm`");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("1 `rms-norm` span(s) not attributed to a module: more of "
                                    "them inside one `block` span (model.layers.0)"));
  EXPECT_EQ(f->count, 1u);
}

TEST(TracingChrome, ASpanInsideASpanOfTheSameInstanceIsTimeInsideIt) {
  // candle's llama: `attn-rot` (CausalSelfAttention's span_rot) is entered inside `attn`.
  SpanCatalog c = tiny_llama();
  c.types_by_span["attn-rot"]["model::Attention"] = "src/model.rs:24";
  auto p = write_temp("rot.json", R"([{"ph":"B","pid":1,"tid":0,"ts":0,"name":"model"},)"
                                  R"({"ph":"B","pid":1,"tid":0,"ts":1,"name":"block"},)"
                                  R"({"ph":"B","pid":1,"tid":0,"ts":2,"name":"attn"},)"
                                  R"({"ph":"X","pid":1,"tid":0,"ts":3,"dur":1,"name":"attn-rot"},)"
                                  R"({"ph":"X","pid":1,"tid":0,"ts":4,"dur":1,"name":"attn-rot"},)"
                                  R"({"ph":"E","pid":1,"tid":0,"ts":6,"name":"attn"},)"
                                  R"({"ph":"E","pid":1,"tid":0,"ts":7,"name":"block"},)"
                                  R"({"ph":"E","pid":1,"tid":0,"ts":8,"name":"model"}])");
  Scopes s;
  auto r = import_tracing_chrome(p, c, s);
  EXPECT_EQ(s.total["model.layers.0.self_attn"], 4'000u);
  EXPECT_EQ(s.calls["model.layers.0.self_attn"], 1u);  // one record, not three
  const ImportFinding* f = finding(r, "runtime-span-inner", "`attn-rot`");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->warning);
  EXPECT_EQ(f->count, 2u);
}

TEST(TracingChrome, UnknownNamesAndUnbalancedEventsAreCountedNotFatal) {
  auto p = write_temp("unbalanced.json",
                      R"([{"ph":"E","pid":1,"tid":0,"ts":0.5,"name":"block"},)"  // no B
                      R"({"ph":"B","pid":1,"tid":0,"ts":1,"name":"model"},)"
                      R"({"ph":"B","pid":1,"tid":0,"ts":2,"name":"sampling"},)"  // unknown
                      R"({"ph":"E","pid":1,"tid":0,"ts":3,"name":"sampling"},)"
                      R"({"ph":"B","pid":1,"tid":0,"ts":4,"name":"block"},)"  // never ended
                      R"({"ph":"E","pid":1,"tid":0,"ts":8,"name":"model"},)"
                      R"({"ph":"B","pid":1,"tid":1,"ts":9,"name":"model"}])");  // open at end
  Scopes s;
  auto r = import_tracing_chrome(p, tiny_llama(), s);
  EXPECT_EQ(s.total[""], 7'000u);
  EXPECT_EQ(s.calls.size(), 1u);
  ASSERT_NE(finding(r, "runtime-span-unknown"), nullptr);
  EXPECT_THAT(finding(r, "runtime-span-unknown")->message, HasSubstr("1 span(s) named `sampling`"));
  std::string unbalanced;
  for (const auto& f : r.findings)
    if (f.rule == "runtime-span-unbalanced") unbalanced += f.message + "\n";
  EXPECT_THAT(unbalanced, HasSubstr("1 `E` event(s) close no open span"));
  EXPECT_THAT(unbalanced, HasSubstr("1 span(s) were never ended before an enclosing span ended"));
  ASSERT_NE(finding(r, "runtime-span-open"), nullptr);
  EXPECT_EQ(finding(r, "runtime-span-open")->count, 1u);
  EXPECT_EQ(r.threads, 2u);
}

TEST(TracingChrome, AnUnterminatedArrayIsReadAndReportedAsTruncated) {
  // What tracing-chrome leaves when the program exits without dropping its FlushGuard.
  auto p = write_temp("unterminated.json",
                      "[\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1,\"name\":\"model\"},\n"
                      "{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":3,\"name\":\"model\"},\n");
  Scopes s;
  auto r = import_tracing_chrome(p, tiny_llama(), s);
  EXPECT_EQ(s.total[""], 2'000u);
  EXPECT_TRUE(r.info.truncated);
  ASSERT_NE(finding(r, "runtime-truncated"), nullptr);
  EXPECT_THAT(finding(r, "runtime-truncated")->message, HasSubstr("not closed"));
}

TEST(TracingChrome, ACutInsideAnEventFailsNamingTheLineOrIsSkippedWhenLenient) {
  auto p = write_temp("cut.json",
                      "[\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1,\"name\":\"model\"},\n"
                      "{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":3,\"name\":\"model\"},\n"
                      "{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":4,\"na");
  Scopes s;
  try {
    (void)import_tracing_chrome(p, tiny_llama(), s);
    FAIL() << "a cut event must fail in strict mode";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cut.json:4: trace ends inside an event"));
  }
  ReadOptions lenient;
  lenient.lenient = true;
  Scopes s2;
  auto r = import_tracing_chrome(p, tiny_llama(), s2, lenient);
  EXPECT_EQ(s2.total[""], 2'000u);
  ASSERT_NE(finding(r, "runtime-truncated"), nullptr);
  EXPECT_THAT(finding(r, "runtime-truncated")->message, HasSubstr("ends inside an event"));
}

TEST(TracingChrome, BadEventsNameTheirLine) {
  auto p = write_temp("bad_ts.json", "[\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"name\":\"model\"}\n]");
  Scopes s;
  try {
    (void)import_tracing_chrome(p, tiny_llama(), s);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad_ts.json:2: `B` event has no `ts`"));
  }
  auto q = write_temp("not_events.json", "[1,2]");
  EXPECT_THROW((void)import_tracing_chrome(q, tiny_llama(), s), InputError);
  auto obj =
      write_temp("object_form.json",
                 R"({"traceEvents":[{"ph":"X","pid":1,"tid":0,"ts":1,"dur":4,"name":"model"}]})");
  EXPECT_TRUE(is_chrome_trace(obj));
  Scopes s3;
  (void)import_tracing_chrome(obj, tiny_llama(), s3);
  EXPECT_EQ(s3.total[""], 4'000u);
}

TEST(TracingChrome, DetectionByContent) {
  EXPECT_TRUE(is_chrome_trace(fixture("tiny_llama.tracing-chrome.json")));
  EXPECT_FALSE(is_chrome_trace(fixture("v4_two_threads.jsonl")));
  EXPECT_FALSE(is_chrome_trace(fixture("v1_document.json")));
}

}  // namespace
}  // namespace cg::runtime
