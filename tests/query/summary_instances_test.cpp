// `summary`'s Output Shape, rolled-up Mult-Adds, memory figures and shared weights, and the same
// figures in `query module` (issue #18), on models whose numbers are computed here by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "query/query.hpp"
#include "query/summary_rows.hpp"
#include "query/summary_table.hpp"
#include "util/error.hpp"

namespace {

const std::string kLlama = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";
const std::string kShared = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/shared_proj";
const std::string kWrapper = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/wrapper_layers";
const std::string kConv = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/conv_net";
const std::string kFunc = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/func_net";
const std::string kBlocks = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/block_net";
const std::string kTied = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/tied_wrapper";
const std::string kRotary = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/partial_rotary";
const std::string kNoRootForward =
    std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/no_root_forward";
const std::string kTiedField = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/tied_field";
const std::string kEarlyReturn =
    std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/early_return";
const std::string kEnums = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/enum_variants";
const std::string kTupleMatch = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/tuple_match";
const std::string kMoe = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/moe_routing";
const std::string kStaged = std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/staged_net";
const std::string kTensorBuilt =
    std::string(CG_SOURCE_DIR) + "/tests/fixtures/dataflow/tensor_built_layers";

cg::pipeline::Analysis analyze(const std::string& crate, const std::string& config = "",
                               const std::string& root = "") {
  cg::pipeline::Options o;
  o.path = crate;
  o.config = config;
  o.root = root;
  return cg::pipeline::analyze(o);
}

const cg::query::SummaryRow* row(const cg::query::SummaryModel& m, const std::string& name,
                                 const std::string& type) {
  for (const auto& r : m.rows)
    if (r.name == name && r.type == type) return &r;
  return nullptr;
}

// tiny-llama (hidden 256, intermediate 688, 4 layers; its forward names the input's dimensions
// `(_b, seq_len)`): a layer's MLP outputs [b, seq_len, 256] and costs 3 × 688 × 256 = 528,384
// multiply-adds a token; the layer's figure stays a lower bound (ops without a rule) and says so.
TEST(SummaryInstances, TinyLlamaRowsShowOutputShapeAndRolledUpMultAdds) {
  auto a = analyze(kLlama, kLlama + "/config.json");
  auto m = cg::query::build_summary(a.ir, "F32");
  const auto* mlp = row(m, "mlp", "Mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->output_shape, "[b, seq_len, 256]");
  EXPECT_EQ(mlp->mult_adds, "b*seq_len*528,384");  // gate + up + down, each 688 × 256
  EXPECT_FALSE(mlp->mult_adds_lower_bound);
  const auto* gate = row(m, "gate_proj", "Linear");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->output_shape, "[b, seq_len, 688]");
  const auto* layer = row(m, "model.layers.2", "Block");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->output_shape, "[b, seq_len, 256]");
  // q,o 256×256 + k,v 128×256 + the MLP: 196,608 + 528,384, plus the attention's two matmuls
  // on the first call (the cache empty: keys are the input's positions), 2 × 8 heads × 32 per
  // query and key position: 512.
  EXPECT_EQ(layer->mult_adds, "b*seq_len*724,992 + b*seq_len*seq_len*512") << layer->mult_adds;
  EXPECT_FALSE(layer->mult_adds_lower_bound);
  // The whole forward: 4 layers, and the lm_head (tied to the embedding) on the last position.
  EXPECT_EQ(m.totals.mult_adds, "b*1,048,576 + b*seq_len*2,899,968 + b*seq_len*seq_len*2,048");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());

  std::string text = cg::query::render_model_summary(a, kLlama + "/config.json");
  EXPECT_NE(text.find("Output Shape"), std::string::npos) << text;
  EXPECT_NE(text.find("Mult-adds per forward pass: b*1,048,576 + "), std::string::npos) << text;
  // Complete: no lower bound, so no line explaining one.
  EXPECT_EQ(text.find("≥ marks a lower bound"), std::string::npos) << text;
}

// wrapper_layers: one wrapper `Linear::forward` (`self.inner.forward(xs)`) serves the 64->64
// projections and the 64->100 lm_head. Each row shows its own count, never the shared inner
// operation's (which holds the first call's).
TEST(SummaryInstances, WrapperLayersCountEachInstanceOnItsOwn) {
  auto a = analyze(kWrapper, kWrapper + "/config.json");
  auto m = cg::query::build_summary(a.ir, "F32");
  const auto* q = row(m, "q_proj", "Linear");
  const auto* head = row(m, "lm_head", "Linear");
  ASSERT_NE(q, nullptr);
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(q->mult_adds, "b*t*4,096");
  EXPECT_EQ(head->mult_adds, "b*t*6,400");
  EXPECT_EQ(head->output_shape, "[b, t, 100]");
  // Four 64x64 projections and the head, before the attention's own matmuls.
  EXPECT_EQ(m.totals.mult_adds.find("b*t*22,784"), m.totals.mult_adds.find("b*t"))
      << m.totals.mult_adds;
}

// tied_wrapper: the head is the crate's own wrapper built by `Linear::from_weights(embed
// .embeddings().clone(), None)` (llama's and mamba's tied lm_head). It is a row of its own at the
// embedding's key with no weights of its own, and its products count: 100 × 32 a token, beside
// proj's 32 × 32, so the total is complete.
TEST(SummaryInstances, TiedHeadThroughACrateWrapperHasItsRowAndMultAdds) {
  auto a = analyze(kTied, kTied + "/config.json");
  auto m = cg::query::build_summary(a.ir, "F32");
  std::string head_id;
  for (const auto& mod : a.ir.modules)
    if (mod.field == std::optional<std::string>("lm_head") && mod.prefix == "embed")
      head_id = head_id.empty() ? mod.id : head_id;  // the wrapper, built before its inner Linear
  const cg::query::SummaryRow* head = nullptr;
  for (const auto& r : m.rows)
    if (!head_id.empty() && r.module_id == head_id) head = &r;
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->output_shape, "[b, t, 100]");
  EXPECT_EQ(head->mult_adds, "b*t*3,200");
  EXPECT_FALSE(head->mult_adds_lower_bound);
  EXPECT_EQ(m.totals.mult_adds, "b*t*4,224");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_EQ(a.ir.parameters.size(), 2u) << "the embedding's weight counts once";
  // One note for the head, not a second one for the candle-nn Linear its wrapper holds.
  ASSERT_EQ(m.totals.shared.size(), 1u);
  EXPECT_NE(m.totals.shared[0].find("reuses the weights of embed"), std::string::npos);
}

// tied_field (qwen3's ModelForCausalLM): the head ties to `base.embed`, a field of the sub-model
// the constructor built (`let base = Base::new(..)?`): 32 x 100 per position, counted once
// among the parameters (3,200 + 1,024), the logits the root's output.
TEST(SummaryInstances, AHeadTiedThroughASubModelsFieldIsCounted) {
  auto a = analyze(kTiedField, kTiedField + "/config.json", "ForCausalLm");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "b*t*4,224");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(4224));
  ASSERT_FALSE(m.rows.empty());
  EXPECT_EQ(m.rows[0].output_shape, "[b, t, 100]");
  ASSERT_EQ(m.totals.shared.size(), 1u);
  EXPECT_NE(m.totals.shared[0].find("reuses the weights of model.embed"), std::string::npos)
      << m.totals.shared[0];
}

// tuple_match (DistilBERT's loading): `let (embeddings, attention) = match (A::load(..),
// B::load(..)) { (Ok(e), Ok(a)) => (e, a), .. }` names each module after the field it lands in, so
// the forward reaches them; and `mask.broadcast_as(scores.shape())` has the scores' shape, so the
// second matmul is counted. Hand: q, k, v, o 4 × 16 × 16 a token; the attention's two matmuls
// 2 × 2 heads × 8 per query and key position.
TEST(SummaryInstances, TupleMatchNamesModulesAndMaskKeepsTheScoresShape) {
  auto a = analyze(kTupleMatch, kTupleMatch + "/config.json");
  std::map<std::string, std::string> field_of;
  for (const auto& mod : a.ir.modules)
    field_of[mod.prefix] = mod.field.value_or("");
  EXPECT_EQ(field_of["embeddings"], "embeddings");
  EXPECT_EQ(field_of["attention"], "attention");
  EXPECT_EQ(field_of["tiny.attention"], "attention");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "b*t*1,024 + b*t*t*32");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  const auto* q = row(m, "q", "Linear");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->mult_adds, "b*t*256");
}

// partial_rotary (phi's): `xs.i((.., .., .., self.dim..))` of a head of 20 with dim 8 is 12
// long, so the rejoined head is 20 again and q·kᵀ counts 2 heads × 20 per query and key position.
TEST(SummaryInstances, RangeToTheEndOfAKnownDimensionKeepsTheShape) {
  auto a = analyze(kRotary, kRotary + "/config.json");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "b*t*3,200 + b*t*t*40");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  ASSERT_FALSE(m.rows.empty());
  EXPECT_EQ(m.rows[0].output_shape, "[b, 2, t, t]");
}

// no_root_forward (whisper's shape): the root has no forward, its encoder and decoder do. The
// forward pass is theirs, each once, and says so; every projection shows its own figure although
// one wrapper operation runs them all (8 × 32, 32 × 16, 16 × 4), not the first one's.
TEST(SummaryInstances, ARootWithoutForwardAddsUpItsChildrensRuns) {
  auto a = analyze(kNoRootForward, "", "Model");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "b*t*1,600");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_NE(m.totals.forward_runs.find("encoder.forward"), std::string::npos);
  EXPECT_NE(m.totals.forward_runs.find("decoder.forward"), std::string::npos);
  std::map<std::string, int> seen;
  for (const auto& r : m.rows) {
    if (r.type != "Linear") continue;
    ++seen[r.name + " " + r.mult_adds];
  }
  EXPECT_EQ(seen["up b*t*256"], 2);
  EXPECT_EQ(seen["down b*t*512"], 2);
  EXPECT_EQ(seen["head b*t*64"], 1);
  std::string text = cg::query::render_model_summary(a, "");
  EXPECT_NE(text.find("Mult-adds per forward pass (decoder.forward + encoder.forward): b*t*1,600"),
            std::string::npos)
      << text;
}

// early_return (qwen3's attention): `if on_cpu { return self.fused(&q); } self.standard(..)`
// applies o_proj (16 -> 16) on either path, the standard one adding two products of t x t. A
// total that added both paths counted o_proj twice (b*t*1,280 + b*t*t*32, neither a count nor a
// lower bound); one path runs, so the total is qkv 768 + o_proj 256 + up 512 at least, and the
// site is named. The MLP's arms both apply `up` (they agree: no mark), and its `fast` arm calls
// a function that only panics: no alternative, its value leaves the output shape alone.
TEST(SummaryInstances, OnePathOfAnUndecidedBranchIsCounted) {
  auto a = analyze(kEarlyReturn, "", "Model");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "b*t*1,536");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_EQ(m.totals.mult_adds_branches, std::vector<std::string>{"src/lib.rs:38"});
  EXPECT_EQ(m.totals.activation_branches,
            (std::vector<std::string>{"src/lib.rs:38", "src/lib.rs:60"}));
  const auto* attn = row(m, "attn", "Attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->mult_adds, "≥ b*t*1,024");
  EXPECT_TRUE(attn->mult_adds_lower_bound);
  const auto* mlp = row(m, "mlp", "Mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->mult_adds, "b*t*512");
  EXPECT_FALSE(mlp->mult_adds_lower_bound);
  EXPECT_EQ(mlp->output_shape, "[b, t, 32]");
  // The IR says which path each o_proj call is on: the returning arm, and the rest of the body.
  std::vector<std::vector<std::uint64_t>> arms;
  for (const auto& c : a.ir.instance_calls)
    if (c.path == "attn.o_proj" && c.entrypoint.find("Model%3A%3Aforward") != std::string::npos) {
      ASSERT_EQ(c.branch.size(), 1u);
      EXPECT_EQ(c.branch[0].site, "src/lib.rs:38");
      EXPECT_EQ(c.branch[0].count, 2u);
      arms.push_back(c.branch[0].arms);
    }
  std::sort(arms.begin(), arms.end());
  EXPECT_EQ(arms, (std::vector<std::vector<std::uint64_t>>{{0}, {1}}));
  std::string text = cg::query::render_model_summary(a, "");
  EXPECT_NE(text.find("Mult-adds per forward pass: at least b*t*1,536"), std::string::npos) << text;
  EXPECT_NE(text.find("the least is counted"), std::string::npos) << text;
}

// enum_variants (deepseek2's `QProj` and `MoeOrMlp`): `q: QProj` holds one Linear, so it is
// `QProj::Plain`, and `match self { Self::Lora { .. } => .., Self::Plain(lin) =>
// lin.forward(xs) }` runs the Plain arm with `lin` that Linear; `ffn: Ffn` holds one Mlp, so it
// is `Ffn::Dense(Box<Mlp>)`. For xs [2, 5, 8] (hidden 8, intermediate 16): q 10 x 8 x 8 = 640,
// up 10 x 8 x 16 = 1,280, down 1,280; 3,200 in all, exact. (Before, `lin` was the enum again and
// its `forward` the enum's own: no Mult-Adds for either layer.)
TEST(SummaryInstances, AnEnumFieldTakesTheVariantItsModulesAre) {
  cg::pipeline::Options o;
  o.path = kEnums;
  o.config = kEnums + "/config.json";
  o.input_tensors["xs"] = {"2", "5", "8"};
  auto a = cg::pipeline::analyze(o);
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "3,200");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_TRUE(m.totals.mult_adds_branches.empty());
  const auto* q = row(m, "q_proj", "Linear");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->output_shape, "[2, 5, 8]");
  EXPECT_EQ(q->mult_adds, "640");
  const auto* mlp = row(m, "mlp", "Mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->mult_adds, "2,560");
  // The LoRA variant holds two Linears and a norm: which Linear is `a` and which `b` the
  // modules do not say, so the figure is not guessed.
  o.config = kEnums + "/config_lora.json";
  auto lora = cg::pipeline::analyze(o);
  auto ml = cg::query::build_summary(lora.ir, "F32");
  EXPECT_TRUE(ml.totals.mult_adds.empty() || !ml.totals.mult_adds_missing.empty())
      << ml.totals.mult_adds;
}

// The rows a router picked on the device (`arg_sort_last_dim`, `narrow`, `squeeze`) are a tensor
// of known length: `index_select` of them has that many rows, `index_add` gives back the input's
// shape, and every Linear after is counted. By hand at 4 tokens of 8: gate 4 x 8 x 4 = 128,
// expert 4 x 8 x 8 = 256, out 4 x 8 x 8 = 256.
TEST(SummaryInstances, RowsARouterPickedOnTheDeviceHaveTheirIndicesLength) {
  cg::pipeline::Options o;
  o.path = kMoe;
  o.root = "MoeBlock";
  o.config = kMoe + "/config.json";
  o.input_tensors["xs"] = {"4", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* expert = row(m, "expert", "Linear");
  ASSERT_NE(expert, nullptr);
  EXPECT_EQ(expert->output_shape, "[4, 8]");
  EXPECT_EQ(expert->mult_adds, "256");
  const auto* out = row(m, "out", "Linear");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->output_shape, "[4, 8]");
  EXPECT_EQ(m.totals.mult_adds, "640");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
}

// Routed as mixtral routes, through indices copied to the host: how many rows the expert sees is
// data. Its Linear is `?` and the total a marked lower bound naming it, never a complete-looking
// 128 that silently leaves the expert out.
TEST(SummaryInstances, ALayerFedRowsOfUnknownCountIsALowerBoundNotAZero) {
  cg::pipeline::Options o;
  o.path = kMoe;
  o.root = "HostRoutedMoe";
  o.config = kMoe + "/config.json";
  o.input_tensors["xs"] = {"4", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* expert = row(m, "expert", "Linear");
  ASSERT_NE(expert, nullptr);
  EXPECT_EQ(expert->mult_adds, "?");
  EXPECT_EQ(m.totals.mult_adds, "128");
  ASSERT_EQ(m.totals.mult_adds_missing.size(), 1u);
  EXPECT_EQ(m.totals.mult_adds_missing[0], "Linear::forward");
}

// vgg's pre-logits: a loaded [64, 8, 2, 2] tensor reshaped to [64, 32] and made a Linear by
// `candle_nn::Linear::new`, its sizes passed in a struct literal, applied after a Dropout's
// `apply_t`. By hand: 32·64 + 64·10 = 2,688, complete.
TEST(SummaryInstances, ALinearMadeFromATensorCountsItsWeightsShape) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Classifier";
  o.args = {"num_classes=10"};
  o.input_tensors["xs"] = {"8", "2", "2"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* out = row(m, "head", "Linear");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->output_shape, "[1, 10]");
  EXPECT_EQ(out->mult_adds, "640");
  EXPECT_EQ(m.totals.mult_adds, "2,688");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
}

// Branches giving different numbers leave no number: `let rows = if wide { 1 } else { 2 }` is
// not 1, so the projection's count stays in `rows` (before: 512, the first branch's, as final).
TEST(SummaryInstances, NumbersThatDifferByBranchAreNotTheFirstBranchs) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Pick";
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* proj = row(m, "proj", "Linear");
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->output_shape, "[rows, 16]");
  EXPECT_EQ(proj->mult_adds, "rows*512");
  EXPECT_EQ(m.totals.mult_adds, "rows*512");
}

// convnext's way: a config built in code (`--arg cfg=Config::small()`) whose arrays bound the
// loops that push each stage's blocks, `vb.pp(format!("blocks.{block_idx}"))` naming them, a
// decided `if` choosing a pair of closures. By hand, 10 rows (2×5): stage 0, 2 blocks × 4
// Linears × 10·8·16 = 10,240; stage 1, the projection 10·8·16 = 1,280 and 3 blocks × 4 Linears
// × 10·16·32 = 61,440: 72,960.
TEST(SummaryInstances, AConfigBuiltInCodeSizesTheStagesItsLoopsBuild) {
  cg::pipeline::Options o;
  o.path = kStaged;
  o.root = "staged";
  o.args = {"cfg=Config::small()"};
  o.input_tensors["xs"] = {"2", "5", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* last = row(m, "stages.1.blocks.2.b.down", "Linear");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->output_shape, "[2, 5, 16]");
  EXPECT_EQ(last->mult_adds, "5,120");
  const auto* proj = row(m, "stages.1.proj", "Linear");
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->mult_adds, "1,280");
  EXPECT_EQ(m.totals.mult_adds, "72,960");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_EQ(m.totals.total, 7696u);
}

// Two arms building one layer at one key (with and without a bias) are one row, whichever is
// certain: the arm's module that holds nothing is no second `p (Linear) 0` row.
TEST(SummaryInstances, ALayerEveryArmBuildsAtOneKeyIsOneRow) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Biased";
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  int rows = 0;
  for (const auto& r : m.rows)
    if (r.name == "p" && r.type == "Linear") ++rows;
  EXPECT_EQ(rows, 1);
}

// `x.reshape(target_dims)` of a local `&[n_batch, n_ctx, self.n_head, n_state / self.n_head]`
// (whisper's heads) has that shape, so the projection after the heads merge is counted: 4 rows ×
// 8 × 8 = 256, as the first one (before, `out` was `?` and the total a lower bound).
TEST(SummaryInstances, AShapeHeldInALocalArrayReshapes) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Heads";
  o.input_tensors["x"] = {"1", "4", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* out = row(m, "out", "Linear");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->output_shape, "[1, 4, 8]");
  EXPECT_EQ(out->mult_adds, "256");
  EXPECT_EQ(m.totals.mult_adds, "512");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
}

// `candle_nn::Conv1d::new(weight, Some(bias), config)` in a helper that asked its VarBuilder for
// both tensors (whisper's `conv1d`) is a Conv1d row of its own with its weight shape and the
// stride its config literal gives: length (100 + 2 − 2 − 1) / 2 + 1 = 50, 16 × 50 outputs × 8 × 3
// = 19,200 multiply-adds. Before, the tensors were the parent's and the conv had no shape.
TEST(SummaryInstances, ALayerMadeFromItsOwnTensorsIsAModule) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Stem";
  o.input_tensors["x"] = {"1", "8", "100"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* conv = row(m, "conv", "Conv1d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->params, 16u * 8 * 3 + 16);
  EXPECT_EQ(conv->output_shape, "[1, 16, 50]");
  EXPECT_EQ(conv->mult_adds, "19,200");
  const auto* ln = row(m, "ln", "LayerNorm");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->params, 32u);
  EXPECT_EQ(ln->output_shape, "[1, 50, 16]");
  EXPECT_EQ(m.totals.mult_adds, "19,200");
}

// A field the constructor sets from its parameter (`Self { q, n_head }` of `Attn::load(n_state,
// n_head, vb)`) is the number each instance's call passed, and a field the call's numbers make
// `None` (`Block::load(.., false, ..)` builds no `cross`) is None there: each block is its
// attention alone, 256 for `q` (4 × 8 × 8) + two matmuls of 2 heads × 4 × 4 × 4 = 512, exact.
// Before, `self.n_head` had no number (the matmuls `?`) and the `if let` was undecided.
TEST(SummaryInstances, AFieldSetFromAConstructorParameterIsTheCallersNumber) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Encoder";
  o.input_tensors["x"] = {"1", "4", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* attn = row(m, "attn", "Attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->mult_adds, "512");
  EXPECT_FALSE(attn->mult_adds_lower_bound);
  EXPECT_EQ(m.totals.mult_adds, "1,024");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  EXPECT_TRUE(m.totals.mult_adds_branches.empty());
}

// Two instances of one type whose calls passed different numbers: each decides by its own call.
// The block built with `true` writes `Some(cross)` (after a `let` in that arm) and runs its second
// attention, 1,024; the one built with `false` does not, 512; 1,536 in all, exact. Neither takes
// the other's arm (a per-type reading would have to leave both undecided).
TEST(SummaryInstances, InstancesBuiltWithDifferentNumbersDecideApart) {
  cg::pipeline::Options o;
  o.path = kTensorBuilt;
  o.root = "Mixed";
  o.input_tensors["x"] = {"1", "4", "8"};
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* first = row(m, "first", "Block");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->mult_adds, "512");
  EXPECT_FALSE(first->mult_adds_lower_bound);
  const auto* second = row(m, "second", "Block");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->mult_adds, "1,024");
  EXPECT_FALSE(second->mult_adds_lower_bound);
  EXPECT_EQ(m.totals.mult_adds, "1,536");
  EXPECT_TRUE(m.totals.mult_adds_branches.empty());
}

TEST(SummaryInstances, InputShapeMakesShapesAndTotalsConcrete) {
  auto a = analyze(kLlama, kLlama + "/config.json");
  auto m =
      cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape("b=1,seq_len=2048"));
  const auto* mlp = row(m, "mlp", "Mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->output_shape, "[1, 2048, 256]");
  EXPECT_EQ(mlp->mult_adds, "1,082,130,432");  // 2048 × 528,384
  // 2048 × 2,899,968 for the projections and MLPs, plus the tied lm_head's 4096 × 256 on the
  // last position (5,940,183,040), plus the attention's two matmuls on the first call: 4 layers
  // × 2 × 8 heads × 2048 × 2048 × 32 = 8,589,934,592.
  EXPECT_EQ(m.totals.mult_adds, "14,530,117,632");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
}

// The Output Shape and Mult-Adds columns of every module row, one line each: what `summary`
// shows, without the parameter columns.
std::string shape_columns(const cg::query::SummaryModel& m) {
  std::string out;
  for (const auto& r : m.rows) {
    if (r.type.empty()) continue;  // a parameter leaf
    out += r.name + " (" + r.type + ") " + (r.output_shape.empty() ? "-" : r.output_shape) + " " +
           (r.mult_adds.empty() ? "-" : r.mult_adds) + "\n";
  }
  return out;
}

// conv_net (tests/fixtures/dataflow/conv_net, 3 input channels, 10 classes) on a [b_sz, 3, 32, 32]
// image, by hand:
//   stem      3->16, k3, padding 1          [b_sz, 16, 32, 32]  16·32·32 × 3·3·3   =   442,368
//   down     16->32, k3, padding 1, stride 2 [b_sz, 32, 16, 16]  32·16·16 × 16·3·3  = 1,179,648
//   depthwise 32->32, k3, padding 1, groups 32 (weight [32, 1, 3, 3])
//                                            [b_sz, 32, 16, 16]  32·16·16 × 1·3·3   =    73,728
//   mix (Conv1d) 32->8, k5 on [b_sz, 32, 256]  [b_sz, 8, 252]    8·252 × 32·5       =   322,560
//   head (Linear) 2016->10                   [b_sz, 10]          2016 × 10          =    20,160
// total b_sz × 2,038,464 (torchinfo's count: the weights' multiply-adds, biases not counted).
TEST(SummaryInstances, ConvNetOutputShapesAndMultAddsGolden) {
  auto a = analyze(kConv, kConv + "/config.json");
  std::map<std::string, std::map<std::string, std::string>> attrs;
  for (const auto& mod : a.ir.modules)
    if (!mod.attributes.empty()) attrs[mod.prefix] = mod.attributes;
  using A = std::map<std::string, std::string>;
  EXPECT_EQ(attrs["down"],
            (A{{"dilation", "1"}, {"groups", "1"}, {"padding", "1"}, {"stride", "2"}}));
  EXPECT_EQ(attrs["depthwise"],
            (A{{"dilation", "1"}, {"groups", "32"}, {"padding", "1"}, {"stride", "1"}}));
  EXPECT_EQ(attrs["mix"],
            (A{{"dilation", "1"}, {"groups", "1"}, {"padding", "0"}, {"stride", "1"}}));
  EXPECT_EQ(attrs.count("head"), 0u);  // only conv layers carry attributes
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(shape_columns(m),
            "ConvNet (ConvNet) [b_sz, 10] b_sz*2,038,464\n"
            "stem (Conv2d) [b_sz, 16, 32, 32] b_sz*442,368\n"
            "down (Conv2d) [b_sz, 32, 16, 16] b_sz*1,179,648\n"
            "depthwise (Conv2d) [b_sz, 32, 16, 16] b_sz*73,728\n"
            "mix (Conv1d) [b_sz, 8, 252] b_sz*322,560\n"
            "head (Linear) [b_sz, 10] b_sz*20,160\n");
  EXPECT_EQ(m.totals.mult_adds, "b_sz*2,038,464");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  auto bound = cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape("b_sz=8"));
  EXPECT_EQ(bound.totals.mult_adds, "16,307,712");  // 8 × 2,038,464
}

// func_net (tests/fixtures/dataflow/func_net): a ResNet-like model written as candle-nn `Func`
// closures, no `forward` method anywhere; `--root func_net --arg num_classes=10`. Every layer is
// built in the helper `net`, so all share the root's one call line: the rows follow the order the
// forward runs them (stem, each block's conv1, bn1, conv2, shortcut, then the head). Its
// closure reshapes the input to [b_sz, 3, 32, 32]; by hand (conv: out elements × c_in × k × k):
//   stem        3->16 k3 p1         [b_sz, 16, 32, 32]  16·1024 × 27  =   442,368
//   stage1.{0,1} conv1, conv2 16->16 k3 p1 s1, identity shortcut
//                                    [b_sz, 16, 32, 32]  16·1024 × 144 = 2,359,296 each (× 4)
//   stage2.0    conv1 16->32 k3 p1 s2 [b_sz, 32, 16, 16]  32·256 × 144  = 1,179,648
//               conv2 32->32 k3 p1    [b_sz, 32, 16, 16]  32·256 × 288  = 2,359,296
//               shortcut.proj 16->32 k1 s2                32·256 × 16   =   131,072
//   stage2.1    conv1, conv2 32->32   [b_sz, 32, 16, 16]  2,359,296 each (× 2)
//   pool        mean(D::Minus1) twice  [b_sz, 32]
//   head        seq().add(linear 32->10)  [b_sz, 10]    32 × 10       =       320
// total b_sz × 18,268,480. The BatchNorm keeps its input's shape and has no count.
TEST(SummaryInstances, FuncClosureNetOutputShapesAndMultAddsGolden) {
  cg::pipeline::Options o;
  o.path = kFunc;
  o.root = "func_net";
  o.args = {"num_classes=10"};
  auto a = cg::pipeline::analyze(o);
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(shape_columns(m),
            "func_net (func_net) [b_sz, 10] b_sz*18,268,480\n"
            "stem (Conv2d) [b_sz, 16, 32, 32] b_sz*442,368\n"
            "stage1.0.conv1 (Conv2d) [b_sz, 16, 32, 32] b_sz*2,359,296\n"
            "stage1.0.bn1 (BatchNorm) [b_sz, 16, 32, 32] -\n"
            "stage1.0.conv2 (Conv2d) [b_sz, 16, 32, 32] b_sz*2,359,296\n"
            "stage1.1.conv1 (Conv2d) [b_sz, 16, 32, 32] b_sz*2,359,296\n"
            "stage1.1.bn1 (BatchNorm) [b_sz, 16, 32, 32] -\n"
            "stage1.1.conv2 (Conv2d) [b_sz, 16, 32, 32] b_sz*2,359,296\n"
            "stage2.0.conv1 (Conv2d) [b_sz, 32, 16, 16] b_sz*1,179,648\n"
            "stage2.0.bn1 (BatchNorm) [b_sz, 32, 16, 16] -\n"
            "stage2.0.conv2 (Conv2d) [b_sz, 32, 16, 16] b_sz*2,359,296\n"
            "stage2.0.shortcut.proj (Conv2d) [b_sz, 32, 16, 16] b_sz*131,072\n"
            "stage2.1.conv1 (Conv2d) [b_sz, 32, 16, 16] b_sz*2,359,296\n"
            "stage2.1.bn1 (BatchNorm) [b_sz, 32, 16, 16] -\n"
            "stage2.1.conv2 (Conv2d) [b_sz, 32, 16, 16] b_sz*2,359,296\n"
            "head (Linear) [b_sz, 10] b_sz*320\n");
  EXPECT_EQ(m.totals.mult_adds, "b_sz*18,268,480");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  auto bound = cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape("b_sz=4"));
  EXPECT_EQ(bound.totals.mult_adds, "73,073,920");  // 4 × 18,268,480
  // Without --root nothing is a model (every helper has a root's shape), so no row at all.
  cg::pipeline::Options none;
  none.path = kFunc;
  EXPECT_TRUE(cg::pipeline::analyze(none).ir.instance_calls.empty());
}

// block_net (tests/fixtures/dataflow/block_net): a VGG-like struct root holding the `FuncT`
// closures its constructor builds, chosen by `--arg depth=..`. Its constructor runs before its
// `forward_t` (a `ModuleT` model: no `forward`), so each convolution the closures apply is a row
// with its own shape and count; pooling by 2 makes the symbolic `h` `h/2`. By hand (conv: out
// elements × c_in × 3 × 3, padding 1 keeps h × w):
//   features.0  3->8    [b, 8, h, w]          8 × 27   = 216 per pixel
//   features.1  8->8    [b, 8, h, w]          8 × 72   = 576 (Deep only)
//   features.2  8->16   [b, 16, h/2, w/2]    16 × 72   = 1,152
//   features.4  16->16  [b, 16, h/2, w/2]    16 × 144  = 2,304
// Parameters: 224 + 1,168 + 2,320 convolutions, fc1 32 × 16 × 4 × 4 + 32 (its shape kept in a
// config record's tuple field), fc2 10 × 32 + 10 (built in the closure, at forward time).
TEST(SummaryInstances, StructRootHoldingClosuresRunsItsConstructor) {
  auto run = [](const std::string& depth, const std::string& input = "") {
    cg::pipeline::Options o;
    o.path = kBlocks;
    o.root = "BlockNet";
    if (!depth.empty()) o.args = {"depth=" + depth};
    auto a = cg::pipeline::analyze(o);
    return cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape(input));
  };
  auto shallow = run("Shallow");
  EXPECT_EQ(shallow.totals.total, 12266u);
  const auto* f2 = row(shallow, "features.2", "Conv2d");
  ASSERT_NE(f2, nullptr);
  EXPECT_EQ(f2->output_shape, "[b, 16, h/2, w/2]");
  EXPECT_EQ(f2->mult_adds, "b*(h/2)*(w/2)*1,152");
  const auto* f0 = row(shallow, "features.0", "Conv2d");
  ASSERT_NE(f0, nullptr);
  EXPECT_EQ(f0->output_shape, "[b, 8, h, w]");
  EXPECT_EQ(f0->mult_adds, "b*h*w*216");
  EXPECT_EQ(row(shallow, "features.1", "Conv2d"), nullptr) << "only the Deep arm builds it";
  const auto* fc2 = row(shallow, "fc2", "Linear");
  ASSERT_NE(fc2, nullptr) << "a layer the closure builds at forward time is a module";
  EXPECT_EQ(fc2->params, 330u);

  auto deep = run("Deep");
  EXPECT_EQ(deep.totals.total, 12850u);
  const auto* f1 = row(deep, "features.1", "Conv2d");
  ASSERT_NE(f1, nullptr);
  EXPECT_EQ(f1->output_shape, "[b, 8, h, w]");
  EXPECT_EQ(f1->mult_adds, "b*h*w*576");

  // Bound: 2 images of 16 × 16: features.2 is 2 × 8 × 8 × 1,152 = 147,456.
  auto bound = run("Shallow", "b=2,h=16,w=16");
  f2 = row(bound, "features.2", "Conv2d");
  ASSERT_NE(f2, nullptr);
  EXPECT_EQ(f2->output_shape, "[2, 16, 8, 8]");
  EXPECT_EQ(f2->mult_adds, "147,456");

  // Undecided (no --arg): which blocks run is not known, so no arm's figures are claimed.
  auto open = run("");
  for (const auto& r : open.rows)
    if (r.type == "Conv2d") {
      EXPECT_TRUE(r.output_shape.empty()) << r.name;
    }
}

// `--input-shape xs=2x3x16x16` gives the root's tensor input its whole shape, for forwards that
// never state it (vgg's `xs.unsqueeze(0)` of an image): the same figures as binding b, h, w. A
// name that is no tensor input of the root, or a malformed shape, is refused with the reason.
TEST(SummaryInstances, AnInputTensorsWholeShapeMakesTheFiguresConcrete) {
  cg::pipeline::Options o;
  o.path = kBlocks;
  o.root = "BlockNet";
  o.args = {"depth=Shallow"};
  o.input_tensors = cg::query::parse_input_tensors("xs=2x3x16x16");
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  const auto* f2 = row(m, "features.2", "Conv2d");
  ASSERT_NE(f2, nullptr);
  EXPECT_EQ(f2->output_shape, "[2, 16, 8, 8]");
  EXPECT_EQ(f2->mult_adds, "147,456");

  o.input_tensors = cg::query::parse_input_tensors("ys=2x3x16x16");
  try {
    cg::pipeline::analyze(o);
    ADD_FAILURE() << "an unknown input name is refused";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("`xs`"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cg::query::parse_input_tensors("xs=3x-1"), cg::InputError);
  EXPECT_THROW(cg::query::parse_input_tensors("xs=3x"), cg::InputError);
  // Dimension sizes and whole shapes mix in one flag; each parser takes its own.
  EXPECT_EQ(cg::query::parse_input_shape("b=2,xs=bx3x16x16").size(), 1u);
  EXPECT_EQ(cg::query::parse_input_tensors("b=2,xs=bx3x16x16").at("xs").front(), "b");
}

// The inputs a refused `--input-shape` lists are the ones it could name: the root forward's, not
// those of a loss function or an attention helper in scope (tiny-llama's `loss(logits, targets)`
// and `attention(q, k, ..)` were listed, and `targets` was then refused as "not an input").
TEST(SummaryInstances, ARefusedInputShapeListsOnlyTheRootForwardsInputs) {
  cg::pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";
  o.input_tensors = cg::query::parse_input_tensors("targets=2x3");
  try {
    cg::pipeline::analyze(o);
    ADD_FAILURE() << "`targets` is no input of TinyLlama::forward";
  } catch (const cg::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("its tensor inputs: `input_ids`"), std::string::npos) << what;
    EXPECT_EQ(what.find("`targets`,"), std::string::npos) << what;
    EXPECT_EQ(what.find("`q`"), std::string::npos) << what;
  }
}

// Input sizes whose products pass 2^64: the figures say "over 2^64", never rounded digits that
// look exact (the fold was a double's) nor "at least over 2^64".
TEST(SummaryInstances, AnInputShapePast64BitsIsOverNotRounded) {
  cg::pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";
  o.config = o.path + "/config.json";
  o.input_tensors = cg::query::parse_input_tensors("input_ids=99999999999x99999999999");
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "over 2^64");
  EXPECT_EQ(m.totals.activations, "over 2^64");
  const std::string out = cg::query::render_summary_table("tiny-llama", m.rows, m.totals);
  EXPECT_NE(out.find("Mult-adds per forward pass: over 2^64\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("at least over"), std::string::npos) << out;
}

// The same network built with `None` for its optional head (`func_net_features`, as resnet's
// `*_no_final_layer`): the `match &head` in its forward takes the `None` arm on every execution,
// so the model outputs the pooled [b_sz, 32] and no head is counted — where the arms were joined
// before, the root read the first arm's shape whichever variant was built.
TEST(SummaryInstances, AnOptionalHeadBuiltAsNoneOrSomeDecidesTheForwardsArm) {
  cg::pipeline::Options o;
  o.path = kFunc;
  o.root = "func_net_features";
  auto a = cg::pipeline::analyze(o);
  auto m = cg::query::build_summary(a.ir, "F32");
  ASSERT_FALSE(m.rows.empty());
  EXPECT_EQ(m.rows.front().output_shape, "[b_sz, 32]");
  EXPECT_EQ(m.totals.mult_adds, "b_sz*18,268,160");  // func_net's less the head's 320
  for (const auto& r : m.rows)
    EXPECT_NE(r.name, "head") << "no head is built with None";

  cg::pipeline::Options with;
  with.path = kFunc;
  with.root = "func_net";
  with.args = {"num_classes=7"};
  auto b = cg::pipeline::analyze(with);
  auto mb = cg::query::build_summary(b.ir, "F32");
  ASSERT_FALSE(mb.rows.empty());
  EXPECT_EQ(mb.rows.front().output_shape, "[b_sz, 7]");
}

// `--arg` for an `Option` parameter (func_net's helper `net(nclasses: Option<usize>, vb)` as the
// root): `None` is `None` (it was the string "None", read as `Some("None")`: a head of symbolic
// shape), a value is `Some(value)` — in the inventory and in the forward alike.
TEST(SummaryInstances, AnArgOfNoneOrAValueDecidesAnOptionParameter) {
  auto run = [](const std::string& arg) {
    cg::pipeline::Options o;
    o.path = kFunc;
    o.root = "net";
    o.args = {arg};
    return cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  };
  auto none = run("nclasses=None");
  EXPECT_EQ(none.totals.total, 42800u);
  EXPECT_EQ(none.totals.unknown_leaves, 0u);
  EXPECT_EQ(row(none, "head", "Linear"), nullptr);
  ASSERT_FALSE(none.rows.empty());
  EXPECT_EQ(none.rows.front().output_shape, "[b_sz, 32]");
  auto seven = run("nclasses=7");
  EXPECT_EQ(seven.totals.total, 43031u);  // + the head, 7 × 32 + 7
  ASSERT_FALSE(seven.rows.empty());
  EXPECT_EQ(seven.rows.front().output_shape, "[b_sz, 7]");
}

// A value Rust would refuse for the parameter's type is an input error naming it, as the same
// value in a config.json is; never silently ignored (the layer left symbolic, exit 0).
TEST(SummaryInstances, AnArgThatIsNoValueOfTheParametersTypeIsRefused) {
  auto error_of = [](std::vector<std::string> args) -> std::string {
    cg::pipeline::Options o;
    o.path = kFunc;
    o.root = "net";
    o.args = std::move(args);
    try {
      cg::pipeline::analyze(o);
    } catch (const cg::InputError& e) {
      return e.what();
    }
    return "";
  };
  const std::string huge(120 * 1024, '7');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nclasses=-5", "is a negative value, which the parameter `nclasses: Option<usize>`"},
      {"nclasses=1e3", "is a floating-point number"},
      {"nclasses=\xef\xbc\x97", "is a string"},  // a full-width 7
      {"nclasses=18446744073709551616", "is larger than 2^63"},
      {"nclasses=" + huge, "is larger than 2^63"},
      {"nclasses=true", "is a boolean"},
  };
  for (const auto& [arg, want] : cases) {
    const std::string err = error_of({arg});
    EXPECT_NE(err.find("--arg nclasses"), std::string::npos) << arg.substr(0, 40) << ": " << err;
    EXPECT_NE(err.find(want), std::string::npos) << arg.substr(0, 40) << ": " << err;
    EXPECT_LT(err.size(), 300u) << "the value is shown cut short, not whole";
  }
  const std::string twice = error_of({"nclasses=7", "nclasses=9"});
  EXPECT_NE(twice.find("given twice"), std::string::npos) << twice;
  EXPECT_EQ(error_of({"nclasses=7"}), "") << "a usize value is accepted";
}

// tiny-llama's Output Shape and Mult-Adds columns, the whole forward (config bound).
TEST(SummaryInstances, TinyLlamaOutputShapesGolden) {
  auto a = analyze(kLlama, kLlama + "/config.json");
  auto m = cg::query::build_summary(a.ir, "F32");
  // Every layer alike: the projections and MLP by hand (see the test above), the two attention
  // matmuls b·8 heads·seq_len·32·seq_len each (on the first call the cache the constructor leaves
  // `None` is empty: the keys are the input's positions), the norms without a rule (no figure).
  std::string layer =
      "[b, seq_len, 256] b*seq_len*724,992 + b*seq_len*seq_len*512\n"
      "input_layernorm (RmsNorm) [b, seq_len, 256] -\n"
      "self_attn (Attention) [b, seq_len, 256] b*seq_len*196,608 + b*seq_len*seq_len*512\n"
      "q_proj (Linear) [b, seq_len, 256] b*seq_len*65,536\n"
      "k_proj (Linear) [b, seq_len, 128] b*seq_len*32,768\n"
      "v_proj (Linear) [b, seq_len, 128] b*seq_len*32,768\n"
      "o_proj (Linear) [b, seq_len, 256] b*seq_len*65,536\n"
      "post_attention_layernorm (RmsNorm) [b, seq_len, 256] -\n"
      "mlp (Mlp) [b, seq_len, 256] b*seq_len*528,384\n"
      "gate_proj (Linear) [b, seq_len, 688] b*seq_len*176,128\n"
      "up_proj (Linear) [b, seq_len, 688] b*seq_len*176,128\n"
      "down_proj (Linear) [b, seq_len, 256] b*seq_len*176,128\n";
  // The root's output is the tied lm_head's: a Linear made from the embedding tensor
  // (tie_word_embeddings), a module at the embedding's key applying its [4096, 256] weight to the
  // last position: [b, 4096], b × 4096 × 256; its weights are counted once and the row says so.
  std::string want =
      "TinyLlama (TinyLlama) [b, 4096] b*1,048,576 + b*seq_len*2,899,968 + "
      "b*seq_len*seq_len*2,048\n"
      "model.embed_tokens (Embedding) [b, seq_len, 256] -\n";
  for (int i = 0; i < 4; ++i)
    want += "model.layers." + std::to_string(i) + " (Block) " + layer;
  want += "model.norm (RmsNorm) [b, seq_len, 256] -\n";
  want += "model.embed_tokens (Linear) [b, 4096] b*1,048,576\n";
  EXPECT_EQ(shape_columns(m), want);
  int tied = 0;
  for (const auto& r : m.rows)
    if (r.marker.find("`lm_head`, shared with src/model.rs:") != std::string::npos) ++tied;
  EXPECT_EQ(tied, 1);
  EXPECT_EQ(m.totals.shared.size(), 1u);
}

// A name the forward pass is not written in, a negative size, a non-number: refused with the
// reason (cg::InputError: `summary` exits 2), never ignored.
TEST(SummaryInstances, BadInputShapeIsAnInputError) {
  auto a = analyze(kLlama, kLlama + "/config.json");
  try {
    cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape("b=1,seq=8"));
    ADD_FAILURE() << "an unknown dimension was accepted";
  } catch (const cg::InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("`seq` is not a dimension"), std::string::npos) << what;
    EXPECT_NE(what.find("written in b, seq_len"), std::string::npos) << what;
  }
  for (const char* bad : {"b=-1", "t=two", "b=1.5", "t"})
    EXPECT_THROW(cg::query::parse_input_shape(bad), cg::InputError) << bad;
}

// shared_proj: `enc` and `dec` are both built under `proj` (one [8, 8] weight), `head` is
// [4, 8] + bias [4]; forward reshapes to [b, t, 8], runs enc then head.
TEST(SummaryInstances, SharedWeightCountedOnceAndMemoryByHand) {
  auto a = analyze(kShared);
  auto m = cg::query::build_summary(a.ir, "F32", -1, cg::query::parse_input_shape("b=2,t=3"));
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(64 + 32 + 4));  // not 164
  EXPECT_EQ(m.totals.bytes, std::optional<std::uint64_t>(100 * 4));
  ASSERT_EQ(m.totals.shared.size(), 1u);
  EXPECT_NE(m.totals.shared[0].find("reuses the weights of proj"), std::string::npos)
      << m.totals.shared[0];
  int marked = 0;
  for (const auto& r : m.rows)
    if (r.marker.find("shared with src/lib.rs:") != std::string::npos) ++marked;
  EXPECT_EQ(marked, 1);
  // 2 × 3 tokens × (8×8 + 8×4) = 576 multiply-adds.
  EXPECT_EQ(m.totals.mult_adds, "576");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  // Activations: reshape [2,3,8] + enc [2,3,8] + head [2,3,4] = 120 elements, 480 bytes at F32.
  EXPECT_EQ(m.totals.activations, "120");
  EXPECT_EQ(m.totals.activation_bytes, std::optional<std::uint64_t>(480));
  EXPECT_EQ(m.totals.activation_unknown_ops, 0u);
  // At BF16 every figure halves.
  auto half = cg::query::build_summary(a.ir, "BF16", -1, cg::query::parse_input_shape("b=2,t=3"));
  EXPECT_EQ(half.totals.bytes, std::optional<std::uint64_t>(200));
  EXPECT_EQ(half.totals.activation_bytes, std::optional<std::uint64_t>(240));

  std::string text = cg::query::render_model_summary(a, "");
  EXPECT_NE(text.find("Activations, one forward: b*t*20 elements"), std::string::npos) << text;
  EXPECT_NE(text.find("Shared weights are counted once"), std::string::npos) << text;
  // Training with AdamW: weights + gradients + two moments = 4 × 400 bytes.
  EXPECT_NE(text.find("Training with AdamW (MB): 0.00"), std::string::npos) << text;
}

// A root without a forward runs its children's; each child's input is given by its key path.
// By hand: the encoder's 2·3 rows × (8·32 + 32·16) = 4,608, the decoder's 2·5 rows × (768 +
// 16·4) = 8,320: 12,928. A dotted name that is no child's input is refused, naming the inputs.
TEST(SummaryInstances, AChildsForwardInputIsNamedByItsKeyPath) {
  cg::pipeline::Options o;
  o.path = kNoRootForward;
  o.root = "Model";
  o.input_tensors = cg::query::parse_input_tensors("encoder.xs=2x3x8,decoder.xs=2x5x8");
  auto m = cg::query::build_summary(cg::pipeline::analyze(o).ir, "F32");
  EXPECT_EQ(m.totals.mult_adds, "12,928");
  EXPECT_TRUE(m.totals.mult_adds_missing.empty());
  const auto* head = row(m, "head", "Linear");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->output_shape, "[2, 5, 4]");
  o.input_tensors = cg::query::parse_input_tensors("encoder.ys=2x3x8");
  try {
    cg::pipeline::analyze(o);
    ADD_FAILURE() << "a dotted name that is no input was accepted";
  } catch (const cg::InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("`encoder.xs`"), std::string::npos) << what;
  }
  EXPECT_THROW(cg::query::parse_input_tensors("encoder..xs=2x3"), cg::InputError);
  EXPECT_THROW(cg::query::parse_input_tensors("encoder.xs=2"), cg::InputError);
}

// `query module` carries the row's figures beside the IR record.
TEST(SummaryInstances, QueryModuleHasOutputShapeMultAddsAndWeightBytes) {
  auto a = analyze(kLlama, kLlama + "/config.json");
  cg::query::QueryRequest r;
  r.kind = "module";
  r.selector = "model.layers.1.mlp";
  cg::query::QueryContext ctx;
  ctx.config_path = kLlama + "/config.json";
  std::string out = cg::query::answer_query(a, r, ctx);
  EXPECT_NE(out.find("\"output_shape\":\"[b, seq_len, 256]\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"mult_adds\":\"b*seq_len*528,384\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"mult_adds_lower_bound\":false"), std::string::npos) << out;
  EXPECT_NE(out.find("\"parameter_count\":528384"), std::string::npos) << out;
  EXPECT_NE(out.find("\"weights_bytes\":2113536"), std::string::npos) << out;  // × 4 at F32
  EXPECT_NE(out.find("\"weights_dtype\":\"F32\""), std::string::npos) << out;
}

// #21: with a config bound, doctor does not tell the user to pass one; it says what is left.
TEST(SummaryInstances, DoctorDoesNotAskForTheConfigItWasGiven) {
  const std::string crate = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/ctor_arg";
  cg::query::QueryRequest r;
  r.kind = "doctor";
  auto bare = analyze(crate);
  EXPECT_NE(cg::query::answer_query(bare, r).find("pass --config"), std::string::npos);
  auto bound = analyze(crate, crate + "/config.json");
  cg::query::QueryContext ctx;
  ctx.config_path = crate + "/config.json";
  std::string out = cg::query::answer_query(bound, r, ctx);
  EXPECT_EQ(out.find("pass --config"), std::string::npos) << out;
  EXPECT_NE(out.find("stay symbolic with the config bound"), std::string::npos) << out;
}

}  // namespace
