// Hand-written tracing-chrome traces of real candle-transformers models (llama, bert, whisper),
// shaped as candle-examples' `--tracing` writes them: every span's module instance is checked.
// They run against a candle checkout only when CG_CANDLE_SRC is set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "runtime/tracing_chrome.hpp"
#include "rust/crate.hpp"

namespace cg {
namespace {

namespace fs = std::filesystem;

// A span as the model enters it: its name, the instance it must be attributed to ("" for a span
// that is time inside its enclosing instance, no record of its own), and the spans inside it.
struct Span {
  std::string name;
  std::string path;
  std::vector<Span> kids;
};

class Records : public runtime::RecordSink {
 public:
  void module_scope(const runtime::ModuleScopeRecord& r) override {
    path_at[r.start_ns] = std::string(r.path);
  }
  std::map<std::uint64_t, std::string> path_at;
};

// Writes the spans as B/E events (1 µs apart) and remembers the instance expected at each start.
class TraceWriter {
 public:
  void add(const Span& s) {
    std::uint64_t start = ts_++;
    event("B", s.name, start);
    expected_[start * 1000] = s.path;
    for (const Span& k : s.kids)
      add(k);
    event("E", s.name, ts_++);
  }
  fs::path write(const std::string& file) {
    fs::path p = fs::temp_directory_path() / file;
    std::ofstream out(p);
    out << "[\n" << text_ << "\n]\n";
    return p;
  }
  // Instances expected: start (ns) → path, "" for a span with no record of its own.
  const std::map<std::uint64_t, std::string>& expected() const { return expected_; }

 private:
  void event(const char* ph, const std::string& name, std::uint64_t ts) {
    if (!text_.empty()) text_ += ",\n";
    text_ += std::string(R"({"ph":")") + ph + R"(","pid":1,"tid":0,"ts":)" + std::to_string(ts) +
             R"(.0,"name":")" + name + R"(","cat":"candle",".file":"m.rs",".line":1})";
  }
  std::string text_;
  std::uint64_t ts_ = 1;
  std::map<std::uint64_t, std::string> expected_;
};

const char* candle_src() {
  const char* root = std::getenv("CG_CANDLE_SRC");
  return root && *root ? root : nullptr;
}

// Imports the trace against the model's IR; every span must land on its expected instance.
// `expected_findings`: substrings of the warnings the import must give (spans it cannot place).
void check(const std::string& root, const std::string& config, const TraceWriter& w,
           const std::string& file, const std::vector<std::string>& expected_findings = {}) {
  pipeline::Options o;
  o.path = (fs::path(candle_src()) / "candle-transformers").string();
  o.root = root;
  o.config = config;
  auto a = pipeline::analyze(o);
  auto loaded = rust::load_crate(o.path, {});
  auto catalog = pipeline::span_catalog(loaded.crate, a.ir);
  Records r;
  auto imp = runtime::import_tracing_chrome(fs::temp_directory_path() / file, catalog, r);
  std::size_t said = 0;
  for (const auto& f : imp.findings) {
    if (!f.warning) continue;
    bool expected = false;
    for (const auto& e : expected_findings)
      if (f.message.find(e) != std::string::npos) expected = true;
    if (expected) {
      ++said;
    } else {
      ADD_FAILURE() << f.rule << ": " << f.message;
    }
  }
  EXPECT_EQ(said, expected_findings.size());
  std::size_t wrong = 0;
  for (const auto& [start, path] : w.expected()) {
    auto it = r.path_at.find(start);
    std::string got = it == r.path_at.end() ? "" : it->second;
    if (got != path && ++wrong <= 20)
      ADD_FAILURE() << "span at " << start / 1000 << " µs: expected `" << path << "`, got `" << got
                    << "`";
  }
  EXPECT_EQ(wrong, 0u) << "of " << w.expected().size() << " spans";
}

std::string write_json(const std::string& file, const std::string& text) {
  fs::path p = fs::temp_directory_path() / file;
  std::ofstream(p) << text;
  return p.string();
}

// models::llama: `Llama` has no span; each `Block` ("block") holds two with_tracing RmsNorms
// ("rms-norm"), the attention ("attn", with "attn-rot" entered by its apply_rotary_emb for q and
// k) and the MLP ("mlp"); every projection is a with_tracing Linear ("linear", created in the
// `linear_no_bias` helper). Three decoding steps of a 2-layer model.
TraceWriter llama_trace() {
  TraceWriter w;
  auto lin = [](const std::string& p) { return Span{"linear", p, {}}; };
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 2; ++i) {
      std::string l = "model.layers." + std::to_string(i);
      w.add({"block",
             l,
             {{"rms-norm", l + ".input_layernorm", {}},
              {"attn",
               l + ".self_attn",
               {lin(l + ".self_attn.q_proj"), lin(l + ".self_attn.k_proj"),
                lin(l + ".self_attn.v_proj"), Span{"attn-rot", "", {}}, Span{"attn-rot", "", {}},
                lin(l + ".self_attn.o_proj")}},
              {"rms-norm", l + ".post_attention_layernorm", {}},
              {"mlp",
               l + ".mlp",
               {lin(l + ".mlp.gate_proj"), lin(l + ".mlp.up_proj"), lin(l + ".mlp.down_proj")}}}});
    }
    w.add({"rms-norm", "model.norm", {}});
    w.add({"linear", "lm_head", {}});
  }
  return w;
}

TEST(TracingCandle, LlamaEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = llama_trace();
  w.write("cg-llama.tracing-chrome.json");
  check("models::llama::Llama", "", w, "cg-llama.tracing-chrome.json");
}

TEST(TracingCandle, LlamaWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = llama_trace();
  w.write("cg-llama-cfg.tracing-chrome.json");
  auto cfg = write_json("cg-llama-2layer.json",
                        R"({"hidden_size":64,"intermediate_size":128,"vocab_size":100,)"
                        R"("num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":4,)"
                        R"("rms_norm_eps":1e-5,"rope_theta":10000.0,"max_position_embeddings":128,)"
                        R"("tie_word_embeddings":false})");
  check("models::llama::Llama", cfg, w, "cg-llama-cfg.tracing-chrome.json");
}

// models::bert: `model` (BertModel) → `embeddings` (its with_tracing LayerNorm) and `encoder` →
// `layer` per layer → `attn` → `self-attn` (query, key, value Linears; `softmax` is the same
// instance's second span) and `self-out` (dense, LayerNorm); `inter` (dense; `hidden-act` is a
// HiddenActLayer, not a module of the IR) and `out` (dense, LayerNorm). Two forward passes.
TraceWriter bert_trace(int layers) {
  TraceWriter w;
  auto leaf = [](const std::string& n, const std::string& p) { return Span{n, p, {}}; };
  for (int step = 0; step < 2; ++step) {
    Span enc{"encoder", "encoder", {}};
    for (int i = 0; i < layers; ++i) {
      std::string l = "encoder.layer." + std::to_string(i);
      enc.kids.push_back(
          {"layer",
           l,
           {{"attn",
             l + ".attention",
             {{"self-attn",
               l + ".attention.self",
               {leaf("linear", l + ".attention.self.query"),
                leaf("linear", l + ".attention.self.key"),
                leaf("linear", l + ".attention.self.value"), leaf("softmax", "")}},
              {"self-out",
               l + ".attention.output",
               {leaf("linear", l + ".attention.output.dense"),
                leaf("layer-norm", l + ".attention.output.LayerNorm")}}}},
            {"inter",
             l + ".intermediate",
             {leaf("linear", l + ".intermediate.dense"), leaf("hidden-act", "")}},
            {"out",
             l + ".output",
             {leaf("linear", l + ".output.dense"), leaf("layer-norm", l + ".output.LayerNorm")}}}});
    }
    w.add({"model",
           "",
           {{"embeddings", "embeddings", {leaf("layer-norm", "embeddings.LayerNorm")}}, enc}});
  }
  return w;
}

TEST(TracingCandle, BertEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = bert_trace(2);
  w.write("cg-bert.tracing-chrome.json");
  check("models::bert::BertModel", "", w, "cg-bert.tracing-chrome.json", {"`hidden-act`"});
}

TEST(TracingCandle, BertWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = bert_trace(12);
  w.write("cg-bert-cfg.tracing-chrome.json");
  check("models::bert::BertModel",
        (fs::path(CG_SOURCE_DIR) / "tools/published/bert-base-uncased.json").string(), w,
        "cg-bert-cfg.tracing-chrome.json", {"`hidden-act`"});
}

// models::whisper::model: `audio-encoder` (`conv1`, `conv2`: its own spans) → `residual-attn` per
// layer → `multi-head-attn` (q, k, v, out Linears; `-matmul`/`-softmax` are its own spans) and the
// MLP's fc1, fc2 (`fc2.forward(&fc1.forward(..))`: fc1 runs first); then one decoder step
// (`text-decoder` → blocks with self and cross attention, the cross attention's key/value not yet
// cached) and `text-decoder-final` (entered by `final_linear`, outside `text-decoder`).
TraceWriter whisper_trace(int layers) {
  TraceWriter w;
  auto leaf = [](const std::string& n, const std::string& p) { return Span{n, p, {}}; };
  auto mha = [&](const std::string& a) {
    return Span{"multi-head-attn",
                a,
                {leaf("linear", a + ".q_proj"), leaf("linear", a + ".k_proj"),
                 leaf("linear", a + ".v_proj"), leaf("multi-head-attn-matmul", ""),
                 leaf("multi-head-attn-softmax", ""), leaf("multi-head-attn-matmul", ""),
                 leaf("linear", a + ".out_proj")}};
  };
  Span enc{"audio-encoder", "model.encoder", {leaf("conv1", ""), leaf("conv2", "")}};
  for (int i = 0; i < layers; ++i) {
    std::string l = "model.encoder.layers." + std::to_string(i);
    enc.kids.push_back(
        {"residual-attn",
         l,
         {mha(l + ".self_attn"), leaf("linear", l + ".fc1"), leaf("linear", l + ".fc2")}});
  }
  w.add(enc);
  Span dec{"text-decoder", "model.decoder", {}};
  for (int i = 0; i < layers; ++i) {
    std::string l = "model.decoder.layers." + std::to_string(i);
    dec.kids.push_back({"residual-attn",
                        l,
                        {mha(l + ".self_attn"), mha(l + ".encoder_attn"),
                         leaf("linear", l + ".fc1"), leaf("linear", l + ".fc2")}});
  }
  w.add(dec);
  w.add({"text-decoder-final", "model.decoder", {}});
  return w;
}

TEST(TracingCandle, WhisperEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = whisper_trace(2);
  w.write("cg-whisper.tracing-chrome.json");
  check("models::whisper::model::Whisper", "", w, "cg-whisper.tracing-chrome.json");
}

TEST(TracingCandle, WhisperWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = whisper_trace(2);
  w.write("cg-whisper-cfg.tracing-chrome.json");
  auto cfg = write_json("cg-whisper-2layer.json",
                        R"({"num_mel_bins":80,"max_source_positions":1500,"d_model":64,)"
                        R"("encoder_attention_heads":4,"encoder_layers":2,"vocab_size":100,)"
                        R"("max_target_positions":448,"decoder_attention_heads":4,)"
                        R"("decoder_layers":2,"suppress_tokens":[]})");
  check("models::whisper::model::Whisper", cfg, w, "cg-whisper-cfg.tracing-chrome.json");
}

}  // namespace
}  // namespace cg
