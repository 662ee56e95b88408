// One small Candle-style crate per VarBuilder idiom (reference-static §4.1–4.2), positive and
// negative: the keys, shapes and certainties a user reads in `candle-graph summary`/`verify`.
#include "analysis/inventory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/config_values.hpp"
#include "util/error.hpp"

namespace {

namespace fs = std::filesystem;
using cg::ir::Confidence;

struct Fixture {
  fs::path dir;
  explicit Fixture(const std::string& name) {
    dir = fs::temp_directory_path() / ("cg-inventory-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "src");
  }
  ~Fixture() { fs::remove_all(dir); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
};

struct Result {
  cg::ir::ModelIr ir;
  std::map<std::string, const cg::ir::Parameter*> by_key;
  const cg::ir::Parameter* param(const std::string& key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : it->second;
  }
  bool has_finding(const std::string& needle) const {
    for (const auto& f : ir.findings)
      if (f.message.find(needle) != std::string::npos) return true;
    return false;
  }
  std::string keys() const {
    std::string s;
    for (const auto& [k, p] : by_key)
      s += k + "\n";
    return s;
  }
};

// A crate whose lib.rs is `lib` (plus `extra` files), candle-nn pinned to `version` in
// Cargo.lock; optionally a config.json bound.
Result analyze(const std::string& name, const std::string& lib,
               const std::map<std::string, std::string>& extra = {},
               const std::string& config_json = "", const std::string& version = "0.11.0",
               const std::string& root = "") {
  Fixture fx(name);
  fx.write("Cargo.toml",
           "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
           "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11\" }\n"
           "candle-nn = \"0.11\"\nserde = \"1\"\n");
  fx.write("Cargo.lock", "version = 3\n\n[[package]]\nname = \"candle-core\"\nversion = \"" +
                             version + "\"\n\n[[package]]\nname = \"candle-nn\"\nversion = \"" +
                             version + "\"\n");
  fx.write("src/lib.rs", lib);
  for (const auto& [rel, text] : extra)
    fx.write(rel, text);
  cg::cargo::Selection sel;
  auto loaded = cg::rust::load_crate(fx.dir, sel);
  std::optional<cg::analysis::ConfigValues> cfg;
  if (!config_json.empty()) cfg = cg::analysis::parse_config_values(config_json, "config.json");
  cg::analysis::InventoryOptions opts;
  opts.candle_nn_version = version;
  opts.config = cfg ? &*cfg : nullptr;
  opts.root = root;
  Result r;
  cg::analysis::build_inventory(loaded.crate, opts, r.ir);
  for (const auto& p : r.ir.parameters)
    r.by_key[p.key] = &p;
  return r;
}

const char* kPrelude = "use candle::{Module, Result, Tensor};\nuse candle_nn::VarBuilder;\n";

TEST(Inventory, LiteralDottedAndNestedPrefixes) {
  auto r = analyze("prefix", std::string(kPrelude) + R"(
pub struct M { a: candle_nn::Linear, b: candle_nn::Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let vb_m = vb.pp("model");
        let a = candle_nn::linear(4, 8, vb_m.pp("encoder.proj"))?;
        let b = candle_nn::linear_no_bias(8, 2, vb.push_prefix("head").clone())?;
        Ok(Self { a, b })
    }
}
)");
  ASSERT_EQ(r.ir.components.size(), 1u) << r.keys();
  EXPECT_EQ(r.ir.components[0].name, "M");
  ASSERT_TRUE(r.param("model.encoder.proj.weight")) << r.keys();
  EXPECT_EQ(*r.param("model.encoder.proj.weight")->shape, (std::vector<std::uint64_t>{8, 4}));
  EXPECT_EQ(r.param("model.encoder.proj.weight")->confidence, Confidence::proven);
  ASSERT_TRUE(r.param("model.encoder.proj.bias"));
  ASSERT_TRUE(r.param("head.weight"));
  EXPECT_FALSE(r.param("head.bias")) << "linear_no_bias registers no bias";
  EXPECT_EQ(r.ir.parameters.size(), 3u) << r.keys();
}

TEST(Inventory, ImportAliasDecidesTheConstructor) {
  auto r = analyze("alias", std::string(kPrelude) + R"(
use candle_nn::{linear_no_bias as linear, Linear};
pub struct M { a: Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self { a: linear(4, 8, vb.pp("a"))? })
    }
}
)");
  ASSERT_TRUE(r.param("a.weight")) << r.keys();
  EXPECT_FALSE(r.param("a.bias")) << "`linear_no_bias as linear` registers no bias";
}

TEST(Inventory, SetPrefixRootAndTransparentMethods) {
  auto r = analyze("setprefix", std::string(kPrelude) + R"(
pub struct M { a: candle_nn::Embedding, b: candle_nn::RmsNorm }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let deep = vb.pp("x").pp("y");
        let a = candle_nn::embedding(10, 4, deep.root().pp("wte").to_dtype(candle::DType::F32))?;
        let b = candle_nn::rms_norm(4, 1e-5, deep.set_prefix("final_norm"))?;
        Ok(Self { a, b })
    }
}
)");
  EXPECT_TRUE(r.param("wte.weight")) << r.keys();
  EXPECT_TRUE(r.param("final_norm.weight")) << r.keys();
  EXPECT_EQ(r.ir.parameters.size(), 2u) << r.keys();
}

TEST(Inventory, ForLoopFamilyIsATemplateWithoutConfigAndExpandsWithOne) {
  std::string lib = std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub n_layer: usize, pub d: usize }
struct Block { fc: candle_nn::Linear }
impl Block {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        Ok(Self { fc: candle_nn::linear(cfg.d, 4 * cfg.d, vb.pp("fc"))? })
    }
}
pub struct Model { layers: Vec<Block> }
impl Model {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let mut layers = Vec::new();
        let vb_l = vb.pp("h");
        for i in 0..cfg.n_layer {
            layers.push(Block::new(cfg, vb_l.pp(i))?);
        }
        Ok(Self { layers })
    }
}
)";
  auto sym = analyze("loop", lib);
  ASSERT_TRUE(sym.param("h.{i}.fc.weight")) << sym.keys();
  EXPECT_EQ(*sym.param("h.{i}.fc.weight")->symbolic_shape,
            (std::vector<std::string>{"4 * cfg.d", "cfg.d"}));
  EXPECT_FALSE(sym.param("h.{i}.fc.weight")->shape);
  bool repeat = false;
  for (const auto& m : sym.ir.modules)
    if (m.type_name == "Block") {
      EXPECT_EQ(m.repeat.value_or(""), "i in 0..cfg.n_layer");
      EXPECT_EQ(m.field.value_or(""), "layers");
      repeat = true;
    }
  EXPECT_TRUE(repeat);

  auto bound = analyze("loop-bound", lib, {}, R"({"n_layer": 3, "d": 16})");
  EXPECT_EQ(bound.ir.parameters.size(), 6u) << bound.keys();
  ASSERT_TRUE(bound.param("h.2.fc.weight")) << bound.keys();
  EXPECT_FALSE(bound.param("h.3.fc.weight"));
  EXPECT_EQ(*bound.param("h.0.fc.weight")->shape, (std::vector<std::uint64_t>{64, 16}));
}

TEST(Inventory, FormatPrefixesAndIteratorMaps) {
  auto r = analyze("format", std::string(kPrelude) + R"(
pub struct M { a: Vec<candle_nn::Linear>, b: Vec<candle_nn::Linear>, c: Vec<candle_nn::Linear> }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let a = (0..2)
            .map(|i| candle_nn::linear(2, 2, vb.pp(format!("blocks.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let b = (0..2)
            .map(|j| candle_nn::linear_no_bias(2, 2, vb.pp(format!("stage_{}", j))))
            .collect::<Result<Vec<_>>>()?;
        let n = 4;
        let mut c = Vec::new();
        for (k, _x) in [1, 2].iter().enumerate() {
            c.push(candle_nn::linear_no_bias(n, n, vb.pp(&format!("out.{k}")))?);
        }
        Ok(Self { a, b, c })
    }
}
)");
  EXPECT_TRUE(r.param("blocks.0.weight")) << r.keys();
  EXPECT_TRUE(r.param("blocks.1.bias")) << r.keys();
  EXPECT_TRUE(r.param("stage_1.weight")) << r.keys();
  EXPECT_TRUE(r.param("out.{k}.weight")) << r.keys();
  EXPECT_EQ(*r.param("out.{k}.weight")->shape, (std::vector<std::uint64_t>{4, 4}));
}

TEST(Inventory, BranchesMakeLeavesConditionalUnlessEveryArmRegistersThem) {
  std::string lib = std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub tie: bool, pub bias: bool, pub kind: String }
pub struct M { head: Option<candle_nn::Linear>, p: candle_nn::Linear, q: candle_nn::Linear }
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let head = if cfg.tie { None } else { Some(candle_nn::linear_no_bias(4, 9, vb.pp("lm_head"))?) };
        let p = if cfg.bias {
            candle_nn::linear(4, 4, vb.pp("p"))?
        } else {
            candle_nn::linear_no_bias(4, 4, vb.pp("p"))?
        };
        let q = match cfg.kind.as_str() {
            "a" => candle_nn::linear(4, 4, vb.pp("q"))?,
            _ => candle_nn::linear_no_bias(4, 4, vb.pp("q"))?,
        };
        let _extra = cfg.tie.then(|| candle_nn::linear_no_bias(4, 4, vb.pp("extra")));
        Ok(Self { head, p, q })
    }
}
)";
  auto r = analyze("branches", lib);
  ASSERT_TRUE(r.param("lm_head.weight")) << r.keys();
  EXPECT_EQ(r.param("lm_head.weight")->confidence, Confidence::conditional);
  EXPECT_EQ(r.param("lm_head.weight")->reason.value_or(""), "unless cfg.tie");
  EXPECT_EQ(r.param("p.weight")->confidence, Confidence::proven) << "both arms register it";
  EXPECT_EQ(r.param("p.bias")->confidence, Confidence::conditional);
  EXPECT_EQ(r.param("q.weight")->confidence, Confidence::proven) << "every match arm";
  EXPECT_EQ(r.param("q.bias")->confidence, Confidence::conditional);
  EXPECT_NE(r.param("q.bias")->reason.value_or("").find("match"), std::string::npos);
  EXPECT_EQ(r.param("extra.weight")->confidence, Confidence::conditional);
  EXPECT_EQ(r.param("extra.weight")->reason.value_or(""), "only when cfg.tie");

  // A bound config takes exactly one arm: no conditional leaves remain.
  auto b = analyze("branches-bound", lib, {}, R"({"tie": true, "bias": true, "kind": "a"})");
  EXPECT_FALSE(b.param("lm_head.weight")) << b.keys();
  ASSERT_TRUE(b.param("extra.weight")) << "then() on true registers";
  EXPECT_EQ(b.param("extra.weight")->confidence, Confidence::proven);
  EXPECT_EQ(b.param("p.bias")->confidence, Confidence::proven);
  EXPECT_EQ(b.param("q.bias")->confidence, Confidence::proven);
}

// Every arm registers `w`, but each with its own shape: the key is no alternative, its shape is.
// Before, the first arm's [16, 32] was taken as proven and the total (512) looked final.
TEST(Inventory, AKeyEveryArmRegistersWithDifferentShapesHasAShapePerArm) {
  std::string lib = std::string(kPrelude) + R"(
pub struct M { w: Tensor, b: Tensor }
impl M {
    pub fn new(vb: VarBuilder, wide: bool) -> Result<Self> {
        let w = if wide { vb.get((16, 32), "w")? } else { vb.get((16, 8), "w")? };
        let b = if wide { vb.get(16, "b")? } else { vb.get(16, "b")? };
        Ok(Self { w, b })
    }
}
)";
  auto r = analyze("per-arm-shape", lib);
  ASSERT_TRUE(r.param("w")) << r.keys();
  EXPECT_FALSE(r.param("w")->shape) << "no single shape: one per arm";
  EXPECT_NE(r.param("w")->reason.value_or("").find("its shape differs by alternative"),
            std::string::npos);
  std::string shapes;
  for (const auto& e : r.param("w")->evidence)
    if (e.detail.starts_with("shape in this alternative")) shapes += e.detail + "\n";
  EXPECT_EQ(shapes, "shape in this alternative: [16, 32]\nshape in this alternative: [16, 8]\n");
  ASSERT_TRUE(r.param("b"));
  EXPECT_EQ(r.param("b")->confidence, Confidence::proven) << "the same shape in both arms";
  ASSERT_TRUE(r.param("b")->shape);
}

TEST(Inventory, LinearBBiasFollowsItsArgument) {
  std::string lib = std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub attention_bias: bool }
pub struct M { a: candle_nn::Linear }
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        Ok(Self { a: candle_nn::linear_b(8, 8, cfg.attention_bias, vb.pp("a"))? })
    }
}
)";
  auto sym = analyze("linearb", lib);
  EXPECT_EQ(sym.param("a.weight")->confidence, Confidence::proven);
  ASSERT_TRUE(sym.param("a.bias"));
  EXPECT_EQ(sym.param("a.bias")->confidence, Confidence::conditional);
  EXPECT_NE(sym.param("a.bias")->reason->find("cfg.attention_bias"), std::string::npos);
  auto off = analyze("linearb-off", lib, {}, R"({"attention_bias": false})");
  EXPECT_FALSE(off.param("a.bias")) << off.keys();
  auto on = analyze("linearb-on", lib, {}, R"({"attention_bias": true})");
  EXPECT_EQ(on.param("a.bias")->confidence, Confidence::proven);
}

TEST(Inventory, RawGetsRecordNamesShapesAndGaps) {
  auto r = analyze("raw", std::string(kPrelude) + R"(
pub struct M { w: Tensor, b: Tensor, s: Tensor, d: Tensor }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let w = vb.get((16, 4), "weight")?;
        let b = vb.get_with_hints(16, "bias", candle_nn::init::ZERO)?;
        let s = vb.pp("norm").get_unchecked("scale")?;
        let name = String::from("dyn");
        let d = vb.get(4, &name)?;
        Ok(Self { w, b, s, d })
    }
}
)");
  EXPECT_EQ(*r.param("weight")->shape, (std::vector<std::uint64_t>{16, 4})) << r.keys();
  EXPECT_EQ(r.param("weight")->kind, "get");
  EXPECT_EQ(*r.param("bias")->shape, (std::vector<std::uint64_t>{16}));
  ASSERT_TRUE(r.param("norm.scale"));
  EXPECT_FALSE(r.param("norm.scale")->shape);
  EXPECT_TRUE(r.has_finding("non-literal tensor name `&name`"));
}

TEST(Inventory, NormsConvsBatchNormAndRecurrentNames) {
  auto r = analyze("layers", std::string(kPrelude) + R"(
pub struct M { }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let cfg = candle_nn::Conv2dConfig { groups: 4, padding: 1, ..Default::default() };
        let _c = candle_nn::conv2d(32, 64, 3, cfg, vb.pp("conv"))?;
        let _d = candle_nn::conv1d_no_bias(8, 16, 5, Default::default(), vb.pp("conv1"))?;
        let _bn = candle_nn::batch_norm(64, 1e-5, vb.pp("bn"))?;
        let _ln = candle_nn::layer_norm(64, candle_nn::LayerNormConfig { affine: false, ..Default::default() }, vb.pp("ln_noaffine"))?;
        let _ln2 = candle_nn::layer_norm(64, 1e-5, vb.pp("ln"))?;
        let _g = candle_nn::group_norm(8, 64, 1e-5, vb.pp("gn"))?;
        let _p = candle_nn::prelu(None, vb.pp("act"))?;
        let _r = candle_nn::lstm(10, 20, candle_nn::LSTMConfig::default(), vb.pp("rnn"))?;
        let _q = candle_nn::gru(10, 20, candle_nn::GRUConfig::default_no_bias(), vb.pp("gru"))?;
        Ok(Self {})
    }
}
)");
  EXPECT_EQ(*r.param("conv.weight")->shape, (std::vector<std::uint64_t>{64, 8, 3, 3})) << r.keys();
  EXPECT_EQ(*r.param("conv1.weight")->shape, (std::vector<std::uint64_t>{16, 8, 5}));
  EXPECT_FALSE(r.param("conv1.bias"));
  ASSERT_TRUE(r.param("bn.running_mean"));
  EXPECT_EQ(r.param("bn.running_mean")->role, cg::ir::ParameterRole::running_state);
  EXPECT_EQ(r.param("bn.weight")->confidence, Confidence::proven) << "f64 eps means affine";
  EXPECT_FALSE(r.param("ln_noaffine.bias"));
  EXPECT_TRUE(r.param("ln.bias"));
  EXPECT_TRUE(r.param("gn.bias"));
  EXPECT_EQ(*r.param("act.weight")->shape, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(*r.param("rnn.weight_ih_l0")->shape, (std::vector<std::uint64_t>{80, 10}));
  EXPECT_TRUE(r.param("rnn.bias_hh_l0"));
  EXPECT_TRUE(r.param("gru.weight_hh_l0"));
  EXPECT_FALSE(r.param("gru.bias_ih_l0")) << "default_no_bias";
}

TEST(Inventory, HelpersClosuresAndSubmodulesInOtherFiles) {
  auto r = analyze("helpers", std::string(kPrelude) + R"(
mod tracing;
mod attn;
pub struct Model { attn: attn::Attention, out: tracing::Linear }
impl Model {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        Self::new_impl(vb.pp("model"))
    }
    fn new_impl(vb: VarBuilder) -> Result<Self> {
        let proj = |name: &str, n: usize| candle_nn::linear_no_bias(n, n, vb.pp(name));
        let _x = proj("x_proj", 3)?;
        Ok(Self { attn: attn::Attention::new(vb.pp("attn"))?, out: tracing::linear(4, 2, vb.pp("out"))? })
    }
}
)",
                   {{"src/tracing.rs", R"(
use candle_nn::VarBuilder;
pub struct Linear { inner: candle_nn::Linear }
pub fn linear(d1: usize, d2: usize, vb: VarBuilder) -> candle::Result<Linear> {
    let inner = candle_nn::linear(d1, d2, vb)?;
    Ok(Linear { inner })
}
)"},
                    {"src/attn.rs", R"(
use candle_nn::VarBuilder;
pub struct Attention { qkv: crate::tracing::Linear }
impl Attention {
    pub fn new(vb: VarBuilder) -> candle::Result<Self> {
        let qkv = crate::tracing::linear(4, 12, vb.pp("qkv"))?;
        Ok(Self { qkv })
    }
}
)"}});
  ASSERT_EQ(r.ir.components.size(), 1u) << "Attention is built by Model: not a root";
  EXPECT_TRUE(r.param("model.x_proj.weight")) << r.keys();
  EXPECT_TRUE(r.param("model.out.bias")) << r.keys();
  ASSERT_TRUE(r.param("model.attn.qkv.weight")) << r.keys();
  EXPECT_EQ(r.param("model.attn.qkv.weight")->source, "src/attn.rs:6");
  // new -> new_impl is one instance; Attention is a child module named by its field.
  int models = 0;
  for (const auto& m : r.ir.modules) {
    if (m.type_name == "Model") ++models;
    if (m.type_name == "Attention") {
      EXPECT_EQ(m.field.value_or(""), "attn");
      EXPECT_EQ(m.prefix, "model.attn");
    }
    if (m.prefix == "model.attn.qkv") {
      EXPECT_EQ(m.field.value_or(""), "qkv");
    }
  }
  EXPECT_EQ(models, 1);
}

TEST(Inventory, GapsAreDiagnosticsNotSilence) {
  auto r = analyze("gaps", std::string(kPrelude) + R"(
macro_rules! make { ($vb:expr) => { candle_nn::linear(1, 1, $vb) }; }
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        other_crate::build(vb.pp("ext"))?;
        make!(vb.pp("m"));
        assert!(true);
        Self::new(vb.pp("again"))?;
        Ok(Self {})
    }
}
)");
  EXPECT_TRUE(r.has_finding("unresolved call `other_crate::build` receives a VarBuilder"));
  EXPECT_TRUE(r.has_finding("macro `make!` not expanded"));
  EXPECT_FALSE(r.has_finding("assert!"));
  EXPECT_TRUE(r.has_finding("recursive constructor call"));
  for (const auto& f : r.ir.findings) {
    EXPECT_EQ(f.rule, "structure-unresolved");
    ASSERT_TRUE(f.source);
    EXPECT_EQ(f.source->rfind("src/lib.rs:", 0), 0u) << *f.source;
  }
}

// Names chosen by a crate function that probes the checkpoint (candle-vllm's
// `resolve_expert_proj_prefix`: `if vb.contains_tensor(..) { ("gate_proj", "up_proj") } else {
// ("w1", "w3") }`), bound by a tuple or one name: each alternative's keys, under the callee's
// condition, never a symbolic `{g}` segment or an unknown tensor name.
TEST(Inventory, NamesAHelperChoosesAreAlternatives) {
  auto r = analyze("helper_names", std::string(kPrelude) + R"(
fn proj_names(vb: &VarBuilder) -> (&'static str, &'static str) {
    if vb.contains_tensor("gate_proj.weight") {
        ("gate_proj", "up_proj")
    } else {
        ("w1", "w3")
    }
}
pub struct M { g: Tensor, u: Tensor, s: Tensor }
impl M {
    fn scale_name(vb: &VarBuilder) -> &'static str {
        if vb.contains_tensor("weight_scale") { "weight_scale" } else { "scales" }
    }
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let (g, u) = proj_names(&vb);
        let gv = vb.pp(g);
        let gw = gv.get((4, 8), "weight")?;
        let uw = vb.pp(u).get((4, 8), "weight")?;
        let scale = Self::scale_name(&gv);
        let s = gv.get(4, scale)?;
        Ok(Self { g: gw, u: uw, s })
    }
}
)");
  for (const char* key : {"gate_proj.weight", "up_proj.weight", "w1.weight", "w3.weight",
                          "gate_proj.weight_scale", "gate_proj.scales", "w1.scales"}) {
    const auto* p = r.param(key);
    ASSERT_TRUE(p) << key << "\n" << r.keys();
    EXPECT_EQ(p->confidence, cg::ir::Confidence::conditional) << key;
  }
  EXPECT_FALSE(r.has_finding("non-literal")) << r.keys();
}

// The same name bound again by such a helper (`let s = scale_name(&a); .. let s =
// scale_name(&b);`, candle-vllm's mxfp4 experts) ends the old split rather than nesting the new
// one in it: five in a row stay within the limit on nested splits, each key read as written.
TEST(Inventory, ANameBoundAgainEndsItsSplit) {
  auto r = analyze("rebound_names", std::string(kPrelude) + R"(
fn scale_name(vb: &VarBuilder) -> &'static str {
    if vb.contains_tensor("weight_scale") { "weight_scale" } else { "scales" }
}
pub struct M { t: Vec<Tensor> }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let mut t = Vec::new();
        let s = scale_name(&vb.pp("a"));
        t.push(vb.pp("a").get(4, s)?);
        let s = scale_name(&vb.pp("b"));
        t.push(vb.pp("b").get(4, s)?);
        let s = scale_name(&vb.pp("c"));
        t.push(vb.pp("c").get(4, s)?);
        let s = scale_name(&vb.pp("d"));
        t.push(vb.pp("d").get(4, s)?);
        let s = scale_name(&vb.pp("e"));
        t.push(vb.pp("e").get(4, s)?);
        Ok(Self { t })
    }
}
)");
  for (const char* key : {"a.scales", "b.weight_scale", "c.scales", "d.weight_scale", "e.scales"})
    EXPECT_TRUE(r.param(key)) << key << "\n" << r.keys();
  EXPECT_FALSE(r.has_finding("non-literal")) << r.keys();
}

// A method no source defines, called on a type that derives a procedural macro (candle-lora's
// `#[derive(AutoLoraConvert)]` writes `get_lora_model`): the finding names the macro, whether the
// receiver is a local built by a struct literal of that type or `Self { .. }`. A type without
// such a derive gets the plain message.
TEST(Inventory, MethodsADeriveMacroWritesAreNamedInTheFinding) {
  auto r = analyze("derived", std::string(kPrelude) + R"(
#[derive(Debug, Clone, Adapters)]
pub struct Wrapped { inner: candle_nn::Linear }
pub struct Plain { inner: candle_nn::Linear }
pub struct M { a: Wrapped, b: Plain }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let mut a = Wrapped { inner: candle_nn::linear(2, 2, vb.pp("a"))? };
        a.add_adapters(&vb.pp("lora_a"));
        let mut b = Plain { inner: candle_nn::linear(2, 2, vb.pp("b"))? };
        b.add_adapters(&vb.pp("lora_b"));
        Ok(Self { a, b })
    }
}
)");
  int named = 0, plain = 0;
  for (const auto& f : r.ir.findings) {
    if (f.message.find("`.add_adapters(..)` receives a VarBuilder") == std::string::npos) continue;
    if (f.message.find("`#[derive(Adapters)]` on `Wrapped` (a procedural macro") !=
        std::string::npos)
      ++named;
    else
      ++plain;
  }
  EXPECT_EQ(named, 1);
  EXPECT_EQ(plain, 1) << "Plain derives nothing: no macro to name";
}

TEST(Inventory, UnauditedCandleMakesLeavesUnknown) {
  auto r = analyze("unaudited", std::string(kPrelude) + R"(
pub struct M { a: candle_nn::Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { a: candle_nn::linear(2, 2, vb.pp("a"))? }) }
}
)",
                   {}, "", "0.3.0");
  ASSERT_TRUE(r.param("a.weight"));
  EXPECT_EQ(r.param("a.weight")->confidence, Confidence::unknown);
  EXPECT_NE(r.param("a.weight")->reason->find("not an audited release"), std::string::npos);
}

TEST(Inventory, OlderAuditedCandleKeepsLeavesExact) {
  // candle-nn 0.9.1's constructors ask for what 0.11.0's do: the leaves stay certain.
  auto r = analyze("older", std::string(kPrelude) + R"(
pub struct M { a: candle_nn::Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { a: candle_nn::linear(2, 3, vb.pp("a"))? }) }
}
)",
                   {}, "", "0.9.1");
  ASSERT_TRUE(r.param("a.weight"));
  EXPECT_EQ(r.param("a.weight")->confidence, Confidence::proven);
  ASSERT_TRUE(r.param("a.bias"));
  EXPECT_EQ(r.param("a.bias")->confidence, Confidence::proven);
}

TEST(Inventory, ConfigBindingUsesSerdeDefaultsRenamesAndMethods) {
  std::string lib = std::string(kPrelude) + R"(
fn default_inter() -> usize { 64 }
#[derive(Debug, serde::Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    #[serde(rename = "n_head")]
    pub num_heads: usize,
    pub num_kv_heads: Option<usize>,
    #[serde(default = "default_inter")]
    pub intermediate: usize,
    #[serde(default)]
    pub use_bias: bool,
    pub head_dim: Option<usize>,
    pub missing_dim: usize,
}
impl Config {
    fn kv(&self) -> usize { self.num_kv_heads.unwrap_or(self.num_heads) }
    fn hd(&self) -> usize {
        let d = self.hidden_size / self.num_heads;
        self.head_dim.unwrap_or(d)
    }
}
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let _k = candle_nn::linear_b(cfg.hidden_size, cfg.kv() * cfg.hd(), cfg.use_bias, vb.pp("k"))?;
        let _i = candle_nn::linear_no_bias(cfg.hidden_size, cfg.intermediate, vb.pp("up"))?;
        let _m = candle_nn::linear_no_bias(cfg.missing_dim, 2, vb.pp("m"))?;
        Ok(Self {})
    }
}
)";
  auto r = analyze("serde", lib, {}, R"({"hidden_size": 32, "n_head": 4})");
  EXPECT_EQ(*r.param("k.weight")->shape, (std::vector<std::uint64_t>{32, 32})) << r.keys();
  EXPECT_FALSE(r.param("k.bias")) << "#[serde(default)] bool is false";
  EXPECT_EQ(*r.param("up.weight")->shape, (std::vector<std::uint64_t>{64, 32}));
  EXPECT_FALSE(r.param("m.weight")->shape) << "a missing field stays symbolic";
  EXPECT_EQ((*r.param("m.weight")->symbolic_shape)[1], "cfg.missing_dim");
  EXPECT_TRUE(r.has_finding("config.json has no field `missing_dim`"));
}

TEST(Inventory, StructLevelSerdeDefaultReadsTheDefaultImpl) {
  auto r = analyze("structdefault", std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
#[serde(default)]
pub struct Config { pub width: usize }
impl Default for Config { fn default() -> Self { Self { width: 12 } } }
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let _a = candle_nn::embedding(cfg.width, 2, vb.pp("e"))?;
        Ok(Self {})
    }
}
)",
                   {}, "{}");
  EXPECT_EQ(*r.param("e.weight")->shape, (std::vector<std::uint64_t>{12, 2})) << r.keys();
}

TEST(Inventory, CfgGatedStatementsFollowTheSelectedFeatures) {
  auto r = analyze("cfg", std::string(kPrelude) + R"(
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        #[cfg(feature = "big")]
        let _a = candle_nn::linear(2, 2, vb.pp("big"))?;
        #[cfg(not(feature = "big"))]
        let _a = candle_nn::linear_no_bias(2, 2, vb.pp("small"))?;
        Ok(Self {})
    }
}
)");
  EXPECT_FALSE(r.param("big.weight")) << r.keys();
  EXPECT_TRUE(r.param("small.weight")) << r.keys();
}

TEST(Inventory, RootSelectsOneComponentAndUnknownRootIsAnError) {
  std::string lib = std::string(kPrelude) + R"(
pub struct A {}
impl A { pub fn new(vb: VarBuilder) -> Result<Self> { candle_nn::linear(1, 1, vb.pp("a"))?; Ok(Self {}) } }
pub struct B {}
impl B { pub fn load(vb: VarBuilder) -> Result<Self> { candle_nn::linear(1, 1, vb.pp("b"))?; Ok(Self {}) } }
)";
  auto both = analyze("roots", lib);
  EXPECT_EQ(both.ir.components.size(), 2u);
  auto one = analyze("root-b", lib, {}, "", "0.11.0", "B");
  ASSERT_EQ(one.ir.components.size(), 1u);
  EXPECT_EQ(one.ir.components[0].constructor, "function:B%3A%3Aload:");
  EXPECT_TRUE(one.param("b.weight"));
  EXPECT_THROW(analyze("root-none", lib, {}, "", "0.11.0", "Nope"), cg::InputError);
}

TEST(Inventory, IdsAreStableAcrossUnrelatedEdits) {
  std::string body = R"(
pub struct M { a: candle_nn::Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { a: candle_nn::linear(2, 2, vb.pp("a"))? }) }
}
)";
  auto a = analyze("ids-a", std::string(kPrelude) + body);
  auto b = analyze("ids-b", std::string(kPrelude) + "\n\n// a comment\nfn unrelated() {}\n" + body);
  ASSERT_EQ(a.ir.parameters.size(), b.ir.parameters.size());
  for (std::size_t i = 0; i < a.ir.parameters.size(); ++i)
    EXPECT_EQ(a.ir.parameters[i].id, b.ir.parameters[i].id);
  ASSERT_EQ(a.ir.modules.size(), b.ir.modules.size());
  for (std::size_t i = 0; i < a.ir.modules.size(); ++i)
    EXPECT_EQ(a.ir.modules[i].id, b.ir.modules[i].id);
}

}  // namespace

namespace {

TEST(InventoryBounds, ExpandedLoopsStopAtTheStepBudgetWithAFinding) {
  auto r = analyze("budget", std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub n: usize }
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        for a in 0..cfg.n {
            for b in 0..cfg.n {
                for c in 0..cfg.n {
                    let _x = a + b + c;
                }
            }
        }
        candle_nn::linear(1, 1, vb.pp("after"))?;
        Ok(Self {})
    }
}
)",
                   {}, R"({"n": 4000})");
  EXPECT_TRUE(r.has_finding("analysis truncated after")) << r.keys();
}

TEST(InventoryBounds, DeepNestingIsReportedNotACrash) {
  std::string deep = "1";
  for (int i = 0; i < 2000; ++i)
    deep = "(" + deep + " + 1)";
  auto r = analyze("nesting", std::string(kPrelude) + R"(
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let _d = )" + deep + R"(;
        candle_nn::linear(1, 1, vb.pp("ok"))?;
        Ok(Self {})
    }
}
)");
  EXPECT_TRUE(r.has_finding("nested deeper than")) << r.keys();
  EXPECT_TRUE(r.param("ok.weight")) << "the rest of the constructor is still read";
}

}  // namespace

namespace {

TEST(Inventory, ConfigBindsThroughAConversionFromTheDeserializeStruct) {
  // llama.rs: the model takes `Config`, which config.json reaches via `LlamaConfig::into_config`.
  auto r = analyze("conversion", std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct RawConfig { pub hidden_size: usize, pub n_layers: usize, pub kv: Option<usize>, pub heads: usize }
impl RawConfig {
    fn kv_heads(&self) -> usize { self.kv.unwrap_or(self.heads) }
    pub fn into_config(self, flash: bool) -> Config {
        Config { hidden: self.hidden_size, layers: self.n_layers, kv: self.kv_heads(), flash }
    }
}
pub struct Config { pub hidden: usize, pub layers: usize, pub kv: usize, pub flash: bool }
pub struct M {}
impl M {
    pub fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        for i in 0..cfg.layers {
            candle_nn::linear_no_bias(cfg.hidden, cfg.kv, vb.pp(i))?;
        }
        Ok(Self {})
    }
}
)",
                   {}, R"({"hidden_size": 8, "n_layers": 2, "heads": 4})");
  EXPECT_EQ(r.ir.parameters.size(), 2u) << r.keys();
  ASSERT_TRUE(r.param("1.weight")) << r.keys();
  EXPECT_EQ(*r.param("1.weight")->shape, (std::vector<std::uint64_t>{4, 8}));
}

}  // namespace

namespace {

TEST(Inventory, PrefixesChosenByABranchForkTheRestOfTheConstructor) {
  auto r = analyze("fork", std::string(kPrelude) + R"(
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let (q, out) = if vb.contains_tensor("to_q.weight") { ("to_q", "to_out.0") } else { ("query", "proj") };
        candle_nn::linear(4, 4, vb.pp(q))?;
        candle_nn::linear_no_bias(4, 4, vb.pp(out))?;
        candle_nn::linear_no_bias(4, 4, vb.pp("shared"))?;
        Ok(Self {})
    }
}
)");
  ASSERT_TRUE(r.param("to_q.weight")) << r.keys();
  EXPECT_EQ(r.param("to_q.weight")->confidence, Confidence::conditional);
  ASSERT_TRUE(r.param("query.bias")) << r.keys();
  EXPECT_EQ(r.param("query.bias")->reason.value_or(""),
            "unless vb.contains_tensor(\"to_q.weight\")");
  EXPECT_TRUE(r.param("to_out.0.weight")) << r.keys();
  EXPECT_TRUE(r.param("proj.weight")) << r.keys();
  ASSERT_TRUE(r.param("shared.weight"));
  EXPECT_EQ(r.param("shared.weight")->confidence, Confidence::proven) << "both arms register it";
  EXPECT_FALSE(r.has_finding("non-literal prefix"));
}

}  // namespace

namespace {

TEST(Inventory, ConfigArrayLengthsBoundLoops) {
  auto r = analyze("arraylen", std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub layer_types: Vec<String> }
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        for i in 0..cfg.layer_types.len() {
            candle_nn::rms_norm(4, 1e-6, vb.pp(i))?;
        }
        Ok(Self {})
    }
}
)",
                   {}, R"({"layer_types": ["a", "b", "a"]})");
  EXPECT_EQ(r.ir.parameters.size(), 3u) << r.keys();
  EXPECT_TRUE(r.param("2.weight")) << r.keys();
}

}  // namespace

namespace {

TEST(Inventory, BuilderTypesAreRecognizedByNameOrAliasNotBySubstring) {
  auto r = analyze("vbalias", R"(
use candle_nn::VarBuilder as VB;
use candle_nn as nn;
pub struct MyVarBuilderConfig { pub n: usize }
pub struct NotAModel {}
impl NotAModel {
    pub fn new(config: MyVarBuilderConfig) -> candle::Result<Self> { Ok(Self {}) }
}
pub struct Model {}
impl Model {
    pub fn build(vb: VB<'_>) -> candle::Result<Self> {
        nn::linear(2, 3, vb.pp("proj"))?;
        Ok(Self {})
    }
}
)");
  ASSERT_EQ(r.ir.components.size(), 1u);
  EXPECT_EQ(r.ir.components[0].name, "Model");
  EXPECT_TRUE(r.param("proj.weight")) << r.keys();
}

TEST(Inventory, AnAmbiguousRootIsAUsageError) {
  std::string lib = std::string(kPrelude) + R"(
mod a;
mod z;
)";
  std::string root = R"(
use candle_nn::VarBuilder;
pub struct Root {}
impl Root { pub fn new(vb: VarBuilder) -> candle::Result<Self> { candle_nn::linear(1, 1, vb)?; Ok(Self {}) } }
)";
  try {
    analyze("ambiguous", lib, {{"src/a.rs", root}, {"src/z.rs", root}}, "", "0.11.0", "Root");
    FAIL() << "expected an error";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ambiguous: a::Root, z::Root"), std::string::npos)
        << e.what();
  }
  auto one =
      analyze("qualified", lib, {{"src/a.rs", root}, {"src/z.rs", root}}, "", "0.11.0", "z::Root");
  EXPECT_EQ(one.ir.components.size(), 1u);
}

}  // namespace

// What the builder/prefix walk does at each binding and control-flow site, pinned by the keys a
// user reads: the port of the walk onto the shared interpreter (issue #19) must keep each.
namespace {

TEST(InventoryWalk, IfLetSomeBindsTheBuilderInItsBranch) {
  auto r = analyze("iflet", std::string(kPrelude) + R"(
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let head = Some(vb.pp("head"));
        if let Some(h) = head {
            candle_nn::linear(4, 4, h.pp("proj"))?;
        }
        Ok(Self {})
    }
}
)");
  ASSERT_TRUE(r.param("head.proj.weight")) << r.keys();
  EXPECT_EQ(r.param("head.proj.weight")->confidence, Confidence::proven)
      << "a builder in Some(..) always takes the branch";
}

TEST(InventoryWalk, AMatchOnABoundConfigTakesOneArm) {
  std::string lib = std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub kind: usize }
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        match cfg.kind {
            1 => { candle_nn::linear_no_bias(4, 4, vb.pp("one"))?; }
            _ => { candle_nn::linear_no_bias(4, 4, vb.pp("other"))?; }
        }
        Ok(Self {})
    }
}
)";
  auto open = analyze("match-open", lib);
  ASSERT_TRUE(open.param("one.weight")) << open.keys();
  ASSERT_TRUE(open.param("other.weight")) << open.keys();
  EXPECT_EQ(open.param("one.weight")->reason.value_or(""), "match cfg.kind => 1");
  EXPECT_EQ(open.param("other.weight")->reason.value_or(""), "match cfg.kind => _");
  auto bound = analyze("match-bound", lib, {}, R"({"kind": 1})");
  EXPECT_EQ(bound.ir.parameters.size(), 1u) << bound.keys();
  ASSERT_TRUE(bound.param("one.weight")) << bound.keys();
  EXPECT_EQ(bound.param("one.weight")->confidence, Confidence::proven);
}

TEST(InventoryWalk, AClosureDoesNotSeeItselfAndTakesItsArguments) {
  auto r = analyze("closure-name", R"(
use candle::Result;
use candle_nn::{linear, VarBuilder};
pub struct M {}
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let linear = |name: &str, n: usize| linear(n, 2, vb.pp(name));
        linear("q", 3)?;
        linear("k", 5)?;
        Ok(Self {})
    }
}
)");
  ASSERT_TRUE(r.param("q.weight")) << r.keys();
  EXPECT_EQ(*r.param("q.weight")->shape, (std::vector<std::uint64_t>{2, 3}));
  ASSERT_TRUE(r.param("k.weight")) << r.keys();
  EXPECT_EQ(*r.param("k.weight")->shape, (std::vector<std::uint64_t>{2, 5}));
  EXPECT_FALSE(r.has_finding("recursive"));
}

TEST(InventoryWalk, ThenSomeRegistersOnlyWhenItsConditionHolds) {
  std::string lib = std::string(kPrelude) + R"(
#[derive(serde::Deserialize)]
pub struct Config { pub extra: bool }
pub struct M {}
impl M {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let _e = cfg.extra.then_some(candle_nn::linear_no_bias(4, 4, vb.pp("extra")));
        Ok(Self {})
    }
}
)";
  auto open = analyze("thensome-open", lib);
  ASSERT_TRUE(open.param("extra.weight")) << open.keys();
  EXPECT_EQ(open.param("extra.weight")->reason.value_or(""), "only when cfg.extra");
  auto off = analyze("thensome-off", lib, {}, R"({"extra": false})");
  EXPECT_FALSE(off.param("extra.weight")) << off.keys();
}

TEST(InventoryWalk, PushedModulesAreNamedAfterTheirVector) {
  auto r = analyze("push", std::string(kPrelude) + R"(
pub struct Block { l: candle_nn::Linear }
impl Block {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self { l: candle_nn::linear(2, 2, vb.pp("l"))? })
    }
}
pub struct M { blocks: Vec<Block> }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let mut blocks = Vec::new();
        for i in 0..2 {
            blocks.push(Block::new(vb.pp("h").pp(i))?);
        }
        Ok(Self { blocks })
    }
}
)");
  EXPECT_TRUE(r.param("h.0.l.weight")) << r.keys();
  EXPECT_TRUE(r.param("h.1.l.weight")) << r.keys();
  int named = 0;
  for (const auto& m : r.ir.modules)
    if (m.type_name == "Block") {
      EXPECT_EQ(m.field.value_or(""), "blocks");
      EXPECT_EQ(m.repeat.value_or(""), "i in 0..2");
      ++named;
    }
  EXPECT_EQ(named, 2) << "a literal range is expanded";
}

// `let prefix = format!("blk.{i}"); vb.pp(&prefix)` in a loop of unknown length names the
// family as the inline `vb.pp(format!(..))` does; a placeholder of unknown value still leaves
// the segment symbolic, with its finding.
TEST(Inventory, LetBoundFormatPrefixInAFamily) {
  auto r = analyze("letformat", std::string(kPrelude) + R"(
pub struct M { layers: Vec<candle_nn::Linear> }
impl M {
    pub fn new(n: usize, name: String, vb: VarBuilder) -> Result<Self> {
        let mut layers = Vec::new();
        for layer_idx in 0..n {
            let prefix = format!("blk.{layer_idx}");
            let layer_vb = vb.pp(&prefix);
            layers.push(candle_nn::linear(4, 4, layer_vb.pp("proj"))?);
        }
        let head = format!("{name}_head");
        layers.push(candle_nn::linear_no_bias(4, 2, vb.pp(&head))?);
        Ok(Self { layers })
    }
}
)");
  EXPECT_TRUE(r.param("blk.{layer_idx}.proj.weight")) << r.keys();
  EXPECT_TRUE(r.param("blk.{layer_idx}.proj.bias")) << r.keys();
  EXPECT_TRUE(r.param("{head}.weight")) << r.keys();
  EXPECT_TRUE(r.has_finding("non-literal prefix `head`"));
  EXPECT_FALSE(r.has_finding("non-literal prefix `prefix`"));
}

// A GGUF-style prefix builder of the crate's own (no candle-nn VarBuilder inside): a model
// taking it is a component, its push names keys, and each getter registers a leaf by the name
// argument its own signature has (and a shape only where it takes one).
TEST(Inventory, OwnPrefixBuilderRegistersThroughItsGetters) {
  auto r = analyze("ownbuilder", R"(
use candle::quantized::QTensor;
use candle::Result;
use std::sync::Arc;
pub mod qvb {
    use super::*;
    pub struct VarBuilder { path: Vec<String>, dev: candle::Device }
    impl VarBuilder {
        pub fn pp<S: ToString>(&self, s: S) -> Self {
            let mut path = self.path.clone();
            path.push(s.to_string());
            Self { path, dev: self.dev.clone() }
        }
        pub fn path(&self, name: &str) -> String { [&self.path.join("."), name].join(".") }
        pub fn get<S: Into<candle::Shape>>(&self, s: S, name: &str) -> Result<Arc<QTensor>> {
            load(self.path(name), s)
        }
        pub fn get_sharded_no_shape(&self, name: &str, dim: usize, rank: usize)
            -> Result<Arc<QTensor>> { load_sharded(self.path(name), dim, rank) }
    }
}
use qvb::VarBuilder as QVarBuilder;
pub struct Model { w: Vec<Arc<QTensor>> }
impl Model {
    pub fn from_gguf(vb: &QVarBuilder, rank: usize) -> Result<Self> {
        let emb = vb.get((32000, 4096), "token_embd.weight")?;
        let mut w = vec![emb];
        for i in 0..2 {
            let layer = vb.pp(format!("blk.{i}"));
            w.push(layer.get_sharded_no_shape("ffn_up.weight", 0, rank)?);
        }
        Ok(Self { w })
    }
}
)");
  ASSERT_EQ(r.ir.components.size(), 1u) << r.keys();
  EXPECT_EQ(r.ir.components[0].name, "Model");
  ASSERT_TRUE(r.param("token_embd.weight")) << r.keys();
  EXPECT_EQ(*r.param("token_embd.weight")->shape, (std::vector<std::uint64_t>{32000, 4096}));
  ASSERT_TRUE(r.param("blk.0.ffn_up.weight")) << r.keys();
  EXPECT_TRUE(r.param("blk.1.ffn_up.weight")) << r.keys();
  EXPECT_FALSE(r.param("blk.0.ffn_up.weight")->shape) << "the getter takes no shape";
}

// Tied weights: `Linear::new(embed.embeddings().clone(), None)` is a module of its own (the
// field it is stored in) at the embedding's key, with no leaves of its own, so the weights are
// counted once; a layer built from a tensor of unknown origin is not one.
TEST(Inventory, TiedWeightsAreAModuleAtTheOwnersKey) {
  auto r = analyze("tied", std::string(kPrelude) + R"(
use candle_nn::{Embedding, Linear};
pub struct M { embed: Embedding, lm_head: Linear, other: Linear }
impl M {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let embed = candle_nn::embedding(100, 8, vb.pp("model.embed_tokens"))?;
        let lm_head = Linear::new(embed.embeddings().clone(), None);
        let w = Tensor::zeros((2, 8), candle::DType::F32, &candle::Device::Cpu)?;
        let other = Linear::new(w, None);
        Ok(Self { embed, lm_head, other })
    }
}
)");
  EXPECT_EQ(r.ir.parameters.size(), 1u) << r.keys();
  int tied = 0, linear = 0;
  for (const auto& m : r.ir.modules) {
    if (m.type_name != "Linear") continue;
    ++linear;
    if (m.prefix == "model.embed_tokens" && m.field == std::optional<std::string>("lm_head"))
      ++tied;
  }
  EXPECT_EQ(tied, 1);
  EXPECT_EQ(linear, 1) << "a Linear of a tensor no layer holds is not a tied module";
}
}  // namespace
