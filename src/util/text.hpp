#pragma once
// Small text helpers shared by the readers and the analysis.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cg {

// `word` occurs in `text` as a whole identifier token: `Tensor` in `Result<Tensor>`, not in
// `MyTensorLike`; `Deserialize` in `serde::Deserialize`.
bool contains_word(std::string_view text, std::string_view word);

// The last segment of a Rust path: `candle_nn::Module` -> `Module`, `Linear` -> `Linear`.
// Generic arguments are kept (`a::Vec<T>` -> `Vec<T>`); a path without `::` is returned whole.
std::string_view last_path_segment(std::string_view path);

// The last segment of a dotted checkpoint key or prefix: `model.layers.0` -> `0`.
std::string_view last_key_segment(std::string_view key);

// A symbolic dimension `h/4`, optionally parenthesized (`(h/4)`): a plain name divided by a
// whole number, rounding down (what pooling makes of `h`). The name and the divisor (>= 1).
std::optional<std::pair<std::string_view, std::uint64_t>> dimension_quotient(std::string_view f);

// `text` as it may be shown in a message or a terminal: control bytes (ESC, NUL, newline, DEL)
// written as `\xNN`, and cut after `max_bytes` with the full length said, so an argument of 120 KB
// or an escape sequence never reaches the user's terminal raw.
std::string shown_text(std::string_view text, std::size_t max_bytes = 60);

// Levenshtein distance of two short words (a command or a type name typed by hand), for "did you
// mean"; comparisons are exact bytes, so `LLama` and `Llama` are one edit apart.
std::size_t edit_distance(std::string_view a, std::string_view b);

// `text` with its control bytes but newline and tab written as `\xNN`, whole: for messages whose
// lines are meant, quoting source text or names that may hold ESC or NUL.
std::string terminal_safe(std::string_view text);

}  // namespace cg
