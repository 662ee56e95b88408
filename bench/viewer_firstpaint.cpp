// Viewer first-paint / expand benchmark: runs bench/viewer_firstpaint.mjs (headless chromium over
// a synthetic IR of >= 50k ops and >= 100k parameters) whose ROW lines follow the bench/run.sh
// protocol (`bench_viewer_firstpaint BASELINES_FILE WORK_DIR`; both unused: no baseline viewer runs
// offline, so the baseline column is "-").
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

int main() {
  const char* chromium = std::getenv("CG_CHROMIUM");
  const fs::path browser = chromium != nullptr ? chromium : "/usr/bin/chromium";
  std::error_code ec;
  if (!fs::exists(browser, ec)) {
    std::fprintf(stderr, "viewer bench: SKIPPED, %s not found\n", browser.c_str());
    return 0;
  }
  // The build tree lives somewhere under the repository: walk up from this program to find it.
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  while (!dir.empty() && !fs::exists(dir / "bench" / "viewer_firstpaint.mjs", ec)) {
    if (dir == dir.root_path()) {
      std::fprintf(stderr,
                   "viewer bench: cannot find bench/viewer_firstpaint.mjs above the binary\n");
      return 1;
    }
    dir = dir.parent_path();
  }
  // The real-model part runs `candle-graph view`: the binary beside this one's folder.
  const fs::path bin =
      fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "candle-graph";
  std::string cmd = "node '" + (dir / "bench" / "viewer_firstpaint.mjs").string() + "'";
  if (fs::exists(bin, ec)) cmd = "CG_BIN='" + bin.string() + "' " + cmd;
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}
