#include "viewer/payload.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <string>

namespace {

using ::testing::HasSubstr;
namespace ir = cg::ir;

// A two-op model: a linear layer inside a repeated block, whose output is detached.
ir::ModelIr tiny_ir() {
  ir::ModelIr m;
  m.analysis_id = "a1";
  m.cargo = ir::CargoSummary{};
  m.cargo->package_name = "tiny</script><img src=x onerror=alert(1)>";
  ir::Component c;
  c.id = "c";
  c.name = "Model";
  m.components.push_back(c);
  ir::Module root;
  root.id = "m0";
  root.component = "c";
  root.type_name = "Model";
  root.prefix = "model";
  ir::Module proj = root;
  proj.id = "m1";
  proj.parent = "m0";
  proj.type_name = "Linear";
  proj.field = "proj";
  proj.prefix = "model.layers.{i}.proj";
  proj.repeat = "i in 0..32";
  proj.confidence = ir::Confidence::conditional;
  m.modules = {root, proj};
  ir::Parameter w;
  w.id = "p0";
  w.key = "model.layers.{i}.proj.weight";
  w.module = "m1";
  w.shape = std::vector<std::uint64_t>{8, 4};
  w.checkpoint_shape = std::vector<std::uint64_t>{8, 5};
  ir::Parameter b = w;
  b.id = "p1";
  b.key = "model.layers.{i}.proj.bias";
  b.shape.reset();
  b.checkpoint_shape.reset();
  b.symbolic_shape = std::vector<std::string>{"hidden"};
  m.parameters = {w, b};
  ir::Function f;
  f.id = "f";
  f.name = "forward";
  f.qualified_name = "tiny::Proj::forward";
  f.is_entrypoint = true;
  m.functions.push_back(f);
  ir::Tensor x;
  x.id = "t0";
  x.name = "x";
  ir::Dimension two;
  two.expr = "2";
  ir::Dimension seq;
  seq.expr = "seq";
  x.shape.dimensions = {two, seq};
  x.dtype = "F32";
  ir::Tensor y;
  y.id = "t1";
  y.name = "y";
  m.tensors = {x, y};
  ir::Operation op;
  op.id = "o0";
  op.function = "f";
  op.name = "detach";
  op.inputs = {"t0"};
  op.output = "t1";
  op.gradient_rule = "Severs";
  op.execution_phase = ir::ExecutionPhase::train;
  op.timing = ir::OperationTiming{};
  op.timing->stats.samples = 3;
  op.timing->stats.total_ns = 300;
  m.operations.push_back(op);
  ir::Finding fi;
  fi.id = "F";
  fi.rule = "grad.severed";
  fi.severity = ir::Severity::warning;
  fi.message = "detached <b>here</b>";
  fi.related = {"o0"};
  m.findings.push_back(fi);
  return m;
}

TEST(ViewerPayload, CarriesWhatTheViewsNeed) {
  const std::string json = cg::viewer::project_payload(tiny_ir());
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["schema"]), "candle-graph/viewer/1");
  const auto mod = doc["modules"].at(1);
  EXPECT_EQ(std::string_view(mod["name"]), "proj");
  EXPECT_EQ(std::string_view(mod["repeat"]), "i in 0..32");
  EXPECT_TRUE(bool(mod["conditional"]));
  // Unknown shape stays null (never []), the symbolic one is kept.
  const auto bias = doc["parameters"].at(1);
  EXPECT_TRUE(bias["shape"].is_null());
  EXPECT_EQ(std::string_view(bias["symbolic_shape"].at(0)), "hidden");
  // Literal dims are numbers, symbolic ones text; "Unknown" dtype is null.
  EXPECT_EQ(uint64_t(doc["tensors"].at(0)["shape"].at(0)), 2U);
  EXPECT_EQ(std::string_view(doc["tensors"].at(0)["shape"].at(1)), "seq");
  EXPECT_TRUE(doc["tensors"].at(1)["dtype"].is_null());
  // A "Severs" gradient rule marks the op's output edge.
  EXPECT_EQ(std::string_view(doc["tensors"].at(1)["grad"]), "severed");
  const auto op = doc["operations"].at(0);
  EXPECT_EQ(std::string_view(op["module"]), "tiny.Proj.forward");
  EXPECT_EQ(std::string_view(op["phases"].at(0)), "train");
  EXPECT_EQ(uint64_t(op["timing"]["total_ns"]), 300U);
  EXPECT_EQ(std::string_view(op["outputs"].at(0)), "t1");
  // Checkpoint view: a present but different shape is a mismatch, an absent one is missing.
  EXPECT_EQ(std::string_view(doc["checkpoint"]["entries"].at(0)["status"]), "shape_mismatch");
  EXPECT_EQ(std::string_view(doc["checkpoint"]["entries"].at(1)["status"]), "missing");
  EXPECT_EQ(std::string_view(doc["findings"].at(0)["related"].at(0)), "o0");
}

// The page reads the main part first and the tree part after the first view: every table is in
// exactly one of them, the union is the whole document, and the main part says up front whether
// there is a checkpoint tab.
TEST(ViewerPayload, OneComponentOpensOnItsMainForward) {
  ir::ModelIr m = tiny_ir();
  simdjson::dom::parser parser;
  // Not an entrypoint of the component: no main function named.
  simdjson::dom::element doc = parser.parse(cg::viewer::project_payload(m));
  EXPECT_TRUE(doc["model"]["main_function"].is_null());
  m.components.front().entrypoints = {"f"};
  simdjson::dom::parser parser2;
  doc = parser2.parse(cg::viewer::project_payload(m));
  EXPECT_EQ(std::string_view(doc["model"]["main_function"]), "f");
}

TEST(ViewerPayload, PartsSplitTheDocumentWithoutLosingAnything) {
  const auto m = tiny_ir();
  const auto parts = cg::viewer::project_payload_parts(m);
  simdjson::dom::parser p1;
  simdjson::dom::parser p2;
  simdjson::dom::parser p3;
  const simdjson::dom::object main = p1.parse(parts.main).get_object();
  const simdjson::dom::object tree = p2.parse(parts.tree).get_object();
  const simdjson::dom::object whole = p3.parse(cg::viewer::project_payload(m)).get_object();
  for (const char* k : {"modules", "parameters", "checkpoint"}) {
    EXPECT_TRUE(tree[k].error() == simdjson::SUCCESS) << k;
    EXPECT_FALSE(main[k].error() == simdjson::SUCCESS) << k;
  }
  for (const char* k : {"operations", "tensors", "functions", "findings", "components"}) {
    EXPECT_TRUE(main[k].error() == simdjson::SUCCESS) << k;
    EXPECT_FALSE(tree[k].error() == simdjson::SUCCESS) << k;
  }
  EXPECT_EQ(whole.size(), main.size() + tree.size());
  EXPECT_TRUE(bool(main["summary"]["checkpoint"]));
  EXPECT_EQ(whole["parameters"].get_array().size(), m.parameters.size());
}

// The inspector shows a module's summary figures (`query module`'s fields) from its record.
TEST(ViewerPayload, ModuleRecordsCarryTheSummaryFigures) {
  const auto m = tiny_ir();
  cg::viewer::ModuleFiguresById figures;
  cg::viewer::ModuleFigures f;
  f.output_shape = "[b, t, 4096]";
  f.mult_adds = "b*t*16,777,216";
  f.mult_adds_lower_bound = true;
  f.parameter_count = 16777216;
  f.weights_bytes = 33554432;
  f.weights_dtype = "BF16";
  figures.emplace("m1", f);
  simdjson::dom::parser parser;
  const std::string json = cg::viewer::project_payload(m, nullptr, &figures);
  const simdjson::dom::array mods = parser.parse(json)["modules"].get_array();
  ASSERT_EQ(mods.size(), 2u);
  simdjson::dom::object proj = mods.at(1).get_object();
  EXPECT_EQ(std::string_view(proj["id"]), "m1");
  EXPECT_EQ(std::string_view(proj["output_shape"]), "[b, t, 4096]");
  EXPECT_EQ(std::string_view(proj["mult_adds"]), "b*t*16,777,216");
  EXPECT_TRUE(bool(proj["mult_adds_lower_bound"]));
  EXPECT_EQ(std::uint64_t(proj["parameter_count"]), 16777216u);
  EXPECT_EQ(std::uint64_t(proj["weights_bytes"]), 33554432u);
  EXPECT_EQ(std::string_view(proj["weights_dtype"]), "BF16");
  EXPECT_FALSE(proj["shared_weights"].error() == simdjson::SUCCESS);
  // A module the summary shows no row for, and a payload made without figures, carry none.
  EXPECT_FALSE(mods.at(0)["parameter_count"].error() == simdjson::SUCCESS);
  EXPECT_THAT(cg::viewer::project_payload(m), ::testing::Not(HasSubstr("parameter_count")));
}

// The model's properties show `memory`'s figures, and a layer's inspector the state it keeps
// (issue #38); unknown stays null and each figure says its bound. The main part carries them: the
// overview is on screen before the tree part is read.
TEST(ViewerPayload, MemoryFiguresAndPerLayerStateTravelInTheMainPart) {
  const auto m = tiny_ir();
  cg::viewer::MemoryView mem;
  mem.dtype = "BF16";
  mem.batch = 2;
  mem.context = 4096;
  mem.context_source = "--context";
  mem.figures.push_back({"weights", 13476831232u, "exact", ""});
  mem.figures.push_back({"activations", std::nullopt, "unknown", "3 operations of unknown size"});
  mem.states.push_back({"model.layers.{i}.self_attn",
                        "self.kv_cache",
                        "src/model.rs:88",
                        32,
                        67108864u,
                        2147483648u,
                        "exact",
                        {"[2, 32, 4096, 128]"},
                        true});
  const auto parts = cg::viewer::project_payload_parts(m, nullptr, nullptr, &mem);
  EXPECT_THAT(parts.tree, ::testing::Not(HasSubstr("\"memory\"")));
  simdjson::dom::parser parser;
  simdjson::dom::object doc = parser.parse(parts.main).get_object();
  simdjson::dom::object j = doc["memory"].get_object();
  EXPECT_EQ(std::string_view(j["dtype"]), "BF16");
  EXPECT_EQ(std::uint64_t(j["context"]), 4096u);
  simdjson::dom::array figs = j["figures"].get_array();
  ASSERT_EQ(figs.size(), 2u);
  EXPECT_EQ(std::uint64_t(figs.at(0)["bytes"]), 13476831232u);
  EXPECT_TRUE(figs.at(1)["bytes"].is_null());
  EXPECT_EQ(std::string_view(figs.at(1)["bound"]), "unknown");
  simdjson::dom::object st = j["states"].get_array().at(0).get_object();
  EXPECT_EQ(std::string_view(st["instance"]), "model.layers.{i}.self_attn");
  EXPECT_EQ(std::uint64_t(st["instances"]), 32u);
  EXPECT_EQ(std::uint64_t(st["total_bytes"]), 2147483648u);
  EXPECT_EQ(std::string_view(st["kind"]), "kv_cache");
  // No report (no context known): no memory field, rather than a guess.
  EXPECT_THAT(cg::viewer::project_payload(m), ::testing::Not(HasSubstr("\"memory\"")));
}

TEST(ViewerPayload, NoCheckpointMeansNoCheckpointView) {
  auto m = tiny_ir();
  for (auto& p : m.parameters)
    p.checkpoint_shape.reset();
  simdjson::dom::parser parser;
  const std::string json = cg::viewer::project_payload(m);
  EXPECT_TRUE(parser.parse(json)["checkpoint"].is_null());
  EXPECT_FALSE(bool(parser.parse(json)["summary"]["checkpoint"]));
}

TEST(ViewerPayload, PageEmbedsTheEscapedPayload) {
  if (!cg::viewer::viewer_bundled()) GTEST_SKIP() << "viewer bundle not built";
  const auto m = tiny_ir();
  const std::string html = cg::viewer::render_viewer_html(m, {});
  const auto parts = cg::viewer::project_payload_parts(m);
  EXPECT_THAT(html, HasSubstr("id=\"cg-payload\">" + cg::viewer::escape_payload_json(parts.main) +
                              "</script>"));
  EXPECT_THAT(html, HasSubstr("id=\"cg-payload-tree\">" +
                              cg::viewer::escape_payload_json(parts.tree) + "</script>"));
  EXPECT_THAT(html, HasSubstr("<title>tiny&lt;/script&gt;&lt;img"));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<img src=x")));
  // Kept as an artifact: the browser test opens it when present (an IR-made page, not a fixture).
  std::ofstream(std::string(CG_BINARY_DIR) + "/viewer-tiny-ir.html", std::ios::binary) << html;
}

}  // namespace

namespace {

// A verification report passed in replaces the view derived from checkpoint shapes: unclaimed
// tensors (unknowable from the IR alone) appear, with the verdict and each entry's note.
TEST(ViewerPayload, CheckpointViewFromAVerificationReport) {
  auto m = tiny_ir();
  for (auto& p : m.parameters)
    p.checkpoint_shape.reset();
  cg::viewer::CheckpointView ck;
  ck.path = "model.safetensors";
  ck.verdict = "will not load: 1 missing";
  cg::viewer::CheckpointEntry extra;
  extra.key = "rotary.inv_freq";
  extra.status = "unclaimed";
  extra.actual = std::vector<std::uint64_t>{64};
  cg::viewer::CheckpointEntry gone;
  gone.key = "norm.weight";
  gone.status = "missing";
  gone.reason = "certain";
  ck.entries = {extra, gone};
  simdjson::dom::parser parser;
  const std::string json = cg::viewer::project_payload(m, &ck);
  const auto doc = parser.parse(json);
  EXPECT_TRUE(bool(doc["summary"]["checkpoint"]));
  EXPECT_EQ(std::string_view(doc["checkpoint"]["verdict"]), "will not load: 1 missing");
  const auto entries = doc["checkpoint"]["entries"];
  EXPECT_EQ(std::string_view(entries.at(0)["status"]), "unclaimed");
  EXPECT_EQ(uint64_t(entries.at(0)["actual"].at(0)), 64U);
  EXPECT_TRUE(entries.at(0)["expected"].is_null());
  EXPECT_EQ(std::string_view(entries.at(1)["reason"]), "certain");
}

}  // namespace
