// `memory --gguf` and `--quant` (docs/memory.md, "Quantized weights"): figures held to hand
// arithmetic on GGUF files the test writes.
#include "query/memory_quant.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "gguf_writer.hpp"
#include "query/memory.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace cg::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ir::Parameter param(const std::string& key, std::vector<std::uint64_t> shape) {
  ir::Parameter p;
  p.id = "param:" + key;
  p.key = key;
  p.builder_root = "vb";
  p.shape = std::move(shape);
  p.confidence = ir::Confidence::proven;
  return p;
}

checkpoint::GgufHeader header_of(const std::string& file) {
  return checkpoint::parse_gguf_header(file, file.size(), "model.gguf");
}

// GGML type ids: F32 0, Q4_0 2, Q8_0 8, Q4_K 12.
//   tok.weight      [64, 32]  Q4_0: 64 × 32 / 32 = 64 blocks × 18 bytes = 1,152
//   blk.0.q.weight  [4, 256]  Q4_K: 4 × 256 / 256 = 4 super-blocks × 144 = 576
//   norm.weight     [32]      F32: 32 × 4 = 128
//   extra.weight    [2, 32]   Q8_0: 2 blocks × 34 = 68
// The file's weights: 1,152 + 576 + 128 + 68 = 1,924 bytes.
std::string small_file() {
  cg_test::GgufWriter w;
  w.kv_string("general.architecture", "llama")
      .tensor("tok.weight", {64, 32}, 2, 1152)
      .tensor("blk.0.q.weight", {4, 256}, 12, 576)
      .tensor("norm.weight", {32}, 0, 128)
      .tensor("extra.weight", {2, 32}, 8, 68);
  return w.file();
}

TEST(MemoryQuant, GgufWeightsAreTheFilesTensorBytesByType) {
  const QuantWeights q = weights_from_gguf(header_of(small_file()), nullptr);
  EXPECT_EQ(q.bytes, 1924u);
  EXPECT_EQ(q.elements, 64u * 32 + 4 * 256 + 32 + 2 * 32);
  ASSERT_EQ(q.by_type.size(), 4u);
  EXPECT_EQ(q.by_type[0].type, "Q4_0");  // largest first
  EXPECT_EQ(q.by_type[0].bytes, 1152u);
  EXPECT_EQ(q.by_type[1].type, "Q4_K");
  EXPECT_EQ(q.by_type[1].bytes, 576u);
  EXPECT_EQ(q.by_type[2].type, "F32");
  EXPECT_EQ(q.by_type[3].type, "Q8_0");
  EXPECT_EQ(q.by_type[3].tensors, 1u);
  EXPECT_FALSE(q.checked);
}

TEST(MemoryQuant, GgufIsCheckedAgainstTheModelsParameters) {
  ir::ModelIr model;
  model.parameters = {param("tok.weight", {64, 32}), param("blk.0.q.weight", {4, 256}),
                      param("norm.weight", {16}), param("missing.weight", {8, 32})};
  const QuantWeights q = weights_from_gguf(header_of(small_file()), &model);
  EXPECT_EQ(q.bytes, 1924u);  // the file decides the bytes, whatever the model asks
  ASSERT_TRUE(q.checked);
  EXPECT_EQ(q.matched, 3u);
  EXPECT_EQ(q.missing_count, 1u);
  EXPECT_THAT(q.missing, ElementsAre("missing.weight"));
  EXPECT_EQ(q.unclaimed_count, 1u);
  EXPECT_THAT(q.unclaimed, ElementsAre("extra.weight"));
  EXPECT_EQ(q.mismatch_count, 1u);
  EXPECT_THAT(q.mismatches,
              ElementsAre("norm.weight is [32] in the file, the model asks for [16]"));
}

TEST(MemoryQuant, ATensorTheCodeDequantizesIsHeldAtF32) {
  // tok.weight (a quantized Embedding's table: `vb.get(..)?.dequantize(..)`) is held at F32 after
  // load: 64 x 32 x 4 = 8,192 bytes instead of its 1,152 in the file. In memory
  // 1,924 - 1,152 + 8,192 = 8,964; the file's tensors stay 1,924.
  ir::ModelIr model;
  model.parameters = {param("tok.weight", {64, 32}), param("blk.{i}.q.weight", {4, 256})};
  const QuantWeights q =
      weights_from_gguf(header_of(small_file()), &model, {{model.parameters[0].id}, {}});
  EXPECT_EQ(q.bytes, 8964u);
  EXPECT_EQ(q.file_bytes, 1924u);
  const auto deq = std::find_if(q.by_type.begin(), q.by_type.end(),
                                [](const QuantTypeBytes& t) { return t.dequantized; });
  ASSERT_NE(deq, q.by_type.end());
  EXPECT_EQ(deq->type, "F32");
  EXPECT_EQ(deq->bytes, 8192u);
  // --quant: the dequantized matrix is its own part, at F32.
  const auto q4 = *checkpoint::ggml_type_named("q4_0");
  EXPECT_EQ(quant_part(model.parameters[0], q4, {{model.parameters[0].id}, {}}),
            QuantPart::dequantized);
  // A QMatMul's weight is dequantized only when stored at a float type (F16, BF16).
  const Dequantized qmatmul{{}, {model.parameters[0].id}};
  EXPECT_EQ(quant_part(model.parameters[0], q4, qmatmul), QuantPart::quantized);
  EXPECT_EQ(quant_part(model.parameters[0], *checkpoint::ggml_type_named("f16"), qmatmul),
            QuantPart::dequantized);
  QuantCounts c;
  c.quantized = 1024;    // 32 blocks x 18 = 576
  c.f32 = 32;            // 128
  c.dequantized = 2048;  // 8,192
  EXPECT_EQ(weights_at_quant(q4, c).bytes, 576u + 128u + 8192u);
}

TEST(MemoryQuant, QuantAtATypeIsBlocksTimesBlockBytesPlusF32Vectors) {
  // 4096 × 4096 matrix elements and 4096 norm elements.
  QuantCounts c;
  c.quantized = 4096u * 4096u;
  c.f32 = 4096;
  // Q4_0: 16,777,216 / 32 = 524,288 blocks × 18 = 9,437,184; + 4,096 × 4 = 16,384.
  auto q = weights_at_quant(*checkpoint::ggml_type_named("q4_0"), c);
  EXPECT_EQ(q.bytes, 9437184u + 16384u);
  EXPECT_TRUE(q.exact);
  // Q6_K: 16,777,216 / 256 = 65,536 super-blocks × 210 = 13,762,560; + 16,384.
  q = weights_at_quant(*checkpoint::ggml_type_named("Q6K"), c);
  EXPECT_EQ(q.bytes, 13762560u + 16384u);
  ASSERT_EQ(q.by_type.size(), 2u);
  EXPECT_EQ(q.by_type[1].type, "F32");
  EXPECT_EQ(q.by_type[1].bytes, 16384u);
  // A refused matrix leaves a lower bound, named.
  c.refused = {"w [3, 33]"};
  q = weights_at_quant(*checkpoint::ggml_type_named("q4_0"), c);
  EXPECT_FALSE(q.exact);
  EXPECT_THAT(q.note, HasSubstr("not a whole number of Q4_0 blocks of 32 elements"));
  EXPECT_THAT(q.note, HasSubstr("w [3, 33]"));
}

TEST(MemoryQuant, PartsFollowRankAndRowLength) {
  const auto q4 = *checkpoint::ggml_type_named("q4_0");
  EXPECT_EQ(quant_part(param("a", {64, 32}), q4), QuantPart::quantized);
  EXPECT_EQ(quant_part(param("a", {3, 33}), q4), QuantPart::refused);
  EXPECT_EQ(quant_part(param("a", {33}), q4), QuantPart::f32);
  ir::Parameter sym;
  sym.symbolic_shape = std::vector<std::string>{"cfg.vocab", "cfg.hidden"};
  EXPECT_EQ(quant_part(sym, q4), QuantPart::quantized);
  ir::ModelIr m;
  m.parameters = {param("a", {64, 32}), param("b", {32}), param("c", {3, 33})};
  EXPECT_EQ(with_parameters(m, q4, QuantPart::f32).parameters.size(), 1u);
  EXPECT_EQ(with_parameters(m, q4, QuantPart::f32).parameters[0].key, "b");
}

TEST(MemoryQuant, RecognisesTheQuantizedVarBuilder) {
  ir::ModelIr m;
  ir::Component c;
  c.constructor = "function:m::Model::new";
  c.builders.push_back({"vb", ir::BuilderRole::unknown, {}});
  m.components.push_back(c);
  ir::Function f;
  f.id = c.constructor;
  f.parameters = {{"cfg", "&Config"}, {"vb", "VarBuilder"}};
  m.functions.push_back(f);
  EXPECT_TRUE(uses_quantized_builder(m, "pub use crate::quantized_var_builder::VarBuilder;\n"));
  EXPECT_TRUE(uses_quantized_builder(
      m, "use crate::{\n    quantized_var_builder::VarBuilder,\n    quantized_nn::Linear};"));
  EXPECT_FALSE(uses_quantized_builder(m, "use candle_nn::VarBuilder;\n"));
  m.functions[0].parameters[1].type_name = "candle_transformers::quantized_var_builder::VarBuilder";
  EXPECT_TRUE(uses_quantized_builder(m, ""));
}

TEST(MemoryQuant, BadQuantTypeNamesTheFlag) {
  try {
    parse_quant_type("q3_x");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--quant q3_x: not a GGML type candle reads"));
    EXPECT_THAT(e.what(), HasSubstr("Q4_K"));
  }
  EXPECT_EQ(parse_quant_type("q4_k").name, "Q4_K");
}

TEST(MemoryQuant, FileOnlyReportHasExactWeightsAndUnknownState) {
  MemoryOptions opts;
  cg_test::GgufWriter w;
  w.kv_string("general.architecture", "llama")
      .kv_u32("llama.context_length", 2048)
      .tensor("tok.weight", {64, 32}, 2, 1152);
  opts.gguf = header_of(w.file());
  opts.device_bytes = 1000;  // less than the 1,152 bytes of weights
  const MemoryReport r = memory_from_gguf("models::quantized_llama::ModelWeights", opts,
                                          "built from gguf_file::Content");
  EXPECT_EQ(r.weights.bytes, 1152u);
  EXPECT_EQ(r.weights.bound, Bound::exact);
  EXPECT_EQ(r.context, 2048u);
  EXPECT_EQ(r.context_source, "llama.context_length");
  EXPECT_EQ(r.kv_cache.bound, Bound::unknown);
  EXPECT_FALSE(r.kv_cache.bytes);
  EXPECT_EQ(r.inference.bound, Bound::lower);
  EXPECT_EQ(r.inference.bytes, 1152u);
  EXPECT_EQ(r.fits, "no");
  const std::string text = render_memory_text(r);
  EXPECT_THAT(text, HasSubstr("  KV cache              ?\n"));
  EXPECT_THAT(text, HasSubstr("Q4_0: 1 tensor, 2,048 elements"));
  EXPECT_THAT(render_memory_json(r), HasSubstr("\"weights_format\": \"--gguf model.gguf\""));
}

}  // namespace
}  // namespace cg::query
