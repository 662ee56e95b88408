// The dataflow passes over tiny Candle-style crates in tests/fixtures/dataflow (one positive and
// one negative crate per finding rule) and over examples/tiny-llama: the findings, phases,
// operation names and parameter links a user reads in `candle-graph check`/the viewer.
#include "analysis/dataflow.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "analysis/config_values.hpp"
#include "analysis/inventory.hpp"
#include "ir/stable_id.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/crate.hpp"

namespace {
namespace fs = std::filesystem;
using cg::ir::Confidence;
using cg::ir::Severity;

cg::ir::ModelIr analyze_dir(const fs::path& dir, bool with_inventory = false,
                            const cg::analysis::ConfigValues* config = nullptr,
                            std::size_t crate_node_budget = 4'000'000) {
  cg::cargo::Selection sel;
  auto loaded = cg::rust::load_crate(dir, sel);
  const auto& crate = loaded.crate;
  cg::ir::ModelIr ir;
  ir.functions = cg::pipeline::functions_of(crate);
  if (with_inventory) {
    cg::analysis::InventoryOptions inv;
    inv.candle_nn_version = "0.11.0";
    inv.config = config;
    cg::analysis::build_inventory(crate, inv, ir);
  }
  cg::analysis::DataflowOptions opts;
  opts.candle_version = "0.11.0";
  opts.config = config;
  opts.crate_node_budget = crate_node_budget;
  cg::analysis::build_dataflow(crate, opts, ir);
  return ir;
}

cg::ir::ModelIr fixture(const std::string& name, bool with_inventory = false) {
  return analyze_dir(fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow" / name, with_inventory);
}

std::vector<const cg::ir::Finding*> findings(const cg::ir::ModelIr& ir, const std::string& rule) {
  std::vector<const cg::ir::Finding*> out;
  for (const auto& f : ir.findings)
    if (f.rule == rule) out.push_back(&f);
  return out;
}

std::string all_findings(const cg::ir::ModelIr& ir) {
  std::string s;
  for (const auto& f : ir.findings)
    s += f.rule + ": " + f.message + "\n";
  return s;
}

bool proven_error(const cg::ir::ModelIr& ir) {
  return std::any_of(ir.findings.begin(), ir.findings.end(), [](const auto& f) {
    return f.severity == Severity::error && f.confidence == Confidence::proven;
  });
}

TEST(Dataflow, DtypeConflictIsAProvenError) {
  auto ir = fixture("dtype_conflict_pos");
  auto f = findings(ir, "dtype-conflict");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_EQ(f[0]->severity, Severity::error);
  EXPECT_EQ(f[0]->confidence, Confidence::proven);
  EXPECT_NE(f[0]->message.find("BF16 vs F32"), std::string::npos) << f[0]->message;
  EXPECT_EQ(f[0]->source.value_or(""), "src/lib.rs:7");
}

TEST(Dataflow, SameDtypesAndAMaskAreNoConflict) {
  auto ir = fixture("dtype_conflict_neg");
  EXPECT_TRUE(findings(ir, "dtype-conflict").empty()) << all_findings(ir);
  EXPECT_FALSE(proven_error(ir));
}

TEST(Dataflow, KnownAgainstUnknownDtypeIsNoWarning) {
  // `x.to_dtype(F32) + y` with y's dtype unknown: right whenever y is F32, which is how such code
  // is run; a warning here was false on most of candle-transformers' 64 cases.
  auto ir = fixture("dtype_risk_pos");
  for (const auto& f : ir.findings)
    EXPECT_NE(f.severity, Severity::warning) << f.rule << ": " << f.message;
  EXPECT_FALSE(proven_error(ir));
}

TEST(Dataflow, AFixedDtypeBesideARunTimeOneIsARisk) {
  // qwen2/olmo's mask: zeros in `self.dtype` joined to an F32 mask before the conversion: every
  // model dtype but F32 fails there. The warning names both dtypes.
  auto ir = fixture("dtype_runtime_pos");
  auto f = findings(ir, "dtype-risk");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_EQ(f[0]->confidence, Confidence::conditional);
  EXPECT_NE(f[0]->message.find("cat mixes F32 with `self.dtype`"), std::string::npos)
      << f[0]->message;
  EXPECT_FALSE(proven_error(ir));
}

TEST(Dataflow, ARunTimeDtypeFollowedOrConvertedIsNoRisk) {
  // `zeros(.., mask.dtype(), ..)`, a mask converted to `self.dtype` first, and two F32 sides.
  auto ir = fixture("dtype_runtime_neg");
  EXPECT_TRUE(findings(ir, "dtype-risk").empty()) << all_findings(ir);
  EXPECT_TRUE(findings(ir, "dtype-conflict").empty()) << all_findings(ir);
}

TEST(Dataflow, SigmoidThenLogIsAConditionalInferenceWarning) {
  // The log is -inf only for inputs that saturate the sigmoid: it may happen, not on every run.
  auto ir = fixture("numeric_pos");
  auto f = findings(ir, "numeric-domain-violation");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_EQ(f[0]->confidence, Confidence::conditional);
  EXPECT_FALSE(proven_error(ir));
  EXPECT_NE(f[0]->message.find("inference impact"), std::string::npos) << f[0]->message;
}

TEST(Dataflow, AffineEpsilonDischargesTheLog) {
  auto ir = fixture("numeric_neg");
  EXPECT_TRUE(findings(ir, "numeric-domain-violation").empty()) << all_findings(ir);
  EXPECT_FALSE(proven_error(ir));
}

TEST(Dataflow, ZeroTimesLogZero) {
  auto ir = fixture("zero_log_pos");
  auto f = findings(ir, "zero-times-infinity");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_EQ(f[0]->confidence, Confidence::conditional);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_FALSE(proven_error(ir));
}

TEST(Dataflow, GuardedLogTimesProbabilityIsFine) {
  auto ir = fixture("zero_log_neg");
  EXPECT_TRUE(findings(ir, "zero-times-infinity").empty()) << all_findings(ir);
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}

TEST(Dataflow, ExpandedBceWithLogitsIsAnUnstableLibraryLoss) {
  auto ir = fixture("bce_pos");
  auto f = findings(ir, "unstable-library-loss");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_EQ(f[0]->confidence, Confidence::conditional);
  EXPECT_NE(f[0]->message.find("[expanded from candle-nn-0.11.0/src/loss.rs:64-74]"),
            std::string::npos);
  EXPECT_NE(f[0]->message.find("loss can become NaN"), std::string::npos);
  for (const auto& fn : ir.functions)
    if (fn.name == "train_loss") {
      EXPECT_TRUE(fn.is_loss);
      EXPECT_EQ(fn.execution_phases, std::vector{cg::ir::ExecutionPhase::train});
    }
}

TEST(Dataflow, MseLossHasNoNumericFinding) {
  auto ir = fixture("bce_neg");
  EXPECT_TRUE(ir.findings.empty()) << all_findings(ir);
  bool loss_tensor = std::any_of(ir.tensors.begin(), ir.tensors.end(),
                                 [](const auto& t) { return t.role == cg::ir::TensorRole::loss; });
  EXPECT_TRUE(loss_tensor);
}

TEST(Dataflow, DetachedVarIsADeadGradientPath) {
  auto ir = fixture("dead_grad_pos");
  auto f = findings(ir, "dead-gradient-path");
  ASSERT_EQ(f.size(), 1u) << all_findings(ir);
  EXPECT_NE(f[0]->message.find("`w`"), std::string::npos) << f[0]->message;
  EXPECT_EQ(f[0]->severity, Severity::warning);
  // The severing op stays visible as a rule, not as a finding.
  bool severs = std::any_of(ir.operations.begin(), ir.operations.end(), [](const auto& o) {
    return o.name == "detach" && o.gradient_rule == "severs";
  });
  EXPECT_TRUE(severs);
}

TEST(Dataflow, VarReachingTheLossIsAlive) {
  auto ir = fixture("dead_grad_neg");
  EXPECT_TRUE(findings(ir, "dead-gradient-path").empty()) << all_findings(ir);
}

TEST(Dataflow, RecursionIsBoundedWithADiagnostic) {
  auto ir = fixture("recursion");
  auto f = findings(ir, "dataflow-bound");
  ASSERT_FALSE(f.empty()) << all_findings(ir);
  EXPECT_NE(f[0]->message.find("recursion guard"), std::string::npos);
  EXPECT_EQ(f[0]->severity, Severity::information);
}

TEST(Dataflow, FieldForwardLinksTheLayerParameters) {
  auto ir = fixture("linking", true);
  ASSERT_FALSE(ir.parameters.empty()) << "inventory found no parameters";
  for (const auto& p : ir.parameters) {
    ASSERT_EQ(p.uses.size(), 1u) << p.key;
    EXPECT_NE(p.uses[0].find(":forward:"), std::string::npos) << p.uses[0];
    bool fc = p.key.rfind("fc.", 0) == 0;
    EXPECT_EQ(p.uses[0].find(fc ? ":forward:0" : ":forward:1") != std::string::npos, true)
        << p.key << " -> " << p.uses[0];
  }
}

TEST(Dataflow, TinyLlamaGraphsAreSensibleAndStable) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "examples/tiny-llama";
  auto a = analyze_dir(dir, true);
  auto b = analyze_dir(dir, true);
  EXPECT_EQ(a.operations, b.operations) << "ids and edges are deterministic";
  auto has_op = [&](const std::string& fn, const std::string& name) {
    return std::any_of(a.operations.begin(), a.operations.end(), [&](const auto& o) {
      return o.function.find(fn) != std::string::npos && o.name == name;
    });
  };
  EXPECT_TRUE(has_op("Attention", "matmul"));
  EXPECT_TRUE(has_op("Attention", "softmax_last_dim"));
  EXPECT_TRUE(has_op("Block", "forward"));
  for (const auto& f : a.functions) {
    if (f.qualified_name == "model::TinyLlama::forward") {
      EXPECT_EQ(f.execution_phases, std::vector{cg::ir::ExecutionPhase::infer});
    }
    if (f.qualified_name == "train::train_step") {
      EXPECT_EQ(f.execution_phases, std::vector{cg::ir::ExecutionPhase::train});
    }
    if (f.qualified_name == "train::lm_loss") {
      EXPECT_TRUE(f.is_loss);
    }
  }
  // Contracts: `let (b, t, _hidden) = xs.dims3()?` names the dims; reshape/transpose carry them.
  bool transposed = std::any_of(a.tensors.begin(), a.tensors.end(), [](const auto& t) {
    if (t.id.find("Attention") == std::string::npos ||
        t.id.find("transpose#0") == std::string::npos)
      return false;
    if (t.shape.rank != 4u) return false;
    return t.shape.dimensions[0].expr == "b" && t.shape.dimensions[1].expr == "self.num_heads" &&
           t.shape.dimensions[2].expr == "t";
  });
  EXPECT_TRUE(transposed) << "q.reshape((b, t, h, d)).transpose(1, 2) is (b, h, t, d)";
  EXPECT_FALSE(proven_error(a)) << all_findings(a);
  std::size_t linked = 0u;
  for (const auto& p : a.parameters)
    linked += p.uses.empty() ? 0u : 1u;
  EXPECT_EQ(linked, a.parameters.size()) << "every tiny-llama parameter is read by an operation";
}

}  // namespace

namespace {

TEST(Dataflow, OperationIdsSurviveAnUnrelatedEdit) {
  fs::path src = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/zero_log_pos";
  fs::path dir = fs::temp_directory_path() / ("cg-dataflow-edit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  fs::copy_file(src / "Cargo.toml", dir / "Cargo.toml");
  std::ifstream in(src / "src/lib.rs");
  std::string lib((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A new function with its own `log` and `mul`, written above the original one.
  std::string edited = lib;
  edited.insert(edited.find("/// p * log(p)"),
                "pub fn other(x: &Tensor) -> Result<Tensor> {\n    let l = x.log()?;\n"
                "    x.mul(&l)\n}\n\n");
  std::ofstream(dir / "src/lib.rs") << edited;
  auto after = analyze_dir(dir);
  fs::remove_all(dir);
  auto before = fixture("zero_log_pos");
  std::set<std::string> ids_after;
  for (const auto& o : after.operations)
    ids_after.insert(o.id);
  ASSERT_FALSE(before.operations.empty());
  for (const auto& o : before.operations)
    EXPECT_TRUE(ids_after.count(o.id)) << o.id;
  EXPECT_GT(after.operations.size(), before.operations.size());
}

}  // namespace

namespace {

const cg::ir::Tensor* tensor(const cg::ir::ModelIr& ir, const std::string& id_part) {
  for (const auto& t : ir.tensors)
    if (t.id.find(id_part) != std::string::npos) return &t;
  return nullptr;
}

const cg::ir::Operation* op(const cg::ir::ModelIr& ir, const std::string& fn,
                            const std::string& name, std::size_t nth = 0) {
  // `fn` is "Type::method" or "function"; ids spell the path with their own separators.
  auto sep = fn.find("::");
  std::string a = sep == std::string::npos ? fn : fn.substr(0, sep);
  std::string b = sep == std::string::npos ? fn : fn.substr(sep + 2);
  for (const auto& o : ir.operations)
    if (o.function.find(a) != std::string::npos && o.function.find(b) != std::string::npos &&
        o.name == name && nth-- == 0)
      return &o;
  return nullptr;
}

std::string dims(const cg::ir::TensorShape& s) {
  std::string out;
  for (const auto& d : s.dimensions)
    out += (out.empty() ? "" : ",") + d.expr;
  return out;
}

TEST(Dataflow, BoundConfigMakesShapesAndMultAddsConcrete) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "examples/tiny-llama";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  // hidden 256, 8 heads -> head_dim 32 (Config::head_dim() from the constructor), 4 kv heads.
  // Every call from the model's forwards gives the attention the same (b, seq_len, 256) input,
  // so its tensors read in the root's names (`seq_len`), not the helper's own `t` (issue #37).
  const auto* qr = op(ir, "Attention::forward", "reshape", 0);
  ASSERT_NE(qr, nullptr);
  const auto* q = tensor(ir, qr->output);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(dims(q->shape), "b,seq_len,8,32");
  const auto* xs = tensor(ir, "tensor:function%3Amodel%253A%253AAttention%253A%253Aforward%3A:xs");
  ASSERT_NE(xs, nullptr);
  EXPECT_EQ(dims(xs->shape), "b,seq_len,256");
  // q_proj: Linear 256 -> 256 on (b, seq_len, 256): b*seq_len*256*256 mult-adds.
  const auto* qp = op(ir, "Attention::forward", "forward", 0);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->mult_adds.value_or("-"), "b*seq_len*65536");
  const auto* qo = tensor(ir, qp->output);
  ASSERT_NE(qo, nullptr);
  EXPECT_EQ(dims(qo->shape), "b,seq_len,256");
  // The value after `repeat_kv`: 8 heads, since the model's run decides `if n_rep == 1` from the
  // config (4 kv heads, n_rep 2), and the first call's length: the constructor leaves the cache
  // `None`, so its `None` arm leads the join and the keys are the input's `seq_len` positions.
  const auto* kc = op(ir, "Attention::forward", "contiguous", 1);
  ASSERT_NE(kc, nullptr);
  EXPECT_EQ(dims(tensor(ir, kc->output)->shape), "b,8,seq_len,32");
  // Mlp::forward is also an entrypoint of its own (input shape unknown); reached from Block its
  // input is (b, t, 256) after the RmsNorm, so gate_proj 256 -> 688 counts b*t*176128.
  const auto* gate = op(ir, "Mlp::forward", "forward", 0);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->mult_adds.value_or("-"), "b*seq_len*176128");
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}

TEST(Dataflow, AttentionMatmulMultAddsFromTheConfig) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/config_shapes";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  // hidden 64, 4 heads: q/k are (b, 4, t, 16); q k^T is b*4*t*16*t; (att v) the same.
  const auto* qk = op(ir, "Attention::forward", "matmul", 0);
  ASSERT_NE(qk, nullptr);
  EXPECT_EQ(qk->mult_adds.value_or("-"), "b*t*t*64");
  const auto* av = op(ir, "Attention::forward", "matmul", 1);
  ASSERT_NE(av, nullptr);
  EXPECT_EQ(av->mult_adds.value_or("-"), "b*t*t*64");
  EXPECT_EQ(dims(tensor(ir, av->output)->shape), "b,4,t,16");
  // The per-head split through a helper returning one tensor keeps its shape.
  const auto* split = op(ir, "Attention::forward", "split_heads", 0);
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(dims(tensor(ir, split->output)->shape), "b,4,t,16");
  // The output projection: Linear 64 -> 64 on (b, t, 64).
  const auto* o = op(ir, "Attention::forward", "forward", 2);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->mult_adds.value_or("-"), "b*t*4096");
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}

TEST(Dataflow, AConfigChosenActivationKeepsTheShape) {
  // hidden 4, intermediate 8: `xs.apply(&up)?.apply(&act)?.apply(&down)` with `hidden_act:
  // "silu"` is (b, t, 8) into down_proj 8 -> 4: b*t*32, and its output (b, t, 4).
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/activation_mlp";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  const auto* act = op(ir, "Mlp::forward", "forward", 1);
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(dims(tensor(ir, act->output)->shape), "b,t,8");
  const auto* down = op(ir, "Mlp::forward", "forward", 2);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->mult_adds.value_or("-"), "b*t*32");
  EXPECT_EQ(dims(tensor(ir, down->output)->shape), "b,t,4");
  // `self.act.forward(&h)` the same.
  const auto* out = op(ir, "Head::forward", "forward", 2);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->mult_adds.value_or("-"), "b*t*32");
  // `gate_act: "swiglu"` halves the last dimension: nothing is claimed after it.
  const auto* gated = op(ir, "Gated::forward", "forward", 2);
  ASSERT_NE(gated, nullptr);
  EXPECT_FALSE(gated->mult_adds) << *gated->mult_adds;
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}

TEST(Dataflow, WithoutAConfigShapesStaySymbolicAndNoMultAddsAreGuessed) {
  auto ir = analyze_dir(fs::path(CG_SOURCE_DIR) / "examples/tiny-llama", true);
  const auto* qr = op(ir, "Attention::forward", "reshape", 0);
  ASSERT_NE(qr, nullptr);
  const auto* q = tensor(ir, qr->output);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(dims(q->shape), "b,t,self.num_heads,self.head_dim");
  for (const auto& o : ir.operations)
    EXPECT_FALSE(o.mult_adds &&
                 o.mult_adds->find_first_not_of("0123456789*bt") != std::string::npos)
        << o.id << " " << *o.mult_adds;
  const auto* qp = op(ir, "Attention::forward", "forward", 0);
  ASSERT_NE(qp, nullptr);
  EXPECT_FALSE(qp->mult_adds) << "no weight shape without a config";
}

TEST(Dataflow, LiteralElementTypesAndDevicesAreFacts) {
  auto ir = fixture("literal_dtype_device");
  auto risks = findings(ir, "dtype-conflict");
  EXPECT_TRUE(risks.empty()) << all_findings(ir);
  const auto* ids = op(ir, "lookup", "from_slice");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(tensor(ir, ids->output)->dtype, "U32");
  const auto* w = op(ir, "lookup", "from_vec");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(tensor(ir, w->output)->dtype, "F32");
  // `Tensor::zeros(.., &Device::Cpu)` is on the CPU; `ones(.., xs.device())` follows xs.
  const auto* z = op(ir, "lookup", "zeros");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(tensor(ir, z->output)->device.kind, cg::ir::DeviceKind::cpu);
  const auto* o = op(ir, "lookup", "ones");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(tensor(ir, o->output)->device.kind, cg::ir::DeviceKind::same_as);
  EXPECT_NE(tensor(ir, o->output)->device.same_as.find("xs"), std::string::npos);
  const auto* add = op(ir, "lookup", "add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(tensor(ir, add->output)->device.kind, cg::ir::DeviceKind::same_as);
  const auto* moved = op(ir, "lookup", "to_device");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(tensor(ir, moved->output)->device.kind, cg::ir::DeviceKind::cpu);
}

// `Tensor::try_from(f32::MIN)` (std's conversion, which candle implements) is host data like
// `Tensor::new`: a catalogued constant, not an operation of unknown rule that may multiply (the
// Mult-Adds of every BERT stayed a lower bound on it).
TEST(Dataflow, TensorTryFromIsAConstantFromHostData) {
  auto ir = fixture("literal_dtype_device");
  const auto* c = op(ir, "extended_mask", "try_from");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->shape_rule, "unknown");
  EXPECT_EQ(tensor(ir, c->output)->dtype, "F32");
}

TEST(Dataflow, UnsuffixedOrMixedLiteralsStayUnknown) {
  auto ir = fixture("literal_dtype_device");
  const auto* f = op(ir, "unsure", "from_vec");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(tensor(ir, f->output)->dtype, "Unknown") << "`vec![1.0, 2.0]` may be f32 or f64";
  const auto* m = op(ir, "unsure", "from_slice");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(tensor(ir, m->output)->dtype, "Unknown") << "mixed suffixes are not one dtype";
  EXPECT_EQ(findings(ir, "dtype-conflict").size(), 0u);
}

TEST(Dataflow, HostDataTypesFromLocalsAndParameters) {
  auto ir = fixture("literal_dtype_device");
  const auto* m = op(ir, "mask", "from_slice");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(tensor(ir, m->output)->dtype, "F32") << "`f32::NEG_INFINITY` in the collected chain";
  const auto* n = op(ir, "mask", "new");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(tensor(ir, n->output)->dtype, "F32") << "`on_true: f32`";
  const auto* cat = op(ir, "mask", "cat");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(tensor(ir, cat->output)->dtype, "F32");
  const auto* o = op(ir, "opaque", "from_vec");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(tensor(ir, o->output)->dtype, "Unknown")
      << "`n as u32` is an argument, not the element";
  EXPECT_TRUE(findings(ir, "dtype-conflict").empty()) << all_findings(ir);
}

}  // namespace

namespace {

TEST(Dataflow, CrateWideBudgetNamesTheEntrypointsItDidNotReach) {
  fs::path dir = fs::temp_directory_path() / ("cg-dataflow-budget-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  std::ofstream(dir / "Cargo.toml") << "[package]\nname = \"b\"\nversion = \"0.1.0\"\n";
  std::string lib = "use candle::{Result, Tensor};\n";
  for (int i = 0; i < 6; ++i)
    lib += "pub fn e" + std::to_string(i) +
           "(x: &Tensor) -> Result<Tensor> { x.relu()?.exp()?.sqrt()?.relu() }\n";
  std::ofstream(dir / "src/lib.rs") << lib;
  auto full = analyze_dir(dir);
  auto cut = analyze_dir(dir, false, nullptr, 20);
  fs::remove_all(dir);
  EXPECT_TRUE(findings(full, "dataflow-bound").empty()) << all_findings(full);
  auto f = findings(cut, "dataflow-bound");
  ASSERT_EQ(f.size(), 1u) << all_findings(cut);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_NE(f[0]->message.find("dataflow stopped after 20 expression nodes over the crate"),
            std::string::npos)
      << f[0]->message;
  EXPECT_NE(f[0]->message.find("entrypoints were not analyzed, from `e"), std::string::npos)
      << f[0]->message;
  EXPECT_LT(cut.operations.size(), full.operations.size());
  EXPECT_FALSE(cut.operations.empty()) << "the entrypoints before the budget are analyzed";
}

TEST(Dataflow, ScalarOperandKeepsTheTensorsDtype) {
  auto ir = fixture("dtype_risk_neg");
  EXPECT_TRUE(ir.findings.empty()) << all_findings(ir);
  const cg::ir::Operation* mul = nullptr;
  for (const auto& o : ir.operations)
    if (o.name != "to_dtype") mul = &o;
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(tensor(ir, mul->output)->dtype, "F32") << mul->name;
}

}  // namespace

// Issue #18: the run of TinyLlama::forward unrolled along the module tree. The layers loop is one
// family call standing for the 4 layers, each holding its attention call, whose q_proj call has
// this instance's output shape and multiply-adds; every operation sits in exactly one call of a
// run, and the ids do not depend on the order of analysis.
// tests/fixtures/dataflow/option_arms: an `Option` known on every execution picks its arm.
// Self-attention passes `None` and runs only the relu arm; cross-attention (an `if let` on an
// `Option<(Attn, LayerNorm)>` field, which binds each element with its own modules) passes
// `Some(xa)` and runs only the exp arm. An accumulator starting as `None` in a loop still adds on
// later iterations; an embedding of U32 ids outputs its table's dtype, not U32 (no dtype finding
// with the F32 input); blocks built into a local and pushed are the `blocks` field's.
TEST(Dataflow, AKnownOptionVariantTakesItsArmOnly) {
  auto ir = fixture("option_arms", true);
  cg::ir::normalize(ir);
  auto ops_of = [&](const std::string& path, const std::string& method) {
    std::set<std::string> out;
    for (const auto& c : ir.instance_calls)
      if (c.path == path && c.method == method)
        for (const auto& o : c.operations)
          out.insert(o.substr(o.rfind("%3A:") + 4));
    return out;
  };
  EXPECT_EQ(ops_of("blocks.{i}.attn", "attend"), (std::set<std::string>{"relu:0"}));
  EXPECT_EQ(ops_of("blocks.{i}.encoder_attn", "attend"), (std::set<std::string>{"exp:0"}));
  EXPECT_EQ(ops_of("blocks.{i}.encoder_attn_ln", "forward").size(), 1u)
      << "the tuple's LayerNorm element is its own module";
  bool accumulates = false;
  for (const auto& o : ir.operations)
    accumulates =
        accumulates || o.id.find("Decoder%253A%253Aforward%3A:add:0") != std::string::npos;
  EXPECT_TRUE(accumulates) << "the `Some(s)` arm runs on the loop's later iterations";
  for (const auto& t : ir.tensors)
    if (t.id.find("Decoder%253A%253Aforward%3A:forward#0") != std::string::npos) {
      EXPECT_EQ(t.dtype, "Unknown") << "an embedding's output is its table's dtype";
    }
  EXPECT_TRUE(findings(ir, "dtype-conflict").empty());
  for (const auto& m : ir.modules) {
    if (m.prefix == "blocks.0" || m.prefix == "blocks.1") {
      EXPECT_EQ(m.field, "blocks");
    }
    if (m.prefix == "blocks.0.encoder_attn_ln") {
      EXPECT_EQ(m.field, "cross_attn");
    }
  }
}

// output_struct: the forward returns `Ok(Output { logits: self.head.forward(&hidden)?, hidden })`.
// The head applied inside the struct literal is an operation of the forward (it was skipped: no
// head call, no Mult-Adds), and `predict` reading `out.logits` gets that very tensor.
TEST(Dataflow, AStructLiteralsFieldsRunAndAreReadBack) {
  auto ir = fixture("output_struct", true);
  const cg::ir::InstanceCall* head = nullptr;
  for (const auto& c : ir.instance_calls)
    if (c.path == "head" && c.method == "forward") head = &c;
  ASSERT_NE(head, nullptr) << "the head applied in the struct literal runs";
  ASSERT_TRUE(head->output_shape.rank.has_value());
  EXPECT_EQ(head->output_shape.dimensions.back().expr, "4");
  EXPECT_EQ(head->mult_adds, "b*64");
  const cg::ir::Operation* softmax = nullptr;
  for (const auto& o : ir.operations)
    if (o.name == "softmax_last_dim") softmax = &o;
  ASSERT_NE(softmax, nullptr);
  ASSERT_EQ(softmax->inputs.size(), 1u);
  bool from_head = false;
  for (const auto& id : head->operations)
    for (const auto& o : ir.operations)
      if (o.id == id && o.output == softmax->inputs[0]) from_head = true;
  EXPECT_TRUE(from_head) << "`out.logits` is the head's output, read back from the struct";
}

TEST(Dataflow, InstanceCallsFollowTheModuleTree) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "examples/tiny-llama";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  cg::ir::normalize(ir);
  std::map<std::string, const cg::ir::InstanceCall*> by_id;
  for (const auto& c : ir.instance_calls)
    by_id[c.id] = &c;
  auto in_forward = [&](const std::string& path) -> const cg::ir::InstanceCall* {
    for (const auto& c : ir.instance_calls)
      if (c.path == path && c.entrypoint.find("TinyLlama%3A%3Aforward:") != std::string::npos)
        return &c;
    return nullptr;
  };
  const auto* root = in_forward("");
  ASSERT_NE(root, nullptr);
  EXPECT_FALSE(root->parent.has_value());
  const auto* layers = in_forward("model.layers.{i}");
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->parent.value_or("-"), root->id);
  EXPECT_EQ(layers->count.value_or(0), 4u);
  EXPECT_EQ(layers->repeat.value_or("-"), "layer_idx in 0..4");
  EXPECT_EQ(layers->modules.size(), 4u);
  EXPECT_TRUE(layers->call_site.has_value());
  // The embedding's output is the ids' shape (`let (_b, seq_len) = input_ids.dims2()?`) plus the
  // hidden size, and `dims3()` on it names those same dimensions: one name per dimension per run.
  EXPECT_EQ(dims(layers->output_shape), "b,seq_len,256");
  const auto* attn = in_forward("model.layers.{i}.self_attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->parent.value_or("-"), layers->id);
  EXPECT_EQ(attn->count.value_or(0), 1u);
  const auto* q = in_forward("model.layers.{i}.self_attn.q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->parent.value_or("-"), attn->id);
  EXPECT_FALSE(q->function.has_value());
  EXPECT_EQ(q->mult_adds.value_or("-"), "b*seq_len*65536");
  const auto* k = in_forward("model.layers.{i}.self_attn.k_proj");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(dims(k->output_shape), "b,seq_len,128");  // 4 kv heads of 32
  // Every operation is listed by at most one call of a run.
  std::map<std::string, std::set<std::string>> seen;  // entrypoint -> ops
  for (const auto& c : ir.instance_calls)
    for (const auto& o : c.operations)
      EXPECT_TRUE(seen[c.entrypoint].insert(o).second) << o << " twice in " << c.entrypoint;
  // Deterministic: a second analysis gives the same records.
  auto again = analyze_dir(dir, true, &cfg);
  cg::ir::normalize(again);
  EXPECT_EQ(again.instance_calls, ir.instance_calls);
}

const cg::ir::InstanceCall* instance(const cg::ir::ModelIr& ir, const std::string& entry,
                                     const std::string& path) {
  for (const auto& c : ir.instance_calls)
    if (c.entrypoint.find(entry) != std::string::npos && c.path == path) return &c;
  return nullptr;
}

// with_tracing-style wrappers (`self.inner.forward(xs)` on a candle-nn layer the inventory folds
// into the wrapper's module) get the inner layer's weight: shapes and multiply-adds per instance.
TEST(Dataflow, WrapperLayersReachTheInnerLayersWeight) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/wrapper_layers";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  // q_proj 64 -> 64 on (b, t, 64): b*t*4096; lm_head 64 -> 100: b*t*6400 with output (b, t, 100),
  // though both run the wrapper's one `self.inner.forward(xs)`.
  const auto* q = instance(ir, "Model", "attn.q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->mult_adds.value_or("-"), "b*t*4096");
  const auto* head = instance(ir, "Model", "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->mult_adds.value_or("-"), "b*t*6400");
  EXPECT_EQ(dims(head->output_shape), "b,t,100");
  const auto* call = op(ir, "Model::forward", "forward", 2);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(dims(tensor(ir, call->output)->shape), "b,t,100");
  // The wrapper's own operation counts its first context (a 64 -> 64 projection).
  const auto* inner = op(ir, "Linear::forward", "forward", 0);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->mult_adds.value_or("-"), "b*t*4096");
  // Two reshapes in one method chain are two operations: the output projection sees
  // (b, t, 64), not the first reshape's (b, 4, t, 16) (which counted 4x).
  const auto* r1 = op(ir, "Attention::forward", "reshape", 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(dims(tensor(ir, r1->output)->shape), "b,t,64");
  const auto* o = instance(ir, "Model", "attn.o_proj");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->mult_adds.value_or("-"), "b*t*4096");
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}

// Embedding::forward: the ids' shape with the hidden size appended.
TEST(Dataflow, EmbeddingOutputIsTheIdsShapeWithHidden) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/wrapper_layers";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  const auto* e = op(ir, "Embedding::forward", "forward", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(dims(tensor(ir, e->output)->shape), "b,t,64");
  EXPECT_FALSE(e->mult_adds) << "a lookup has no multiply-adds";
  const auto* call = op(ir, "Model::forward", "forward", 0);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(dims(tensor(ir, call->output)->shape), "b,t,64");
}

// `let (q, kt, v) = self.qkv(..)?` and `let (q, kt) = rotate(&q, &kt)?` bind each name to its own
// element of the returned `Ok((..))`, so the attention matmuls get their shapes and counts.
TEST(Dataflow, TupleReturningHelpersKeepEachElementsShape) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/wrapper_layers";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  // q (b, 4, t, 16) x k^T (b, 4, 16, t): b*4*t*16*t; softmax(att) (b, 4, t, t) x v (b, 4, t, 16):
  // b*4*t*t*16. Both b*t*t*64.
  const auto* qk = op(ir, "Attention::forward", "matmul", 0);
  ASSERT_NE(qk, nullptr);
  ASSERT_EQ(qk->inputs.size(), 2u);
  EXPECT_EQ(dims(tensor(ir, qk->inputs[0])->shape), "b,4,t,16");
  EXPECT_EQ(dims(tensor(ir, qk->inputs[1])->shape), "b,4,16,t");
  EXPECT_EQ(qk->mult_adds.value_or("-"), "b*t*t*64");
  const auto* av = op(ir, "Attention::forward", "matmul", 1);
  ASSERT_NE(av, nullptr);
  EXPECT_EQ(av->mult_adds.value_or("-"), "b*t*t*64");
  EXPECT_EQ(dims(tensor(ir, av->output)->shape), "b,4,t,16");
  // The rotary helper's operations are its inputs' elements, not one tensor for all names.
  const auto* k = op(ir, "rotate", "mul", 1);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(dims(tensor(ir, k->output)->shape), "b,4,16,t");
  // The call that returned the tuple is fed by every element.
  const auto* qkv = op(ir, "Attention::forward", "qkv", 0);
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->inputs.size(), 4u);  // xs, q, k^T, v
}

// Numbers in a forward are Rust's: `hidden / 3` with hidden 100 is 33 (an integer division
// truncates), a float division cast back with `as usize` truncates its result (66.7 -> 66), and a
// division by a zero the config gives is no number, so the size it gives stays a name, not 0.
TEST(Dataflow, IntegerDivisionTruncatesAndAZeroDivisorGivesNoNumber) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/integer_arith";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  std::map<std::string, std::string> narrow_by_line;
  for (const auto& o : ir.operations)
    if (o.name == "narrow") narrow_by_line[o.source] = dims(tensor(ir, o.output)->shape);
  EXPECT_EQ(narrow_by_line["src/lib.rs:33"], "b,t,33");
  EXPECT_EQ(narrow_by_line["src/lib.rs:35"], "b,t,66");
  EXPECT_EQ(narrow_by_line["src/lib.rs:37"], "b,t,per_group");
  EXPECT_EQ(narrow_by_line["src/lib.rs:38"], "b,t,49");
  // The dimension counted from the end (`D::Minus1`), as phi3 splits its fused projection.
  EXPECT_EQ(narrow_by_line["src/lib.rs:39"], "b,t,33");
}

// The first call of a fresh model: the cache the constructor leaves `None` is empty, so the keys
// after `match &self.kv_cache { None => (k, v), Some(..) => cat(..) }` are the input's `t`
// positions; the helper's trailing `if n_rep == 1 { Ok(xs) }` is its value (n_rep 1 from the
// config). Both attention matmuls: b × 4 heads × t × 16 × t = b*t*t*64. The `cat` arm still runs:
// the state store records the append `memory` sizes the cache by.
TEST(Dataflow, AFreshCacheGivesTheFirstCallsShapesAndTheAppendIsStillSeen) {
  fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/fixtures/dataflow/kv_first_call";
  auto cfg = cg::analysis::read_config_values(dir / "config.json");
  auto ir = analyze_dir(dir, true, &cfg);
  const auto* qk = op(ir, "Attention::forward", "matmul", 0);
  ASSERT_NE(qk, nullptr);
  EXPECT_EQ(qk->mult_adds.value_or("-"), "b*t*t*64");
  EXPECT_EQ(dims(tensor(ir, qk->output)->shape), "b,4,t,t");
  const auto* av = op(ir, "Attention::forward", "matmul", 1);
  ASSERT_NE(av, nullptr);
  EXPECT_EQ(av->mult_adds.value_or("-"), "b*t*t*64");
  const auto* rk = op(ir, "Attention::forward", "repeat_kv", 0);
  ASSERT_NE(rk, nullptr);
  EXPECT_EQ(rk->shape_rule, "inlined_call");
  EXPECT_EQ(dims(tensor(ir, rk->output)->shape), "b,4,t,16");
  bool appends = false;
  for (const auto& s : ir.state_stores)
    for (const auto& t : s.tensors)
      if (s.place == "self.kv_cache" && t.appends_along) appends = true;
  EXPECT_TRUE(appends);
  EXPECT_FALSE(proven_error(ir)) << all_findings(ir);
}
