#pragma once
// Text insertions and the unified diff they make: what `candle-graph instrument` prints. Hunks
// carry three lines of context, come in line order, and a last line without a newline is marked
// the way diff(1) marks it, so `git apply` and `patch -p1` accept the output.
#include <cstdint>
#include <string>
#include <vector>

namespace cg::instrument {

struct Insertion {
  std::uint32_t offset = 0;  // byte in the original text; equal offsets keep their order
  std::string text;
};

// The text with every insertion applied (offsets past the end append).
std::string apply_insertions(const std::string& text, std::vector<Insertion> ins);

// The `--- a/PATH` / `+++ b/PATH` section for `path` (crate-relative, `/`-separated); empty when
// the insertions change nothing.
std::string unified_diff(const std::string& path, const std::string& text,
                         std::vector<Insertion> ins);

}  // namespace cg::instrument
