// A sharded checkpoint's model.safetensors.index.json comes from a download like the headers:
// any text must give a name-only checkpoint or cg::InputError, and verifying a small inventory
// (concrete keys and a `{i}` family) against whatever names it holds must neither crash nor
// enumerate without bound. The shards are never present (looked up in a directory that does not
// exist), so the index is the whole input.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/verify.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<cg::checkpoint::ExpectedParameter> expected = [] {
    std::vector<cg::checkpoint::ExpectedParameter> e(3);
    e[0].id = "p0";
    e[0].builder_root = "vb";
    e[0].key = "model.embed_tokens.weight";
    e[1].id = "p1";
    e[1].builder_root = "vb";
    e[1].key = "model.layers.{i}.self_attn.q_proj.weight";
    e[1].bounds = {{"i", 4}};
    e[2].id = "p2";
    e[2].builder_root = "vb";
    e[2].key = "model.layers.{i}.mlp.experts.{j}.w1.weight";
    return e;
  }();
  try {
    const auto ckpt =
        cg::checkpoint::load_index("/nonexistent-cg-fuzz/model.safetensors.index.json",
                                   std::string_view(reinterpret_cast<const char*>(data), size));
    (void)cg::checkpoint::verify(expected, ckpt);
  } catch (const cg::InputError&) {
  }
  return 0;
}
