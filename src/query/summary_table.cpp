#include "query/summary_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "util/text.hpp"

namespace cg::query {

std::string group_thousands(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  int since = static_cast<int>(digits.size() % 3);
  if (since == 0) since = 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && since == 0) {
      out.push_back(',');
      since = 3;
    }
    out.push_back(digits[i]);
    --since;
  }
  return out;
}

std::string short_duration(std::uint64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  if (ns < 1000) {
    std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(buf, sizeof buf, "%.3g µs", v / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  }
  return buf;
}

namespace {

constexpr const char* kOverflow = "over 2^64 (overflow)";

// Display columns of UTF-8 text (the tree glyphs are 3 bytes, 1 column each).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string pad(const std::string& s, std::size_t width) {
  std::size_t w = columns(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  std::size_t w = columns(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

// The timing cells of a row: Time, Self, %, Calls (and the slowest instance of a family).
std::vector<std::string> time_cells(const SummaryRow& r) {
  if (!r.time_total_ns) return {"", "", "", ""};
  std::string share;
  if (r.self_share) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", *r.self_share * 100.0);
    share = buf;
  }
  std::string total = short_duration(*r.time_total_ns);
  if (!r.slowest.empty()) total += " (max " + r.slowest + ")";
  return {total, r.time_self_ns ? short_duration(*r.time_self_ns) : "", share,
          r.calls ? group_thousands(*r.calls) : ""};
}

// torchinfo's "(MB)": 10^6 bytes, so that a figure reads the same as torchinfo's for the same model
// (ResNet-18 at F32: 46.76).
std::string megabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

std::string render_summary_table(const std::string& title, const std::vector<SummaryRow>& rows,
                                 const SummaryTotals& totals) {
  std::vector<std::string> first;
  std::size_t w_name = std::string("Module (type)").size();
  std::size_t w_shape = std::string("Param shape").size();
  std::size_t w_params = std::string("Param #").size();
  std::size_t w_mult = 0;  // the Mult-Adds column appears only when some row has a count
  std::size_t w_out = 0;   // the Output Shape column appears only when some row has one
  for (const auto& r : rows) {
    w_mult = std::max(w_mult, columns(r.mult_adds));
    w_out = std::max(w_out, columns(r.output_shape));
  }
  if (w_mult > 0) w_mult = std::max(w_mult, std::string("Mult-Adds").size());
  if (w_out > 0) w_out = std::max(w_out, std::string("Output Shape").size());
  for (const auto& r : rows) {
    std::string cell = std::string(static_cast<std::size_t>(r.depth) * 2, ' ');
    if (r.depth > 0) cell += "└─";
    // A name is a key segment from the source: `vb.pp("\x1b[31m")` must not colour the terminal,
    // nor a newline break the table.
    cell += shown_text(r.name, 200);
    if (!r.type.empty()) cell += " (" + r.type + ")";
    if (!r.marker.empty()) cell += " [" + r.marker + "]";
    first.push_back(cell);
    w_name = std::max(w_name, columns(cell));
    w_shape = std::max(w_shape, r.shape.size());
    w_params = std::max(w_params, r.params_overflow ? std::string(kOverflow).size()
                                  : r.params        ? group_thousands(*r.params).size()
                                                    : 1);
  }
  const std::size_t w_train = std::string("Trainable").size();
  // Time columns appear only when some row was timed (summary --runtime-trace, module scopes).
  const std::vector<std::string> time_header = {"Time (total)", "Self", "%", "Calls"};
  std::vector<std::size_t> w_time;
  if (std::any_of(rows.begin(), rows.end(), [](const SummaryRow& r) { return r.time_total_ns; })) {
    for (const auto& h : time_header)
      w_time.push_back(columns(h));
    for (const auto& r : rows) {
      auto cells = time_cells(r);
      for (std::size_t i = 0; i < cells.size(); ++i)
        w_time[i] = std::max(w_time[i], columns(cells[i]));
    }
  }
  std::size_t w_times = 0;
  for (auto w : w_time)
    w_times += w + 2;
  auto time_text = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < w_time.size(); ++i)
      s += (i == 0 ? pad(cells[i], w_time[i]) : pad_left(cells[i], w_time[i])) + "  ";
    return s;
  };
  std::size_t width = w_name + 2 + (w_out ? w_out + 2 : 0) + w_shape + 2 + w_params + 2 + w_train +
                      (w_mult ? w_mult + 2 : 0) + w_times;
  std::string rule(width, '=');
  std::string out;
  out += rule + "\n" + title + "\n" + rule + "\n";
  out += pad("Module (type)", w_name) + "  " + (w_out ? pad("Output Shape", w_out) + "  " : "") +
         pad("Param shape", w_shape) + "  " + pad_left("Param #", w_params) + "  " +
         (w_mult ? pad("Mult-Adds", w_mult) + "  " : "") + time_text(time_header) + "Trainable\n";
  out += rule + "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    // A module or leaf whose count is symbolic shows "?", never a blank or a zero.
    std::string count = r.params_overflow ? std::string(kOverflow)
                        : r.params        ? group_thousands(*r.params)
                                          : (r.shape.empty() && r.type.empty() ? "" : "?");
    out += pad(first[i], w_name) + "  " + (w_out ? pad(r.output_shape, w_out) + "  " : "") +
           pad(r.shape, w_shape) + "  " + pad_left(count, w_params) + "  " +
           (w_mult ? pad(r.mult_adds, w_mult) + "  " : "") + time_text(time_cells(r)) +
           r.trainable + "\n";
  }
  out += rule + "\n";
  if (!w_time.empty()) {
    out +=
        "Time: inclusive module scope time over all calls; Self: less child module scopes; %: "
        "self share of ";
    out += totals.wall_ns ? "wall time " + short_duration(*totals.wall_ns) : "wall time (unknown)";
    out += "\n";
    if (totals.host_side) {
      out += "timings are host-side (the trace has no device_sync): GPU work is timed at launch\n";
    }
  }
  if (totals.unmatched_module_paths > 0) {
    out += std::to_string(totals.unmatched_module_paths) +
           " traced module paths match no module here (see the runtime-unmapped finding; "
           "--prefix)\n";
  }
  auto total = [](const std::optional<std::uint64_t>& v) {
    return v ? group_thousands(*v) : std::string("unknown");
  };
  // Parameters of symbolic shape, or a lower bound, make every byte figure a lower bound too.
  const bool partial = !totals.lower_bound.empty() || totals.unknown_leaves > 0;
  out += "Total params: ";
  if (totals.overflow)
    out += std::string(kOverflow);
  else
    out += (!partial || !totals.total ? "" : "at least ") + total(totals.total);
  if (totals.total_max)
    out += " to " + group_thousands(*totals.total_max) +
           " (mutually exclusive alternatives, one of each group loads)";
  if (totals.unknown_leaves > 0)
    out += " (+ " + std::to_string(totals.unknown_leaves) +
           (totals.unknown_leaves == 1 ? " parameter" : " parameters") + " of symbolic shape)";
  out += "\n";
  if (!totals.lower_bound.empty()) out += "  lower bound: " + totals.lower_bound + "\n";
  for (const auto& alt : totals.alternatives)
    out += "  alternatives: " + alt + "\n";
  out += "Trainable params: " + total(totals.trainable) + "\n";
  if (totals.total && totals.trainable && *totals.total >= *totals.trainable)
    out += "Non-trainable params: " + group_thousands(*totals.total - *totals.trainable) + "\n";
  if (totals.mult_adds_from_instances) {
    out += "Mult-adds per forward pass: " +
           std::string(totals.mult_adds_missing.empty() || totals.mult_adds == "unknown" ||
                               totals.mult_adds.starts_with("over ")
                           ? ""
                           : "at least ") +
           totals.mult_adds + "\n";
    if (!totals.mult_adds_missing.empty()) {
      std::string names;
      constexpr std::size_t kNamed = 8;
      for (std::size_t i = 0; i < totals.mult_adds_missing.size() && i < kNamed; ++i)
        names += (i ? ", " : "") + totals.mult_adds_missing[i];
      if (totals.mult_adds_missing.size() > kNamed)
        names += " and " + std::to_string(totals.mult_adds_missing.size() - kNamed) + " more";
      out +=
          "  ≥ marks a lower bound, ? an unknown: operations that may multiply have no "
          "Mult-Adds rule or no known shapes: " +
          names + "\n";
    }
  } else if (!totals.mult_adds.empty()) {
    out += "Mult-adds per forward pass (counted layers): " + totals.mult_adds + "\n";
  }
  for (const auto& d : totals.unused_dims)
    out += "  --input-shape " + d + ": no Mult-Adds term is written in `" + d + "`" +
           (totals.dims_in_use.empty() ? std::string(" (none has a symbolic dimension)")
                                       : " (they use " + totals.dims_in_use + ")") +
           "\n";
  if (totals.bytes || totals.bytes_overflow) {
    out += "Params size (MB): " + (totals.bytes_overflow
                                       ? std::string(kOverflow)
                                       : (partial ? "at least " : "") + megabytes(*totals.bytes));
    if (totals.bytes_max && !totals.bytes_overflow) out += " to " + megabytes(*totals.bytes_max);
    if (!totals.dtype.empty()) out += " at " + totals.dtype;
    out += "\n";
    // What `accelerate estimate-memory` says for Adam: weights, their gradients and two moments,
    // all at the weights' dtype (Candle's AdamW keeps its moments in the variable's dtype).
    if (totals.bytes && *totals.bytes > 0 && !totals.bytes_overflow &&
        *totals.bytes <= UINT64_MAX / 4) {
      out += "Training with AdamW (MB): " + std::string(partial ? "at least " : "") +
             megabytes(*totals.bytes * 4);
      if (totals.bytes_max && *totals.bytes_max <= UINT64_MAX / 4)
        out += " to " + megabytes(*totals.bytes_max * 4);
      out += " (weights + gradients + 2 moments; activations not counted)\n";
    }
  }
  if (!totals.activations.empty()) {
    const bool over = totals.activations.starts_with("over ");
    const char* least = totals.activation_unknown_ops > 0 && !over ? "at least " : "";
    if (totals.activations == "unknown")
      out += "Activations, one forward: unknown";
    else if (over)
      out += "Activations, one forward: " + totals.activations + " elements";
    else if (totals.activation_bytes)
      out += "Activations, one forward (MB): " + std::string(least) +
             megabytes(*totals.activation_bytes) + " at " + totals.dtype;
    else
      out += "Activations, one forward: " + std::string(least) + totals.activations +
             " elements (--input-shape makes it a size)";
    out += " (sum of the operations' output sizes)\n";
    if (totals.activation_unknown_ops > 0)
      out += "  " + std::string(totals.activations == "unknown" ? "unknown" : "lower bound") +
             ": " + group_thousands(totals.activation_unknown_ops) +
             " operation runs of the forward pass (each family member counted) have no known "
             "output shape\n";
  }
  if (!totals.shared.empty()) {
    out += "Shared weights are counted once (rows marked shared):\n";
    for (const auto& s : totals.shared)
      out += "  " + s + "\n";
  }
  out += rule + "\n";
  return out;
}

}  // namespace cg::query
