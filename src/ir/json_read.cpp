// Reader for candle-graph/model/1: reads everything json_write.cpp writes. Every error names the
// origin and the JSON pointer of the offending value so a hand-edited file can be fixed directly.
// Unknown fields are ignored (newer writers within /1 may add some); missing fields are errors.
#include <simdjson.h>

#include "ir/model.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::ir {
namespace {

namespace dom = simdjson::dom;
constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;

// A value and where it sits. The JSON pointer is only spelled out when an error needs it, so the
// happy path allocates nothing for locations. Parents always outlive children (recursive descent).
struct Node {
  dom::element e;
  const Node* parent = nullptr;
  std::string_view key;   // member name, when the parent is an object
  std::size_t index = 0;  // element index, when the parent is an array
  bool in_array = false;
};

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string pointer_of(const Node& n) {
  if (n.parent == nullptr) return "";
  return pointer_of(*n.parent) + "/" +
         (n.in_array ? std::to_string(n.index) : pointer_token(n.key));
}

std::string_view type_name(const dom::element& e) {
  switch (e.type()) {
    case dom::element_type::ARRAY:
      return "array";
    case dom::element_type::OBJECT:
      return "object";
    case dom::element_type::INT64: {
      std::int64_t v = 0;
      return (!e.get_int64().get(v) && v < 0) ? "negative integer" : "integer";
    }
    case dom::element_type::UINT64:
      return "integer";
    case dom::element_type::DOUBLE:
      return "number";
    case dom::element_type::STRING:
      return "string";
    case dom::element_type::BOOL:
      return "boolean";
    case dom::element_type::NULL_VALUE:
      return "null";
  }
  return "value";
}

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& ptr, const std::string& message) const {
    throw InputError(origin_, (ptr.empty() ? std::string("/") : ptr) + ": " + message);
  }
  [[noreturn]] void expected(const Node& n, std::string_view what) const {
    fail(pointer_of(n), "expected " + std::string(what) + ", found " + std::string(type_name(n.e)));
  }

  dom::object object(const Node& n) const {
    dom::object o;
    if (n.e.get_object().get(o)) expected(n, "object");
    return o;
  }
  bool has(const Node& obj, std::string_view key) const {
    dom::element e;
    return !object(obj).at_key(key).get(e);
  }
  Node at(const Node& obj, std::string_view key) const {
    dom::object o = object(obj);
    dom::element e;
    if (o.at_key(key).get(e)) {
      fail(pointer_of(obj) + "/" + pointer_token(key), "missing required field");
    }
    return Node{e, &obj, key, 0, false};
  }
  std::string str(const Node& n) const {
    std::string_view s;
    if (n.e.get_string().get(s)) expected(n, "string");
    return std::string(s);
  }
  std::uint64_t u64(const Node& n) const {
    std::uint64_t v = 0;
    if (n.e.get_uint64().get(v)) expected(n, "unsigned integer");
    return v;
  }
  bool boolean(const Node& n) const {
    bool v = false;
    if (n.e.get_bool().get(v)) expected(n, "boolean");
    return v;
  }
  template <typename E>
  E enumeration(const Node& n) const {
    std::string s = str(n);
    if (auto v = enum_from_string<E>(s)) return *v;
    std::string names;
    for (std::string_view name : EnumNames<E>::names) {
      if (!names.empty()) names += " | ";
      names += name;
    }
    fail(pointer_of(n), "expected one of " + names + ", found \"" + s + "\"");
  }
  template <typename F>
  void each(const Node& n, F f) const {
    dom::array a;
    if (n.e.get_array().get(a)) expected(n, "array");
    std::size_t i = 0;
    for (dom::element e : a)
      f(Node{e, &n, {}, i++, true});
  }
  template <typename F>
  void each_member(const Node& n, F f) const {
    for (dom::key_value_pair kv : object(n)) {
      f(std::string(kv.key), Node{kv.value, &n, kv.key, 0, false});
    }
  }

  // Field helpers on an object node.
  std::string s(const Node& o, std::string_view k) const { return str(at(o, k)); }
  std::uint64_t u(const Node& o, std::string_view k) const { return u64(at(o, k)); }
  bool b(const Node& o, std::string_view k) const { return boolean(at(o, k)); }
  template <typename E>
  E en(const Node& o, std::string_view k) const {
    return enumeration<E>(at(o, k));
  }
  std::optional<std::string> os(const Node& o, std::string_view k) const {
    Node n = at(o, k);
    if (n.e.is_null()) return std::nullopt;
    return str(n);
  }
  std::optional<std::uint64_t> ou(const Node& o, std::string_view k) const {
    Node n = at(o, k);
    if (n.e.is_null()) return std::nullopt;
    return u64(n);
  }
  double number(const Node& n) const {
    double v = 0;
    if (n.e.get_double().get(v)) expected(n, "number");
    return v;
  }
  std::optional<double> od(const Node& o, std::string_view k) const {
    Node n = at(o, k);
    if (n.e.is_null()) return std::nullopt;
    return number(n);
  }
  std::optional<bool> ob(const Node& o, std::string_view k) const {
    Node n = at(o, k);
    if (n.e.is_null()) return std::nullopt;
    return boolean(n);
  }
  template <typename E>
  std::optional<E> oen(const Node& o, std::string_view k) const {
    Node n = at(o, k);
    if (n.e.is_null()) return std::nullopt;
    return enumeration<E>(n);
  }
  std::vector<std::string> strings(const Node& o, std::string_view k) const {
    std::vector<std::string> v;
    each(at(o, k), [&](const Node& n) { v.push_back(str(n)); });
    return v;
  }
  std::vector<std::uint64_t> uints(const Node& n) const {
    std::vector<std::uint64_t> v;
    each(n, [&](const Node& x) { v.push_back(u64(x)); });
    return v;
  }
  template <typename T, typename F>
  std::vector<T> list(const Node& o, std::string_view k, F read_one) const {
    std::vector<T> v;
    each(at(o, k), [&](const Node& n) { v.push_back(read_one(n)); });
    return v;
  }

 private:
  std::string origin_;
};

std::vector<Evidence> evidence(const Reader& r, const Node& o) {
  return r.list<Evidence>(o, "evidence", [&](const Node& n) {
    Evidence e;
    e.kind = r.en<EvidenceKind>(n, "kind");
    e.confidence = r.en<Confidence>(n, "confidence");
    e.source = r.os(n, "source");
    e.detail = r.s(n, "detail");
    return e;
  });
}

TimingStats stats(const Reader& r, const Node& n) {
  TimingStats t;
  t.samples = r.u(n, "samples");
  t.total_ns = r.u(n, "total_ns");
  t.mean_ns = r.u(n, "mean_ns");
  t.min_ns = r.u(n, "min_ns");
  t.max_ns = r.u(n, "max_ns");
  t.p50_ns = r.u(n, "p50_ns");
  t.p95_ns = r.u(n, "p95_ns");
  return t;
}

CargoSummary cargo(const Reader& r, const Node& n) {
  CargoSummary c;
  c.build_id = r.s(n, "build_id");
  c.workspace_root = r.s(n, "workspace_root");
  c.manifest_path = r.s(n, "manifest_path");
  c.package_name = r.s(n, "package_name");
  c.package_version = r.s(n, "package_version");
  c.selected_target = r.os(n, "selected_target");
  c.active_features = r.strings(n, "active_features");
  c.active_cfg = r.strings(n, "active_cfg");
  r.each_member(r.at(n, "candle_packages"),
                [&](std::string k, const Node& v) { c.candle_packages[k] = r.str(v); });
  return c;
}

Coverage coverage(const Reader& r, const Node& n) {
  Coverage c;
  c.components = r.u(n, "components");
  c.architecture_edges = r.u(n, "architecture_edges");
  c.modules = r.u(n, "modules");
  c.parameters = r.u(n, "parameters");
  c.functions = r.u(n, "functions");
  c.entrypoints = r.u(n, "entrypoints");
  c.component_entrypoints = r.u(n, "component_entrypoints");
  c.composition_edges = r.u(n, "composition_edges");
  c.tensors = r.u(n, "tensors");
  c.operations = r.u(n, "operations");
  c.linked_parameter_uses = r.u(n, "linked_parameter_uses");
  c.tensors_with_shape = r.u(n, "tensors_with_shape");
  c.tensors_with_dtype = r.u(n, "tensors_with_dtype");
  c.tensors_with_device = r.u(n, "tensors_with_device");
  c.runtime_observations = r.u(n, "runtime_observations");
  c.diagnostics = r.u(n, "diagnostics");
  return c;
}

Component component(const Reader& r, const Node& n) {
  Component c;
  c.id = r.s(n, "id");
  c.name = r.s(n, "name");
  c.qualified_name = r.s(n, "qualified_name");
  c.source = r.s(n, "source");
  c.constructor = r.s(n, "constructor");
  c.builders = r.list<Builder>(n, "builders", [&](const Node& b) {
    return Builder{r.s(b, "name"), r.en<BuilderRole>(b, "role"), evidence(r, b)};
  });
  c.modules = r.strings(n, "modules");
  c.parameters = r.strings(n, "parameters");
  c.entrypoints = r.strings(n, "entrypoints");
  c.evidence = evidence(r, n);
  return c;
}

ArchitectureEdge edge(const Reader& r, const Node& n) {
  ArchitectureEdge e;
  e.id = r.s(n, "id");
  e.from = r.s(n, "from");
  e.to = r.s(n, "to");
  e.via_function = r.s(n, "via_function");
  e.source = r.s(n, "source");
  e.evidence = evidence(r, n);
  return e;
}

Module module(const Reader& r, const Node& n) {
  Module m;
  m.id = r.s(n, "id");
  m.component = r.s(n, "component");
  m.parent = r.os(n, "parent");
  m.type_name = r.s(n, "type_name");
  m.qualified_type = r.os(n, "qualified_type");
  m.field = r.os(n, "field");
  m.builder_root = r.s(n, "builder_root");
  m.prefix = r.s(n, "prefix");
  m.repeat = r.os(n, "repeat");
  m.source = r.s(n, "source");
  m.confidence = r.en<Confidence>(n, "confidence");
  // Layer attributes came later (issue #18): an IR written before has none.
  if (r.has(n, "attributes"))
    r.each_member(r.at(n, "attributes"),
                  [&](const std::string& k, const Node& v) { m.attributes[k] = r.str(v); });
  if (r.has(n, "arguments"))
    r.each_member(r.at(n, "arguments"),
                  [&](const std::string& k, const Node& v) { m.arguments[k] = r.str(v); });
  return m;
}

Parameter parameter(const Reader& r, const Node& n) {
  Parameter p;
  p.id = r.s(n, "id");
  p.component = r.s(n, "component");
  p.module = r.os(n, "module");
  p.key = r.s(n, "key");
  p.builder_root = r.s(n, "builder_root");
  p.role = r.en<ParameterRole>(n, "role");
  p.kind = r.s(n, "kind");
  if (!r.at(n, "symbolic_shape").e.is_null()) p.symbolic_shape = r.strings(n, "symbolic_shape");
  if (Node s = r.at(n, "shape"); !s.e.is_null()) p.shape = r.uints(s);
  p.confidence = r.en<Confidence>(n, "confidence");
  p.reason = r.os(n, "reason");
  if (Node s = r.at(n, "checkpoint_shape"); !s.e.is_null()) p.checkpoint_shape = r.uints(s);
  p.checkpoint_dtype = r.os(n, "checkpoint_dtype");
  p.source = r.s(n, "source");
  p.uses = r.strings(n, "uses");
  p.optimizer_memberships = r.strings(n, "optimizer_memberships");
  p.evidence = evidence(r, n);
  return p;
}

Function function(const Reader& r, const Node& n) {
  Function f;
  f.id = r.s(n, "id");
  f.name = r.s(n, "name");
  f.qualified_name = r.s(n, "qualified_name");
  f.owner_type = r.os(n, "owner_type");
  f.visibility = r.en<Visibility>(n, "visibility");
  f.parameters = r.list<FunctionParam>(n, "parameters", [&](const Node& p) {
    return FunctionParam{r.s(p, "name"), r.s(p, "type_name")};
  });
  f.return_type = r.os(n, "return_type");
  f.cfg_predicates = r.strings(n, "cfg_predicates");
  f.cfg_active = r.ob(n, "cfg_active");
  f.source = r.s(n, "source");
  f.calls = r.strings(n, "calls");
  f.tensor_inputs = r.strings(n, "tensor_inputs");
  f.tensor_outputs = r.strings(n, "tensor_outputs");
  f.is_entrypoint = r.b(n, "is_entrypoint");
  f.is_loss = r.b(n, "is_loss");
  f.execution_phases = r.list<ExecutionPhase>(
      n, "execution_phases", [&](const Node& p) { return r.enumeration<ExecutionPhase>(p); });
  return f;
}

DeviceFact device(const Reader& r, const Node& n) {
  DeviceFact d;
  if (n.e.is_string()) {
    d.kind = r.enumeration<DeviceKind>(n);
    if (d.kind == DeviceKind::cuda || d.kind == DeviceKind::same_as) {
      r.fail(pointer_of(n),
             "expected cpu | metal | unknown or an object, found \"" + r.str(n) + "\"");
    }
    return d;
  }
  dom::object o = r.object(n);
  dom::element e;
  if (!o.at_key("cuda").get(e)) {
    d.kind = DeviceKind::cuda;
    d.ordinal = r.ou(Node{e, &n, "cuda", 0, false}, "ordinal");
  } else if (!o.at_key("same_as").get(e)) {
    d.kind = DeviceKind::same_as;
    d.same_as = r.str(Node{e, &n, "same_as", 0, false});
  } else {
    r.fail(pointer_of(n), "expected an object with \"cuda\" or \"same_as\"");
  }
  return d;
}

LayoutFact layout(const Reader& r, const Node& n) {
  LayoutFact l;
  if (n.e.is_string()) {
    l.kind = r.enumeration<LayoutKind>(n);
    if (l.kind == LayoutKind::same_as)
      r.fail(pointer_of(n), "expected {\"same_as\": ...}, found string");
    return l;
  }
  l.kind = LayoutKind::same_as;
  l.same_as = r.s(n, "same_as");
  return l;
}

TensorShape tensor_shape(const Reader& r, const Node& shape) {
  TensorShape s;
  s.rank = r.ou(shape, "rank");
  s.dimensions = r.list<Dimension>(shape, "dimensions", [&](const Node& d) {
    return Dimension{r.os(d, "name"), r.s(d, "expr")};
  });
  s.source_expr = r.os(shape, "source_expr");
  return s;
}

std::vector<BranchArm> branch_arms(const Reader& r, const Node& list) {
  std::vector<BranchArm> v;
  r.each(list, [&](const Node& n) {
    BranchArm b;
    b.site = r.s(n, "site");
    b.offset = r.u(n, "offset");
    b.arms = r.uints(r.at(n, "arms"));
    b.count = r.u(n, "count");
    if (r.has(n, "dead")) b.dead = r.uints(r.at(n, "dead"));
    v.push_back(std::move(b));
  });
  return v;
}

InstanceCall instance_call(const Reader& r, const Node& n) {
  InstanceCall c;
  c.id = r.s(n, "id");
  c.entrypoint = r.s(n, "entrypoint");
  c.parent = r.os(n, "parent");
  c.path = r.s(n, "path");
  c.modules = r.strings(n, "modules");
  c.method = r.s(n, "method");
  c.function = r.os(n, "function");
  c.call_site = r.os(n, "call_site");
  c.repeat = r.os(n, "repeat");
  c.count = r.ou(n, "count");
  if (r.has(n, "sequence")) c.sequence = r.ou(n, "sequence");
  c.output_shape = tensor_shape(r, r.at(n, "output_shape"));
  c.output_dtype = r.s(n, "output_dtype");
  c.mult_adds = r.os(n, "mult_adds");
  c.operations = r.strings(n, "operations");
  if (r.has(n, "operation_mult_adds"))
    r.each_member(r.at(n, "operation_mult_adds"), [&](const std::string& k, const Node& v) {
      c.operation_mult_adds[k] = r.str(v);
    });
  if (r.has(n, "operation_shapes"))
    r.each_member(r.at(n, "operation_shapes"), [&](const std::string& k, const Node& v) {
      c.operation_shapes[k] = tensor_shape(r, v);
    });
  if (r.has(n, "branch")) c.branch = branch_arms(r, r.at(n, "branch"));
  if (r.has(n, "operation_branches"))
    r.each_member(r.at(n, "operation_branches"), [&](const std::string& k, const Node& v) {
      c.operation_branches[k] = branch_arms(r, v);
    });
  return c;
}

StateStore state_store(const Reader& r, const Node& n) {
  StateStore s;
  s.id = r.s(n, "id");
  s.entrypoint = r.s(n, "entrypoint");
  s.function = r.s(n, "function");
  s.place = r.s(n, "place");
  s.source = r.s(n, "source");
  s.instance = r.os(n, "instance");
  s.instances = r.ou(n, "instances");
  if (r.has(n, "library")) s.library = r.s(n, "library");
  if (r.has(n, "cache_dim")) s.cache_dim = r.ou(n, "cache_dim");
  if (r.has(n, "cache_max_seq_len")) s.cache_max_seq_len = r.ou(n, "cache_max_seq_len");
  if (r.has(n, "slots")) s.slots = r.ou(n, "slots");
  s.tensors = r.list<StateStore::Stored>(n, "tensors", [&](const Node& t) {
    StateStore::Stored st;
    st.tensor = r.s(t, "tensor");
    st.shape = tensor_shape(r, r.at(t, "shape"));
    st.dtype = r.s(t, "dtype");
    if (r.has(t, "dtype_param")) st.dtype_param = r.s(t, "dtype_param");
    if (r.has(t, "appends_along")) st.appends_along = r.ou(t, "appends_along");
    if (r.has(t, "narrowed_at")) st.narrowed_at = r.os(t, "narrowed_at");
    return st;
  });
  return s;
}

Buffer buffer(const Reader& r, const Node& n) {
  Buffer b;
  b.id = r.s(n, "id");
  b.owner_type = r.s(n, "owner_type");
  b.field = r.s(n, "field");
  b.source = r.s(n, "source");
  b.created_at = r.s(n, "created_at");
  b.instance = r.s(n, "instance");
  b.instances = r.ou(n, "instances");
  b.reached = r.s(n, "reached");
  b.shape = tensor_shape(r, r.at(n, "shape"));
  b.dtype = r.s(n, "dtype");
  if (r.has(n, "dtype_param")) b.dtype_param = r.s(n, "dtype_param");
  if (r.has(n, "alternative")) b.alternative = r.s(n, "alternative");
  return b;
}

Tensor tensor(const Reader& r, const Node& n) {
  Tensor t;
  t.id = r.s(n, "id");
  t.name = r.s(n, "name");
  t.role = r.en<TensorRole>(n, "role");
  t.owner_function = r.s(n, "owner_function");
  t.parameter = r.os(n, "parameter");
  t.shape = tensor_shape(r, r.at(n, "shape"));
  t.dtype = r.s(n, "dtype");
  t.device = device(r, r.at(n, "device"));
  t.layout = layout(r, r.at(n, "layout"));
  t.requires_grad = r.ob(n, "requires_grad");
  t.evidence = evidence(r, n);
  t.execution_phase = r.oen<ExecutionPhase>(n, "execution_phase");
  return t;
}

Operation operation(const Reader& r, const Node& n) {
  Operation o;
  o.id = r.s(n, "id");
  o.function = r.s(n, "function");
  o.name = r.s(n, "name");
  o.qualified_name = r.os(n, "qualified_name");
  o.inputs = r.strings(n, "inputs");
  o.output = r.s(n, "output");
  o.source = r.s(n, "source");
  o.dtype_rule = r.s(n, "dtype_rule");
  o.gradient_rule = r.s(n, "gradient_rule");
  o.device_rule = r.s(n, "device_rule");
  o.shape_rule = r.s(n, "shape_rule");
  o.domain_rule = r.s(n, "domain_rule");
  o.evidence = evidence(r, n);
  o.execution_phase = r.oen<ExecutionPhase>(n, "execution_phase");
  o.mult_adds = r.os(n, "mult_adds");
  if (Node t = r.at(n, "timing"); !t.e.is_null()) {
    OperationTiming timing;
    timing.stats = stats(r, t);
    if (r.has(t, "self_ns")) timing.self_ns = r.ou(t, "self_ns");
    r.each_member(r.at(t, "by_phase"),
                  [&](std::string k, const Node& v) { timing.by_phase[k] = stats(r, v); });
    o.timing = std::move(timing);
  }
  return o;
}

Finding finding(const Reader& r, const Node& n) {
  Finding f;
  f.id = r.s(n, "id");
  f.rule = r.s(n, "rule");
  f.severity = r.en<Severity>(n, "severity");
  f.confidence = r.en<Confidence>(n, "confidence");
  f.message = r.s(n, "message");
  f.source = r.os(n, "source");
  f.related = r.strings(n, "related");
  f.evidence = evidence(r, n);
  return f;
}

TensorStatsValues tensor_stats_values(const Reader& r, const Node& n) {
  TensorStatsValues v;
  v.step = r.u(n, "step");
  v.at_ns = r.u(n, "at_ns");
  v.elements = r.u(n, "elements");
  v.nan = r.u(n, "nan");
  v.pos_inf = r.u(n, "pos_inf");
  v.neg_inf = r.u(n, "neg_inf");
  v.zeros = r.u(n, "zeros");
  v.min = r.od(n, "min");
  v.max = r.od(n, "max");
  v.mean = r.od(n, "mean");
  v.rms = r.od(n, "rms");
  v.abs_max = r.od(n, "abs_max");
  return v;
}

std::optional<FirstNonFinite> first_non_finite(const Reader& r, const Node& o) {
  Node n = r.at(o, "first_non_finite");
  if (n.e.is_null()) return std::nullopt;
  FirstNonFinite f;
  f.step = r.u(n, "step");
  f.at_ns = r.u(n, "at_ns");
  f.thread = r.u(n, "thread");
  f.reason = r.s(n, "reason");
  f.nan = r.u(n, "nan");
  f.pos_inf = r.u(n, "pos_inf");
  f.neg_inf = r.u(n, "neg_inf");
  return f;
}

// Tensor statistics came later (issue #39): an IR written before has none of these fields.
void tensor_stats(const Reader& r, const Node& n, RuntimeSummary& s) {
  if (!r.has(n, "module_stats")) return;
  s.stats_records = r.u(n, "stats_records");
  s.module_stats = r.list<ModuleStats>(n, "module_stats", [&](const Node& m) {
    ModuleStats t;
    t.path = r.s(m, "path");
    t.module = r.s(m, "module");
    t.instance = r.ou(m, "instance");
    t.index = r.u(m, "index");
    t.samples = r.u(m, "samples");
    t.steps = r.u(m, "steps");
    t.last = tensor_stats_values(r, r.at(m, "last"));
    t.max_abs_max = r.od(m, "max_abs_max");
    t.max_rms = r.od(m, "max_rms");
    t.nan = r.u(m, "nan");
    t.pos_inf = r.u(m, "pos_inf");
    t.neg_inf = r.u(m, "neg_inf");
    t.max_zeros_fraction = r.number(r.at(m, "max_zeros_fraction"));
    t.first_non_finite = first_non_finite(r, m);
    return t;
  });
  s.grad_stats = r.list<GradStats>(n, "grad_stats", [&](const Node& g) {
    GradStats t;
    t.key = r.s(g, "key");
    t.parameters = r.strings(g, "parameters");
    t.samples = r.u(g, "samples");
    t.steps = r.u(g, "steps");
    t.norm_last = r.od(g, "norm_last");
    t.norm_min = r.od(g, "norm_min");
    t.norm_max = r.od(g, "norm_max");
    t.max_abs_max = r.od(g, "max_abs_max");
    t.nan = r.u(g, "nan");
    t.pos_inf = r.u(g, "pos_inf");
    t.neg_inf = r.u(g, "neg_inf");
    t.all_zero = r.b(g, "all_zero");
    t.first_non_finite = first_non_finite(r, g);
    return t;
  });
  s.unmatched_stats_paths = r.u(n, "unmatched_stats_paths");
  s.unmatched_stats_path_examples = r.strings(n, "unmatched_stats_path_examples");
  s.unmatched_grad_keys = r.u(n, "unmatched_grad_keys");
  s.unmatched_grad_key_examples = r.strings(n, "unmatched_grad_key_examples");
}

RuntimeSummary runtime(const Reader& r, const Node& n) {
  RuntimeSummary s;
  s.trace_schema = r.s(n, "trace_schema");
  s.entrypoint = r.os(n, "entrypoint");
  s.profile = r.os(n, "profile");
  s.tensor_observations = r.u(n, "tensor_observations");
  s.operation_observations = r.u(n, "operation_observations");
  s.gradient_observations = r.u(n, "gradient_observations");
  s.missing_gradients = r.u(n, "missing_gradients");
  s.zero_gradients = r.u(n, "zero_gradients");
  s.non_finite_gradients = r.u(n, "non_finite_gradients");
  s.tensor_conflicts = r.u(n, "tensor_conflicts");
  s.gradient_conflicts = r.u(n, "gradient_conflicts");
  s.identity_mismatches = r.u(n, "identity_mismatches");
  s.first_non_finite_step = r.ou(n, "first_non_finite_step");
  s.saturating_activations = r.u(n, "saturating_activations");
  s.value_observations = r.u(n, "value_observations");
  s.execution_phase = r.oen<ExecutionPhase>(n, "execution_phase");
  s.avg_operation_duration_ns = r.ou(n, "avg_operation_duration_ns");
  s.edge_timings = r.list<EdgeTiming>(n, "edge_timings", [&](const Node& e) {
    return EdgeTiming{r.s(e, "from"), r.s(e, "to"), stats(r, r.at(e, "timing"))};
  });
  // Module timings came later (issue #16): an IR written before has none of these fields.
  if (r.has(n, "module_timings")) {
    s.module_timings = r.list<ModuleTiming>(n, "module_timings", [&](const Node& m) {
      ModuleTiming t;
      t.path = r.s(m, "path");
      t.module = r.s(m, "module");
      t.instance = r.ou(m, "instance");
      t.calls = r.u(m, "calls");
      t.total = stats(r, r.at(m, "total"));
      t.self = stats(r, r.at(m, "self"));
      return t;
    });
    s.unmatched_module_paths = r.u(n, "unmatched_module_paths");
    s.unmatched_module_path_examples = r.strings(n, "unmatched_module_path_examples");
    s.host_side_timings = r.b(n, "host_side_timings");
    r.each(r.at(n, "thread_busy_ns"), [&](const Node& x) { s.thread_busy_ns.push_back(r.u64(x)); });
    if (r.has(n, "wall_ns")) s.wall_ns = r.u(n, "wall_ns");
    s.steps = r.u(n, "steps");
  }
  tensor_stats(r, n, s);
  return s;
}

}  // namespace

ModelIr parse_model_ir(std::string_view json, std::string_view origin) {
  const std::string where(origin);
  if (json.size() > kMaxInputBytes) {
    throw InputError(where, "model IR larger than 1 GiB; refusing to read it");
  }
  dom::parser parser;
  dom::element root;
  simdjson::padded_string padded(json);
  if (auto err = parser.parse(padded).get(root)) {
    throw InputError(where, std::string("not valid JSON (") + simdjson::error_message(err) + ")");
  }
  Reader r(origin);
  Node doc{root, nullptr, {}, 0, false};
  r.object(doc);
  std::string schema = r.s(doc, "schema");
  if (schema != kModelSchema) {
    r.fail("/schema",
           "unsupported schema \"" + schema + "\", expected \"" + std::string(kModelSchema) + "\"");
  }
  ModelIr ir;
  ir.analysis_id = r.s(doc, "analysis_id");
  if (Node c = r.at(doc, "cargo"); !c.e.is_null()) ir.cargo = cargo(r, c);
  ir.coverage = coverage(r, r.at(doc, "coverage"));
  ir.components =
      r.list<Component>(doc, "components", [&](const Node& n) { return component(r, n); });
  ir.architecture_edges = r.list<ArchitectureEdge>(doc, "architecture_edges",
                                                   [&](const Node& n) { return edge(r, n); });
  ir.modules = r.list<Module>(doc, "modules", [&](const Node& n) { return module(r, n); });
  ir.parameters =
      r.list<Parameter>(doc, "parameters", [&](const Node& n) { return parameter(r, n); });
  ir.functions = r.list<Function>(doc, "functions", [&](const Node& n) { return function(r, n); });
  ir.tensors = r.list<Tensor>(doc, "tensors", [&](const Node& n) { return tensor(r, n); });
  ir.operations =
      r.list<Operation>(doc, "operations", [&](const Node& n) { return operation(r, n); });
  // Instance calls came later (issue #18): an IR written before has none.
  if (r.has(doc, "instance_calls"))
    ir.instance_calls = r.list<InstanceCall>(doc, "instance_calls",
                                             [&](const Node& n) { return instance_call(r, n); });
  if (r.has(doc, "state_stores"))
    ir.state_stores =
        r.list<StateStore>(doc, "state_stores", [&](const Node& n) { return state_store(r, n); });
  if (r.has(doc, "buffers"))
    ir.buffers = r.list<Buffer>(doc, "buffers", [&](const Node& n) { return buffer(r, n); });
  ir.findings = r.list<Finding>(doc, "findings", [&](const Node& n) { return finding(r, n); });
  if (Node n = r.at(doc, "runtime"); !n.e.is_null()) ir.runtime = runtime(r, n);
  return ir;
}

ModelIr read_model_ir_file(const std::string& path) {
  return parse_model_ir(read_file(path, kMaxInputBytes), path);
}

}  // namespace cg::ir
