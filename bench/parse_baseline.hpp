#pragma once
// What the analysis benches share: a monotonic clock, the median of repeated runs, and the
// baseline they are compared with in the same run — tree-sitter's raw parse of the crate's files.
#include <tree_sitter/api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "rust/crate.hpp"
#include "rust/grammar.hpp"

namespace bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds to parse every file of `crate` with a fresh parser, over `reps` runs.
inline double raw_parse_seconds(const cg::rust::Crate& crate, int reps = 5) {
  std::vector<double> runs;
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = now_s();
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, cg::rust::rust_language());
    for (const auto& f : crate.files()) {
      const auto& t = f->text();
      TSTree* tree =
          ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
      ts_tree_delete(tree);
    }
    ts_parser_delete(parser);
    runs.push_back(now_s() - t0);
  }
  return median(runs);
}

}  // namespace bench
