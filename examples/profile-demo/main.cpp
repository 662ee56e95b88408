// profile-demo: times a stand-in workload under the static operation ids of a model's inference
// entrypoint and writes a candle-graph/runtime/4 trace that `candle-graph audit --runtime-trace`
// merges into the report and the HTML.
//
//   profile-demo IR_JSON CONFIG_JSON TRACE_OUT [STEPS [FORMAT]] [--stats-every N]
//                [--stats-on-non-finite] [--inject-nan PATH@STEP]
//
// IR_JSON is the output of `candle-graph check CRATE --config CONFIG_JSON --output IR_JSON`; the
// program times every operation whose `execution_phase` is "infer" (the operations of the
// inference entrypoint), in IR order, once per step. The work done under each id is NOT the
// model's: it is plain C++ matrix products, softmaxes and copies with the shapes of CONFIG_JSON
// (hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, vocab_size), a
// stand-in for a Candle run so that the demo needs no Rust toolchain and no weights.
//
// It also times every module instance of the IR's `modules` under its VarBuilder path (the
// `prefix` field, e.g. `model.layers.0.self_attn`) with module scopes, nested as the paths nest,
// so the trace has per-layer `module` lines. A family module's prefix is a template
// (`model.layers.{layer_idx}`) with `repeat` `layer_idx in 0..BOUND`; BOUND is a number or
// `cfg.NAME`, read from CONFIG_JSON (a bound that cannot be resolved leaves that family untimed,
// said on stdout). Leaf modules do stand-in work by type (Linear: a matmul; others: elementwise).
//
// Numeric health (docs/runtime-4.md, "Additions: tensor statistics"): with --stats-every N (and/or
// --stats-on-non-finite) each module scope is followed, when the session's schedule asks, by a
// `stats` record of the stand-in's output at that point (the activation buffer, computed on the
// host). --inject-nan PATH@STEP writes a NaN into that buffer when module PATH finishes at step
// STEP: it then spreads through every later module, as a real NaN does, and the first non-finite
// output is PATH's at STEP.
//
// Exit status: 0 when the trace was written, and also when the IR holds no inference operations
// (nothing to time: the message says so and no trace is written); 2 on bad arguments or input
// (unreadable or malformed JSON, a missing field); 1 when the profiler fails.
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "candle_graph/profile.hpp"

namespace {

namespace cg = candle_graph;

struct Operation {
  std::string id;
  std::string name;
  std::string function;
};

// One module instance to time: its concrete VarBuilder path and type, and its children (the
// instances whose path extends it by dotted segments, nearest first).
struct ModuleNode {
  std::string path;
  std::string type_name;
  std::vector<std::size_t> children;
};

struct Shapes {
  std::size_t hidden = 0;
  std::size_t intermediate = 0;
  std::size_t heads = 0;
  std::size_t kv_heads = 0;
  std::size_t vocab = 0;
  std::size_t seq = 16;  // prompt length of the stand-in run
};

[[noreturn]] void fail_input(const std::string& where, const std::string& message) {
  std::fprintf(stderr, "profile-demo: %s: %s\n", where.c_str(), message.c_str());
  std::exit(2);
}

// "function:model%3A%3ATinyLlama%3A%3Aforward:" -> "model::TinyLlama::forward".
std::string entrypoint_name(std::string_view function_id) {
  if (function_id.starts_with("function:")) function_id.remove_prefix(9);
  if (function_id.ends_with(":")) function_id.remove_suffix(1);
  std::string out;
  for (std::size_t i = 0; i < function_id.size(); ++i) {
    unsigned value = 0;
    if (function_id[i] == '%' && i + 2 < function_id.size() &&
        std::from_chars(function_id.data() + i + 1, function_id.data() + i + 3, value, 16).ptr ==
            function_id.data() + i + 3) {
      out.push_back(static_cast<char>(value));
      i += 2;
    } else {
      out.push_back(function_id[i]);
    }
  }
  return out;
}

std::vector<Operation> inference_operations(const std::string& path, std::string& analysis_id) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.load(path).get(doc))
    fail_input(path, std::string("not a readable JSON file: ") + simdjson::error_message(error));
  simdjson::dom::array operations;
  if (doc["operations"].get(operations))
    fail_input(path, "expected a model IR with an `operations` array (candle-graph check)");
  std::string_view id_text;
  if (!doc["analysis_id"].get(id_text)) analysis_id = std::string(id_text);
  std::vector<Operation> out;
  std::size_t index = 0;
  for (simdjson::dom::element op : operations) {
    const std::string where = path + ": operations[" + std::to_string(index++) + "]";
    std::string_view phase;
    if (op["execution_phase"].get(phase)) continue;  // null: not on an entrypoint's path
    if (phase != "infer" && phase != "both") continue;
    std::string_view id, name, function;
    if (op["id"].get(id) || op["name"].get(name) || op["function"].get(function))
      fail_input(where, "expected string fields `id`, `name` and `function`");
    out.push_back({std::string(id), std::string(name), std::string(function)});
  }
  // One entrypoint per trace: keep the function of the first inference operation.
  if (!out.empty()) {
    const std::string first = out.front().function;
    std::erase_if(out, [&](const Operation& o) { return o.function != first; });
  }
  return out;
}

// `{var}` templates expanded over `var in A..B`; B a number or `cfg.NAME` / `NAME` from the config.
std::vector<std::string> expand_prefix(const std::string& prefix, std::string_view repeat,
                                       simdjson::dom::element config, std::string& note) {
  const auto open = prefix.find('{');
  if (open == std::string::npos) return {prefix};
  const auto close = prefix.find('}', open);
  const std::string var = prefix.substr(open + 1, close - open - 1);
  const auto in = repeat.find(" in ");
  const auto dots = repeat.find("..");
  if (close == std::string::npos || in == std::string_view::npos ||
      dots == std::string_view::npos || repeat.substr(0, in) != var) {
    note = "`" + prefix + "`: repeat `" + std::string(repeat) + "` is not `" + var + " in A..B`";
    return {};
  }
  auto bound = [&](std::string_view text, std::uint64_t& out) {
    while (!text.empty() && text.front() == ' ')
      text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ')
      text.remove_suffix(1);
    if (std::from_chars(text.data(), text.data() + text.size(), out).ptr ==
        text.data() + text.size())
      return !text.empty();
    const auto dot = text.rfind('.');
    const std::string name(dot == std::string_view::npos ? text : text.substr(dot + 1));
    return !config[name].get(out);
  };
  std::uint64_t from = 0, to = 0;
  if (!bound(repeat.substr(in + 4, dots - in - 4), from) || !bound(repeat.substr(dots + 2), to) ||
      to > 4096) {
    note = "`" + prefix + "`: bound of `" + std::string(repeat) + "` not found in the config";
    return {};
  }
  std::vector<std::string> out;
  for (std::uint64_t i = from; i < to; ++i)
    out.push_back(prefix.substr(0, open) + std::to_string(i) + prefix.substr(close + 1));
  return out;
}

// The IR's module instances as a forest of concrete paths (an IR without `modules` gives none).
std::vector<ModuleNode> module_tree(const std::string& ir_path, const std::string& config_path,
                                    std::vector<std::string>& notes) {
  simdjson::dom::parser parser, config_parser;
  simdjson::dom::element doc, config;
  if (parser.load(ir_path).get(doc) || config_parser.load(config_path).get(config)) return {};
  simdjson::dom::array modules;
  if (doc["modules"].get(modules)) return {};
  std::vector<ModuleNode> nodes;
  std::vector<std::string> seen;
  for (simdjson::dom::element m : modules) {
    std::string_view prefix, type_name, repeat;
    if (m["prefix"].get(prefix) || prefix.empty()) continue;  // the root has no path
    if (m["type_name"].get(type_name)) type_name = "";
    if (m["repeat"].get(repeat)) repeat = "";
    std::string note;
    for (std::string& p : expand_prefix(std::string(prefix), repeat, config, note)) {
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      nodes.push_back({std::move(p), std::string(type_name), {}});
    }
    if (!note.empty()) notes.push_back(note);
  }
  // Parent: the longest other path that is a dotted prefix of this one.
  std::sort(nodes.begin(), nodes.end(),
            [](const ModuleNode& a, const ModuleNode& b) { return a.path < b.path; });
  std::vector<bool> has_parent(nodes.size(), false);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::size_t best = nodes.size();
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      const std::string& q = nodes[j].path;
      if (j != i && nodes[i].path.size() > q.size() && nodes[i].path.starts_with(q) &&
          nodes[i].path[q.size()] == '.' &&
          (best == nodes.size() || q.size() > nodes[best].path.size()))
        best = j;
    }
    if (best != nodes.size()) {
      nodes[best].children.push_back(i);
      has_parent[i] = true;
    }
  }
  // Roots go last in a synthetic list: index nodes.size() holds them.
  ModuleNode roots{"", "", {}};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!has_parent[i]) roots.children.push_back(i);
  // Siblings by path, numbered ones numerically (model.layers.10 after model.layers.9).
  auto numeric_less = [&](std::size_t a, std::size_t b) {
    const std::string &x = nodes[a].path, &y = nodes[b].path;
    const std::string_view xs = std::string_view(x).substr(x.find_last_of('.') + 1);
    const std::string_view ys = std::string_view(y).substr(y.find_last_of('.') + 1);
    auto digits = [](std::string_view t) {
      return !t.empty() &&
             std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (x.size() - xs.size() == y.size() - ys.size() && digits(xs) && digits(ys) &&
        xs.size() != ys.size())
      return xs.size() < ys.size();
    return x < y;
  };
  for (auto& n : nodes)
    std::sort(n.children.begin(), n.children.end(), numeric_less);
  std::sort(roots.children.begin(), roots.children.end(), numeric_less);
  nodes.push_back(std::move(roots));
  return nodes;
}

Shapes read_shapes(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.load(path).get(doc))
    fail_input(path, std::string("not a readable JSON file: ") + simdjson::error_message(error));
  auto field = [&](const char* name, std::size_t fallback) -> std::size_t {
    std::uint64_t value = 0;
    auto element = doc[name];
    if (element.error() == simdjson::NO_SUCH_FIELD) {
      if (fallback != 0) return fallback;
      fail_input(path, std::string("expected the field `") + name + "`");
    }
    if (element.get(value) || value == 0 || value > 65536)
      fail_input(path, std::string("`") + name + "` must be an integer in 1..65536");
    return static_cast<std::size_t>(value);
  };
  Shapes s;
  s.hidden = field("hidden_size", 0);
  s.intermediate = field("intermediate_size", 0);
  s.heads = field("num_attention_heads", 0);
  s.kv_heads = field("num_key_value_heads", s.heads);
  s.vocab = field("vocab_size", 0);
  if (s.hidden % s.heads != 0 || s.heads % s.kv_heads != 0)
    fail_input(path,
               "hidden_size must divide by num_attention_heads, and that by "
               "num_key_value_heads");
  return s;
}

// The stand-in kernels: naive but cache-friendly row-major float loops.
void matmul(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
            std::size_t m, std::size_t k, std::size_t n) {
  c.assign(m * n, 0.0f);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) {
      const float x = a[i * k + p];
      for (std::size_t j = 0; j < n; ++j)
        c[i * n + j] += x * b[p * n + j];
    }
}

void softmax_rows(std::vector<float>& x, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * cols;
    const float max = *std::max_element(row, row + cols);
    float sum = 0;
    for (std::size_t j = 0; j < cols; ++j)
      sum += row[j] = std::exp(row[j] - max);
    for (std::size_t j = 0; j < cols; ++j)
      row[j] /= sum;
  }
}

std::vector<float> filled(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - scale / 2;
  return v;
}

struct Workload {
  explicit Workload(const Shapes& shapes)
      : s(shapes),
        x(filled(s.seq * s.hidden, 1.0f)),
        wq(filled(s.hidden * s.hidden, 0.1f)),
        wkv(filled(s.hidden * (s.hidden / s.heads * s.kv_heads), 0.1f)),
        wup(filled(s.hidden * s.intermediate, 0.1f)),
        wdown(filled(s.intermediate * s.hidden, 0.1f)),
        lm_head(filled(s.hidden * s.vocab, 0.1f)) {}

  // A decoder block: q/k/v/o projections, per-head scores and softmax, the MLP.
  void block() {
    const std::size_t hd = s.hidden / s.heads, kv = hd * s.kv_heads;
    matmul(x, wq, q, s.seq, s.hidden, s.hidden);
    matmul(x, wkv, k, s.seq, s.hidden, kv);
    matmul(x, wkv, v, s.seq, s.hidden, kv);
    scores.assign(s.heads * s.seq * s.seq, 0.0f);
    for (std::size_t h = 0; h < s.heads; ++h) {
      const std::size_t kh = h / (s.heads / s.kv_heads);
      for (std::size_t i = 0; i < s.seq; ++i)
        for (std::size_t j = 0; j < s.seq; ++j) {
          float dot = 0;
          for (std::size_t d = 0; d < hd; ++d)
            dot += q[i * s.hidden + h * hd + d] * k[j * kv + kh * hd + d];
          scores[(h * s.seq + i) * s.seq + j] = j <= i ? dot : -1e30f;
        }
    }
    softmax_rows(scores, s.heads * s.seq, s.seq);
    matmul(x, wq, attn, s.seq, s.hidden, s.hidden);
    matmul(attn, wup, up, s.seq, s.hidden, s.intermediate);
    matmul(up, wdown, x, s.seq, s.intermediate, s.hidden);
    for (float& value : x)
      value = std::tanh(value);  // keep values bounded step after step
  }

  void logits() {
    matmul(std::vector<float>(x.end() - static_cast<std::ptrdiff_t>(s.hidden), x.end()), lm_head,
           out, 1, s.hidden, s.vocab);
    softmax_rows(out, 1, s.vocab);
  }

  void mask() {
    scores.assign(s.seq * s.seq, 0.0f);
    for (std::size_t i = 0; i < s.seq; ++i)
      for (std::size_t j = i + 1; j < s.seq; ++j)
        scores[i * s.seq + j] = -INFINITY;
  }

  // A leaf module's stand-in: a projection for Linear, elementwise work for the rest.
  void module_leaf(std::string_view type_name) {
    if (type_name == "Linear") {
      matmul(x, wq, attn, s.seq, s.hidden, s.hidden);
    } else {
      elementwise();
    }
  }

  void elementwise() {
    for (float& value : x)
      value = value * 0.5f + 0.25f;
  }

  void run(std::string_view op_name) {
    if (op_name == "forward" || op_name == "matmul" || op_name == "linear")
      block();
    else if (op_name == "softmax" || op_name == "softmax_last_dim" || op_name == "to_dtype")
      logits();
    else if (op_name == "causal_mask")
      mask();
    else
      elementwise();
  }

  Shapes s;
  std::vector<float> x, wq, wkv, wup, wdown, lm_head, q, k, v, scores, attn, up, out;
};

// The statistics of the activation buffer [seq, hidden], computed here on the host.
cg::TensorStats activation_stats(const Workload& work, cg::StatsDue due) {
  cg::TensorStats st;
  st.dtype = "f32";
  st.shape = {work.s.seq, work.x.size() / std::max<std::size_t>(work.s.seq, 1)};
  if (work.x.size() != st.shape[0] * st.shape[1]) st.shape = {work.x.size()};
  double lo = 0, hi = 0, sum = 0, squares = 0;
  std::uint64_t finite = 0;
  for (float value : work.x) {
    if (std::isnan(value)) {
      ++st.nan;
    } else if (std::isinf(value)) {
      ++(value > 0 ? st.pos_inf : st.neg_inf);
    } else {
      const double v = value;
      if (v == 0) ++st.zeros;
      lo = finite == 0 ? v : std::min(lo, v);
      hi = finite == 0 ? v : std::max(hi, v);
      sum += v;
      squares += v * v;
      ++finite;
    }
  }
  st.reason = due == cg::StatsDue::full ? cg::StatsReason::sampled : cg::StatsReason::non_finite;
  if (finite != 0) {
    const double n = static_cast<double>(finite);
    const double abs_max = std::max(std::abs(lo), std::abs(hi));
    st.finite =
        cg::FiniteStats{lo, hi, sum / n, std::min(abs_max, std::sqrt(squares / n)), abs_max};
  }
  return st;
}

struct Health {
  std::string inject_path;  // --inject-nan PATH@STEP
  std::size_t inject_step = 0;
  bool inject = false;
  std::size_t step = 0;
  std::size_t records = 0;
};

// Times `node` and everything under it as the program's forward pass would: a scope per module.
void run_module(cg::ProfileSession& session, Workload& work, const std::vector<ModuleNode>& nodes,
                std::size_t index, std::size_t& timed, Health& health) {
  const ModuleNode& node = nodes[index];
  {
    cg::ModuleScope scope = session.module_scope(node.path);
    ++timed;
    if (node.children.empty()) work.module_leaf(node.type_name);
    for (std::size_t child : node.children)
      run_module(session, work, nodes, child, timed, health);
  }
  if (health.inject && health.step == health.inject_step && node.path == health.inject_path &&
      !work.x.empty())
    work.x[work.x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  // The module's output, after its scope closed (the statistics are not its time).
  const cg::StatsDue due = session.stats_due();
  if (due == cg::StatsDue::none) return;
  cg::TensorStats st = activation_stats(work, due);
  if (due == cg::StatsDue::non_finite_only && st.nan + st.pos_inf + st.neg_inf == 0) return;
  if (session.record_stats(node.path, st).ok()) ++health.records;
}

}  // namespace

int main(int raw_argc, char** raw_argv) {
  // Flags anywhere; the rest are the positional arguments.
  std::vector<char*> positional{raw_argv[0]};
  std::uint64_t stats_every = 0;
  bool stats_on_non_finite = false;
  Health health;
  for (int i = 1; i < raw_argc; ++i) {
    const std::string_view a = raw_argv[i];
    if (a == "--stats-on-non-finite") {
      stats_on_non_finite = true;
    } else if (a == "--stats-every" || a == "--inject-nan") {
      if (i + 1 == raw_argc) fail_input(std::string(a), "expected a value after it");
      const std::string_view v = raw_argv[++i];
      if (a == "--stats-every") {
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), stats_every);
        if (ec != std::errc() || ptr != v.data() + v.size())
          fail_input("--stats-every", "expected a step count, got `" + std::string(v) + "`");
      } else {
        const std::size_t at = v.rfind('@');
        auto [ptr, ec] =
            at == std::string_view::npos
                ? std::from_chars_result{v.data(), std::errc::invalid_argument}
                : std::from_chars(v.data() + at + 1, v.data() + v.size(), health.inject_step);
        if (ec != std::errc() || ptr != v.data() + v.size())
          fail_input("--inject-nan",
                     "expected PATH@STEP (model.layers.1.mlp@12), got `" + std::string(v) + "`");
        health.inject_path = std::string(v.substr(0, at));
        health.inject = true;
      }
    } else if (a.starts_with("--")) {
      fail_input(std::string(a),
                 "unknown flag (--stats-every N, --stats-on-non-finite, "
                 "--inject-nan PATH@STEP)");
    } else {
      positional.push_back(raw_argv[i]);
    }
  }
  const int argc = static_cast<int>(positional.size());
  char** argv = positional.data();
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr,
                 "usage: profile-demo IR_JSON CONFIG_JSON TRACE_OUT [STEPS [FORMAT]] "
                 "[--stats-every N] [--stats-on-non-finite] [--inject-nan PATH@STEP]\n"
                 "  FORMAT: runtime/4 (default), runtime/4-compact/1 or runtime/3\n");
    return 2;
  }
  std::size_t steps = 20;
  if (argc >= 5) {
    const std::string_view text = argv[4];
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), steps);
    if (ec != std::errc() || ptr != text.data() + text.size() || steps == 0 || steps > 100000)
      fail_input("STEPS", "expected an integer in 1..100000, got `" + std::string(text) + "`");
  }
  cg::TraceFormat format = cg::TraceFormat::runtime_v4;
  if (argc == 6) {
    const std::string_view text = argv[5];
    if (text == "runtime/4-compact/1")
      format = cg::TraceFormat::runtime_v4_compact;
    else if (text == "runtime/3")
      format = cg::TraceFormat::runtime_v3;
    else if (text != "runtime/4")
      fail_input("FORMAT", "expected runtime/4, runtime/4-compact/1 or runtime/3, got `" +
                               std::string(text) + "`");
  }
  std::string analysis_id;
  const std::vector<Operation> ops = inference_operations(argv[1], analysis_id);
  const Shapes shapes = read_shapes(argv[2]);
  if (ops.empty()) {
    std::printf(
        "profile-demo: %s has no operations of an inference entrypoint (no `operations[]` entry "
        "with execution_phase \"infer\"); nothing to time, no trace written\n",
        argv[1]);
    return 0;
  }
  const std::string entrypoint = entrypoint_name(ops.front().function);

  cg::ProfileConfig config = cg::ProfileConfig::infer(entrypoint);
  config.format = format;
  config.stats_every = stats_every;
  config.stats_on_non_finite = stats_on_non_finite;
  if (!analysis_id.empty()) config.analysis_id = analysis_id;
  auto session = cg::ProfileSession::open(argv[3], config);
  if (!session) {
    std::fprintf(stderr, "profile-demo: %s\n", session.status().message().c_str());
    return 1;
  }
  std::vector<cg::OpHandle> handles;
  for (const Operation& op : ops) {
    auto handle = session.value().op(op.id, op.name);
    if (!handle) {
      std::fprintf(stderr, "profile-demo: %s: %s\n", op.id.c_str(),
                   handle.status().message().c_str());
      return 1;
    }
    handles.push_back(handle.value());
  }

  std::vector<std::string> notes;
  const std::vector<ModuleNode> modules = module_tree(argv[1], argv[2], notes);
  for (const std::string& note : notes)
    std::printf("profile-demo: module family not timed: %s\n", note.c_str());
  if (health.inject) {
    const bool known = std::any_of(modules.begin(), modules.end(), [&](const ModuleNode& m) {
      return m.path == health.inject_path && !m.path.empty();
    });
    if (!known)
      fail_input("--inject-nan", "no module instance `" + health.inject_path +
                                     "` in the IR's module tree (use a path such as "
                                     "model.layers.0.mlp)");
    if (health.inject_step >= steps)
      fail_input("--inject-nan", "step " + std::to_string(health.inject_step) +
                                     " is past the run's last step " + std::to_string(steps - 1));
  }

  Workload work(shapes);
  std::size_t module_scopes = 0;
  for (std::size_t step = 0; step < steps; ++step) {
    session.value().set_step(step);
    health.step = step;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      cg::ScopedOperation timed(handles[i]);
      work.run(ops[i].name);
    }
    // The module tree's forward pass, one scope per module instance under its VarBuilder path.
    if (!modules.empty()) {
      for (std::size_t root : modules.back().children)
        run_module(session.value(), work, modules, root, module_scopes, health);
    }
  }
  auto path = session.value().finish();
  if (!path) {
    std::fprintf(stderr, "profile-demo: %s\n", path.status().message().c_str());
    return 1;
  }
  std::printf(
      "profile-demo: timed %zu operations of %s x %zu steps and %zu module scopes (%zu module "
      "instances of the IR) -> %s\n"
      "profile-demo: the timed work is a STAND-IN, not the model: plain C++ matrix products and "
      "elementwise loops with the config's shapes (hidden %zu, intermediate %zu, heads %zu/%zu, "
      "vocab %zu, seq %zu), host-side timings\n",
      ops.size(), entrypoint.c_str(), steps, module_scopes,
      modules.empty() ? std::size_t{0} : modules.size() - 1, path.value().c_str(), shapes.hidden,
      shapes.intermediate, shapes.heads, shapes.kv_heads, shapes.vocab, shapes.seq);
  if (stats_every != 0 || stats_on_non_finite)
    std::printf("profile-demo: %zu stats records of the stand-in's activations%s\n", health.records,
                health.inject ? (" (a NaN injected after " + health.inject_path + " at step " +
                                 std::to_string(health.inject_step) + ")")
                                    .c_str()
                              : "");
  return 0;
}
