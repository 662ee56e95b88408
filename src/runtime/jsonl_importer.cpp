#include "runtime/jsonl_importer.hpp"

#include <algorithm>
#include <cstring>
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

std::string_view str(od::value& v, std::string_view field) {
  std::string_view s;
  if (v.get_string().get(s)) type_error(field, "a string");
  return s;
}

// The typed read is tried first: a failed type check leaves an On-Demand scalar unconsumed, so
// null is only tested on the rare miss.
std::optional<std::string_view> opt_str(od::value& v, std::string_view field) {
  std::string_view s;
  if (!v.get_string().get(s)) return s;
  if (is_null(v)) return std::nullopt;
  type_error(field, "a string");
}

// An unsigned integer of at most 19 digits without a leading zero, read from its token (no
// overflow is possible); anything else is left to simdjson, which also words the errors. Most
// numbers in a trace are durations, steps and timestamps: this is most of their parsing cost.
bool small_uint(od::value& v, std::uint64_t& out) {
  std::string_view t = v.raw_json_token();
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\t' || t.back() == '\r' || t.back() == '\n'))
    t.remove_suffix(1);
  if (t.empty() || t.size() > 19 || (t[0] == '0' && t.size() > 1)) return false;
  std::uint64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = n;
  return true;
}

std::uint64_t u64(od::value& v, std::string_view field) {
  std::uint64_t n = 0;
  if (small_uint(v, n)) return n;
  if (v.get_uint64().get(n)) type_error(field, "an unsigned integer");
  return n;
}

std::optional<std::uint64_t> opt_u64(od::value& v, std::string_view field) {
  std::uint64_t n = 0;
  if (small_uint(v, n) || !v.get_uint64().get(n)) return n;
  if (is_null(v)) return std::nullopt;
  type_error(field, "an unsigned integer");
}

double f64(od::value& v, std::string_view field) {
  double d = 0;
  if (v.get_double().get(d)) type_error(field, "a number");
  return d;
}

bool boolean(od::value& v, std::string_view field) {
  bool b = false;
  if (v.get_bool().get(b)) type_error(field, "true or false");
  return b;
}

template <typename F>
void each_in_array(od::value& v, std::string_view field, const char* expected, F&& f) {
  od::array a;
  if (v.get_array().get(a)) type_error(field, expected);
  for (auto element : a) {
    od::value e;
    if (element.get(e)) type_error(field, expected);
    f(e);
  }
}

std::vector<std::string> strings(od::value& v, std::string_view field) {
  std::vector<std::string> out;
  each_in_array(v, field, "an array of strings",
                [&](od::value& e) { out.emplace_back(str(e, field)); });
  return out;
}

void check_strings(od::value& v, std::string_view field) {
  each_in_array(v, field, "an array of strings", [&](od::value& e) { (void)str(e, field); });
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

// The fields of one record, `kind` excepted (it was read first); `event_id` is common to all.
template <typename F>
void each_field(od::object& obj, std::optional<std::string_view>& event_id, F&& f) {
  for (auto result : obj) {
    od::field field;
    if (auto e = std::move(result).get(field)) throw RecordError(json_error(e));
    od::value& val = field.value();
    std::string_view name;
    if (field.unescaped_key().get(name)) throw RecordError("invalid JSON (bad key)");
    if (name == "kind") continue;
    if (name == "event_id") {
      event_id = str(val, name);
      continue;
    }
    f(name, val);
  }
}

std::string_view need_id(const std::optional<std::string_view>& event_id, std::string_view kind) {
  if (!event_id) missing(kind, "event_id", "string");
  return *event_id;
}

}  // namespace

// Each kind has its own reader so a line pays only for its own record's fields. `done` checks
// that nothing follows the object on its line; it runs before the record is handed on, and
// `committing_` marks that hand-over (an error after it is the validator's, not the JSON's).
template <typename Done>
void JsonlImporter::meta(od::object& obj, TraceValidator& validator, bool first_record,
                         Done&& done) {
  RunMeta meta;
  bool have_schema = false, have_entrypoint = false, have_profile = false;
  std::string schema_text;
  std::optional<std::string_view> event_id;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
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
  });
  done();
  if (!have_schema) missing("meta", "schema", "string");
  auto schema = parse_schema(schema_text);
  if (!schema) {
    throw RecordError("unsupported schema `" + schema_text +
                      "` (expected candle-graph/runtime/1, /2, /3 or /4)");
  }
  if (!have_entrypoint) missing("meta", "entrypoint", "string");
  if (!have_profile) missing("meta", "profile", "string");
  meta.schema = *schema;
  committing_ = true;
  validator.meta(std::move(meta), first_record);
}

template <typename Done>
void JsonlImporter::operation(od::object& obj, TraceValidator& validator, Done&& done) {
  OperationRecord o;
  std::optional<std::string_view> event_id, op;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
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
  });
  done();
  o.event_id = need_id(event_id, "operation");
  if (!op) missing("operation", "op", "string");
  o.op = *op;
  committing_ = true;
  validator.operation(o);
}

template <typename Done>
void JsonlImporter::edge_timing(od::object& obj, TraceValidator& validator, Done&& done) {
  EdgeTimingRecord et;
  std::optional<std::string_view> event_id, from, to;
  std::optional<std::uint64_t> duration;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
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
  });
  done();
  et.event_id = need_id(event_id, "edge_timing");
  if (!from) missing("edge_timing", "from_static_id", "string");
  if (!to) missing("edge_timing", "to_static_id", "string");
  if (!duration) missing("edge_timing", "duration_ns", "unsigned integer");
  et.from_static_id = *from;
  et.to_static_id = *to;
  et.duration_ns = *duration;
  committing_ = true;
  validator.edge_timing(et);
}

template <typename Done>
void JsonlImporter::tensor(od::object& obj, TraceValidator& validator, Done&& done) {
  TensorRecord t;
  std::optional<std::string_view> event_id, dtype, device;
  std::optional<bool> contiguous, requires_grad;
  bool have_shape = false;
  shape_.clear();
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
    if (name == "static_id") {
      t.static_id = opt_str(val, name);
    } else if (name == "source") {
      t.source = opt_str(val, name);
    } else if (name == "step") {
      t.step = opt_u64(val, name);
    } else if (name == "shape") {
      shape_.clear();  // a repeated key: the last one counts, as for every other field
      each_in_array(val, name, "an array of unsigned integers",
                    [&](od::value& e) { shape_.push_back(u64(e, name)); });
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
  });
  done();
  t.event_id = need_id(event_id, "tensor");
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
  committing_ = true;
  validator.tensor(t);
}

template <typename Done>
void JsonlImporter::gradient(od::object& obj, TraceValidator& validator, Done&& done) {
  GradientRecord g;
  std::optional<std::string_view> event_id, root, key, state;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
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
  });
  done();
  g.event_id = need_id(event_id, "gradient");
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
  committing_ = true;
  validator.gradient(g);
}

template <typename Done>
void JsonlImporter::value(od::object& obj, TraceValidator& validator, Done&& done) {
  ValueRecord v;
  std::optional<std::string_view> event_id;
  std::optional<double> vmin, vmax, vabs;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
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
  });
  done();
  v.event_id = need_id(event_id, "value");
  if (!vmin) missing("value", "min", "number");
  if (!vmax) missing("value", "max", "number");
  if (!vabs) missing("value", "abs_max", "number");
  v.min = *vmin;
  v.max = *vmax;
  v.abs_max = *vabs;
  committing_ = true;
  validator.value(v);
}

template <typename Done>
void JsonlImporter::end(od::object& obj, TraceValidator& validator, Done&& done) {
  static constexpr std::pair<std::string_view, std::uint64_t EndRecord::*> kEnd[] = {
      {"operations", &EndRecord::operations},
      {"edge_timings", &EndRecord::edge_timings},
      {"dropped", &EndRecord::dropped},
      {"errors", &EndRecord::errors},
      {"open_operations", &EndRecord::open_operations},
      {"threads", &EndRecord::threads},
      {"duration_ns", &EndRecord::duration_ns}};
  EndRecord end;
  unsigned end_fields = 0;
  std::optional<std::string_view> event_id;
  each_field(obj, event_id, [&](std::string_view name, od::value& val) {
    for (unsigned i = 0; i < std::size(kEnd); ++i) {
      if (name == kEnd[i].first) {
        end.*kEnd[i].second = u64(val, name);
        end_fields |= 1u << i;
      }
    }
  });
  done();
  // operations and edge_timings are what the check needs; the rest is informational.
  if (!(end_fields & 1u)) missing("end", "operations", "unsigned integer");
  if (!(end_fields & 2u)) missing("end", "edge_timings", "unsigned integer");
  committing_ = true;
  validator.end(end);
}

// One object per line. `line_end` is where the line's text ends; the next token must not come
// before it, and up to that token (or `limit`, the end of the text parsed, when there is none)
// only whitespace may follow, so an object that runs on into the next line is refused too.
template <typename Doc>
void JsonlImporter::record(Doc& doc, const char* line_end, const char* limit,
                           TraceValidator& validator, bool first_record) {
  committing_ = false;
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
  auto done = [&] {
    const char* next = limit;
    const char* at = nullptr;
    if (!doc.current_location().get(at)) next = at;
    if (next < line_end) {
      throw RecordError("trailing content after the JSON object (one record per line)");
    }
    for (const char* p = line_end; p < next; ++p) {
      if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
        throw RecordError("the JSON object does not end on its line (one record per line)");
      }
    }
  };
  switch (parse_kind(kind_text)) {
    case Kind::meta:
      return meta(obj, validator, first_record, done);
    case Kind::operation:
      return operation(obj, validator, done);
    case Kind::edge_timing:
      return edge_timing(obj, validator, done);
    case Kind::tensor:
      return tensor(obj, validator, done);
    case Kind::gradient:
      return gradient(obj, validator, done);
    case Kind::value:
      return value(obj, validator, done);
    case Kind::end:
      return end(obj, validator, done);
  }
}

void JsonlImporter::parse_line(std::string_view line, std::size_t capacity,
                               TraceValidator& validator, bool first_record) {
  od::document doc;
  if (auto e = parser_.iterate(line.data(), line.size(), capacity).get(doc)) {
    throw RecordError(json_error(e));
  }
  const char* end = line.data() + line.size();
  record(doc, end, end, validator, first_record);
}

void JsonlImporter::begin_block(std::string_view text, std::size_t capacity) {
  block_ = text;
  in_block_ = false;
  // One batch for the whole block: every document's end is then known (the last one ends at the
  // block's end), and the parser is sized once, by the reader's largest block.
  std::size_t batch = std::max(capacity, text.size());
  if (batch > stream_batch_) {
    stream_parser_ = od::parser(batch);
    stream_batch_ = batch;
  }
  if (stream_parser_.iterate_many(text.data(), text.size(), stream_batch_).get(stream_)) return;
  it_ = stream_.begin();
  if (!(it_ != stream_.end()) || (*it_).error()) return;  // nothing whole, or bad (UTF-8…)
  // An unfinished object at the end is cut off the stream: the last whole one ends before it.
  std::size_t cut = std::min(stream_.truncated_bytes(), block_.size());
  block_limit_ = block_.data() + (block_.size() - cut);
  in_block_ = true;
}

bool JsonlImporter::parse_in_block(std::string_view line, TraceValidator& validator,
                                   bool first_record) {
  if (!at_line(line)) return false;
  od::document_reference doc;
  if ((*it_).get(doc)) return leave_block();
  try {
    record(doc, line.data() + line.size(), block_limit_, validator, first_record);
  } catch (const RecordError&) {
    // A JSON or shape error: the caller parses the line alone for the authoritative message.
    // After the hand-over the record was whole and the error is the validator's.
    if (!committing_) return leave_block();
    advance();
    throw;
  }
  advance();
  return true;
}

bool JsonlImporter::skip_in_block(std::string_view line) {
  if (!at_line(line)) return false;
  advance();
  return true;
}

bool JsonlImporter::at_line(std::string_view line) {
  if (!in_block_) return false;
  if (it_.current_index() != static_cast<std::size_t>(line.data() - block_.data())) {
    return leave_block();
  }
  return true;
}

void JsonlImporter::advance() {
  ++it_;
  if (!(it_ != stream_.end())) in_block_ = false;
}

bool JsonlImporter::leave_block() {
  in_block_ = false;
  return false;
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
