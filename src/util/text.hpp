#pragma once
// Small text predicates shared by the readers.
#include <string_view>

namespace cg {

// `word` occurs in `text` as a whole identifier token: `Tensor` in `Result<Tensor>`, not in
// `MyTensorLike`; `Deserialize` in `serde::Deserialize`.
bool contains_word(std::string_view text, std::string_view word);

}  // namespace cg
