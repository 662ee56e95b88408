#include "runtime/record_log.hpp"

#include <cstdio>

namespace cg::runtime {
namespace {

void put(std::string& out, std::string_view name, std::string_view s) {
  out += ' ';
  out += name;
  out += '=';
  out += std::to_string(s.size());  // length-prefixed: any byte may be in a string
  out += ':';
  out += s;
}

void put(std::string& out, std::string_view name, std::uint64_t n) {
  out += ' ';
  out += name;
  out += '=';
  out += std::to_string(n);
}

void put(std::string& out, std::string_view name, double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", d);
  out += ' ';
  out += name;
  out += '=';
  out += buf;
}

template <typename T>
void put(std::string& out, std::string_view name, const std::optional<T>& v) {
  if (v) {
    put(out, name, *v);
  } else {
    out += ' ';
    out += name;
    out += "=null";
  }
}

void put_strings(std::string& out, std::string_view name, const std::vector<std::string>& v) {
  put(out, name, std::uint64_t{v.size()});
  for (const auto& s : v)
    put(out, "", s);
}

}  // namespace

void RecordLog::meta(const RunMeta& m) {
  text_ += "meta";
  put(text_, "schema", schema_name(m.schema));
  put(text_, "entrypoint", m.entrypoint);
  put(text_, "profile", m.profile);
  put_strings(text_, "cargo_features", m.cargo_features);
  put_strings(text_, "cfg", m.cfg);
  put(text_, "analysis_id", m.analysis_id);
  put(text_, "build_id", m.build_id);
  put(text_, "phase", m.phase);
  put(text_, "device_sync", std::uint64_t{m.device_sync});
  put(text_, "pid", m.pid);
  put(text_, "start_unix_ns", m.start_unix_ns);
  text_ += '\n';
}

void RecordLog::tensor(const TensorRecord& t) {
  text_ += "tensor";
  put(text_, "event_id", t.event_id);
  put(text_, "static_id", t.static_id);
  put(text_, "source", t.source);
  put(text_, "step", t.step);
  put(text_, "shape", std::uint64_t{t.shape.size()});
  for (auto d : t.shape)
    put(text_, "", d);
  put(text_, "dtype", t.dtype);
  put(text_, "device", t.device);
  put(text_, "contiguous", std::uint64_t{t.contiguous});
  put(text_, "requires_grad", std::uint64_t{t.requires_grad});
  text_ += '\n';
}

void RecordLog::operation(const OperationRecord& o) {
  text_ += "operation";
  put(text_, "event_id", o.event_id);
  put(text_, "op", o.op);
  put(text_, "static_id", o.static_id);
  put(text_, "source", o.source);
  put(text_, "output", o.output);
  put(text_, "step", o.step);
  put(text_, "duration_ns", o.duration_ns);
  put(text_, "start_ns", o.start_ns);
  put(text_, "thread", o.thread);
  put(text_, "parent", o.parent);
  text_ += '\n';
}

void RecordLog::gradient(const GradientRecord& g) {
  text_ += "gradient";
  put(text_, "event_id", g.event_id);
  put(text_, "root", g.root);
  put(text_, "key", g.key);
  put(text_, "state", gradient_state_name(g.state));
  put(text_, "step", g.step);
  put(text_, "norm", g.norm);
  text_ += '\n';
}

void RecordLog::value(const ValueRecord& v) {
  text_ += "value";
  put(text_, "event_id", v.event_id);
  put(text_, "static_id", v.static_id);
  put(text_, "source", v.source);
  put(text_, "step", v.step);
  put(text_, "min", v.min);
  put(text_, "max", v.max);
  put(text_, "abs_max", v.abs_max);
  put(text_, "nonfinite_count", v.nonfinite_count);
  put(text_, "saturated_count", v.saturated_count);
  text_ += '\n';
}

void RecordLog::edge_timing(const EdgeTimingRecord& e) {
  text_ += "edge_timing";
  put(text_, "event_id", e.event_id);
  put(text_, "from_static_id", e.from_static_id);
  put(text_, "to_static_id", e.to_static_id);
  put(text_, "duration_ns", e.duration_ns);
  put(text_, "step", e.step);
  put(text_, "at_ns", e.at_ns);
  put(text_, "thread", e.thread);
  text_ += '\n';
}

void RecordLog::module_scope(const ModuleScopeRecord& m) {
  text_ += "module";
  put(text_, "event_id", m.event_id);
  put(text_, "path", m.path);
  put(text_, "step", m.step);
  put(text_, "duration_ns", m.duration_ns);
  put(text_, "start_ns", m.start_ns);
  put(text_, "thread", m.thread);
  put(text_, "parent", m.parent);
  text_ += '\n';
}

void RecordLog::stats(const StatsRecord& s) {
  text_ += "stats";
  put(text_, "event_id", s.event_id);
  put(text_, "path", s.path);
  put(text_, "of", std::string_view(s.of == StatsOf::output ? "output" : "grad"));
  put(text_, "index", s.index);
  put(text_, "reason",
      std::string_view(s.reason == StatsReason::sampled ? "sampled" : "non_finite"));
  put(text_, "step", s.step);
  put(text_, "at_ns", s.at_ns);
  put(text_, "thread", s.thread);
  put(text_, "dtype", s.dtype);
  for (auto d : s.shape)
    put(text_, "dim", d);
  put(text_, "elements", s.elements);
  put(text_, "nan", s.nan);
  put(text_, "pos_inf", s.pos_inf);
  put(text_, "neg_inf", s.neg_inf);
  put(text_, "zeros", s.zeros);
  if (s.finite) {
    put(text_, "min", s.finite->min);
    put(text_, "max", s.finite->max);
    put(text_, "mean", s.finite->mean);
    put(text_, "rms", s.finite->rms);
    put(text_, "abs_max", s.finite->abs_max);
  }
  text_ += '\n';
}

void RecordLog::end(const EndRecord& e) {
  text_ += "end";
  put(text_, "operations", e.operations);
  put(text_, "edge_timings", e.edge_timings);
  put(text_, "dropped", e.dropped);
  put(text_, "errors", e.errors);
  put(text_, "open_operations", e.open_operations);
  put(text_, "threads", e.threads);
  put(text_, "duration_ns", e.duration_ns);
  put(text_, "modules", e.modules);
  put(text_, "open_modules", e.open_modules);
  put(text_, "stats", e.stats);
  text_ += '\n';
}

}  // namespace cg::runtime
