#include "query/summary_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string_view>

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

// The statistics cells of a row: Abs max, RMS, Non-finite (`summary --stats`).
std::vector<std::string> stats_cells(const SummaryRow& r) {
  auto number = [](const std::optional<double>& d) {
    if (!d) return std::string();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", *d);
    return std::string(buf);
  };
  if (!r.stats_non_finite) return {"", "", ""};
  return {number(r.stats_abs_max), number(r.stats_rms), group_thousands(*r.stats_non_finite)};
}

// torchinfo's "(MB)": 10^6 bytes, so that a figure reads the same as torchinfo's for the same model
// (ResNet-18 at F32: 46.76).
std::string megabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / 1e6);
  return buf;
}

// "a, b, c and 2 more": the first few of `v`.
std::string join_named(const std::vector<std::string>& v) {
  constexpr std::size_t kNamed = 4;
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < kNamed; ++i)
    out += (i ? ", " : "") + v[i];
  if (v.size() > kNamed) out += " and " + std::to_string(v.size() - kNamed) + " more";
  return out;
}

}  // namespace

namespace {

// One column of the table: its header, one cell per shown row, and how it is laid out.
struct Column {
  std::string header;
  std::vector<std::string> cells;
  bool right = false;  // numbers align right
  bool wraps = true;   // the cell may break over lines (names, shapes, formulas)
  std::size_t width = 0;
};

// Whether a line may break at the space at `i`: not right after a lone operator (`+`, `*`, `/`,
// `-`, `≥`), which stays with the term it applies to (`+ b*t*512`).
bool breaks_at(const std::string& s, std::size_t i) {
  if (i == 0 || s[i] != ' ') return false;
  const bool lone = i < 2 || s[i - 2] == ' ';
  if (lone && std::string_view("+*/-").find(s[i - 1]) != std::string_view::npos) return false;
  // `≥` is 3 bytes (E2 89 A5).
  if (i >= 3 && s.compare(i - 3, 3, "\u2265") == 0 && (i < 4 || s[i - 4] == ' ')) return false;
  return true;
}

// Where a cell may break: at a space (after ", ", before an operator and its term); a piece
// still wider than `width` is cut.
std::vector<std::string> wrap_cell(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  if (width == 0 || columns(text) <= width) return {text};
  std::string rest = text;
  while (columns(rest) > width) {
    // The last break point whose line fits: a line is cut after a space.
    // The last break point whose line (without the space) fits.
    std::size_t cut = std::string::npos, seen = 0;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      if (breaks_at(rest, i) && seen <= width) cut = i + 1;
      if ((static_cast<unsigned char>(rest[i]) & 0xC0) != 0x80) ++seen;
      if (seen > width) break;
    }
    if (cut == std::string::npos || cut == 0) {
      // No break point: cut at `width` columns (whole UTF-8 characters).
      std::size_t bytes = 0, cols = 0;
      while (bytes < rest.size() && cols < width) {
        ++bytes;
        while (bytes < rest.size() && (static_cast<unsigned char>(rest[bytes]) & 0xC0) == 0x80)
          ++bytes;
        ++cols;
      }
      cut = bytes;
    }
    std::string line = rest.substr(0, cut);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    lines.push_back(line);
    rest = rest.substr(cut);
    rest.erase(0, rest.find_first_not_of(' ') == std::string::npos ? rest.size()
                                                                   : rest.find_first_not_of(' '));
  }
  if (!rest.empty()) lines.push_back(rest);
  return lines;
}

// The longest piece of a cell between break points: the narrowest the column can wrap to.
std::size_t longest_word(const std::string& text) {
  std::size_t best = 0, cur = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (breaks_at(text, i)) {
      best = std::max(best, cur);
      cur = 0;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++cur;
    }
  }
  return std::max(best, cur);
}

bool unknown_everywhere(const std::vector<std::string>& cells) {
  return std::all_of(cells.begin(), cells.end(),
                     [](const std::string& c) { return c.empty() || c == "?"; });
}

}  // namespace

std::string wrap_text(const std::string& text, std::size_t width) {
  if (width == 0) return text;
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    if (columns(line) <= width) {
      out += line + (nl == std::string::npos ? "" : "\n");
      continue;
    }
    // A prose line breaks at spaces; its continuation is indented two past the line's own indent.
    std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || indent + 2 >= width / 2) indent = 0;
    std::string lead(indent + 2, ' ');
    auto pieces = wrap_cell(line, width);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (i == 0) {
        out += pieces[i] + "\n";
        continue;
      }
      std::string rest = pieces[i];
      for (const auto& p : wrap_cell(rest, width - lead.size()))
        out += lead + p + "\n";
    }
    if (nl == std::string::npos && !out.empty()) out.pop_back();
  }
  return out;
}

std::string render_summary_table(const std::string& title, const std::vector<SummaryRow>& all_rows,
                                 const SummaryTotals& totals, const TableLayout& layout) {
  // Parameter rows (a leaf under its layer: no type, no module) only when asked for.
  std::vector<SummaryRow> rows;
  std::size_t hidden_weights = 0;
  for (const auto& r : all_rows) {
    if (!layout.weights && r.depth > 0 && r.type.empty() && r.module_id.empty()) {
      ++hidden_weights;
      continue;
    }
    rows.push_back(r);
  }
  Column name{"Module (type)", {}, false, true, 0};
  Column out_shape{"Output Shape", {}, false, true, 0};
  Column shape{"Param shape", {}, false, true, 0};
  Column params{"Param #", {}, true, false, 0};
  Column mult{"Mult-Adds", {}, false, true, 0};
  Column train{"Trainable", {}, false, false, 0};
  std::vector<std::size_t> indent;  // a name cell's continuation lines start past its tree glyph
  for (const auto& r : rows) {
    std::string cell = std::string(static_cast<std::size_t>(r.depth) * 2, ' ');
    if (r.depth > 0) cell += "└─";
    // A name is a key segment from the source: `vb.pp("\x1b[31m")` must not colour the terminal,
    // nor a newline break the table.
    cell += shown_text(r.name, 200);
    if (!r.type.empty()) cell += " (" + r.type + ")";
    if (!r.marker.empty()) cell += " [" + r.marker + "]";
    name.cells.push_back(cell);
    indent.push_back(static_cast<std::size_t>(r.depth) * 2 + (r.depth > 0 ? 2 : 0));
    out_shape.cells.push_back(r.output_shape);
    shape.cells.push_back(r.shape);
    // A module or leaf whose count is symbolic shows "?", never a blank or a zero.
    params.cells.push_back(r.params_overflow ? std::string(kOverflow)
                           : r.params        ? group_thousands(*r.params)
                                             : (r.shape.empty() && r.type.empty() ? "" : "?"));
    mult.cells.push_back(r.mult_adds);
    train.cells.push_back(r.trainable);
  }
  std::vector<std::string> hidden_columns;
  std::vector<Column*> shown = {&name};
  // Output Shape, Param shape and Mult-Adds appear only when some row has one; Mult-Adds and
  // Trainable that are unknown ("?") on every row appear only with layout.all_columns.
  if (std::any_of(out_shape.cells.begin(), out_shape.cells.end(),
                  [](auto& c) { return !c.empty(); }))
    shown.push_back(&out_shape);
  if (std::any_of(shape.cells.begin(), shape.cells.end(), [](auto& c) { return !c.empty(); }))
    shown.push_back(&shape);
  shown.push_back(&params);
  const bool any_mult =
      std::any_of(mult.cells.begin(), mult.cells.end(), [](auto& c) { return !c.empty(); });
  if (any_mult && (layout.all_columns || !unknown_everywhere(mult.cells)))
    shown.push_back(&mult);
  else if (any_mult)
    hidden_columns.push_back("Mult-Adds");
  // Time columns appear only when some row was timed (summary --runtime-trace, module scopes).
  std::vector<Column> time_cols;
  if (std::any_of(rows.begin(), rows.end(), [](const SummaryRow& r) { return r.time_total_ns; })) {
    const std::vector<std::string> time_header = {"Time (total)", "Self", "%", "Calls"};
    for (std::size_t i = 0; i < time_header.size(); ++i)
      time_cols.push_back({time_header[i], {}, i > 0, false, 0});
    for (const auto& r : rows) {
      auto cells = time_cells(r);
      for (std::size_t i = 0; i < cells.size(); ++i)
        time_cols[i].cells.push_back(cells[i]);
    }
  }
  for (auto& c : time_cols)
    shown.push_back(&c);
  // Statistics columns appear only with `summary --stats` and some row recorded.
  std::vector<Column> stats_cols;
  if (std::any_of(rows.begin(), rows.end(),
                  [](const SummaryRow& r) { return r.stats_non_finite.has_value(); })) {
    const std::vector<std::string> stats_header = {"Abs max", "RMS", "Non-finite"};
    for (std::size_t i = 0; i < stats_header.size(); ++i)
      stats_cols.push_back({stats_header[i], {}, true, false, 0});
    for (const auto& r : rows) {
      auto cells = stats_cells(r);
      for (std::size_t i = 0; i < cells.size(); ++i)
        stats_cols[i].cells.push_back(cells[i]);
    }
  }
  for (auto& c : stats_cols)
    shown.push_back(&c);
  if (layout.all_columns || !unknown_everywhere(train.cells))
    shown.push_back(&train);
  else if (!rows.empty())
    hidden_columns.push_back("Trainable");

  for (auto* c : shown) {
    c->width = columns(c->header);
    for (const auto& cell : c->cells)
      c->width = std::max(c->width, columns(cell));
  }
  auto total_width = [&] {
    std::size_t w = 0;
    for (auto* c : shown)
      w += c->width;
    return w + 2 * (shown.size() - 1);
  };
  // Too wide: narrow the widest column that wraps (shapes and formulas before the module names),
  // never below its header, its longest word or 12 columns, until the table fits (or nothing
  // narrows further).
  if (layout.width > 0) {
    bool names_too = false;
    while (total_width() > layout.width) {
      Column* widest = nullptr;
      std::size_t floor_of_widest = 0;
      for (auto* c : shown) {
        if (!c->wraps || (c == &name && !names_too)) continue;
        // A short cell (an output shape, `[b, seq_len, 256]`) is not broken for a few columns.
        std::size_t floor = std::max<std::size_t>(columns(c->header), 12);
        for (std::size_t i = 0; i < c->cells.size(); ++i)
          floor = std::max(
              floor, c == &name ? longest_word(c->cells[i]) + std::min<std::size_t>(indent[i], 24)
                                : std::max(longest_word(c->cells[i]),
                                           std::min<std::size_t>(columns(c->cells[i]), 20)));
        if (c->width > floor && (!widest || c->width > widest->width)) {
          widest = c;
          floor_of_widest = floor;
        }
      }
      if (!widest && !names_too) {
        names_too = true;
        continue;
      }
      if (!widest) break;
      std::size_t over = total_width() - layout.width;
      // Narrow step by step so that two wide columns share the cut.
      std::size_t step = std::max<std::size_t>(1, std::min(over, widest->width / 8));
      widest->width = std::max(floor_of_widest, widest->width - std::min(step, widest->width));
    }
  }
  const std::string rule(total_width(), '=');
  std::string out;
  out += rule + "\n" + title + "\n" + rule + "\n";
  auto line_of = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const bool last = i + 1 == shown.size();
      std::string cell = shown[i]->right ? pad_left(cells[i], shown[i]->width)
                         : last          ? cells[i]
                                         : pad(cells[i], shown[i]->width);
      s += cell + (last ? "" : "  ");
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    return s + "\n";
  };
  {
    std::vector<std::string> header;
    for (auto* c : shown)
      header.push_back(c->header);
    out += line_of(header);
  }
  out += rule + "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::vector<std::string>> pieces;
    std::size_t lines = 1;
    for (auto* c : shown) {
      if (c == &name && columns(c->cells[r]) > c->width) {
        // A long name continues under itself, past the tree glyph.
        std::size_t lead = std::min<std::size_t>(indent[r], c->width / 2);
        auto first = wrap_cell(c->cells[r], c->width);
        std::vector<std::string> cont;
        cont.push_back(first.front());
        std::string rest;
        for (std::size_t i = 1; i < first.size(); ++i)
          rest += (i > 1 ? " " : "") + first[i];
        for (const auto& p : wrap_cell(rest, c->width - lead))
          cont.push_back(std::string(lead, ' ') + p);
        pieces.push_back(cont);
      } else {
        pieces.push_back(c->wraps ? wrap_cell(c->cells[r], c->width)
                                  : std::vector<std::string>{c->cells[r]});
      }
      lines = std::max(lines, pieces.back().size());
    }
    for (std::size_t l = 0; l < lines; ++l) {
      std::vector<std::string> cells;
      for (const auto& p : pieces)
        cells.push_back(l < p.size() ? p[l] : "");
      out += line_of(cells);
    }
  }
  out += rule + "\n";
  // The notes under the rows wrap to the width; the table's own lines are laid out to fit it.
  const std::size_t notes_from = out.size();
  if (hidden_weights > 0 || !hidden_columns.empty()) {
    std::string said;
    if (hidden_weights > 0)
      said = std::to_string(hidden_weights) + " weight row" + (hidden_weights == 1 ? "" : "s") +
             " (" + layout.weights_flag + (hidden_weights == 1 ? " shows it)" : " shows them)");
    if (!hidden_columns.empty()) {
      std::string names;
      for (const auto& n : hidden_columns)
        names += (names.empty() ? "" : " and ") + n;
      const bool one = hidden_columns.size() == 1;
      said += (said.empty() ? "" : "; ") + names + (one ? ", " : ", each ") +
              "unknown on every row (" + layout.columns_flag +
              (one ? " shows it)" : " shows them)");
    }
    out += "Not shown: " + said + "\n";
  }
  if (!time_cols.empty()) {
    out +=
        "Time: inclusive module scope time over all calls; Self: less child module scopes; %: "
        "self share of ";
    out += totals.wall_ns ? "wall time " + short_duration(*totals.wall_ns) : "wall time (unknown)";
    out += "\n";
    if (totals.host_side) {
      out += "timings are host-side (the trace has no device_sync): GPU work is timed at launch\n";
    }
  }
  if (totals.stats_records) {
    if (*totals.stats_records == 0) {
      out +=
          "--stats: the trace has no stats records (the program records none unless "
          "stats_every or stats_on_non_finite is set)\n";
    } else {
      out +=
          "Abs max, RMS: the largest over the recorded output samples (finite elements); "
          "Non-finite: NaN and Inf elements summed over them (" +
          group_thousands(*totals.stats_records) + " stats records)\n";
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
    out +=
        "Mult-adds per forward pass" +
        (totals.forward_runs.empty() ? std::string() : " (" + totals.forward_runs + ")") + ": " +
        std::string((totals.mult_adds_missing.empty() && totals.mult_adds_branches.empty()) ||
                            totals.mult_adds == "unknown" || totals.mult_adds.starts_with("over ")
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
    if (!totals.mult_adds_branches.empty())
      out +=
          "  ≥ also where the analysis cannot tell which arm of an `if`/`match` runs and the "
          "arms differ: the least is counted (" +
          join_named(totals.mult_adds_branches) + ")\n";
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
    const char* least =
        (totals.activation_unknown_ops > 0 || !totals.activation_branches.empty()) && !over
            ? "at least "
            : "";
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
    if (!totals.activation_branches.empty())
      out += "  lower bound: the least arm of an undecided `if`/`match` is counted (" +
             join_named(totals.activation_branches) + ")\n";
  }
  if (!totals.shared.empty()) {
    out += "Shared weights are counted once (rows marked shared):\n";
    for (const auto& s : totals.shared)
      out += "  " + s + "\n";
  }
  out += rule + "\n";
  return out.substr(0, notes_from) + wrap_text(out.substr(notes_from), layout.width);
}

}  // namespace cg::query
