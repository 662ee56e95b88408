// Header validation cost against the JSON parse it cannot avoid: a 1,247-tensor header (the size
// of medgemma-27b's index) parsed and validated by parse_safetensors_header vs a bare simdjson DOM
// parse of the same bytes, best of 20, same run. Then verification of that checkpoint against a
// 15-template inventory.
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "checkpoint/safetensors_header.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint/verify.hpp"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename F>
double best_of(int n, F&& f) {
  double best = 1e9;
  for (int i = 0; i < n; ++i) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

}  // namespace

int main() {
  using namespace cg::checkpoint;
  std::vector<TensorSpec> specs;
  const char* leaves[] = {"self_attn.q_proj.weight",
                          "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight",
                          "self_attn.o_proj.weight",
                          "mlp.gate_proj.weight",
                          "mlp.up_proj.weight",
                          "mlp.down_proj.weight",
                          "input_layernorm.weight",
                          "post_attention_layernorm.weight",
                          "self_attn.q_norm.weight",
                          "self_attn.k_norm.weight",
                          "pre_feedforward_layernorm.weight",
                          "post_feedforward_layernorm.weight"};
  for (int l = 0; l < 95; ++l) {
    for (const char* leaf : leaves) {
      specs.push_back({"model.layers." + std::to_string(l) + "." + leaf, "BF16", {5376, 5376}});
    }
  }
  specs.push_back({"model.embed_tokens.weight", "BF16", {262208, 5376}});
  specs.push_back({"model.norm.weight", "BF16", {5376}});
  const std::string header = safetensors_header_bytes(specs);
  const std::uint64_t file_size = header.size() + safetensors_data_bytes(specs);

  simdjson::dom::parser parser;
  const double raw = best_of(20, [&] {
    simdjson::padded_string p(std::string_view(header).substr(8));
    simdjson::dom::element e;
    if (parser.parse(p).get(e)) std::abort();
  });
  std::size_t n = 0;
  const double ours =
      best_of(20, [&] { n = parse_safetensors_header(header, file_size, "bench").tensors.size(); });
  std::fprintf(stderr, "checkpoint_header: %zu tensors, %zu header bytes\n", n, header.size());
  // No target is set for this figure; the ratio shows what validation and typed records cost
  // over the bare parse (it has to allocate a name, dtype and shape per tensor and sort them).
  std::printf("ROW|checkpoint header parse+validate (ms)|%.3f|%.3f|%.2f|informational|\n",
              ours * 1e3, raw * 1e3, ours / raw);

  Checkpoint c;
  c.path = "bench";
  for (const auto& t : parse_safetensors_header(header, file_size, "bench").tensors) {
    c.tensors.push_back({t.name, "bench", t.dtype, t.shape});
  }
  std::vector<ExpectedParameter> inv;
  for (const char* leaf : leaves) {
    ExpectedParameter e;
    e.builder_root = "vb";
    e.key = std::string("model.layers.{i}.") + leaf;
    e.bounds = {{"i", 95}};
    e.shape = std::vector<std::uint64_t>{5376, 5376};
    inv.push_back(e);
  }
  const double v = best_of(20, [&] {
    if (!verify(inv, c).will_load) std::abort();
  });
  std::printf(
      "ROW|checkpoint verify %zu tensors x %zu templates (ms)|%.3f|%.3f|%.2f|informational|\n",
      c.tensors.size(), inv.size(), v * 1e3, ours * 1e3, v / ours);
}
