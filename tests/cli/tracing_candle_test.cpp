// Hand-written tracing-chrome traces of real candle-transformers models (llama, bert, whisper),
// shaped as candle-examples' `--tracing` writes them: every span's module instance is checked.
// They run against a candle checkout only when CG_CANDLE_SRC is set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tracing_trace.hpp"

namespace cg {
namespace {

namespace fs = std::filesystem;
using tracing_test::Span;
using tracing_test::TraceWriter;
using tracing_test::write_json;

const char* candle_src() {
  const char* root = std::getenv("CG_CANDLE_SRC");
  return root && *root ? root : nullptr;
}

// Imports the trace against candle-transformers' model `root`; every span on its instance.
void check(const std::string& root, const std::string& config, const TraceWriter& w,
           const std::string& file, const std::vector<std::string>& expected_findings = {}) {
  tracing_test::check((fs::path(candle_src()) / "candle-transformers").string(), root, config, w,
                      file, expected_findings);
}

// models::llama: `Llama` has no span; each `Block` ("block") holds two with_tracing RmsNorms
// ("rms-norm"), the attention ("attn", with "attn-rot" entered by its apply_rotary_emb for q and
// k) and the MLP ("mlp"); every projection is a with_tracing Linear ("linear", created in the
// `linear_no_bias` helper). Three decoding steps of a 2-layer model. The head's span lands on
// `head`: with no config `tie_word_embeddings` is undecided and both heads are alternatives of the
// field `lm_head`; the importer takes the first built, the tied one (`Linear::from_weights` of the
// embedding's tensor, a module at the embedding's key).
TraceWriter llama_trace(const std::string& head = "lm_head") {
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
    w.add({"linear", head, {}});
  }
  return w;
}

TEST(TracingCandle, LlamaEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = llama_trace("model.embed_tokens");
  check("models::llama::Llama", "", w, "cg-llama.tracing-chrome.json");
}

TEST(TracingCandle, LlamaWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = llama_trace();
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
  check("models::bert::BertModel", "", w, "cg-bert.tracing-chrome.json", {"`hidden-act`"});
}

TEST(TracingCandle, BertWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = bert_trace(12);
  check("models::bert::BertModel",
        (fs::path(CG_SOURCE_DIR) / "tools/published/bert-base-uncased.json").string(), w,
        "cg-bert-cfg.tracing-chrome.json", {"`hidden-act`"});
}

// models::whisper::model: `audio-encoder` (`conv1`, `conv2`: its own spans) → `residual-attn` per
// layer → `multi-head-attn` (q, k, v, out Linears; `-matmul`/`-softmax` are its own spans) and the
// MLP's fc1, fc2 (`fc2.forward(&fc1.forward(..))`: fc1 runs first); then three decoder steps
// (`text-decoder` → blocks with self and cross attention) each followed by `text-decoder-final`
// (entered by `final_linear`, outside `text-decoder`). The cross attention computes its key and
// value on the first step only (its kv_cache): later steps run only its q_proj and out_proj.
TraceWriter whisper_trace(int layers, bool cached_from_start = false) {
  TraceWriter w;
  auto leaf = [](const std::string& n, const std::string& p) { return Span{n, p, {}}; };
  auto mha = [&](const std::string& a, bool cached = false) {
    Span s{"multi-head-attn", a, {leaf("linear", a + ".q_proj")}};
    if (!cached) {
      s.kids.push_back(leaf("linear", a + ".k_proj"));
      s.kids.push_back(leaf("linear", a + ".v_proj"));
    }
    for (const char* inner :
         {"multi-head-attn-matmul", "multi-head-attn-softmax", "multi-head-attn-matmul"})
      s.kids.push_back(leaf(inner, ""));
    s.kids.push_back(leaf("linear", a + ".out_proj"));
    return s;
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
  for (int step = 0; step < 3; ++step) {
    Span dec{"text-decoder", "model.decoder", {}};
    for (int i = 0; i < layers; ++i) {
      std::string l = "model.decoder.layers." + std::to_string(i);
      dec.kids.push_back(
          {"residual-attn",
           l,
           {mha(l + ".self_attn"), mha(l + ".encoder_attn", cached_from_start || step > 0),
            leaf("linear", l + ".fc1"), leaf("linear", l + ".fc2")}});
    }
    w.add(dec);
    w.add({"text-decoder-final", "model.decoder", {}});
  }
  return w;
}

TEST(TracingCandle, WhisperEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = whisper_trace(2);
  check("models::whisper::model::Whisper", "", w, "cg-whisper.tracing-chrome.json");
}

TEST(TracingCandle, WhisperWithConfigEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = whisper_trace(2);
  auto cfg = write_json("cg-whisper-2layer.json",
                        R"({"num_mel_bins":80,"max_source_positions":1500,"d_model":64,)"
                        R"("encoder_attention_heads":4,"encoder_layers":2,"vocab_size":100,)"
                        R"("max_target_positions":448,"decoder_attention_heads":4,)"
                        R"("decoder_layers":2,"suppress_tokens":[]})");
  check("models::whisper::model::Whisper", cfg, w, "cg-whisper-cfg.tracing-chrome.json");
}

// Tracing switched on after the first decoder step: every cross attention run is cached. Its
// spans align with the self attention's full runs (the same `multi-head-attn` span), so the
// second `linear` is still out_proj, with no warning.
TEST(TracingCandle, WhisperCachedFromTheStartEverySpanOnItsInstance) {
  if (!candle_src()) GTEST_SKIP() << "CG_CANDLE_SRC is not set (a huggingface/candle checkout)";
  auto w = whisper_trace(2, true);
  check("models::whisper::model::Whisper", "", w, "cg-whisper-late.tracing-chrome.json");
}

}  // namespace
}  // namespace cg
