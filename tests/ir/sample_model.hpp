#pragma once
// A hand-built model that uses every section, every field and every enum value, so a round trip
// through the JSON writer and reader exercises all of the code.
#include "ir/model.hpp"
#include "ir/stable_id.hpp"

namespace cg::ir::testing {

inline std::vector<Evidence> all_evidence() {
  std::vector<Evidence> v;
  for (std::size_t i = 0; i < EnumNames<EvidenceKind>::names.size(); ++i) {
    Evidence e;
    e.kind = static_cast<EvidenceKind>(i);
    e.confidence = static_cast<Confidence>(i % EnumNames<Confidence>::names.size());
    if (i % 2 == 0) e.source = "src/model.rs:" + std::to_string(10 + i);
    e.detail = "detail \"quoted\" \t" + std::to_string(i);
    v.push_back(e);
  }
  return v;
}

inline TimingStats timing(std::uint64_t base) {
  return {base, base * 100, 100, 90, 200 + base, 101, 190};
}

inline ModelIr sample_model() {
  ModelIr ir;
  ir.analysis_id = "analysis:candle-graph/build/1:0123456789abcdef";
  CargoSummary cargo;
  cargo.build_id = "candle-graph/build/1:0123456789abcdef";
  cargo.workspace_root = ".";
  cargo.manifest_path = "Cargo.toml";
  cargo.package_name = "tiny";
  cargo.package_version = "0.1.0";
  cargo.selected_target = "lib";
  cargo.active_features = {"cuda", "default"};
  cargo.active_cfg = {"feature=\"cuda\"", "unix"};
  cargo.candle_packages = {{"candle-core", "0.11.0"}, {"candle-nn", "0.11.0"}};
  ir.cargo = cargo;

  const std::string enc = component_id("model::Encoder");
  const std::string mlp = component_id("model::Mlp");
  const std::string fwd = function_id("model::Encoder::forward", {});
  const std::string ctor = function_id("model::Encoder::new", {"feature = \"cuda\""});

  Component c;
  c.id = enc;
  c.name = "Encoder";
  c.qualified_name = "model::Encoder";
  c.source = "src/model.rs:3";
  c.constructor = ctor;
  for (std::size_t i = 0; i < EnumNames<BuilderRole>::names.size(); ++i) {
    c.builders.push_back({"vb" + std::to_string(i), static_cast<BuilderRole>(i),
                          i == 0 ? all_evidence() : std::vector<Evidence>{}});
  }
  c.modules = {module_id(enc, "vb", "", "Encoder", {}, 0)};
  c.parameters = {parameter_id(enc, "vb", "projection.weight")};
  c.entrypoints = {fwd};
  c.evidence = all_evidence();
  ir.components.push_back(c);
  Component m = c;
  m.id = mlp;
  m.name = "Mlp";
  m.qualified_name = "model::Mlp";
  m.builders.clear();
  m.modules.clear();
  m.parameters.clear();
  m.entrypoints.clear();
  m.evidence.clear();
  ir.components.push_back(m);

  ArchitectureEdge e;
  e.id = composition_edge_id(enc, mlp, "mlp");
  e.from = enc;
  e.to = mlp;
  e.via_function = ctor;
  e.source = "src/model.rs:5";
  e.evidence = {{EvidenceKind::source, Confidence::heuristic, "src/model.rs:5",
                 "struct field `mlp` embeds component type `Mlp`"}};
  ir.architecture_edges.push_back(e);

  Module root;
  root.id = c.modules[0];
  root.component = enc;
  root.type_name = "Encoder";
  root.builder_root = "vb";
  root.source = "src/model.rs:3";
  root.confidence = Confidence::proven;
  ir.modules.push_back(root);
  Module child;
  child.id = module_id(enc, "vb", "layers.{i}", "Block", {"unix"}, 0);
  child.component = enc;
  child.parent = root.id;
  child.type_name = "Block";
  child.qualified_type = "model::Block";
  child.field = "layers";
  child.builder_root = "vb";
  child.prefix = "layers.{i}";
  child.repeat = "i in 0..n";
  child.source = "src/model.rs:30";
  child.confidence = Confidence::conditional;
  ir.modules.push_back(child);

  for (std::size_t i = 0; i < EnumNames<ParameterRole>::names.size(); ++i) {
    Parameter p;
    p.key = "p" + std::to_string(i) + ".weight";
    p.id = parameter_id(enc, "vb", p.key);
    p.component = enc;
    if (i % 2 == 0) p.module = child.id;
    p.builder_root = "vb";
    p.role = static_cast<ParameterRole>(i);
    p.kind = i == 0 ? "nn::linear" : "get";
    if (i % 2 == 0) p.symbolic_shape = std::vector<std::string>{"cfg.hidden", "cfg.hidden * 4"};
    if (i % 3 == 0) p.shape = std::vector<std::uint64_t>{64, 256};
    p.confidence = static_cast<Confidence>(i % 4);
    if (i % 2 == 1) p.reason = "inside `if cfg.bias`";
    if (i == 0) {
      p.checkpoint_shape = std::vector<std::uint64_t>{64, 256};
      p.checkpoint_dtype = "F32";
    }
    p.source = "src/model.rs:" + std::to_string(40 + i);
    p.uses = {operation_id(fwd, "matmul", 0)};
    p.optimizer_memberships =
        i == 1 ? std::vector<std::string>{"optimizer-membership:x"} : std::vector<std::string>{};
    p.evidence = i == 0 ? all_evidence() : std::vector<Evidence>{};
    ir.parameters.push_back(p);
  }

  for (std::size_t i = 0; i < EnumNames<Visibility>::names.size(); ++i) {
    Function f;
    f.name = i == 0 ? "forward" : "helper" + std::to_string(i);
    f.qualified_name = "model::Encoder::" + f.name;
    f.id = i == 0 ? fwd : function_id(f.qualified_name, {"unix"});
    if (i < 3) f.owner_type = "model::Encoder";
    f.visibility = static_cast<Visibility>(i);
    if (i == 0) f.parameters = {{"self", "&Self"}, {"xs", "&Tensor"}};
    if (i == 0) f.return_type = "Result<Tensor>";
    if (i != 0) f.cfg_predicates = {"unix"};
    if (i == 1) f.cfg_active = true;
    if (i == 2) f.cfg_active = false;
    f.source = "src/model.rs:" + std::to_string(60 + i);
    if (i == 0) {
      f.calls = {function_id("model::Encoder::helper1", {"unix"})};
      f.tensor_inputs = {contract_tensor_id(fwd, "xs")};
      f.tensor_outputs = {dataflow_tensor_id(fwd, "matmul", 0)};
      f.is_entrypoint = true;
      f.execution_phases = {ExecutionPhase::train, ExecutionPhase::infer};
    }
    f.is_loss = i == 4;
    ir.functions.push_back(f);
  }

  for (std::size_t i = 0; i < EnumNames<TensorRole>::names.size(); ++i) {
    Tensor t;
    t.name = "t" + std::to_string(i);
    t.id = i == 0 ? contract_tensor_id(fwd, "xs") : dataflow_tensor_id(fwd, "matmul", i - 1);
    t.role = static_cast<TensorRole>(i);
    t.owner_function = fwd;
    if (i == 2) t.parameter = ir.parameters[0].id;
    if (i % 2 == 0) {
      t.shape.rank = 2;
      t.shape.dimensions = {{"batch", "b"}, {std::nullopt, "cfg.hidden"}};
      t.shape.source_expr = "(b, cfg.hidden)";
    }
    t.dtype = i % 3 == 0 ? "Unknown" : "F32";
    t.device.kind = static_cast<DeviceKind>(i % 5);
    if (t.device.kind == DeviceKind::cuda && i > 5) t.device.ordinal = 1;
    if (t.device.kind == DeviceKind::same_as) t.device.same_as = "xs";
    t.layout.kind = static_cast<LayoutKind>(i % 5);
    if (t.layout.kind == LayoutKind::same_as) t.layout.same_as = "xs";
    if (i == 1) t.requires_grad = true;
    if (i == 2) t.requires_grad = false;
    if (i == 3) t.evidence = all_evidence();
    if (i % 3 == 1) t.execution_phase = static_cast<ExecutionPhase>(i % 2);
    ir.tensors.push_back(t);
  }

  for (std::uint64_t i = 0; i < 3; ++i) {
    Operation o;
    o.id = operation_id(fwd, "matmul", i);
    o.function = fwd;
    o.name = "matmul";
    if (i == 1) o.qualified_name = "candle_nn::ops::rms_norm";
    o.inputs = {contract_tensor_id(fwd, "xs"), ir.parameters[0].id};
    o.output = dataflow_tensor_id(fwd, "matmul", i);
    o.source = "src/model.rs:" + std::to_string(70 + i);
    o.dtype_rule = "SameAsInputs";
    o.gradient_rule = "Propagates";
    o.device_rule = "preserve";
    o.shape_rule = "matrix_product";
    o.domain_rule = "saturating_unit(f32_upper=16.6355,f32_lower=-88.7228)";
    o.evidence = {{EvidenceKind::source, Confidence::proven, o.source, "audited"}};
    if (i > 0) o.execution_phase = static_cast<ExecutionPhase>(i - 1);
    if (i == 1) o.mult_adds = "b*t*4194304";
    if (i == 0) {
      OperationTiming ot;
      ot.stats = timing(7);
      ot.by_phase = {{"infer", timing(3)}, {"train", timing(4)}};
      ot.self_ns = 5;
      o.timing = ot;
    }
    ir.operations.push_back(o);
  }

  for (std::size_t i = 0; i < EnumNames<Severity>::names.size(); ++i) {
    Finding f;
    f.rule = "rule-" + std::to_string(i);
    f.severity = static_cast<Severity>(i);
    f.confidence = static_cast<Confidence>(i);
    f.message = "message: unicode \xc3\xa9 / slash";
    if (i != 1) f.source = "src/model.rs:9";
    f.id = finding_id(f.rule, f.source.value_or(""), f.message);
    f.related = {ir.operations[0].id, enc};
    f.evidence = i == 0 ? all_evidence() : std::vector<Evidence>{};
    ir.findings.push_back(f);
  }

  RuntimeSummary r;
  r.trace_schema = "candle-graph/runtime/4";
  r.entrypoint = fwd;
  r.tensor_observations = 11;
  r.operation_observations = 12;
  r.gradient_observations = 13;
  r.missing_gradients = 1;
  r.zero_gradients = 2;
  r.non_finite_gradients = 3;
  r.tensor_conflicts = 4;
  r.gradient_conflicts = 5;
  r.identity_mismatches = 6;
  r.first_non_finite_step = 42;
  r.saturating_activations = 7;
  r.value_observations = 8;
  r.execution_phase = ExecutionPhase::train;
  r.avg_operation_duration_ns = 18446744073709551615ull;  // full u64 range survives
  r.edge_timings = {{ir.operations[0].id, ir.operations[1].id, timing(5)}};
  r.module_timings = {{"model.layers.3.mlp", ir.modules.empty() ? "m" : ir.modules[0].id, 3, 4,
                       timing(6), timing(2)}};
  r.unmatched_module_paths = 1;
  r.unmatched_module_path_examples = {"vision.encoder"};
  r.host_side_timings = false;
  r.thread_busy_ns = {10, 20};
  r.steps = 2;
  // Tensor statistics: doubles at the ends of the f32 range and below it, a null number (no finite
  // element), a first non-finite record, a gradient key that matched no parameter.
  r.stats_records = 9;
  ModuleStats ms;
  ms.path = "model.layers.3.mlp";
  ms.module = ir.modules.empty() ? "m" : ir.modules[0].id;
  ms.instance = 3;
  ms.index = 1;
  ms.samples = 5;
  ms.steps = 4;
  ms.last = {12, 345, 6, 1, 1, 0, 2, -0.1, 3.4e38, 1e-30, 0.30000000000000004, 3.4e38};
  ms.max_abs_max = 3.4e38;
  ms.max_rms = 1.5;
  ms.nan = 1;
  ms.pos_inf = 2;
  ms.max_zeros_fraction = 1.0 / 3.0;
  ms.first_non_finite = FirstNonFinite{12, 345, 1, "non_finite", 1, 1, 0};
  r.module_stats = {ms};
  GradStats gs;
  gs.key = "model.gone.weight";
  gs.samples = 2;
  gs.steps = 2;
  gs.norm_last = 0.0;
  gs.max_abs_max = 0.0;
  gs.all_zero = true;
  r.grad_stats = {gs};
  r.unmatched_grad_keys = 1;
  r.unmatched_grad_key_examples = {"model.gone.weight"};
  ir.runtime = r;

  normalize(ir);
  return ir;
}

}  // namespace cg::ir::testing
