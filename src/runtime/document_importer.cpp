#include "runtime/document_importer.hpp"

#include <string>
#include <vector>

namespace cg::runtime {
namespace {

namespace dom = simdjson::dom;

class Fields {
 public:
  Fields(dom::object o, std::string where) : o_(o), where_(std::move(where)) {}

  std::optional<dom::element> get(const char* k) const {
    dom::element e;
    if (o_[k].get(e) || e.is_null()) return std::nullopt;
    return e;
  }
  [[noreturn]] void fail(const char* k, const char* expected) const {
    throw RecordError(where_ + ": field `" + k + "`: expected " + expected);
  }
  std::string_view str(const char* k) const {
    auto s = opt_str(k);
    if (!s) fail(k, "a string (required)");
    return *s;
  }
  std::optional<std::string_view> opt_str(const char* k) const {
    auto e = get(k);
    if (!e) return std::nullopt;
    std::string_view s;
    if (e->get_string().get(s)) fail(k, "a string");
    return s;
  }
  std::optional<std::uint64_t> opt_u64(const char* k) const {
    auto e = get(k);
    if (!e) return std::nullopt;
    std::uint64_t n = 0;
    if (e->get_uint64().get(n)) fail(k, "an unsigned integer");
    return n;
  }
  std::uint64_t u64(const char* k) const {
    auto n = opt_u64(k);
    if (!n) fail(k, "an unsigned integer (required)");
    return *n;
  }
  std::optional<double> opt_f64(const char* k) const {
    auto e = get(k);
    if (!e) return std::nullopt;
    double d = 0;
    if (e->get_double().get(d)) fail(k, "a number");
    return d;
  }
  double f64(const char* k) const {
    auto d = opt_f64(k);
    if (!d) fail(k, "a number (required)");
    return *d;
  }
  bool boolean(const char* k) const {
    auto e = get(k);
    bool b = false;
    if (!e || e->get_bool().get(b)) fail(k, "true or false (required)");
    return b;
  }
  std::vector<std::string> strings(const char* k) const {
    std::vector<std::string> out;
    auto e = get(k);
    if (!e) return out;
    dom::array a;
    if (e->get_array().get(a)) fail(k, "an array of strings");
    for (dom::element x : a) {
      std::string_view s;
      if (x.get_string().get(s)) fail(k, "an array of strings");
      out.emplace_back(s);
    }
    return out;
  }
  const std::string& where() const { return where_; }

 private:
  dom::object o_;
  std::string where_;
};

template <typename F>
void each_record(dom::object top, const char* array, F&& f) {
  dom::element e;
  if (top[array].get(e) || e.is_null()) return;  // every array defaults to [] (§1.2)
  dom::array a;
  if (e.get_array().get(a)) throw RecordError(std::string("`") + array + "`: expected an array");
  std::size_t i = 0;
  for (dom::element x : a) {
    std::string where = std::string(array) + "[" + std::to_string(i++) + "]";
    dom::object o;
    if (x.get_object().get(o)) throw RecordError(where + ": expected an object");
    f(Fields(o, where));
  }
}

}  // namespace

void import_document(dom::element root, TraceValidator& validator) {
  dom::object top;
  if (root.get_object().get(top)) throw RecordError("expected a JSON object");
  Fields doc(top, "document");
  auto schema_text = doc.str("schema");
  auto schema = parse_schema(schema_text);
  if (!schema) {
    throw RecordError("unsupported schema `" + std::string(schema_text) +
                      "` (expected candle-graph/runtime/1, /2, /3 or /4)");
  }
  if (*schema == Schema::v4) {
    throw RecordError("runtime/4 exists only as JSONL (docs/runtime-4.md); this is a document");
  }
  dom::object run;
  if (top["run"].get_object().get(run)) {
    throw RecordError("document is missing `run` (an object with entrypoint and profile)");
  }
  Fields r(run, "run");
  RunMeta meta;
  meta.schema = *schema;
  meta.entrypoint = std::string(r.str("entrypoint"));
  meta.profile = std::string(r.str("profile"));
  meta.cargo_features = r.strings("cargo_features");
  meta.cfg = r.strings("cfg");
  if (auto s = r.opt_str("analysis_id")) meta.analysis_id = std::string(*s);
  if (auto s = r.opt_str("build_id")) meta.build_id = std::string(*s);
  if (auto s = r.opt_str("phase")) meta.phase = std::string(*s);
  validator.meta(std::move(meta), true);

  // Each record's errors are prefixed with where it is; the validator's own messages too.
  auto guarded = [](const Fields& f, auto&& body) {
    try {
      body();
    } catch (const RecordError& e) {
      std::string msg = e.what();
      if (msg.rfind(f.where(), 0) == 0) throw;
      throw RecordError(f.where() + ": " + msg);
    }
  };
  std::vector<std::uint64_t> shape;
  each_record(top, "tensors", [&](const Fields& f) {
    guarded(f, [&] {
      TensorRecord t;
      t.event_id = f.str("event_id");
      t.static_id = f.opt_str("static_id");
      t.source = f.opt_str("source");
      t.step = f.opt_u64("step");
      shape.clear();
      auto e = f.get("shape");
      dom::array a;
      if (!e || e->get_array().get(a)) f.fail("shape", "an array of unsigned integers");
      for (dom::element x : a) {
        std::uint64_t n = 0;
        if (x.get_uint64().get(n)) f.fail("shape", "an array of unsigned integers");
        shape.push_back(n);
      }
      t.shape = shape;
      t.dtype = f.str("dtype");
      t.device = f.str("device");
      t.contiguous = f.boolean("contiguous");
      t.requires_grad = f.boolean("requires_grad");
      validator.tensor(t);
    });
  });
  each_record(top, "operations", [&](const Fields& f) {
    guarded(f, [&] {
      OperationRecord o;
      o.event_id = f.str("event_id");
      o.op = f.str("op");
      o.static_id = f.opt_str("static_id");
      o.source = f.opt_str("source");
      o.output = f.opt_str("output");
      o.step = f.opt_u64("step");
      o.duration_ns = f.opt_u64("duration_ns");
      (void)f.strings("inputs");
      validator.operation(o);
    });
  });
  each_record(top, "gradients", [&](const Fields& f) {
    guarded(f, [&] {
      GradientRecord g;
      g.event_id = f.str("event_id");
      g.root = f.str("root");
      g.key = f.str("key");
      auto state = f.str("state");
      auto s = parse_gradient_state(state);
      if (!s) f.fail("state", "present, missing, zero or non_finite");
      g.state = *s;
      g.step = f.opt_u64("step");
      g.norm = f.opt_f64("norm");
      validator.gradient(g);
    });
  });
  each_record(top, "values", [&](const Fields& f) {
    guarded(f, [&] {
      ValueRecord v;
      v.event_id = f.str("event_id");
      v.static_id = f.opt_str("static_id");
      v.source = f.opt_str("source");
      v.step = f.opt_u64("step");
      v.min = f.f64("min");
      v.max = f.f64("max");
      v.abs_max = f.f64("abs_max");
      v.nonfinite_count = f.opt_u64("nonfinite_count").value_or(0);
      v.saturated_count = f.opt_u64("saturated_count").value_or(0);
      validator.value(v);
    });
  });
  each_record(top, "edge_timings", [&](const Fields& f) {
    guarded(f, [&] {
      EdgeTimingRecord et;
      et.event_id = f.str("event_id");
      et.from_static_id = f.str("from_static_id");
      et.to_static_id = f.str("to_static_id");
      et.duration_ns = f.u64("duration_ns");
      et.step = f.opt_u64("step");
      validator.edge_timing(et);
    });
  });
}

}  // namespace cg::runtime
