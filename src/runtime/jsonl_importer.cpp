#include "runtime/jsonl_importer.hpp"

#include <utility>

namespace cg::runtime {
namespace {

namespace od = simdjson::ondemand;

[[noreturn]] void type_error(std::string_view field, const char* expected) {
  throw RecordError("field `" + std::string(field) + "`: expected " + expected);
}

[[noreturn]] void missing(std::string_view kind, const char* field, const char* expected) {
  throw RecordError(std::string(kind) + " record is missing field `" + field + "` (" + expected +
                    ")");
}

bool is_null(od::value& v) {
  bool null = false;
  return !v.is_null().get(null) && null;
}

std::string_view str(od::value v, std::string_view field) {
  std::string_view s;
  if (v.get_string().get(s)) type_error(field, "a string");
  return s;
}

// The typed read is tried first: a failed type check leaves an On-Demand scalar unconsumed, so
// null is only tested on the rare miss.
std::optional<std::string_view> opt_str(od::value v, std::string_view field) {
  std::string_view s;
  if (!v.get_string().get(s)) return s;
  if (is_null(v)) return std::nullopt;
  type_error(field, "a string");
}

std::uint64_t u64(od::value v, std::string_view field) {
  std::uint64_t n = 0;
  if (v.get_uint64().get(n)) type_error(field, "an unsigned integer");
  return n;
}

std::optional<std::uint64_t> opt_u64(od::value v, std::string_view field) {
  std::uint64_t n = 0;
  if (!v.get_uint64().get(n)) return n;
  if (is_null(v)) return std::nullopt;
  type_error(field, "an unsigned integer");
}

double f64(od::value v, std::string_view field) {
  double d = 0;
  if (v.get_double().get(d)) type_error(field, "a number");
  return d;
}

bool boolean(od::value v, std::string_view field) {
  bool b = false;
  if (v.get_bool().get(b)) type_error(field, "true or false");
  return b;
}

template <typename F>
void each_in_array(od::value v, std::string_view field, const char* expected, F&& f) {
  od::array a;
  if (v.get_array().get(a)) type_error(field, expected);
  for (auto element : a) {
    od::value e;
    if (element.get(e)) type_error(field, expected);
    f(e);
  }
}

std::vector<std::string> strings(od::value v, std::string_view field) {
  std::vector<std::string> out;
  each_in_array(v, field, "an array of strings",
                [&](od::value e) { out.emplace_back(str(e, field)); });
  return out;
}

void check_strings(od::value v, std::string_view field) {
  each_in_array(v, field, "an array of strings", [&](od::value e) { (void)str(e, field); });
}

enum class Kind { meta, tensor, operation, gradient, value, edge_timing, end };

Kind parse_kind(std::string_view k) {
  if (k == "operation") return Kind::operation;
  if (k == "edge_timing") return Kind::edge_timing;
  if (k == "meta") return Kind::meta;
  if (k == "tensor") return Kind::tensor;
  if (k == "gradient") return Kind::gradient;
  if (k == "value") return Kind::value;
  if (k == "end") return Kind::end;
  throw RecordError("unknown record kind `" + std::string(k) +
                    "` (expected meta, tensor, operation, gradient, value, edge_timing or end)");
}

std::string json_error(simdjson::error_code e) {
  return std::string("invalid JSON (") + simdjson::error_message(e) + ")";
}

}  // namespace

void JsonlImporter::parse_line(std::string_view line, std::size_t capacity,
                               TraceValidator& validator, bool first_record) {
  od::document doc;
  if (auto e = parser_.iterate(line.data(), line.size(), capacity).get(doc)) {
    throw RecordError(json_error(e));
  }
  od::object obj;
  if (auto e = doc.get_object().get(obj)) {
    throw RecordError("invalid JSON: expected one object per line (" +
                      std::string(simdjson::error_message(e)) + ")");
  }
  std::string_view kind_text;
  {
    // Writers put `kind` first, so this lookup is one comparison; readers must not rely on it.
    od::value k;
    if (auto e = obj.find_field_unordered("kind").get(k)) {
      if (e == simdjson::NO_SUCH_FIELD) throw RecordError("record has no `kind` field");
      throw RecordError(json_error(e));
    }
    kind_text = str(k, "kind");
    if (obj.reset().error()) throw RecordError("invalid JSON");
  }
  Kind kind = parse_kind(kind_text);

  // Every record kind's fields land here; unknown fields are skipped (spec §1.1).
  RunMeta meta;
  bool have_schema = false, have_entrypoint = false, have_profile = false;
  std::string schema_text;
  TensorRecord t;
  OperationRecord o;
  GradientRecord g;
  ValueRecord v;
  EdgeTimingRecord et;
  EndRecord end;
  std::optional<std::string_view> event_id, dtype, device, op, root, key, state, from, to;
  std::optional<bool> contiguous, requires_grad;
  std::optional<double> vmin, vmax, vabs;
  std::optional<std::uint64_t> duration;
  bool have_shape = false;
  unsigned end_fields = 0;
  shape_.clear();

  for (auto field : obj) {
    std::string_view name;
    if (field.unescaped_key().get(name)) throw RecordError("invalid JSON (bad key)");
    od::value val;
    if (auto e = field.value().get(val)) throw RecordError(json_error(e));
    if (name == "kind") continue;
    if (name == "event_id") {
      event_id = str(val, name);
      continue;
    }
    switch (kind) {
      case Kind::meta:
        if (name == "schema") {
          schema_text = std::string(str(val, name));
          have_schema = true;
        } else if (name == "entrypoint") {
          meta.entrypoint = std::string(str(val, name));
          have_entrypoint = true;
        } else if (name == "profile") {
          meta.profile = std::string(str(val, name));
          have_profile = true;
        } else if (name == "cargo_features") {
          if (!is_null(val)) meta.cargo_features = strings(val, name);
        } else if (name == "cfg") {
          if (!is_null(val)) meta.cfg = strings(val, name);
        } else if (name == "analysis_id") {
          if (auto s = opt_str(val, name)) meta.analysis_id = std::string(*s);
        } else if (name == "build_id") {
          if (auto s = opt_str(val, name)) meta.build_id = std::string(*s);
        } else if (name == "phase") {
          if (auto s = opt_str(val, name)) meta.phase = std::string(*s);
        }
        break;
      case Kind::operation:
        if (name == "op") {
          op = str(val, name);
        } else if (name == "static_id") {
          o.static_id = opt_str(val, name);
        } else if (name == "duration_ns") {
          o.duration_ns = opt_u64(val, name);
        } else if (name == "step") {
          o.step = opt_u64(val, name);
        } else if (name == "inputs") {
          if (!is_null(val)) check_strings(val, name);
        } else if (name == "start_ns") {
          o.start_ns = opt_u64(val, name);
        } else if (name == "thread") {
          o.thread = opt_u64(val, name);
        } else if (name == "parent") {
          o.parent = opt_str(val, name);
        } else if (name == "output") {
          o.output = opt_str(val, name);
        } else if (name == "source") {
          o.source = opt_str(val, name);
        }
        break;
      case Kind::edge_timing:
        if (name == "from_static_id") {
          from = str(val, name);
        } else if (name == "to_static_id") {
          to = str(val, name);
        } else if (name == "duration_ns") {
          duration = u64(val, name);
        } else if (name == "step") {
          et.step = opt_u64(val, name);
        } else if (name == "at_ns") {
          et.at_ns = opt_u64(val, name);
        } else if (name == "thread") {
          et.thread = opt_u64(val, name);
        }
        break;
      case Kind::tensor:
        if (name == "static_id") {
          t.static_id = opt_str(val, name);
        } else if (name == "source") {
          t.source = opt_str(val, name);
        } else if (name == "step") {
          t.step = opt_u64(val, name);
        } else if (name == "shape") {
          each_in_array(val, name, "an array of unsigned integers",
                        [&](od::value e) { shape_.push_back(u64(e, name)); });
          have_shape = true;
        } else if (name == "dtype") {
          dtype = str(val, name);
        } else if (name == "device") {
          device = str(val, name);
        } else if (name == "contiguous") {
          contiguous = boolean(val, name);
        } else if (name == "requires_grad") {
          requires_grad = boolean(val, name);
        } else if (name == "storage_id") {
          (void)opt_str(val, name);
        }
        break;
      case Kind::gradient:
        if (name == "root") {
          root = str(val, name);
        } else if (name == "key") {
          key = str(val, name);
        } else if (name == "state") {
          state = str(val, name);
        } else if (name == "step") {
          g.step = opt_u64(val, name);
        } else if (name == "norm") {
          if (!is_null(val)) g.norm = f64(val, name);
        }
        break;
      case Kind::value:
        if (name == "static_id") {
          v.static_id = opt_str(val, name);
        } else if (name == "source") {
          v.source = opt_str(val, name);
        } else if (name == "step") {
          v.step = opt_u64(val, name);
        } else if (name == "min") {
          vmin = f64(val, name);
        } else if (name == "max") {
          vmax = f64(val, name);
        } else if (name == "abs_max") {
          vabs = f64(val, name);
        } else if (name == "nonfinite_count") {
          v.nonfinite_count = opt_u64(val, name).value_or(0);
        } else if (name == "saturated_count") {
          v.saturated_count = opt_u64(val, name).value_or(0);
        }
        break;
      case Kind::end: {
        static constexpr std::pair<std::string_view, std::uint64_t EndRecord::*> kEnd[] = {
            {"operations", &EndRecord::operations},
            {"edge_timings", &EndRecord::edge_timings},
            {"dropped", &EndRecord::dropped},
            {"errors", &EndRecord::errors},
            {"open_operations", &EndRecord::open_operations},
            {"threads", &EndRecord::threads},
            {"duration_ns", &EndRecord::duration_ns}};
        for (unsigned i = 0; i < std::size(kEnd); ++i) {
          if (name == kEnd[i].first) {
            end.*kEnd[i].second = u64(val, name);
            end_fields |= 1u << i;
          }
        }
        break;
      }
    }
  }
  // One object per line: anything after it (`{…} {…}`) is not JSONL.
  if (!doc.current_location().error()) {
    throw RecordError("trailing content after the JSON object (one record per line)");
  }

  auto need_id = [&](std::string_view k) {
    if (!event_id) missing(k, "event_id", "string");
    return *event_id;
  };
  switch (kind) {
    case Kind::meta: {
      if (!have_schema) missing("meta", "schema", "string");
      auto schema = parse_schema(schema_text);
      if (!schema) {
        throw RecordError("unsupported schema `" + schema_text +
                          "` (expected candle-graph/runtime/1, /2, /3 or /4)");
      }
      if (!have_entrypoint) missing("meta", "entrypoint", "string");
      if (!have_profile) missing("meta", "profile", "string");
      meta.schema = *schema;
      validator.meta(std::move(meta), first_record);
      break;
    }
    case Kind::operation:
      o.event_id = need_id("operation");
      if (!op) missing("operation", "op", "string");
      o.op = *op;
      validator.operation(o);
      break;
    case Kind::edge_timing:
      et.event_id = need_id("edge_timing");
      if (!from) missing("edge_timing", "from_static_id", "string");
      if (!to) missing("edge_timing", "to_static_id", "string");
      if (!duration) missing("edge_timing", "duration_ns", "unsigned integer");
      et.from_static_id = *from;
      et.to_static_id = *to;
      et.duration_ns = *duration;
      validator.edge_timing(et);
      break;
    case Kind::tensor:
      t.event_id = need_id("tensor");
      if (!have_shape) missing("tensor", "shape", "array of unsigned integers");
      if (!dtype) missing("tensor", "dtype", "string");
      if (!device) missing("tensor", "device", "string");
      if (!contiguous) missing("tensor", "contiguous", "bool");
      if (!requires_grad) missing("tensor", "requires_grad", "bool");
      t.shape = shape_;
      t.dtype = *dtype;
      t.device = *device;
      t.contiguous = *contiguous;
      t.requires_grad = *requires_grad;
      validator.tensor(t);
      break;
    case Kind::gradient: {
      g.event_id = need_id("gradient");
      if (!root) missing("gradient", "root", "string");
      if (!key) missing("gradient", "key", "string");
      if (!state) missing("gradient", "state", "present, missing, zero or non_finite");
      auto s = parse_gradient_state(*state);
      if (!s) {
        throw RecordError("gradient state `" + std::string(*state) +
                          "` is not one of present, missing, zero, non_finite");
      }
      g.root = *root;
      g.key = *key;
      g.state = *s;
      validator.gradient(g);
      break;
    }
    case Kind::value:
      v.event_id = need_id("value");
      if (!vmin) missing("value", "min", "number");
      if (!vmax) missing("value", "max", "number");
      if (!vabs) missing("value", "abs_max", "number");
      v.min = *vmin;
      v.max = *vmax;
      v.abs_max = *vabs;
      validator.value(v);
      break;
    case Kind::end:
      // operations and edge_timings are what the check needs; the rest is informational.
      if (!(end_fields & 1u)) missing("end", "operations", "unsigned integer");
      if (!(end_fields & 2u)) missing("end", "edge_timings", "unsigned integer");
      validator.end(end);
      break;
  }
}

std::string_view JsonlImporter::event_id_of(std::string_view line, std::size_t capacity) {
  od::document doc;
  if (parser_.iterate(line.data(), line.size(), capacity).get(doc)) return {};
  od::object obj;
  if (doc.get_object().get(obj)) return {};
  std::string_view id;
  if (obj.find_field_unordered("event_id").get_string().get(id)) return {};
  return id;
}

}  // namespace cg::runtime
