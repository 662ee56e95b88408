// Synthetic runtime/4 traces with known timings, for the comparison's truth tests: every step
// times each module path and operation once, its duration the path's median times a log-normal
// noise factor exp(sigma · Z), so the population median of a path is exactly the median given.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>

namespace cg_test {

struct SyntheticSpec {
  std::uint64_t seed = 1;
  std::size_t steps = 200;
  double sigma = 0.1;
  std::map<std::string, double> modules;     // path → median duration, ns
  std::map<std::string, double> operations;  // static id → median duration, ns
  // Tensor statistics: path → median output RMS (same noise), one `stats` line a step each; a
  // path in `nan_steps` holds one NaN on those steps.
  std::map<std::string, double> rms;
  std::map<std::string, std::set<std::size_t>> nan_steps;
  std::string analysis_id = "analysis-1";
  std::string entrypoint = "model::forward";
  std::string phase = "infer";
  bool end = true;  // write the `end` record (false: a truncated trace)
};

inline std::string synthetic_trace(const SyntheticSpec& spec) {
  std::mt19937_64 gen(spec.seed);
  auto normal = [&] {  // Box–Muller on the generator's raw bits
    const double u1 = (static_cast<double>(gen() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  };
  auto noisy = [&](double median) {
    return static_cast<std::uint64_t>(std::llround(median * std::exp(spec.sigma * normal())));
  };
  std::string out = R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":")" +
                    spec.entrypoint +
                    R"(","profile":"release","cargo_features":[],"cfg":[],"analysis_id":")" +
                    spec.analysis_id + R"(","phase":")" + spec.phase + R"("})" + "\n";
  std::uint64_t counter = 0, t = 0, ops = 0, mods = 0, stats = 0;
  for (std::size_t s = 0; s < spec.steps; ++s) {
    const std::string step = std::to_string(s);
    for (const auto& [id, median] : spec.operations) {
      const std::uint64_t d = noisy(median);
      out += R"({"kind":"operation","event_id":")" + spec.phase + "-op-" + step + "-" +
             std::to_string(++counter) + R"(","op":"matmul","static_id":")" + id +
             R"(","inputs":[],"step":)" + step + R"(,"duration_ns":)" + std::to_string(d) +
             R"(,"start_ns":)" + std::to_string(t) + R"(,"thread":0})" + "\n";
      t += d + 10;
      ++ops;
    }
    for (const auto& [path, median] : spec.modules) {
      const std::uint64_t d = noisy(median);
      out += R"({"kind":"module","event_id":")" + spec.phase + "-mod-" + step + "-" +
             std::to_string(++counter) + R"(","path":")" + path + R"(","step":)" + step +
             R"(,"duration_ns":)" + std::to_string(d) + R"(,"start_ns":)" + std::to_string(t) +
             R"(,"thread":0})" + "\n";
      t += d + 10;
      ++mods;
    }
    // 100 elements: one NaN on a listed step, the rest spread over [-3 rms, 3 rms], mean 0.
    for (const auto& [path, median] : spec.rms) {
      const double r = median * std::exp(spec.sigma * normal());
      auto it = spec.nan_steps.find(path);
      const bool nan = it != spec.nan_steps.end() && it->second.count(s) > 0;
      char nums[160];
      std::snprintf(nums, sizeof nums,
                    R"("min":%.17g,"max":%.17g,"mean":0,"rms":%.17g,"abs_max":%.17g)", -3 * r,
                    3 * r, r, 3 * r);
      out += R"({"kind":"stats","event_id":")" + spec.phase + "-stats-" + step + "-" +
             std::to_string(++counter) + R"(","path":")" + path +
             R"(","of":"output","reason":"sampled","step":)" + step + R"(,"at_ns":)" +
             std::to_string(t) +
             R"(,"thread":0,"dtype":"f32","shape":[100],"elements":100,"nan":)" +
             (nan ? "1" : "0") + R"(,"pos_inf":0,"neg_inf":0,"zeros":0,)" + nums + "}\n";
      ++t;
      ++stats;
    }
  }
  if (spec.end)
    out +=
        R"({"kind":"end","operations":)" + std::to_string(ops) +
        R"(,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":)" +
        std::to_string(t) + R"(,"modules":)" + std::to_string(mods) + R"(,"open_modules":0)" +
        (stats ? R"(,"stats":)" + std::to_string(stats) : std::string()) + "}\n";
  return out;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace cg_test
