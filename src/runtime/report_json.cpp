#include "runtime/report_json.hpp"

namespace cg::runtime {
namespace {

enum class RowKind { operation, owner, scope };

void write_rows(JsonWriter& w, const std::vector<ProfileRow>& rows, std::size_t limit,
                RowKind kind) {
  w.begin_array();
  std::size_t n = 0;
  for (const auto& r : rows) {
    if (limit && n++ >= limit) break;
    w.begin_object();
    if (kind == RowKind::operation) {
      w.field("id", r.id).field("op", r.op);
    } else if (kind == RowKind::owner) {
      w.field("module", r.id);
    } else {
      w.field("path", r.id).field("module_id", r.module);
      w.key("instance");
      if (r.instance) {
        w.value(*r.instance);
      } else {
        w.null();
      }
    }
    w.field("calls", r.timing.samples);
    w.field("self_ns", r.self_ns).field("total_ns", r.timing.total_ns);
    w.key("timing");
    if (r.sums_only) {
      // An owner-type roll-up has sums only: its distribution is absent, not zero.
      w.begin_object().field("samples", r.timing.samples).field("total_ns", r.timing.total_ns);
      for (const char* k : {"mean_ns", "min_ns", "max_ns", "p50_ns", "p95_ns"}) {
        w.key(k);
        w.null();
      }
      w.end_object();
    } else {
      write_timing(w, r.timing);
    }
    w.field("share_of_step", r.share_of_step).field("total_share", r.total_share);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

void write_timing(JsonWriter& w, const TimingRecord& t) {
  w.begin_object();
  w.field("samples", t.samples).field("total_ns", t.total_ns).field("mean_ns", t.mean_ns);
  w.field("min_ns", t.min_ns).field("max_ns", t.max_ns);
  w.field("p50_ns", t.p50_ns).field("p95_ns", t.p95_ns);
  w.end_object();
}

void write_profile_report(JsonWriter& w, const ProfileReport& report, std::size_t limit) {
  w.begin_object();
  w.field("step_time_ns", report.step_time_ns).field("steps", report.steps);
  w.key("wall_ns_per_step");
  if (report.steps) {
    w.value(report.step_time_ns / report.steps);
  } else {
    w.null();
  }
  w.key("thread_busy_ns").begin_array();
  for (auto t : report.thread_busy_ns)
    w.value(t);
  w.end_array();
  w.field("host_side", report.host_side);
  if (report.host_side && (report.has_module_scopes || !report.thread_busy_ns.empty())) {
    w.field(
        "note",
        "timings are host-side: the traces have no device_sync, so GPU work is timed at launch");
  }
  w.field("total_operations", static_cast<std::uint64_t>(report.operations.size()));
  w.key("operations");
  write_rows(w, report.operations, limit, RowKind::operation);
  w.key("modules");
  write_rows(w, report.modules, 0, RowKind::owner);
  w.field("total_module_scopes", static_cast<std::uint64_t>(report.module_scopes.size()));
  w.key("module_scopes");
  write_rows(w, report.module_scopes, limit, RowKind::scope);
  w.key("module_families");
  write_rows(w, report.module_families, 0, RowKind::scope);
  w.end_object();
}

void write_trace_info(JsonWriter& w, const TraceInfo& info) {
  w.begin_object();
  w.field("path", info.path);
  w.field("form", info.form == TraceForm::document ? "document" : "jsonl");
  w.field("schema", schema_name(info.meta.schema));
  w.field("entrypoint", info.meta.entrypoint).field("profile", info.meta.profile);
  auto opt = [&](const char* k, const std::optional<std::string>& v) {
    w.key(k);
    if (v) {
      w.value(*v);
    } else {
      w.null();
    }
  };
  opt("phase", info.meta.phase);
  opt("analysis_id", info.meta.analysis_id);
  opt("build_id", info.meta.build_id);
  w.field("bytes", info.bytes).field("lines", info.lines);
  w.field("tensors", info.tensors).field("operations", info.operations);
  w.field("gradients", info.gradients).field("values", info.values);
  w.field("edge_timings", info.edge_timings).field("modules", info.modules);
  w.field("device_sync", info.meta.device_sync);
  w.key("end");
  if (info.end) {
    w.begin_object();
    w.field("operations", info.end->operations).field("edge_timings", info.end->edge_timings);
    w.field("dropped", info.end->dropped).field("errors", info.end->errors);
    w.field("open_operations", info.end->open_operations).field("threads", info.end->threads);
    w.field("duration_ns", info.end->duration_ns);
    w.field("modules", info.end->modules).field("open_modules", info.end->open_modules);
    w.end_object();
  } else {
    w.null();
  }
  w.field("truncated", info.truncated).field("end_counts_disagree", info.end_counts_disagree);
  w.field("skipped_lines", info.skipped_lines);
  w.key("skipped_examples").begin_array();
  for (const auto& s : info.skipped_examples) {
    w.begin_object().field("line", s.line).field("reason", s.reason).end_object();
  }
  w.end_array();
  w.field("duplicate_event_ids", info.duplicate_event_ids);
  w.field("unknown_kind_lines", info.unknown_kind_lines);
  w.field("module_scopes_out_of_order", info.module_scopes_out_of_order);
  w.field("module_parents_unresolved", info.module_parents_unresolved);
  w.end_object();
}

}  // namespace cg::runtime
