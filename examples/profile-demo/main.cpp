// profile-demo: times a stand-in workload under the static operation ids of a model's inference
// entrypoint and writes a candle-graph/runtime/4 trace that `candle-graph audit --runtime-trace`
// merges into the report and the HTML.
//
//   profile-demo IR_JSON CONFIG_JSON TRACE_OUT [STEPS]
//
// IR_JSON is the output of `candle-graph check CRATE --config CONFIG_JSON --output IR_JSON`; the
// program times every operation whose `execution_phase` is "infer" (the operations of the
// inference entrypoint), in IR order, once per step. The work done under each id is NOT the
// model's: it is plain C++ matrix products, softmaxes and copies with the shapes of CONFIG_JSON
// (hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, vocab_size), a
// stand-in for a Candle run so that the demo needs no Rust toolchain and no weights.
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: profile-demo IR_JSON CONFIG_JSON TRACE_OUT [STEPS]\n");
    return 2;
  }
  std::size_t steps = 20;
  if (argc == 5) {
    const std::string_view text = argv[4];
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), steps);
    if (ec != std::errc() || ptr != text.data() + text.size() || steps == 0 || steps > 100000)
      fail_input("STEPS", "expected an integer in 1..100000, got `" + std::string(text) + "`");
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

  Workload work(shapes);
  for (std::size_t step = 0; step < steps; ++step) {
    session.value().set_step(step);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      cg::ScopedOperation timed(handles[i]);
      work.run(ops[i].name);
    }
  }
  auto path = session.value().finish();
  if (!path) {
    std::fprintf(stderr, "profile-demo: %s\n", path.status().message().c_str());
    return 1;
  }
  std::printf(
      "profile-demo: timed %zu operations of %s x %zu steps (stand-in workload: hidden %zu, "
      "intermediate %zu, heads %zu/%zu, vocab %zu, seq %zu) -> %s\n",
      ops.size(), entrypoint.c_str(), steps, shapes.hidden, shapes.intermediate, shapes.heads,
      shapes.kv_heads, shapes.vocab, shapes.seq, path.value().c_str());
  return 0;
}
