// `compare` on two runtime/4 traces of 100k operation lines each (50 static ids × 2,000 steps,
// log-normal noise, the candidate 10% slower on one id): the whole comparison (read both, per-step
// sums, 2,000-resample bootstrap per row, JSON rendering) against reading the same two files the
// way `profile` does (runtime::read_traces: read, validate, aggregate), measured in the same run.
// Medians of 9 interleaved rounds.
//
// Protocol (bench/run.sh): bench_compare_traces BASELINES_FILE WORK_DIR; prints
// ROW|figure|ours|baseline|ratio|target|met.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "runtime/merge_plan.hpp"

namespace fs = std::filesystem;

namespace {

void write_trace(const fs::path& path, std::uint64_t seed, double slow_factor) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> z(0.0, 0.1);
  std::ofstream out(path, std::ios::binary);
  out << R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"bench::forward","profile":"release","cargo_features":[],"cfg":[],"analysis_id":"bench","phase":"infer"})"
      << "\n";
  const int ids = 50, steps = 2000;
  std::uint64_t counter = 0, t = 0;
  for (int s = 0; s < steps; ++s)
    for (int i = 0; i < ids; ++i) {
      const double median = 1000.0 * (i + 1) * (i == 7 ? slow_factor : 1.0);
      const auto d = static_cast<std::uint64_t>(median * std::exp(z(gen)));
      out << R"({"kind":"operation","event_id":"infer-op-)" << s << "-" << ++counter
          << R"(","op":"matmul","static_id":"operation:infer:bench::forward:)" << i
          << R"(","inputs":["x"],"step":)" << s << R"(,"duration_ns":)" << d << R"(,"start_ns":)"
          << t << R"(,"thread":0})"
          << "\n";
      t += d + 5;
    }
  out << R"({"kind":"end","operations":)" << counter
      << R"(,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":)"
      << t << "}\n";
}

template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path work = argc > 2 ? fs::path(argv[2]) : fs::temp_directory_path();
  fs::create_directories(work);
  const fs::path base = work / "compare_bench_base.jsonl";
  const fs::path candidate = work / "compare_bench_candidate.jsonl";
  write_trace(base, 1, 1.0);
  write_trace(candidate, 2, 1.1);
  std::size_t rows = 0, slower = 0, bytes = 0;
  // Interleaved, so load from other processes on the machine falls on both alike; the ratio is
  // the median of the per-round ratios.
  std::vector<double> ours_s, read_s, ratios;
  for (int round = 0; round < 9; ++round) {
    ours_s.push_back(seconds([&] {
      const auto r = cg::compare::compare_traces({base}, {candidate}, {});
      bytes = cg::compare::render_json(r, 0).size();
      rows = r.rows.size();
      slower = cg::compare::regressions(r, 0).size();
    }));
    read_s.push_back(seconds([&] {
      (void)cg::runtime::read_traces({base, candidate}, cg::runtime::ReadOptions{});
    }));
    ratios.push_back(ours_s.back() / read_s.back());
  }
  const double ours = median(ours_s), read = median(read_s);
  std::fprintf(stderr, "compare: %zu rows, %zu slower, %zu bytes of JSON\n", rows, slower, bytes);
  const double ratio = median(ratios);
  std::printf(
      "ROW|compare 2 traces x 100k operation lines vs reading them as profile does (s)|"
      "%.3f|%.3f|%.2f|≤3x|%s\n",
      ours, read, ratio, ratio <= 3.0 ? "yes" : "NO");
  fs::remove(base);
  fs::remove(candidate);
  return 0;
}
