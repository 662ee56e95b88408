// The three renderings of a comparison: text for a terminal, markdown for a pull-request comment,
// JSON (candle-graph/compare/1, docs/compare.md) for scripts. All are deterministic.
#include <cmath>
#include <cstdio>
#include <string>

#include "compare/compare.hpp"
#include "util/json_writer.hpp"
#include "util/text.hpp"

namespace cg::compare {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string duration(double ns) {
  if (ns >= 1e9) return fixed(ns / 1e9, 3) + " s";
  if (ns >= 1e6) return fixed(ns / 1e6, 3) + " ms";
  if (ns >= 1e3) return fixed(ns / 1e3, 3) + " us";
  return fixed(ns, 0) + " ns";
}

std::string percent(std::optional<double> ratio) {
  if (!ratio) return "-";
  if (!std::isfinite(*ratio)) return "+inf%";
  const double pct = (*ratio - 1.0) * 100.0;
  return (pct >= 0 ? "+" : "") + fixed(pct, 1) + "%";
}

std::string interval(const Row& r) {
  if (!r.ci_low || !r.ci_high) return "-";
  return "[" + percent(r.ci_low) + ", " + percent(r.ci_high) + "]";
}

std::string verdict_text(Verdict v) {
  switch (v) {
    case Verdict::slower:
      return "slower";
    case Verdict::faster:
      return "faster";
    case Verdict::no_change:
      return "no change";
    case Verdict::too_few_samples:
      return "too few samples";
    case Verdict::only_in_base:
      return "only in base";
    case Verdict::only_in_candidate:
      return "only in candidate";
    case Verdict::higher:
      return "higher";
    case Verdict::lower:
      return "lower";
    case Verdict::became_non_finite:
      return "became non-finite";
  }
  return "no change";
}

std::string general(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Time rows: a duration; statistics rows: the figure, and how many samples held NaN/Inf.
std::string side_median(const Row& row, const std::optional<SideFigures>& s) {
  if (!s) return "-";
  if (!is_stats(row.kind)) return duration(s->median_ns);
  std::string out = s->units ? general(s->median_ns) : "?";
  if (s->non_finite_samples) out += " (" + std::to_string(s->non_finite_samples) + " NaN/Inf)";
  return out;
}

bool changed(Verdict v) {
  return v == Verdict::slower || v == Verdict::faster || v == Verdict::higher ||
         v == Verdict::lower || v == Verdict::became_non_finite;
}

const char* unit_of(const std::vector<RunInfo>& runs) {
  return runs.size() > 1 ? "runs" : "steps";
}

struct Counts {
  std::size_t by[kVerdicts] = {};
  std::size_t listed = 0, left_out = 0;
  std::size_t stats_rows = 0;
};

Counts counts(const Report& r, std::size_t limit) {
  Counts c;
  for (const auto& row : r.rows) {
    ++c.by[static_cast<int>(row.verdict)];
    if (is_stats(row.kind)) ++c.stats_rows;
  }
  c.listed = limit == 0 ? r.rows.size() : std::min(limit, r.rows.size());
  c.left_out = r.rows.size() - c.listed;
  return c;
}

std::string run_list(const std::vector<RunInfo>& runs) {
  std::string out;
  for (const auto& run : runs)
    out += (out.empty() ? "" : ", ") + run.path;
  return out;
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string settings_line(const Report& r) {
  const Options& o = r.options;
  return fixed(o.confidence * 100.0,
               o.confidence * 100.0 == std::floor(o.confidence * 100.0) ? 0 : 2) +
         "% bootstrap interval of the ratio of medians (" + std::to_string(o.resamples) +
         " resamples, seed " + std::to_string(o.seed) + "; base resamples " + unit_of(r.base_runs) +
         ", candidate " + unit_of(r.candidate_runs) + "); min change " +
         fixed(o.min_change_pct, 1) + "%";
}

// Notes every format carries: mismatches allowed, lenient reads, records that have no row.
std::vector<std::string> notes(const Report& r) {
  std::vector<std::string> out;
  for (const auto& m : r.mismatches)
    out.push_back("mismatch allowed: meta." + m.field + " is " + m.first_value + " in " +
                  m.first_path + " but " + m.other_value + " in " + m.other_path);
  for (const auto* side : {&r.base_runs, &r.candidate_runs})
    for (const auto& run : *side) {
      if (run.truncated)
        out.push_back(run.path + " is truncated (no end record): compared what was written");
      if (run.skipped_lines > 0)
        out.push_back(run.path + ": " + plural(run.skipped_lines, "bad line") + " skipped");
      if (run.untimed_operations > 0)
        out.push_back(run.path + ": " + plural(run.untimed_operations, "operation record") +
                      " without static_id or duration_ns (not compared)");
    }
  return out;
}

std::string summary_line(const Counts& c, std::size_t rows) {
  std::string s = plural(rows, "row") + ": " + std::to_string(c.by[0]) + " slower, " +
                  std::to_string(c.by[1]) + " faster, " + std::to_string(c.by[2]) + " no change, " +
                  std::to_string(c.by[3]) + " too few samples, " + std::to_string(c.by[4]) +
                  " only in base, " + std::to_string(c.by[5]) + " only in candidate";
  if (c.stats_rows > 0)
    s += "; statistics: " + std::to_string(c.by[6]) + " higher, " + std::to_string(c.by[7]) +
         " lower, " + std::to_string(c.by[8]) + " became non-finite";
  if (c.left_out > 0)
    s += "; " + std::to_string(c.left_out) + " more left out (--limit 0 lists all)";
  return s;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string md_escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (std::string_view("\\`*_[]<>|#").find(ch) != std::string_view::npos) out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20)
      out += ' ';
    else
      out += ch;
  }
  return out;
}

void write_side(JsonWriter& w, const char* name, const Row& row,
                const std::optional<SideFigures>& s) {
  w.key(name);
  if (!s) {
    w.null();
    return;
  }
  w.begin_object();
  if (!is_stats(row.kind)) {
    w.field("median_ns", s->median_ns);
  } else {
    w.key("median");
    s->units ? w.value(s->median_ns) : w.null();
  }
  w.field("units", s->units).field("observations", s->observations).field("runs", s->runs);
  if (is_stats(row.kind)) w.field("non_finite_samples", s->non_finite_samples);
  w.end_object();
}

void write_optional(JsonWriter& w, const char* name, std::optional<double> v) {
  w.key(name);
  if (v)
    w.value(*v);
  else
    w.null();
}

void write_runs(JsonWriter& w, const char* name, const std::vector<RunInfo>& runs) {
  w.key(name).begin_object().field("unit", unit_of(runs)).key("runs").begin_array();
  for (const auto& run : runs) {
    w.begin_object().field("path", run.path).field("schema", run.schema);
    w.field("entrypoint", run.entrypoint);
    w.key("analysis_id");
    run.analysis_id ? w.value(*run.analysis_id) : w.null();
    w.key("phase");
    run.phase ? w.value(*run.phase) : w.null();
    w.field("operations", run.operations).field("modules", run.modules).field("stats", run.stats);
    w.field("untimed_operations", run.untimed_operations);
    w.field("skipped_lines", run.skipped_lines).field("truncated", run.truncated);
    w.end_object();
  }
  w.end_array().end_object();
}

}  // namespace

std::string render_text(const Report& r, std::size_t limit) {
  const Counts c = counts(r, limit);
  std::string out = "compare: base " + plural(r.base_runs.size(), "run") + " (" +
                    run_list(r.base_runs) + "), candidate " +
                    plural(r.candidate_runs.size(), "run") + " (" + run_list(r.candidate_runs) +
                    ")\n" + settings_line(r) + "\n";
  for (const auto& n : notes(r))
    out += "note: " + n + "\n";
  std::size_t id_width = 24;  // the header's width
  for (std::size_t i = 0; i < c.listed; ++i)
    id_width = std::max(id_width, std::min<std::size_t>(shown_text(r.rows[i].id, 80).size(), 80));
  out += "\n" + pad("kind", 10) + pad("module path / static id", id_width + 2) + pad("base", 13) +
         pad("candidate", 13) + pad("change", 9) + pad("interval", 20) + "verdict\n";
  for (std::size_t i = 0; i < c.listed; ++i) {
    const Row& row = r.rows[i];
    out += pad(row_kind_name(row.kind), 10) + pad(shown_text(row.id, 80), id_width + 2) +
           pad(side_median(row, row.base), 13) + pad(side_median(row, row.candidate), 13) +
           pad(percent(row.ratio), 9) + pad(interval(row), 20) + verdict_text(row.verdict) + "\n";
  }
  out += "\n" + summary_line(c, r.rows.size()) + "\n";
  return out;
}

std::string render_markdown(const Report& r, std::size_t limit) {
  const Counts c = counts(r, limit);
  std::string out = "### candle-graph compare\n\n";
  out += "Base: " + plural(r.base_runs.size(), "run") +
         " · candidate: " + plural(r.candidate_runs.size(), "run") + " · " +
         md_escape(settings_line(r)) + "\n\n";
  for (const auto& n : notes(r))
    out += "> " + md_escape(n) + "\n";
  if (!notes(r).empty()) out += "\n";
  out += "| verdict | kind | module path / static id | base | candidate | change | interval |\n";
  out += "| --- | --- | --- | ---: | ---: | ---: | --- |\n";
  for (std::size_t i = 0; i < c.listed; ++i) {
    const Row& row = r.rows[i];
    const std::string v = verdict_text(row.verdict);
    out += "| " + (changed(row.verdict) ? "**" + v + "**" : v) + " | " + row_kind_name(row.kind) +
           " | " + md_escape(row.id) + " | " + side_median(row, row.base) + " | " +
           side_median(row, row.candidate) + " | " + percent(row.ratio) + " | " + interval(row) +
           " |\n";
  }
  out += "\n" + summary_line(c, r.rows.size()) + "\n";
  return out;
}

std::string render_json(const Report& r, std::size_t limit) {
  const Counts c = counts(r, limit);
  JsonWriter w(2);
  w.begin_object().field("schema", "candle-graph/compare/1");
  w.key("settings").begin_object();
  w.field("statistic",
          "median per-step time (rms, grad_norm rows: the per-step largest value); ratio = "
          "candidate / base");
  w.field("confidence", r.options.confidence).field("resamples", r.options.resamples);
  w.field("seed", r.options.seed).field("min_change_pct", r.options.min_change_pct);
  w.field("min_units", static_cast<std::uint64_t>(kMinUnits));
  w.field("lenient", r.options.lenient).field("allow_mismatch", r.options.allow_mismatch);
  w.end_object();
  write_runs(w, "base", r.base_runs);
  write_runs(w, "candidate", r.candidate_runs);
  w.key("mismatches").begin_array();
  for (const auto& m : r.mismatches)
    w.begin_object()
        .field("field", m.field)
        .field("first_path", m.first_path)
        .field("first_value", m.first_value)
        .field("other_path", m.other_path)
        .field("other_value", m.other_value)
        .end_object();
  w.end_array();
  w.key("counts").begin_object();
  w.field("rows", static_cast<std::uint64_t>(r.rows.size()));
  for (int v = 0; v < kVerdicts; ++v)
    w.field(verdict_name(static_cast<Verdict>(v)), static_cast<std::uint64_t>(c.by[v]));
  w.field("listed", static_cast<std::uint64_t>(c.listed));
  w.field("left_out", static_cast<std::uint64_t>(c.left_out));
  w.end_object();
  w.key("rows").begin_array();
  for (std::size_t i = 0; i < c.listed; ++i) {
    const Row& row = r.rows[i];
    w.begin_object().field("kind", row_kind_name(row.kind)).field("id", row.id);
    w.key("op");
    row.kind == RowKind::operation ? w.value(row.op) : w.null();
    w.field("verdict", verdict_name(row.verdict));
    write_side(w, "base", row, row.base);
    write_side(w, "candidate", row, row.candidate);
    write_optional(w, "ratio", row.ratio);
    write_optional(w, "ci_low", row.ci_low);
    write_optional(w, "ci_high", row.ci_high);
    write_optional(w, "change_pct",
                   row.ratio ? std::optional<double>(row.change_pct()) : std::nullopt);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take() + "\n";
}

}  // namespace cg::compare
