// Renderings of a VerifyReport: `candle-graph/checkpoint/1` JSON and the text people read.
#include <algorithm>

#include "checkpoint/verify.hpp"
#include "util/json_writer.hpp"

namespace cg::checkpoint {
namespace {

void shape_value(JsonWriter& w, const std::vector<std::uint64_t>& shape) {
  w.begin_array();
  for (auto d : shape)
    w.value(d);
  w.end_array();
}

std::string verdict_text(const VerifyReport& r) {
  if (r.will_load) return "this checkpoint will load";
  std::string s = "it will fail, because ";
  for (std::size_t i = 0; i < r.reasons.size(); ++i)
    s += (i ? "; " : "") + r.reasons[i];
  return s;
}

}  // namespace

std::string report_json(const VerifyReport& r) {
  JsonWriter w(2);
  w.begin_object();
  w.field("schema", "candle-graph/checkpoint/1");
  w.key("checkpoint").begin_object();
  w.field("path", r.checkpoint_path).field("format", r.format);
  w.field("tensors", static_cast<std::uint64_t>(r.checkpoint_tensors));
  w.field("name_only_tensors", static_cast<std::uint64_t>(r.name_only_tensors));
  w.key("shards").begin_array();
  for (const auto& s : r.shards) {
    w.begin_object().field("file", s.file).field("present", s.present);
    w.field("tensors", static_cast<std::uint64_t>(s.tensors)).end_object();
  }
  w.end_array().end_object();
  w.field("root", r.root).field("prefix", r.prefix);
  w.key("verdict").begin_object();
  w.field("will_load", r.will_load).field("text", verdict_text(r));
  w.key("reasons").begin_array();
  for (const auto& s : r.reasons)
    w.value(s);
  w.end_array().end_object();
  w.key("counts").begin_object();
  w.field("expected_parameters", static_cast<std::uint64_t>(r.expected_parameters));
  w.field("skipped_other_root", static_cast<std::uint64_t>(r.skipped_other_root));
  w.field("matched", static_cast<std::uint64_t>(r.matched.size()));
  std::uint64_t claimed = 0;
  for (const auto& m : r.matched)
    claimed += m.count;
  w.field("claimed_tensors", claimed);
  w.field("missing_certain", static_cast<std::uint64_t>(r.missing_count(Certainty::proven)));
  w.field("missing_conditional",
          static_cast<std::uint64_t>(r.missing_count(Certainty::conditional)));
  w.field("missing_unknown", static_cast<std::uint64_t>(r.missing_count(Certainty::unknown)));
  w.field("unclaimed", static_cast<std::uint64_t>(r.unclaimed.size()));
  w.field("shape_mismatches", static_cast<std::uint64_t>(r.shape_mismatches.size()));
  w.field("dtype_differences", static_cast<std::uint64_t>(r.dtype_differences.size()));
  w.field("family_mismatches", static_cast<std::uint64_t>(r.family_mismatches.size()));
  w.end_object();
  w.key("matched").begin_array();
  for (const auto& m : r.matched) {
    w.begin_object().field("id", m.id).field("key", m.key).field("template", m.is_template);
    w.field("count", static_cast<std::uint64_t>(m.count)).field("sample", m.sample).end_object();
  }
  w.end_array();
  w.key("missing").begin_array();
  for (const auto& m : r.missing) {
    w.begin_object().field("id", m.id).field("key", m.key);
    w.field("certainty", certainty_name(m.certainty)).field("reason", m.reason).end_object();
  }
  w.end_array();
  w.key("unclaimed").begin_array();
  for (const auto& u : r.unclaimed)
    w.value(u);
  w.end_array();
  w.key("shape_mismatches").begin_array();
  for (const auto& s : r.shape_mismatches) {
    w.begin_object().field("id", s.id).field("tensor", s.tensor);
    w.key("expected");
    shape_value(w, s.expected);
    w.key("actual");
    shape_value(w, s.actual);
    w.field("symbolic_shape", s.symbolic_shape).end_object();
  }
  w.end_array();
  w.key("dtype_differences").begin_array();
  for (const auto& d : r.dtype_differences) {
    w.begin_object().field("checkpoint_dtype", d.checkpoint_dtype);
    w.field("expected_dtype", d.expected_dtype).field("count", static_cast<std::uint64_t>(d.count));
    w.field("sample", d.sample).end_object();
  }
  w.end_array();
  w.key("family_mismatches").begin_array();
  for (const auto& f : r.family_mismatches) {
    w.begin_object().field("id", f.id).field("key", f.key).field("var", f.var);
    w.field("expected", f.expected).field("found", f.found).field("detail", f.detail).end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : r.notes)
    w.value(n);
  w.end_array();
  w.end_object();
  std::string out = w.take();
  out += '\n';
  return out;
}

std::string report_text(const VerifyReport& r, std::size_t per_list) {
  std::string out = r.checkpoint_path + " (" + std::to_string(r.checkpoint_tensors) +
                    " tensors) for root `" + r.root + "`" +
                    (r.prefix.empty() ? "" : " under prefix `" + r.prefix + "`") + ": " +
                    verdict_text(r) + "\n";
  std::uint64_t claimed = 0;
  for (const auto& m : r.matched)
    claimed += m.count;
  out += "  matched " + std::to_string(r.matched.size()) + " parameter(s) over " +
         std::to_string(claimed) + " tensor(s); missing " +
         std::to_string(r.missing_count(Certainty::proven)) + " certain, " +
         std::to_string(r.missing_count(Certainty::conditional)) + " conditional, " +
         std::to_string(r.missing_count(Certainty::unknown)) + " unknown; " +
         std::to_string(r.unclaimed.size()) + " unclaimed\n";
  auto list = [&](const std::string& title, std::size_t n, auto&& line) {
    if (n == 0) return;
    out += title + " (" + std::to_string(n) + "):\n";
    for (std::size_t i = 0; i < std::min(n, per_list); ++i)
      out += "  " + line(i) + "\n";
    if (n > per_list) out += "  … " + std::to_string(n - per_list) + " more\n";
  };
  list("missing", r.missing.size(), [&](std::size_t i) {
    const auto& m = r.missing[i];
    std::string s = std::string(m.certainty == Certainty::proven ? "error " : "note  ") + m.key +
                    " (" + certainty_name(m.certainty) + ")";
    return m.reason.empty() ? s : s + ": " + m.reason;
  });
  list("shape mismatches", r.shape_mismatches.size(), [&](std::size_t i) {
    const auto& s = r.shape_mismatches[i];
    return s.tensor + ": checkpoint " + shape_text(s.actual) + ", model " + shape_text(s.expected) +
           (s.symbolic_shape.empty() ? "" : " " + s.symbolic_shape);
  });
  list("family counts", r.family_mismatches.size(), [&](std::size_t i) {
    const auto& f = r.family_mismatches[i];
    return f.key + " {" + f.var + "}: " + f.detail;
  });
  list("unclaimed (the model never reads them)", r.unclaimed.size(),
       [&](std::size_t i) { return r.unclaimed[i]; });
  list("dtype differences (Candle converts at load)", r.dtype_differences.size(),
       [&](std::size_t i) {
         const auto& d = r.dtype_differences[i];
         return d.checkpoint_dtype + " → " + d.expected_dtype + ": " + std::to_string(d.count) +
                " tensor(s), e.g. " + d.sample;
       });
  list("notes", r.notes.size(), [&](std::size_t i) { return r.notes[i]; });
  return out;
}

}  // namespace cg::checkpoint
