// Analysing a real engine crate with its dependencies (issue #17's speed target): the whole
// `check` analysis (cargo context, dependency sources located and loaded, candle-nn's constructors
// read from its source, inventory, dataflow, the IR written) against tree-sitter's raw parse of
// the same files, in the same run. Target: ≤ 2 s and ≤ 300 MiB peak memory.
//
// The crate is named by CG_VLLM_SRC (a candle-vllm checkout, or any crate directory); unset, the
// rows print SKIPPED. Its candle-nn and candle-core come from CG_CANDLE_SRC (a candle checkout),
// laid out in a fresh $CARGO_HOME the way a user's machine has them after `cargo fetch`: every git
// dependency of the crate's manifest on a `candle` repository gets a checkout
// `git/checkouts/candle-<hash>/<rev>` of CG_CANDLE_SRC, and candle-core / candle-nn also appear in
// the registry cache as `registry/src/index.crates.io-…/candle-nn-<version>` (CG_BENCH_LAYOUT=
// registry lays out the registry only, =git the checkouts only).
//
// Each run is a forked child so its peak memory (ru_maxrss) is its own and every run starts cold
// (nothing cached from a previous one). Medians of CG_BENCH_REPS runs (default 5).
// Usage (bench protocol): bench_pipeline_corpus BASELINES_FILE WORK_DIR.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/model.hpp"
#include "parse_baseline.hpp"
#include "pipeline/pipeline.hpp"

namespace fs = std::filesystem;

namespace {

struct Run {
  double seconds = 0;
  double peak_mib = 0;
  double cpu_s = 0;  // user + system time of the child: less sensitive to a loaded machine
  bool ok = false;
};

// Runs `fn` in a forked child; its wall time (fork to exit) and peak resident memory.
template <class Fn>
Run in_child(Fn fn) {
  Run r;
  double t0 = bench::now_s();
  pid_t pid = fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = fn() ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_pipeline_corpus: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  if (pid < 0) return r;
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return r;
  r.seconds = bench::now_s() - t0;
  r.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  r.cpu_s = secs(ru.ru_utime) + secs(ru.ru_stime);
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return r;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `name = "X"` / `version = "X"` style value on a line of `text` starting with `key`.
std::string toml_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    auto q0 = line.find('"');
    auto q1 = q0 == std::string::npos ? q0 : line.find('"', q0 + 1);
    if (q1 != std::string::npos) return line.substr(q0 + 1, q1 - q0 - 1);
  }
  return "";
}

// The git revisions (`rev = "…"`) the crate's manifest asks of candle repositories.
std::set<std::string> candle_git_revs(const std::string& manifest) {
  std::set<std::string> revs;
  std::istringstream in(manifest);
  for (std::string line; std::getline(in, line);) {
    if (line.find("git") == std::string::npos || line.find("candle") == std::string::npos) continue;
    auto r = line.find("rev");
    if (r == std::string::npos) continue;
    auto q0 = line.find('"', r);
    auto q1 = q0 == std::string::npos ? q0 : line.find('"', q0 + 1);
    if (q1 != std::string::npos) revs.insert(line.substr(q0 + 1, q1 - q0 - 1));
  }
  return revs;
}

void link(const fs::path& target, const fs::path& at) {
  std::error_code ec;
  fs::create_directories(at.parent_path(), ec);
  fs::remove(at, ec);
  fs::create_directory_symlink(target, at, ec);
  if (ec)
    std::fprintf(stderr, "bench_pipeline_corpus: cannot link %s: %s\n", at.c_str(),
                 ec.message().c_str());
}

// Every `.rs` file under `dir/src` (what a raw parse of a package reads).
void rust_files(const fs::path& dir, std::vector<fs::path>& out) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir / "src", ec), end; !ec && it != end;
       it.increment(ec))
    if (it->path().extension() == ".rs" && it->is_regular_file()) out.push_back(it->path());
}

}  // namespace

int main(int argc, char** argv) {
  const char* vllm = std::getenv("CG_VLLM_SRC");
  const char* candle = std::getenv("CG_CANDLE_SRC");
  const char* fig = "candle-vllm with dependencies (s)";
  if (vllm == nullptr || *vllm == '\0' || candle == nullptr || *candle == '\0') {
    std::printf(
        "ROW|%s|SKIPPED (set CG_VLLM_SRC to a candle-vllm checkout and CG_CANDLE_SRC to "
        "a candle checkout)|||≤2 s|\n",
        fig);
    std::printf("ROW|candle-vllm with dependencies, peak (MiB)|SKIPPED|||≤300 MiB|\n");
    return 0;
  }
  fs::path work = argc > 2 ? fs::path(argv[2]) : fs::temp_directory_path() / "cg-bench";
  const fs::path crate_dir = vllm, candle_dir = candle;
  const int reps = std::getenv("CG_BENCH_REPS") ? std::atoi(std::getenv("CG_BENCH_REPS")) : 5;
  const std::string layout = std::getenv("CG_BENCH_LAYOUT") ? std::getenv("CG_BENCH_LAYOUT") : "";

  // The user's $CARGO_HOME, from the sources on disk.
  fs::path home = work / "corpus-cargo-home";
  std::error_code ec;
  fs::remove_all(home, ec);
  fs::create_directories(home, ec);
  if (layout != "git") {
    fs::path reg = home / "registry" / "src" / "index.crates.io-6f17d22bba15001f";
    for (const char* pkg : {"candle-core", "candle-nn"}) {
      std::string version = toml_value(read_text(candle_dir / pkg / "Cargo.toml"), "version =");
      if (version.empty()) version = toml_value(read_text(candle_dir / "Cargo.toml"), "version =");
      link(candle_dir / pkg, reg / (std::string(pkg) + "-" + version));
    }
  }
  if (layout != "registry")
    for (const auto& rev : candle_git_revs(read_text(crate_dir / "Cargo.toml")))
      link(candle_dir, home / "git" / "checkouts" / "candle-b0a1c2d3e4f50617" / rev);
  setenv("CARGO_HOME", home.c_str(), 1);

  // One analysis first (not timed, in a child like the others so this process stays small) to
  // learn which dependency sources it reads: the baseline parses those too.
  std::vector<fs::path> files;
  rust_files(crate_dir, files);
  const std::size_t crate_files = files.size();
  const fs::path listing = work / "corpus-files.txt";
  Run first = in_child([&] {
    cg::pipeline::Options o;
    o.path = crate_dir.string();
    auto a = cg::pipeline::analyze(o);
    std::ofstream out(listing);
    std::string read;
    for (const auto& d : a.dependencies)
      if (d.analysis.rfind("loaded", 0) == 0 || d.analysis.rfind("constructors read", 0) == 0) {
        out << d.dir.string() << "\n";
        read += " " + d.package + " (" + std::string(cg::cargo::to_string(d.origin)) + ")";
      }
    std::size_t unres = 0;
    for (const auto& f : a.ir.findings)
      unres += f.rule == "structure-unresolved";
    std::fprintf(stderr,
                 "bench_pipeline_corpus: %s: %zu crate files; dependency sources read:%s; %zu "
                 "components, %zu parameters, %zu structure-unresolved\n",
                 crate_dir.filename().c_str(), crate_files, read.empty() ? " none" : read.c_str(),
                 a.ir.components.size(), a.ir.parameters.size(), unres);
    return static_cast<bool>(out);
  });
  if (!first.ok) {
    std::printf("ROW|%s|FAILED|||≤2 s|no\n", fig);
    return 1;
  }
  {
    std::ifstream in(listing);
    for (std::string dir; std::getline(in, dir);)
      rust_files(dir, files);
  }

  std::vector<double> ours_s, ours_mib, ours_cpu, base_s, base_mib, base_cpu;
  for (int rep = 0; rep < reps; ++rep) {
    Run b = in_child([&] {
      TSParser* parser = ts_parser_new();
      ts_parser_set_language(parser, cg::rust::rust_language());
      for (const auto& f : files) {
        std::string t = read_text(f);
        TSTree* tree =
            ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
        ts_tree_delete(tree);
      }
      ts_parser_delete(parser);
      return true;
    });
    Run r = in_child([&] {
      cg::pipeline::Options o;
      o.path = crate_dir.string();
      auto a = cg::pipeline::analyze(o);
      return !cg::ir::write_model_ir(a.ir).empty();
    });
    if (!b.ok || !r.ok) {
      std::printf("ROW|%s|FAILED|||≤2 s|no\n", fig);
      return 1;
    }
    base_s.push_back(b.seconds);
    base_mib.push_back(b.peak_mib);
    ours_s.push_back(r.seconds);
    ours_mib.push_back(r.peak_mib);
    ours_cpu.push_back(r.cpu_s);
    base_cpu.push_back(b.cpu_s);
  }
  double o = bench::median(ours_s), bs = bench::median(base_s);
  double om = bench::median(ours_mib), bm = bench::median(base_mib);
  double load[1] = {0};
  getloadavg(load, 1);
  std::fprintf(stderr,
               "bench_pipeline_corpus: medians of %d runs over %zu files; CPU time (user+sys) "
               "%.3f s, raw parse %.3f s; load average %.2f on %ld cores\n",
               reps, files.size(), bench::median(ours_cpu), bench::median(base_cpu), load[0],
               sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("ROW|%s|%.3f|%.3f|%.1f|≤2 s|%s\n", fig, o, bs, o / bs, o <= 2.0 ? "yes" : "no");
  std::printf("ROW|candle-vllm with dependencies, peak (MiB)|%.0f|%.0f|%.1f|≤300 MiB|%s\n", om, bm,
              om / bm, om <= 300.0 ? "yes" : "no");
  return 0;
}
