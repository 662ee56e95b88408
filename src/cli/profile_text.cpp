#include "cli/profile_text.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "query/summary_table.hpp"

namespace cg::cli {
namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100.0);
  return buf;
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  std::string render() const {
    std::vector<std::size_t> width(header.size());
    auto measure = [&](const std::vector<std::string>& r) {
      for (std::size_t i = 0; i < r.size(); ++i)
        width[i] = std::max(width[i], display_width(r[i]));
    };
    measure(header);
    for (const auto& r : rows)
      measure(r);
    std::string out;
    auto line = [&](const std::vector<std::string>& r) {
      std::string l;
      for (std::size_t i = 0; i < r.size(); ++i) {
        std::string pad(width[i] - display_width(r[i]), ' ');
        l += i == 0 ? r[i] + pad : "  " + pad + r[i];  // first column left, numbers right
      }
      while (!l.empty() && l.back() == ' ')
        l.pop_back();
      out += l + "\n";
    };
    line(header);
    for (const auto& r : rows)
      line(r);
    return out;
  }

  static std::size_t display_width(const std::string& s) {
    std::size_t n = 0;
    for (char c : s)
      n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 code points (µ: one column)
    return n;
  }
};

std::string stat_or_dash(std::uint64_t ns, bool absent) {
  return absent ? "-" : format_duration(ns);
}

void scope_rows(Table& t, const std::vector<runtime::ProfileRow>& rows, std::size_t limit) {
  for (std::size_t i = 0; i < rows.size() && (!limit || i < limit); ++i) {
    const auto& r = rows[i];
    // The root module's path is empty: it is shown by its type.
    const std::string name = !r.id.empty()         ? r.id
                             : r.type_name.empty() ? "(root)"
                                                   : r.type_name + " (root)";
    t.rows.push_back({name, format_duration(r.self_ns), percent(r.share_of_step),
                      format_duration(r.timing.total_ns), percent(r.total_share),
                      std::to_string(r.timing.samples), stat_or_dash(r.timing.p50_ns, r.sums_only),
                      stat_or_dash(r.timing.p95_ns, r.sums_only)});
  }
}

}  // namespace

std::string format_duration(std::uint64_t ns) {
  return query::short_duration(ns);
}

std::string profile_table(const runtime::ProfileReport& report, std::size_t traces,
                          std::size_t limit) {
  std::string out = "Wall time " + format_duration(report.step_time_ns) + " over " +
                    std::to_string(traces) + (traces == 1 ? " trace" : " traces");
  if (!report.thread_busy_ns.empty()) {
    out += ", " + std::to_string(report.thread_busy_ns.size()) +
           (report.thread_busy_ns.size() == 1 ? " thread" : " threads");
  }
  if (report.steps) {
    out += "; " + std::to_string(report.steps) + " steps, " +
           format_duration(report.step_time_ns / report.steps) + " per step (all threads)";
  }
  out += "\n";
  if (report.steps && report.thread_busy_ns.size() > 1 && report.thread_busy_ns.size() <= 8) {
    out += "per step per thread:";
    for (auto t : report.thread_busy_ns)
      out += " " + format_duration(t / report.steps);
    out += "\n";
  }
  if (report.host_side && (report.has_module_scopes || !report.thread_busy_ns.empty())) {
    out += "timings are host-side (no device_sync in the trace): GPU work is timed at launch\n";
  }
  out += "Self = exclusive time (children excluded), Total = inclusive; % of wall time.\n";
  const std::vector<std::string> cols = {"Self", "%", "Total", "%", "Calls", "p50", "p95"};
  auto header = [&](const std::string& first) {
    std::vector<std::string> h{first};
    h.insert(h.end(), cols.begin(), cols.end());
    return h;
  };
  if (!report.module_scopes.empty()) {
    Table t{header("Module"), {}};
    scope_rows(t, report.module_scopes, limit);
    out += "\n" + t.render();
    if (limit && report.module_scopes.size() > limit) {
      out += "(" + std::to_string(report.module_scopes.size() - limit) + " more modules)\n";
    }
  }
  if (!report.module_families.empty()) {
    Table t{header("Family (all instances)"), {}};
    scope_rows(t, report.module_families, limit);
    out += "\n" + t.render();
  }
  if (report.module_scopes.empty() && !report.modules.empty()) {
    Table t{header("Owner type (operations)"), {}};
    scope_rows(t, report.modules, limit);
    out += "\n" + t.render();
  }
  Table ops{header("Operation"), {}};
  ops.header.insert(ops.header.begin() + 1, "Op");
  for (std::size_t i = 0; i < report.operations.size() && (!limit || i < limit); ++i) {
    const auto& r = report.operations[i];
    ops.rows.push_back({r.id, r.op, format_duration(r.self_ns), percent(r.share_of_step),
                        format_duration(r.timing.total_ns), percent(r.total_share),
                        std::to_string(r.timing.samples), format_duration(r.timing.p50_ns),
                        format_duration(r.timing.p95_ns)});
  }
  if (report.operations.empty()) {
    out += "\nNo operation timings in the trace(s).\n";
    return out;
  }
  out += "\n" + ops.render();
  if (limit && report.operations.size() > limit) {
    out += "(" + std::to_string(report.operations.size() - limit) + " more operations)\n";
  }
  return out;
}

}  // namespace cg::cli
