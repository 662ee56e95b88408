#pragma once
// Hand-written `stats` lines (docs/runtime-4.md, "Additions: tensor statistics"): the statistics
// are computed here from the element values a test gives, the way a program would, so tests
// compare the tool's figures with ones they derived themselves.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace cg::runtime::testing {

struct Computed {
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0, finite = 0;
  double min = 0, max = 0, mean = 0, rms = 0, abs_max = 0;
};

inline Computed compute(const std::vector<double>& values) {
  Computed c;
  double sum = 0, squares = 0;
  for (double v : values) {
    if (std::isnan(v)) {
      ++c.nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? c.pos_inf : c.neg_inf);
    } else {
      if (c.finite == 0) c.min = c.max = v;
      c.min = std::min(c.min, v);
      c.max = std::max(c.max, v);
      c.abs_max = std::max(c.abs_max, std::fabs(v));
      sum += v;
      squares += v * v;
      ++c.finite;
      if (v == 0) ++c.zeros;
    }
  }
  if (c.finite) {
    c.mean = sum / static_cast<double>(c.finite);
    c.rms = std::sqrt(squares / static_cast<double>(c.finite));
  }
  return c;
}

inline std::string num(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// The fields from `of` on, for a one-dimensional tensor holding `values`.
inline std::string stats_tail(const std::string& of, const std::vector<double>& values,
                              const std::string& reason = "sampled", std::uint64_t index = 0) {
  const Computed c = compute(values);
  std::string s = R"(,"of":")" + of + "\"";
  if (index) s += R"(,"index":)" + std::to_string(index);
  s += R"(,"reason":")" + reason + R"(","dtype":"f32","shape":[)" + std::to_string(values.size()) +
       R"(],"elements":)" + std::to_string(values.size()) + R"(,"nan":)" + std::to_string(c.nan) +
       R"(,"pos_inf":)" + std::to_string(c.pos_inf) + R"(,"neg_inf":)" + std::to_string(c.neg_inf) +
       R"(,"zeros":)" + std::to_string(c.zeros);
  if (c.finite) {
    s += R"(,"min":)" + num(c.min) + R"(,"max":)" + num(c.max) + R"(,"mean":)" + num(c.mean) +
         R"(,"rms":)" + num(c.rms) + R"(,"abs_max":)" + num(c.abs_max);
  }
  return s + "}\n";
}

// A runtime/4 `stats` line; the event id's counter is `counter`.
inline std::string stats_line(std::uint64_t counter, const std::string& path, const std::string& of,
                              std::uint64_t step, std::uint64_t at_ns,
                              const std::vector<double>& values, std::uint64_t thread = 0,
                              const std::string& reason = "sampled", std::uint64_t index = 0) {
  return R"({"kind":"stats","event_id":"infer-stats-)" + std::to_string(step) + "-" +
         std::to_string(counter) + R"(","path":")" + path + R"(","step":)" + std::to_string(step) +
         R"(,"at_ns":)" + std::to_string(at_ns) + R"(,"thread":)" + std::to_string(thread) +
         stats_tail(of, values, reason, index);
}

// Its compact form: `h` names a def with the path.
inline std::string st_line(std::uint64_t h, std::uint64_t counter, const std::string& of,
                           std::uint64_t step, std::uint64_t at_ns,
                           const std::vector<double>& values, std::uint64_t thread = 0,
                           const std::string& reason = "sampled", std::uint64_t index = 0) {
  return R"({"kind":"st","h":)" + std::to_string(h) + R"(,"th":)" + std::to_string(thread) +
         R"(,"c":)" + std::to_string(counter) + R"(,"s":)" + std::to_string(step) + R"(,"t":)" +
         std::to_string(at_ns) + stats_tail(of, values, reason, index);
}

inline const char* kMetaV4Stats =
    R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"tiny::forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer","stats_every":1})"
    "\n";
inline const char* kMetaCompactStats =
    R"({"kind":"meta","schema":"candle-graph/runtime/4-compact/1","entrypoint":"tiny::forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer","stats_every":1})"
    "\n";

inline std::string end_line(std::uint64_t stats, std::uint64_t operations = 0) {
  return R"({"kind":"end","operations":)" + std::to_string(operations) +
         R"(,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":5000,"stats":)" +
         std::to_string(stats) + "}\n";
}

}  // namespace cg::runtime::testing
