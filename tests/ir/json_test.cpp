#include <gtest/gtest.h>

#include <filesystem>

#include "ir/model.hpp"
#include "ir/sample_model.hpp"
#include "scratch.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::ir {
namespace {

std::string error_of(std::string_view json) {
  try {
    parse_model_ir(json, "model.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string replace_once(std::string s, std::string_view from, std::string_view to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(ModelJson, FullModelRoundTripsByteExactly) {
  const ModelIr ir = testing::sample_model();
  const std::string text = write_model_ir(ir);
  const ModelIr back = parse_model_ir(text, "model.json");
  EXPECT_EQ(back, ir);
  EXPECT_EQ(write_model_ir(back), text);
  EXPECT_EQ(write_model_ir(ir), text);  // deterministic
}

// The undecided branches an instance call and its operations ran in (ir::BranchArm, dead arms
// included) round-trip; an IR without them writes neither key.
TEST(ModelJson, BranchArmsRoundTrip) {
  ModelIr ir = testing::sample_model();
  InstanceCall c;
  c.id = "instance-call:f:o_proj:forward:1";
  c.entrypoint = "f";
  c.path = "o_proj";
  c.method = "forward";
  c.operations = {"op:a"};
  ir.instance_calls.push_back(c);
  EXPECT_EQ(write_model_ir(ir).find("\"branch\""), std::string::npos);
  EXPECT_EQ(write_model_ir(ir).find("\"operation_branches\""), std::string::npos);
  BranchArm rest;
  rest.site = "src/models/qwen3.rs:232";
  rest.offset = 9123;
  rest.arms = {1};
  rest.count = 2;
  BranchArm flash = rest;
  flash.site = "src/models/qwen3.rs:240";
  flash.offset = 9400;
  flash.arms = {0};
  flash.dead = {1};
  ir.instance_calls.back().branch = {rest};
  ir.instance_calls.back().operation_branches = {{"op:a", {rest, flash}}};
  const std::string text = write_model_ir(ir);
  EXPECT_NE(text.find("\"dead\": ["), std::string::npos) << text;
  const ModelIr back = parse_model_ir(text, "model.json");
  EXPECT_EQ(back, ir);
  EXPECT_EQ(write_model_ir(back), text);
}

// A conv layer's config (`Module.attributes`) and an instance call's own figures of its operations
// (`operation_mult_adds`) round-trip; an IR without them writes neither key (older IRs and
// models without conv layers are unchanged).
TEST(ModelJson, LayerAttributesAndPerCallFiguresRoundTrip) {
  ModelIr ir = testing::sample_model();
  EXPECT_EQ(write_model_ir(ir).find("\"attributes\""), std::string::npos);
  EXPECT_EQ(write_model_ir(ir).find("\"operation_mult_adds\""), std::string::npos);
  EXPECT_EQ(write_model_ir(ir).find("\"operation_shapes\""), std::string::npos);
  ir.modules.back().attributes = {{"padding", "1"}, {"stride", "2"}, {"groups", "cfg.groups"}};
  InstanceCall c;
  c.id = "instance-call:f::forward:0";
  c.entrypoint = "f";
  c.method = "forward";
  c.operations = {"op:a", "op:b"};
  c.operation_mult_adds = {{"op:b", "b*seq_len*seq_len*512"}, {"op:a", ""}};
  TensorShape s;
  s.rank = 3;
  s.dimensions = {{std::nullopt, "b_sz"}, {"seq_len", "seq_len"}, {std::nullopt, "4096"}};
  c.operation_shapes = {{"op:a", s}};
  ir.instance_calls.push_back(c);
  const std::string text = write_model_ir(ir);
  EXPECT_NE(text.find("\"attributes\": {"), std::string::npos) << text;
  EXPECT_NE(text.find("\"groups\": \"cfg.groups\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"operation_mult_adds\": {"), std::string::npos) << text;
  EXPECT_NE(text.find("\"operation_shapes\": {"), std::string::npos) << text;
  const ModelIr back = parse_model_ir(text, "model.json");
  EXPECT_EQ(back, ir);
  EXPECT_EQ(write_model_ir(back), text);
  EXPECT_NE(
      error_of(replace_once(text, "\"stride\": \"2\"", "\"stride\": 2")).find("/attributes/stride"),
      std::string::npos);
}

TEST(ModelJson, EnumsAreSnakeCaseAndTaggedFactsExternallyTagged) {
  const std::string text = write_model_ir(testing::sample_model());
  for (std::string_view s :
       {"\"running_state\"", "\"non_contiguous\"", "\"information\"", "\"public\"", "\"private\"",
        "\"cuda\": {\n", "\"ordinal\": 1", "\"same_as\": \"xs\"", "\"by_phase\"", "\"p95_ns\"",
        "\"edge_timings\"", "\"execution_phases\": [\n", "\"infer\""}) {
    EXPECT_NE(text.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(text.find("stages"), std::string::npos);  // heuristic sections are not emitted
  EXPECT_EQ(text.rfind("{\n  \"schema\": \"candle-graph/model/1\",\n", 0), 0u);
}

TEST(ModelJson, EmptyModelWritesEveryListAndNulls) {
  ModelIr ir;
  ir.analysis_id = "analysis:.";
  const std::string text = write_model_ir(ir);
  EXPECT_NE(text.find("\"components\": []"), std::string::npos);
  EXPECT_NE(text.find("\"findings\": []"), std::string::npos);
  EXPECT_NE(text.find("\"cargo\": null"), std::string::npos);
  EXPECT_NE(text.find("\"runtime\": null"), std::string::npos);
  EXPECT_EQ(parse_model_ir(text, "x"), ir);
}

TEST(ModelJson, UnknownSchemaNamesFoundAndExpected) {
  std::string text = write_model_ir(testing::sample_model());
  text = replace_once(text, "candle-graph/model/1", "candle-graph/model/2");
  const std::string err = error_of(text);
  EXPECT_NE(err.find("model.json"), std::string::npos) << err;
  EXPECT_NE(err.find("\"candle-graph/model/2\""), std::string::npos) << err;
  EXPECT_NE(err.find("expected \"candle-graph/model/1\""), std::string::npos) << err;
}

TEST(ModelJson, TypeErrorsNameTheJsonPointer) {
  const std::string text = write_model_ir(testing::sample_model());
  EXPECT_EQ(error_of(replace_once(text, "\"samples\": 7", "\"samples\": \"7\"")),
            "model.json: /operations/0/timing/samples: expected unsigned integer, found string");
  EXPECT_EQ(error_of(replace_once(text, "\"samples\": 3", "\"samples\": -3")),
            "model.json: /operations/0/timing/by_phase/infer/samples: expected unsigned "
            "integer, found negative integer");
  EXPECT_EQ(error_of(replace_once(text, "\"is_entrypoint\": true", "\"is_entrypoint\": 1")),
            "model.json: /functions/0/is_entrypoint: expected boolean, found integer");
  EXPECT_EQ(
      error_of(replace_once(text, "\"severity\": \"warning\"", "\"severity\": \"fatal\"")),
      "model.json: /findings/1/severity: expected one of error | warning | information, found "
      "\"fatal\"");
  EXPECT_EQ(error_of(replace_once(text, "\"related\": [", "\"related\": {\"a\": [")),
            "model.json: not valid JSON (The JSON document has an improper structure: missing or "
            "superfluous commas, braces, missing keys, etc.)");
}

TEST(ModelJson, MissingRequiredFieldIsAnError) {
  const std::string text = write_model_ir(testing::sample_model());
  EXPECT_EQ(error_of(replace_once(text, "\"dtype_rule\"", "\"dtype_rule_x\"")),
            "model.json: /operations/0/dtype_rule: missing required field");
  EXPECT_EQ(error_of("{\"analysis_id\": \"a\"}"), "model.json: /schema: missing required field");
  EXPECT_EQ(error_of("[]"), "model.json: /: expected object, found array");
}

TEST(ModelJson, UnknownFieldsAreIgnored) {
  const ModelIr ir = testing::sample_model();
  std::string text = write_model_ir(ir);
  text = replace_once(text, "\"analysis_id\"", "\"future\": {\"x\": [1]},\n  \"analysis_id\"");
  text = replace_once(text, "\"dtype_rule\"", "\"new_field\": null, \"dtype_rule\"");
  EXPECT_EQ(parse_model_ir(text, "m"), ir);
}

TEST(ModelJson, TruncatedDocumentErrorsCleanly) {
  const std::string text = write_model_ir(testing::sample_model());
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{1}, text.size() / 3, text.size() / 2, text.size() - 3}) {
    const std::string err = error_of(std::string_view(text).substr(0, cut));
    EXPECT_EQ(err.rfind("model.json: ", 0), 0u) << cut << ": " << err;
  }
}

TEST(ModelJson, PointerEscapesKeysAndChecksTaggedFacts) {
  ModelIr ir = testing::sample_model();
  ir.operations[0].timing->by_phase["a/b~c"] = testing::timing(1);
  std::string text = write_model_ir(ir);
  EXPECT_EQ(parse_model_ir(text, "m"), ir);
  text = replace_once(text, "\"a/b~c\": {\n            \"samples\": 1",
                      "\"a/b~c\": {\n            \"samples\": true");
  EXPECT_EQ(error_of(text),
            "model.json: /operations/0/timing/by_phase/a~1b~0c/samples: expected unsigned "
            "integer, found boolean");
  const std::string good = write_model_ir(testing::sample_model());
  EXPECT_EQ(error_of(replace_once(good, "\"device\": \"cpu\"", "\"device\": \"cuda\"")),
            "model.json: /tensors/4/device: expected cpu | metal | unknown or an object, found "
            "\"cuda\"");
}

TEST(ModelJson, DeepNestingIsRefusedNotCrashed) {
  std::string deep = "{\"schema\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(error_of(deep).rfind("model.json: not valid JSON", 0), 0u) << error_of(deep);
}

TEST(ModelJson, ReadsFileAndNamesMissingFile) {
  const auto dir = cg_test::scratch_path("cg_ir_json_test");
  std::filesystem::create_directories(dir);
  const ModelIr ir = testing::sample_model();
  write_file_atomic(dir / "model.json", write_model_ir(ir));
  EXPECT_EQ(read_model_ir_file((dir / "model.json").string()), ir);
  EXPECT_THROW(read_model_ir_file((dir / "absent.json").string()), InputError);
  std::filesystem::remove_all(dir);
}

// A constructor's buffers (`ir.buffers`, issue #38) round-trip; an IR without them writes no key.
TEST(ModelJson, BuffersRoundTripAndAreOmittedWhenEmpty) {
  ModelIr ir = testing::sample_model();
  EXPECT_EQ(write_model_ir(ir).find("\"buffers\""), std::string::npos);
  Buffer b;
  b.id = "buffer:models::mistral::RotaryEmbedding:sin:src/models/mistral.rs:133";
  b.owner_type = "models::mistral::RotaryEmbedding";
  b.field = "sin";
  b.source = "src/models/mistral.rs:133";
  b.created_at = "src/models/mistral.rs:133";
  b.instance = "";
  b.instances = 1;
  b.reached = "constructor";
  b.shape.rank = 2;
  b.shape.dimensions = {{std::nullopt, "32768"}, {std::nullopt, "64"}};
  b.dtype_param = "vb.dtype()";
  Buffer c = b;
  c.id += "#1";
  c.instances.reset();
  c.dtype = "F32";
  c.dtype_param.clear();
  c.alternative = "src/models/x.rs:12#1/2";
  ir.buffers = {b, c};
  const std::string text = write_model_ir(ir);
  EXPECT_NE(text.find("\"buffers\": ["), std::string::npos) << text;
  EXPECT_NE(text.find("\"alternative\": \"src/models/x.rs:12#1/2\""), std::string::npos) << text;
  const ModelIr back = parse_model_ir(text, "model.json");
  EXPECT_EQ(back, ir);
  EXPECT_EQ(write_model_ir(back), text);
}

}  // namespace
}  // namespace cg::ir
