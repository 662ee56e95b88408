// `summary --root models::llama::Llama` on candle-transformers (issue 37): one model's analysis
// runs only the code its component reaches, against the whole-crate summary (all 118 components)
// in the same run. Target: ≤ 0.5 s. Both are the CLI's own work: load, analysis, table.
// Second row (issue 38): `memory` of Llama-2-7b (its config.json bound, context 4096) against
// the same whole-crate summary. Target: ≤ 0.5 s.
// Usage (bench protocol): bench_cli_summary_root BASELINES_FILE WORK_DIR; env CG_CANDLE_SRC.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "parse_baseline.hpp"
#include "pipeline/pipeline.hpp"
#include "query/memory.hpp"
#include "query/summary_rows.hpp"

namespace fs = std::filesystem;

namespace {

// Seconds of one `summary` (analysis and table) and the table's size.
double summary_seconds(const std::string& crate, const std::string& root, std::size_t& bytes) {
  cg::pipeline::Options o;
  o.path = crate;
  o.root = root;
  double t0 = bench::now_s();
  cg::pipeline::Analysis a = cg::pipeline::analyze(o);
  bytes = cg::query::render_model_summary(a, "").size();
  return bench::now_s() - t0;
}

// Seconds of one `memory` (analysis with the config bound, and the report).
double memory_seconds(const std::string& crate, const std::string& config, std::size_t& bytes) {
  cg::pipeline::Options o;
  o.path = crate;
  o.root = "models::llama::Llama";
  o.config = config;
  double t0 = bench::now_s();
  cg::pipeline::Analysis a = cg::pipeline::analyze(o);
  cg::query::MemoryOptions m;
  m.context = 4096;
  bytes = cg::query::render_memory_json(cg::query::build_memory(a, config, m)).size();
  return bench::now_s() - t0;
}

}  // namespace

int main() {
  const char* env = std::getenv("CG_CANDLE_SRC");
  fs::path crate = fs::path(env != nullptr ? env : "") / "candle-transformers";
  const char* figure = "summary --root models::llama::Llama (s)";
  if (!fs::exists(crate / "src/models/mod.rs")) {
    std::printf("ROW|%s|SKIPPED (set CG_CANDLE_SRC to a candle checkout)|||≤0.5 s|\n", figure);
    return 0;
  }
  std::vector<double> root, whole;
  std::size_t root_bytes = 0, whole_bytes = 0;
  for (int rep = 0; rep < 5; ++rep) {
    root.push_back(summary_seconds(crate.string(), "models::llama::Llama", root_bytes));
    whole.push_back(summary_seconds(crate.string(), "", whole_bytes));
  }
  const double r = bench::median(root), w = bench::median(whole);
  std::fprintf(stderr,
               "summary: one root %.3f s (%zu bytes of table), the whole crate %.3f s (%zu bytes), "
               "medians of 5\n",
               r, root_bytes, w, whole_bytes);
  std::printf("ROW|%s|%.3f|%.3f|%.2f|≤0.5 s|%s\n", figure, r, w, r / w, r <= 0.5 ? "yes" : "no");
  const std::string config = std::string(CG_SOURCE_DIR) + "/tools/published/llama-2-7b.json";
  std::vector<double> mem;
  std::size_t mem_bytes = 0;
  for (int rep = 0; rep < 5; ++rep)
    mem.push_back(memory_seconds(crate.string(), config, mem_bytes));
  const double m = bench::median(mem);
  std::fprintf(stderr, "memory: Llama-2-7b %.3f s (%zu bytes of JSON), median of 5\n", m,
               mem_bytes);
  std::printf(
      "ROW|memory --root models::llama::Llama, Llama-2-7b config (s)|%.3f|%.3f|%.2f|≤0.5 s|%s\n", m,
      w, m / w, m <= 0.5 ? "yes" : "no");
  return 0;
}
