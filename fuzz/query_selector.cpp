// Selectors come from users and agents (CLI positional, MCP `selector`): any text must select a
// well-formed subset (indices in range, in input order, matching the reported kind), and the
// natural order used to sort answers must stay a strict weak order on whatever strings it meets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "query/selector.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<cg::query::Selectable> items = {
      {"operation:f:forward:1", {"model::Attention::forward"}, {"matmul", "q_proj"}},
      {"operation:f:forward:10", {"model::Attention::forward#10"}, {"softmax"}},
      {"parameter:c:vb:model.layers.{i}.mlp.down_proj.weight",
       {"model.layers.{i}.mlp.down_proj.weight", "vb:model.layers.{i}.mlp.down_proj.weight"},
       {"Linear"}},
      {"module:c:vb:model.norm:RmsNorm::0", {"model.norm"}, {"RmsNorm", "ÄÖÜ\xff"}},
  };
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto sel = cg::query::select(items, input);
  for (std::size_t k = 0; k < sel.indices.size(); ++k) {
    if (sel.indices[k] >= items.size()) std::abort();
    if (k > 0 && sel.indices[k] <= sel.indices[k - 1]) std::abort();
  }
  if ((sel.kind == cg::query::MatchKind::none) != sel.indices.empty()) std::abort();
  // Split the input in two and check irreflexivity and asymmetry of the natural order.
  const std::string_view a = input.substr(0, size / 2), b = input.substr(size / 2);
  if (cg::query::natural_less(a, a)) std::abort();
  if (cg::query::natural_less(a, b) && cg::query::natural_less(b, a)) std::abort();
  const auto page = cg::query::paginate(size, size / 3, size % 7);
  if (page.offset > size || page.offset + page.returned > size) std::abort();
  return 0;
}
